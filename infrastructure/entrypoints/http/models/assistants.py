"""What the assistants' routes take and answer: a manager's message, the turn it starts, the
inbox."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from countersign.application.assistant.conversations import MAX_TURNS
from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.contracts.problems import RequestValueError
from countersign.domain.visible_text import NOTHING_WRITTEN, blank
from countersign.infrastructure.entrypoints.http.models import Body
from countersign.infrastructure.entrypoints.http.models.proposals import ProposalCreatedOut
from pydantic import AfterValidator, BaseModel, Field

SECTIONS = ", ".join(ASSISTANTS) + " (and an enabled plug-in's)"
"""Every section with an assistant, as the API names them."""
SECTION_PATTERN = "^[a-z][a-z0-9_]{0,39}$"
"""A section's name: whether it has an assistant is ``KNOWN_SECTION``'s to say."""


def _known_section(section: str | None) -> str | None:
    if section is not None and section not in ASSISTANTS:
        raise ValueError("unknown section")
    return section


KNOWN_SECTION = AfterValidator(_known_section)
"""A section with an assistant, read from the registry when a request comes in: a plug-in's
section (installed after this module is imported) is taken like countersign's own."""


def _written(message: str) -> str:
    if blank(message):
        raise RequestValueError(NOTHING_WRITTEN)
    return message


class MessageIn(Body):
    """One manager message for a section assistant."""

    message: Annotated[str, AfterValidator(_written)] = Field(
        min_length=1,
        max_length=2000,
        description="What the manager wrote: not only spaces or invisible characters (422).",
    )
    interaction_id: str | None = Field(
        default=None,
        max_length=64,
        description="Continue this conversation (from an earlier answer); omit to start one. "
        f"A conversation holds at most {MAX_TURNS} turns: a message to a full one is refused "
        "(422 on interaction_id), nothing recorded; start a new one.",
    )
    language: Literal["en", "fr"] = Field(
        default="en",
        description="The language of the application's own words in the answer (its "
        "messages and what a refusal tells the manager): en or fr. A problem document "
        "answered instead (a 422, a 429 too-many-turns) is in English, as every problem "
        "the API answers; its type names it.",
    )


class TurnMessageOut(BaseModel):
    author: str
    text: str


class TurnOut(BaseModel):
    """What one assistant turn produced."""

    interaction_id: str
    ended: Literal[
        "proposal", "reply", "round_limit", "model_unavailable", "rate_limited", "held_for_people"
    ]
    messages: list[TurnMessageOut]
    proposal: ProposalCreatedOut | None
    model_calls: int
    context_chars: int
    app_seconds: float


class InboxItemOut(BaseModel):
    """One pending proposal as the inbox lists it (the browser view's row; the whole card,
    in the caller's language, is ``GET /api/v1/proposals/{id}``)."""

    proposal_id: str
    organization_id: str = Field(description="The club's id (the token's own).")
    section: str
    resource_id: str
    operation: str
    requested_by: str
    interaction_id: str = Field(
        description="The conversation it was made in, or an id of its own when it was "
        "proposed outside one (the API, MCP, the command line)."
    )
    status: str = Field(description="pending, for every proposal the inbox lists.")
    preview: dict[str, Any] = Field(
        description="The frozen preview, its fields in the contract's order (as the card's)."
    )
    proposed_at: datetime
    expires_at: datetime
    approved_by: str | None
    approved_at: datetime | None
    declined_by: str | None
    decline_note: str | None
    outcome: dict[str, Any] | None
    outcome_kind: str | None
    message_en: str | None = Field(description="The outcome's text in English.")
    message_fr: str | None = Field(description="The outcome's text in French.")
    updated_at: datetime
    version: int = Field(description="How many events its stream holds.")
    approvals: list[str] | None = Field(description="Who has approved it so far, in order.")
    approvals_required: int | None = Field(description="How many distinct people must.")
    revision_of: str | None
    superseded_by: str | None
    superseded_reason: str | None
    policy: dict[str, Any] | None = Field(
        description="The approval policy it was frozen under, as the card's."
    )
    approval_credentials: list[str] | None = Field(
        description="What each approver presented, as the card's."
    )
    no_longer_counting: list[dict[str, Any]] | None = Field(
        description="Approvals that no longer count towards the quorum, and why."
    )
    replaces: list[dict[str, Any]] | None = Field(
        default=None,
        description=(
            "The proposals it took the place of when it was made, each with its proposal_id "
            "and reason (replaced: the same thing proposed again; revised: an edit of it)."
        ),
    )
    amount_cents: int | None = Field(
        default=None,
        description=(
            "The money it moves, in cents of its preview's currency, as an approval "
            "policy's threshold reads it; null for an operation that moves none."
        ),
    )


class NotEnabledOut(BaseModel):
    """The club's pending proposals of operations not enabled on this server."""

    total: int = Field(
        description=(
            "How many pending, unexpired proposals of the club are of an operation not enabled "
            "here (its plug-in is not named in COUNTERSIGN_PLUGINS): nobody can approve or "
            "decline them (``operation_not_enabled``) until the plug-in is enabled again, and "
            "``items`` does not list them. They expire at their time otherwise."
        )
    )
    first_expires_at: datetime | None = Field(description="When the first of them expires.")


class InboxOut(BaseModel):
    """Pending, unexpired proposals, newest first."""

    items: list[InboxItemOut] = Field(description="One page of them.")
    page: int
    page_size: int
    total: int
    not_enabled: NotEnabledOut
