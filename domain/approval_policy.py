"""Separation of duties and quorum: how many distinct people must approve an operation.

An organization sets one policy per operation (``Organization.set_approval_policy``, an
``ApprovalPolicySet`` event). A proposal is judged by the policy in force when it was frozen:
``ApprovalPolicy.frozen_for`` gives the JSON-ready record stored in its ``Proposed`` event and
shown on its card, so a later change of policy never changes what an open proposal needs.
"""

from __future__ import annotations

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
