"""What the approval policies' routes take and answer."""

from __future__ import annotations

from countersign.domain.approval_policy import MAX_APPROVALS
from countersign.infrastructure.entrypoints.http.models import Body
from pydantic import BaseModel, Field


class PolicyRuleOut(BaseModel):
    """An approval policy: how many distinct people approve an operation's proposals."""

    operation: str = Field(description="The operation kind it governs.")
    approvals: int = Field(description="How many distinct people must approve.")
    above_cents: int | None = Field(
        description=(
            "It applies to proposals whose amount is above this, in cents (null: to every "
            "proposal; an operation that moves no money is covered only without a threshold)."
        )
    )
    requester_may_approve: bool = Field(
        description="Whether the person who requested a proposal may approve it."
    )
    require_passkey: bool = Field(
        default=False,
        description="Whether each approval must be signed with the approver's passkey.",
    )


class PolicyIn(Body):
    """The approval policy to put in force for an operation's new proposals."""

    approvals: int = Field(
        strict=True,
        ge=1,
        le=MAX_APPROVALS,
        description=f"How many distinct people must approve (1 to {MAX_APPROVALS}).",
    )
    above_cents: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=10**15,
        description=(
            "Only proposals above this amount in cents (null: every proposal; omitted: as "
            "the policy in force has it)."
        ),
    )
    requester_may_approve: bool | None = Field(
        default=None,
        strict=True,
        description=(
            "Whether the person who requested a proposal may approve it (omitted or null: "
            "as the policy in force has it)."
        ),
    )
    require_passkey: bool | None = Field(
        default=None,
        strict=True,
        description=(
            "Whether each approval (above above_cents, like the quorum) must be signed with "
            "the approver's passkey, bound to the proposal's contract digest (omitted: as the "
            "policy in force asks)."
        ),
    )


class PolicyOut(PolicyRuleOut):
    """One operation's policy in force."""

    set_by: str | None = Field(
        description=(
            "Who set it: a member's email, 'operator' (the command line), 'seed', or null "
            "where none was set (one approval by anyone permitted)."
        )
    )


class PoliciesOut(BaseModel):
    """Every operation's approval policy in force in the token's organization."""

    policies: list[PolicyOut]


class PolicySetOut(PolicyRuleOut):
    """The policy now in force for the operation's new proposals."""

    changed: bool = Field(description="False when the same policy was already in force.")
