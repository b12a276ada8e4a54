"""What the webhooks' routes take and answer: endpoints, their deliveries, redeliveries."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from countersign.infrastructure.entrypoints.http.models import Body
from pydantic import BaseModel, Field


class WebhookIn(Body):
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
    result: str = Field(
        description=(
            "How it went: 'delivered', 'failed: the endpoint answered 500',"
            " 'failed: could not connect', 'failed: the endpoint was removed' or 'not sent: the"
            " proposal no longer awaits approval'."
        )
    )
    result_key: Literal["delivered", "answered", "could_not_connect", "endpoint_removed", "skipped"]
    outcome: Literal["delivered", "retry", "dead", "skipped"]
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
    status: Literal["pending", "delivered", "dead", "skipped"] = Field(
        description="skipped: not sent, the proposal no longer awaited approval when it was due."
    )
    attempts: int
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    last_error: str | None = Field(description="The last attempt's result, unless delivered.")
    endpoint_removed: bool = Field(
        description="A webhook's endpoint was removed since: it is not tried again, and a dead "
        "letter of it is not redelivered (409 rejected; all of them: skipped)."
    )
    attempt_log: list[DeliveryAttemptOut]


class DeliveriesOut(BaseModel):
    items: list[DeliveryOut]
    next_before: str | None = Field(
        description="Where the next page starts (pass it as ?before=), or null after the last "
        "page: a full page's last delivery id. Deliveries made meanwhile do not shift it."
    )


class RedeliveredOut(BaseModel):
    redelivered: list[str] = Field(description="The dead letters put back in line.")
