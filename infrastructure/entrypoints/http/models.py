"""The API's request bodies and the documents it answers, as they appear in the OpenAPI schema.

Handlers answer the application's own report documents (``Report.to_json()``), the very
documents the CLI prints with ``--json``; these models describe them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.contracts import REGISTRY
from pydantic import BaseModel, ConfigDict, Field

SECTIONS = ", ".join(ASSISTANTS)
"""Every section with an assistant, as the API names them."""
SECTION_PATTERN = "^(" + "|".join(ASSISTANTS) + ")$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(_Body):
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


class ProposeIn(_Body):
    """A model-facing request to turn into a proposal."""

    operation: str = Field(
        max_length=100,
        description="The operation kind: " + ", ".join(sorted(REGISTRY)) + ".",
    )
    resource_id: str = Field(
        max_length=64, description="The order id or broadcast form id the operation applies to."
    )
    request: dict[str, Any] = Field(
        description=(
            "The operation's model-facing request (for a refund: payment, line_item, discount, "
            "destination). Validated by the operation's contract."
        )
    )


class DeclineIn(_Body):
    """An optional note for declining."""

    note: str | None = Field(default=None, max_length=500, description="Why, for the requester.")


class ProposalCreatedOut(BaseModel):
    """A validated request became a pending proposal."""

    proposal_id: str
    status: str
    operation: str
    preview: dict[str, Any] = Field(description="Exactly what approval will do.")
    expires_at: datetime


class ApprovalReportOut(BaseModel):
    """What an approve or decline command did: the CLI's ``approve --json`` document."""

    result: Literal["executed", "already_completed", "not_approvable", "declined"]
    proposal_id: str
    status: str | None
    outcome: dict[str, Any] | None = Field(
        description=(
            "kind: succeeded | needs_reconciliation | revision_required | terminal_failure."
        )
    )
    reason: str | None = Field(
        description="For not_approvable: not_pending, expired or in_progress."
    )
    message: str | None = Field(description="The application's text for the outcome.")


class ProposalCardOut(BaseModel):
    """Everything a reviewer sees about one proposal."""

    proposal_id: str
    operation: str
    section: str
    resource_id: str
    requested_by: str
    interaction_id: str
    status: str
    preview: dict[str, Any]
    expires_at: datetime
    approved_by: str | None
    approved_at: datetime | None
    declined_by: str | None
    outcome: dict[str, Any] | None
    message: str | None


class ProposalStatusOut(BaseModel):
    """Where an execution stands: the outcome's ``status_path`` serves this."""

    proposal_id: str
    status: str = Field(
        description=(
            "pending, executing, reconciling, succeeded, revision_required, failed, declined "
            "or expired."
        )
    )
    outcome_kind: str | None = Field(
        description="succeeded, needs_reconciliation, revision_required or terminal_failure."
    )
    reconciliation_pending: bool = Field(
        description="True while the external effect is uncertain and the reconciler owes an answer."
    )
    message: str | None = Field(description="The application's text for the outcome.")


class TurnMessageOut(BaseModel):
    author: str
    text: str


class TurnOut(BaseModel):
    """What one assistant turn produced."""

    interaction_id: str
    ended: Literal["proposal", "reply", "round_limit", "model_unavailable"]
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


class HistoryEventOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    version: int
    type: str
    at: datetime


class HistoryAsOfOut(BaseModel):
    version: int
    status: str
    preview: dict[str, Any]
    approved_by: str | None
    outcome: dict[str, Any] | None


class HistoryOut(BaseModel):
    """Every event of one proposal, as stored (the auditor's replay)."""

    proposal_id: str
    events: list[HistoryEventOut]
    as_of: HistoryAsOfOut | None = None


class WebhookIn(_Body):
    """An endpoint the organization's notifications are POSTed to."""

    url: str = Field(
        min_length=1,
        max_length=2000,
        description="An absolute https:// (or http://) URL, without credentials or #fragment.",
    )


class WebhookEndpointOut(BaseModel):
    endpoint_id: str
    url: str
    added_by: str = Field(description="Who registered it: a member's email, or operator.")


class WebhookAddedOut(BaseModel):
    """A registered endpoint and its signing secret, shown this once."""

    endpoint_id: str
    url: str
    organization: str
    secret: str = Field(
        description="The Standard Webhooks signing secret (whsec_...): verify each request's "
        "webhook-signature with it. Shown once."
    )


class WebhookListOut(BaseModel):
    items: list[WebhookEndpointOut]


class WebhookRemovedOut(BaseModel):
    endpoint_id: str
    removed: bool


class DeliveryAttemptOut(BaseModel):
    attempt: int
    started_at: datetime
    status_code: int | None = Field(description="The receiver's HTTP status (250: mail accepted).")
    latency_ms: int
    error_class: str | None = Field(description="Why no answer came (ConnectionRefusedError...).")
    outcome: Literal["delivered", "retry", "dead"]
    next_attempt_at: datetime | None


class DeliveryOut(BaseModel):
    """One notification to one target, and every attempt at it."""

    delivery_id: str
    event_id: str = Field(description="The notification's stable id (the webhook-id header).")
    type: str = Field(description="proposal.awaiting_approval, .needs_reconciliation or .failed.")
    proposal_id: str
    operation: str
    channel: Literal["webhook", "email"]
    target: str = Field(description="The endpoint id, or the recipient's address.")
    status: Literal["pending", "delivered", "dead"]
    attempts: int
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    last_error: str | None
    attempt_log: list[DeliveryAttemptOut]


class DeliveriesOut(BaseModel):
    items: list[DeliveryOut]


class RedeliveredOut(BaseModel):
    redelivered: list[str] = Field(description="The dead letters put back in line.")
