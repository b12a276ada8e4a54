"""Organizations (tenants) and their members' permissions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from uuid import UUID, uuid4

from countersign.domain.approval_policy import ApprovalPolicy
from countersign.domain.club.ids import stable_id
from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE, valid_time_zone
from countersign.domain.errors import DuplicateError, NotMemberError
from eventsourcing.domain import Aggregate, event


class Permission(StrEnum):
    """The permissions the application checks itself. A permission is a plain string: each
    operation contract declares the one its proposals need (``OperationContract.permission``),
    so the set grows with the registry (``domain.contracts.PERMISSIONS``)."""

    REFUND_ORDERS = "orders.refund"
    PREPARE_BROADCASTS = "email_broadcasts.prepare"
    READ_AUDIT = "audit.read"
    MANAGE_POLICIES = "policies.manage"


@dataclass(frozen=True)
class Member:
    """A person's membership of one organization."""

    email: str
    name: str
    role: str
    permissions: frozenset[str]
    membership_id: str | None = None
    """New at every joining, so a credential issued before the person left and came back (or
    before the address went to someone else) is told apart; None for memberships recorded
    before memberships had ids."""

    def may(self, permission: str) -> bool:
        return permission in self.permissions


class Organization(Aggregate):
    """A club: the tenant boundary of every proposal."""

    time_zone = DEFAULT_TIME_ZONE
    """Where the club's people read times (an IANA name). A class default, so a club
    registered before clubs had a time zone (its events and snapshots lack one) reads as UTC."""

    @staticmethod
    def create_id(slug: str) -> UUID:
        return stable_id("organization", slug)

    @event("Registered")
    def __init__(self, slug: str, name: str) -> None:
        self.slug = slug
        self.name = name
        self.members: dict[str, dict[str, Any]] = {}

    def member(self, email: str) -> Member | None:
        entry = self.members.get(email.strip().lower())
        if entry is None:
            return None
        return Member(
            email=email.strip().lower(),
            name=str(entry["name"]),
            role=str(entry["role"]),
            permissions=frozenset(str(p) for p in entry["permissions"]),
            membership_id=entry.get("membership_id"),
        )

    def add_member(self, email: str, name: str, role: str, permissions: Iterable[str]) -> None:
        email = email.strip().lower()
        if email in self.members:
            raise DuplicateError(f"{email} is already a member")
        self._member_added(
            email=email,
            name=name,
            role=role,
            permissions=sorted(str(p) for p in permissions),
            membership_id=uuid4().hex,
        )

    def remove_member(self, email: str) -> None:
        email = email.strip().lower()
        if email not in self.members:
            raise NotMemberError(email)
        self._member_removed(email=email)

    def change_permissions(self, email: str, permissions: Iterable[str]) -> None:
        email = email.strip().lower()
        if email not in self.members:
            raise NotMemberError(email)
        self._permissions_changed(email=email, permissions=sorted(str(p) for p in permissions))

    def set_time_zone(self, name: str) -> None:
        """Show the club's times in ``name`` (``America/Toronto``); TimeZoneError for a name
        that is not an IANA time zone. Setting the zone it has already records nothing."""
        zone = valid_time_zone(name)
        if zone != self.time_zone:
            self._time_zone_set(time_zone=zone)

    @property
    def policies(self) -> dict[str, dict[str, Any]]:
        """Approval policies by operation kind, as set (none for a club that never set one)."""
        policies: dict[str, dict[str, Any]] = self.__dict__.get("_policies", {})
        return policies

    def approval_policy(self, operation: str) -> ApprovalPolicy:
        """The policy in force for ``operation``: the one set, or one approval by anyone
        permitted."""
        entry = self.policies.get(operation)
        if entry is None:
            return ApprovalPolicy(operation)
        return ApprovalPolicy(
            operation=operation,
            approvals=int(entry["approvals"]),
            above_cents=entry["above_cents"],
            requester_may_approve=bool(entry["requester_may_approve"]),
        )

    def set_approval_policy(self, policy: ApprovalPolicy, set_by: str) -> bool:
        """Put ``policy`` in force for new proposals of its operation; True if it changed
        anything (setting the policy in force again records nothing)."""
        if policy == self.approval_policy(policy.operation):
            return False
        self._approval_policy_set(**policy.to_json(), set_by=set_by)
        return True

    @event("ApprovalPolicySet")
    def _approval_policy_set(
        self,
        operation: str,
        approvals: int,
        above_cents: int | None,
        requester_may_approve: bool,
        set_by: str,
    ) -> None:
        self._policies = {
            **self.policies,
            operation: {
                "approvals": approvals,
                "above_cents": above_cents,
                "requester_may_approve": requester_may_approve,
                "set_by": set_by,
            },
        }

    @event("TimeZoneSet")
    def _time_zone_set(self, time_zone: str) -> None:
        self.time_zone = time_zone

    @event("MemberAdded")
    def _member_added(
        self,
        email: str,
        name: str,
        role: str,
        permissions: list[str],
        membership_id: str | None = None,  # absent from events stored before it existed
    ) -> None:
        self.members[email] = {
            "name": name,
            "role": role,
            "permissions": permissions,
            "membership_id": membership_id,
        }

    @event("MemberRemoved")
    def _member_removed(self, email: str) -> None:
        self.members.pop(email, None)

    @event("PermissionsChanged")
    def _permissions_changed(self, email: str, permissions: list[str]) -> None:
        self.members[email]["permissions"] = permissions
