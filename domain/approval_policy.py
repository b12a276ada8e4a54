"""Separation of duties and quorum: how many distinct people must approve an operation.

An organization sets one policy per operation (``Organization.set_approval_policy``, an
``ApprovalPolicySet`` event). A proposal is judged by the policy in force when it was frozen:
``ApprovalPolicy.frozen_for`` gives the JSON-ready record stored in its ``Proposed`` event and
shown on its card. A later change never lowers what an open proposal needs; one that asks more
of it (``asks_more``) stops its approval: it must be proposed again, under the policy in force.
One that bars its requester (``bars_requester``) stops only the requester's own approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from countersign.domain.errors import CountersignError

MAX_APPROVALS = 5


class PolicyError(CountersignError):
    """A policy that cannot be set, with a sentence saying why."""


@dataclass(frozen=True)
class ApprovalPolicy:
    """What approving one operation takes, above an optional amount."""

    operation: str
    approvals: int = 1
    above_cents: int | None = None
    """The policy applies to proposals whose amount is above this (None: to every one). An
    operation that moves no money has no amount, and is covered only without a threshold."""
    requester_may_approve: bool = True
    require_passkey: bool = False
    """Each approval (above the amount, as the quorum) must be signed with the approver's
    passkey, bound to the proposal's contract digest."""

    def __post_init__(self) -> None:
        if not 1 <= self.approvals <= MAX_APPROVALS:
            raise PolicyError(f"approvals must be between 1 and {MAX_APPROVALS}")
        if self.above_cents is not None and self.above_cents < 0:
            raise PolicyError("above-cents must be zero or more")

    def applies_to(self, amount_cents: int | None) -> bool:
        if self.above_cents is None:
            return True
        return amount_cents is not None and amount_cents > self.above_cents

    def frozen_for(self, amount_cents: int | None) -> dict[str, Any]:
        """The record a proposal of this amount keeps: the rule, and what it asks of it (where
        the rule does not apply, one approval by anyone permitted, the requester included)."""
        applies = self.applies_to(amount_cents)
        return {
            "rule": self.to_json(),
            "amount_cents": amount_cents,
            "approvals_required": self.approvals if applies else 1,
            "requester_may_approve": self.requester_may_approve or not applies,
            # Only when it asks for one: records frozen before passkeys keep their shape.
            **({"require_passkey": True} if self.require_passkey and applies else {}),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "approvals": self.approvals,
            "above_cents": self.above_cents,
            "requester_may_approve": self.requester_may_approve,
            **({"require_passkey": True} if self.require_passkey else {}),
        }


def same_rule(rule: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """Whether a frozen record's ``rule`` (``to_json``) is the policy an organization holds
    as ``entry`` (``Organization.policies``' value, which also says who set it)."""
    same: bool = (
        rule["approvals"] == entry["approvals"]
        and rule["above_cents"] == entry["above_cents"]
        and rule["requester_may_approve"] == entry["requester_may_approve"]
        # A rule keeps ``require_passkey`` only when True; an entry set before passkeys has none.
        and rule.get("require_passkey", False) == entry.get("require_passkey", False)
    )
    return same


def asks_more(now: Mapping[str, Any], frozen: Mapping[str, Any] | None) -> bool:
    """Whether ``now``, what the policy in force asks of a proposal (``frozen_for``'s record
    for its amount), asks more of whoever approves than ``frozen``, the record it was frozen
    with (None: one approval by anyone permitted): more approvals, or a passkey on each
    approval. Asking less, or the same, is not more: the frozen rule stands. Barring the
    requester asks nothing more of anyone else (``bars_requester``)."""
    before = frozen or {}
    return int(now["approvals_required"]) > int(before.get("approvals_required", 1)) or (
        bool(now.get("require_passkey")) and not before.get("require_passkey")
    )


def bars_requester(now: Mapping[str, Any], frozen: Mapping[str, Any] | None) -> bool:
    """Whether ``now`` bars the requester from approving a proposal that ``frozen`` let them
    approve: their own approval is refused, and an earlier one no longer counts."""
    return not now["requester_may_approve"] and bool(
        (frozen or {}).get("requester_may_approve", True)
    )
