"""What a proposal's history route answers: every event of it, as stored, and the proposal as
it stood at a moment (the auditor's replay)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from countersign.infrastructure.entrypoints.http.models.proposals import UnverifiedOut
from pydantic import BaseModel, ConfigDict, Field


class HistoryEventOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    version: int
    type: str = Field(description="The event's class name (Approved): a plug-in's may share it.")
    event: str = Field(
        description=(
            "The event's stable name, to key by: proposal.<event> for countersign's "
            "(proposal.proposed, proposal.approved, proposal.succeeded...); a plug-in's "
            "begins with its plug-in's namespace (sample.invoice_tags.tagged). It names no "
            "module and stays the same when countersign's code moves."
        )
    )
    topic: str = Field(
        description=(
            "The stored event type, as the event store records it (module and class): kept "
            "for clients that read it before event existed; it may change when countersign's "
            "modules move, so key by event."
        )
    )
    at: datetime


class HistoryAsOfOut(BaseModel):
    """The proposal as it stood at ``as_of``: what the approver was shown, and what had
    happened by then."""

    version: int
    status: str
    preview: dict[str, Any]
    approved_by: str | None = Field(
        description="The approval that completed the quorum by then, or null."
    )
    approvals: list[str] = Field(description="Who had approved by then, in order.")
    approvals_required: int = Field(description="How many approvals its policy needed.")
    no_longer_counting: list[dict[str, Any]] = Field(
        description="Approvals that had stopped counting by then (approved_by, reason)."
    )
    outcome: dict[str, Any] | None


class HistoryOut(BaseModel):
    """Every event of one proposal, as stored (the auditor's replay)."""

    proposal_id: str
    events: list[HistoryEventOut]
    as_of: HistoryAsOfOut | None = None
    unverified: UnverifiedOut | None = Field(
        default=None,
        description=(
            "With seal keys configured: why its seals do not vouch for what is stored of it, "
            "as the card says it (event_version names the first event they do not); null "
            "when they do, or the server holds no keys."
        ),
    )
