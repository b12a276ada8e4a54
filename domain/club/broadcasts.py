"""The organization's editable email broadcast form, and its sends.

Applying a draft never sends anything. Each applied draft is numbered on its form (1 for the
first draft applied; ``applied_from`` names the proposal that applied it); a send of it is
started for a proposal, with the idempotency key of its delivery request, and settles as sent
or failed. An applied draft is sent at most once,
ever: a second send is refused while one is pending or after one succeeded (a failed send
sent nothing, so the draft may be sent again).

Only the applied draft can be sent, so the form holds the sends of that draft and any still
pending (of an earlier one, waiting for the delivery service's answer). Applying a new draft
lets the settled sends of the earlier ones go: the form's state stays the size of one draft's
sends however many it has sent, so loading, copying and snapshotting it cost the same at the
ten-thousandth send as at the first. Every send stays in the form's events, which the audit
trail and the projections read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.domain.club.ids import stable_id
from countersign.domain.errors import BroadcastRuleError
from countersign.domain.uuids import id_text
from eventsourcing.domain import Aggregate, event


@dataclass(frozen=True)
class BroadcastSend:
    """One send of an applied draft, started for a proposal; pending until it settles."""

    proposal_id: str
    draft: int
    idempotency_key: str
    recipients: int
    status: str  # "pending" | "sent" | "failed"
    delivery_ref: str | None = None
    sent_by: str | None = None
    failure: str | None = None


class BroadcastForm(Aggregate):
    """The editable broadcast form a manager finishes and sends through the ordinary interface."""

    @staticmethod
    def create_id(organization_id: UUID) -> UUID:
        return stable_id("broadcast-form", organization_id)

    @event("Opened")
    def __init__(self, organization_id: UUID) -> None:
        self.organization_id = organization_id
        self.filters: dict[str, Any] = {}
        self.subject = ""
        self.body = ""
        self.applied_from: str | None = None
        self.drafts_applied = 0
        self._sends: dict[str, dict[str, Any]] = {}

    # -- reading ----------------------------------------------------------------------------

    @property
    def draft(self) -> int | None:
        """The applied draft's number on this form (1 for the first); None before any."""
        return self.drafts_applied or None

    @property
    def sends(self) -> list[BroadcastSend]:
        """The sends of the applied draft, and any still pending of an earlier one (the
        rest are in the form's events only)."""
        return [BroadcastSend(**entry) for entry in self._sends.values()]

    def send(self, proposal_id: UUID) -> BroadcastSend | None:
        entry = self._sends.get(str(proposal_id))
        return BroadcastSend(**entry) if entry else None

    def draft_sent(self, draft: int) -> bool:
        """Whether this draft was sent (a send of it succeeded)."""
        return any(s.draft == draft and s.status == "sent" for s in self.sends)

    def draft_sending(self, draft: int) -> bool:
        """Whether a send of this draft is pending: it may have been sent already."""
        return any(s.draft == draft and s.status == "pending" for s in self.sends)

    # -- commands ---------------------------------------------------------------------------

    def apply_draft(
        self, filters: dict[str, Any], subject: str, body: str, proposal_id: UUID
    ) -> None:
        self.trigger_event(
            self.DraftApplied,
            filters=filters,
            subject=subject,
            body=body,
            proposal_id=id_text(proposal_id),
        )

    def start_send(
        self, proposal_id: UUID, draft: int, idempotency_key: str, recipients: int
    ) -> None:
        """Record that the applied draft is being sent for this proposal. A proposal sends
        the draft it was frozen with, and only while that draft is the applied one
        (``check_sendable``): so once a new draft is applied, a proposal whose earlier send
        the form has let go can never send again (the send contract rechecks the draft)."""
        if str(proposal_id) in self._sends:
            raise BroadcastRuleError("a send already exists for this proposal")
        self.check_sendable(draft)
        self.trigger_event(
            self.SendStarted,
            proposal_id=str(proposal_id),
            draft=draft,
            idempotency_key=idempotency_key,
            recipients=recipients,
        )

    def settle_send(self, proposal_id: UUID, delivery_ref: str, sent_by: str) -> None:
        """Record that the delivery service sent it."""
        send = self.check_send_pending(proposal_id)
        self.trigger_event(
            self.SendSettled,
            proposal_id=send.proposal_id,
            delivery_ref=delivery_ref,
            sent_by=sent_by,
        )

    def fail_send(self, proposal_id: UUID, reason: str) -> None:
        """Record that the delivery service refused it: nothing was sent."""
        send = self.check_send_pending(proposal_id)
        self.trigger_event(self.SendFailed, proposal_id=send.proposal_id, reason=reason)

    # -- guards -----------------------------------------------------------------------------

    def check_sendable(self, draft: int) -> None:
        if self.draft is None or draft != self.draft:
            raise BroadcastRuleError("only the draft applied to the form can be sent")
        if self.draft_sent(draft):
            raise BroadcastRuleError("this draft has already been sent")
        if self.draft_sending(draft):
            raise BroadcastRuleError("a send of this draft is still settling")

    def check_send_pending(self, proposal_id: UUID) -> BroadcastSend:
        send = self.send(proposal_id)
        if send is None or send.status != "pending":
            raise BroadcastRuleError("no pending send for this proposal")
        return send

    # -- events (each applies itself: the library's explicit style, see domain/proposal_events.py)

    class DraftApplied(Aggregate.Event):
        filters: dict[str, Any]
        subject: str
        body: str
        proposal_id: str

        def apply(self, aggregate: BroadcastForm) -> None:
            aggregate.filters = self.filters
            aggregate.subject = self.subject
            aggregate.body = self.body
            aggregate.applied_from = self.proposal_id
            aggregate.drafts_applied += 1
            # The earlier drafts can no longer be sent: their settled sends decide nothing now.
            # (Kept as it is when every send is pending, most often none: the comprehension is
            # a call of its own.)
            for send in aggregate._sends.values():
                if send["status"] != "pending":
                    aggregate._sends = {
                        key: send
                        for key, send in aggregate._sends.items()
                        if send["status"] == "pending"
                    }
                    break

    class SendStarted(Aggregate.Event):
        proposal_id: str
        draft: int
        idempotency_key: str
        recipients: int

        def apply(self, aggregate: BroadcastForm) -> None:
            aggregate._sends[self.proposal_id] = {
                "proposal_id": self.proposal_id,
                "draft": self.draft,
                "idempotency_key": self.idempotency_key,
                "recipients": self.recipients,
                "status": "pending",
            }

    class SendSettled(Aggregate.Event):
        proposal_id: str
        delivery_ref: str
        sent_by: str

        def apply(self, aggregate: BroadcastForm) -> None:
            aggregate._sends[self.proposal_id].update(
                status="sent", delivery_ref=self.delivery_ref, sent_by=self.sent_by
            )

    class SendFailed(Aggregate.Event):
        proposal_id: str
        reason: str

        def apply(self, aggregate: BroadcastForm) -> None:
            aggregate._sends[self.proposal_id].update(status="failed", failure=self.reason)
