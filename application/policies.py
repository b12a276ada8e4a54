"""Approval policies: how many distinct people an operation's proposals need, set by command.

A policy is an ``ApprovalPolicySet`` event of the organization, so every change is in the one
stream with who made it. It binds proposals frozen after it: each proposal keeps the policy it
was frozen under (``ApprovalPolicy.frozen_for``), so lowering a policy never lowers what an
open proposal needs; raising it fails an open proposal closed at its next approval, to be
proposed again under the new one (policy_recheck.py).

The operator's command line sets policies for any club (``set_by`` "operator"); a member, or a
service acting as one, needs ``policies.manage`` in their own club.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from typing import Any, Final, Literal

from countersign.application.authorization import (
    Caller,
    may_read,
    membership,
    read_permissions,
    require_all,
    require_decider,
)
from countersign.application.errors import MissingPermissionError, UnknownOperationError
from countersign.application.ports import AggregateStore, Answer, Commit, Reads
from countersign.domain.approval_policy import ApprovalPolicy, PolicyError
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository

OPERATOR = "operator"


class _Kept(Enum):
    KEPT = "kept"


#: A setting left out of ``PolicyService.set``: the policy in force's is kept (for
#: ``above_cents``, where None means "every proposal").
KEPT: Final = _Kept.KEPT


def _shown(policy: ApprovalPolicy) -> dict[str, Any]:
    """A policy as callers read it: every setting, ``require_passkey`` included."""
    return {**policy.to_json(), "require_passkey": policy.require_passkey}


def _listed(org: Organization, operation: str) -> dict[str, Any]:
    """One operation's policy in force (one approval where none is set), and who set it."""
    entry = org.policies.get(operation, {})
    return {**_shown(org.approval_policy(operation)), "set_by": entry.get("set_by")}


class PolicyService:
    """Sets and lists organizations' approval policies."""

    def __init__(
        self, store: AggregateStore, *, registry: Mapping[str, AnyContract] = REGISTRY
    ) -> None:
        self.store = store
        self.registry = registry

    def set(
        self,
        organization: str,
        operation: str,
        approvals: int,
        *,
        above_cents: int | Literal[_Kept.KEPT] | None = KEPT,
        requester_may_approve: bool | None = None,
        require_passkey: bool | None = None,
        by: Caller | None = None,
    ) -> dict[str, Any]:
        """Put a policy in force for new proposals of ``operation``; what is now in force, and
        whether this changed it. A setting left out (``above_cents`` KEPT, the others None)
        keeps what the policy in force has: raising the quorum never lets a requester approve
        again, drops a threshold or a passkey by leaving it unsaid. UnknownOperationError,
        PolicyError (a value out of range), NotFoundError (an unknown club, or one the caller
        does not act in), or MissingPermissionError."""
        if operation not in self.registry:
            raise UnknownOperationError(operation)
        from countersign.domain.contracts.base import names_an_amount  # with the contract

        if isinstance(above_cents, int) and not names_an_amount(self.registry[operation]):
            raise PolicyError(
                f"{operation} moves no money, so no proposal of it is ever above an amount: "
                "set its approvals without a threshold"
            )
        asked = ApprovalPolicy(
            operation,
            approvals,
            None if above_cents is KEPT else above_cents,
            requester_may_approve is not False,
            bool(require_passkey),
        )  # refuses a value out of range before anything is read
        organization_id = self._organization_id(organization, by)

        def setting(store: Repository) -> Commit[dict[str, Any]] | Answer[dict[str, Any]]:
            org = store.get(organization_id, Organization)
            set_by = OPERATOR if by is None else self._manager(org, by)
            if by is not None:
                require_decider(by)  # the rules people decide under are theirs to set
            in_force = org.approval_policy(operation)
            policy = replace(
                asked,
                above_cents=in_force.above_cents if above_cents is KEPT else asked.above_cents,
                requester_may_approve=(
                    in_force.requester_may_approve
                    if requester_may_approve is None
                    else requester_may_approve
                ),
                require_passkey=(
                    in_force.require_passkey if require_passkey is None else require_passkey
                ),
            )
            if not org.set_approval_policy(policy, set_by):
                return Answer({**_shown(policy), "changed": False})
            return Commit([org], {**_shown(policy), "changed": True})

        return self.store.decide(Reads([organization_id]), setting)

    def in_force(self, organization: str, by: Caller | None = None) -> list[dict[str, Any]]:
        """Every operation's policy in force, by operation (one approval where none is set)."""
        organization_id = self._organization_id(organization, by)
        org = self.store.read(organization_id, Organization)
        if by is not None:
            self._manager(org, by)
        return [_listed(org, operation) for operation in self.registry]

    def readable(self, organization: str, by: Caller) -> list[dict[str, Any]]:
        """The policies in force that ``by`` may see, as ``in_force`` lists them: every
        operation's with ``policies.manage`` (who may change them may read them all); else
        those of the operations whose proposals the member may read (the operation's
        permission, or ``audit.read``), since each such proposal's page already shows the
        policy it was frozen under: this shows nobody a rule of proposals hidden from them.
        MissingPermissionError when that is none; NotFoundError for another club or a
        non-member, as for an unknown club."""
        org = self.store.read(self._organization_id(organization, by), Organization)
        member = membership(org, by.email)
        every = by.may(member, Permission.MANAGE_POLICIES)
        shown = [op for op in self.registry if every or may_read(by, member, op, self.registry)]
        if not shown:
            readers = {p for op in self.registry for p in read_permissions(op, self.registry)}
            raise MissingPermissionError([Permission.MANAGE_POLICIES, *readers], any_of=True)
        return [_listed(org, operation) for operation in shown]

    @staticmethod
    def _organization_id(organization: str, by: Caller | None) -> Any:
        slug = organization.strip().lower()
        if by is not None and by.organization is not None and by.organization != slug:
            raise NotFoundError("organization")  # another club answers like an unknown one
        return Organization.create_id(slug)

    @staticmethod
    def _manager(org: Organization, caller: Caller) -> str:
        member = membership(org, caller.email)
        require_all(caller, member, Permission.MANAGE_POLICIES)
        return member.email
