"""What the assistants' routes take and answer: a manager's message, the turn it starts, the
inbox."""

from __future__ import annotations

from typing import Any, Literal

from countersign.application.assistant.sections import ASSISTANTS
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


class MessageIn(Body):
    """One manager message for a section assistant."""

    message: str = Field(min_length=1, max_length=2000, description="What the manager wrote.")
    interaction_id: str | None = Field(
        default=None,
        max_length=64,
        description="Continue this conversation (from an earlier answer); omit to start one.",
    )
    language: Literal["en", "fr"] = Field(
        default="en",
        description="The language of the application's own words in the answer (its "
        "messages and what a refusal tells the manager): en or fr.",
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


class InboxOut(BaseModel):
    """Pending, unexpired proposals, newest first."""

    items: list[dict[str, Any]] = Field(
        description="Proposal cards as the browser view holds them."
    )
    page: int
    page_size: int
    total: int
