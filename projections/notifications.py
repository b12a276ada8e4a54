"""The notifications outbox: what people must be told, one row per notification.

A proposal awaiting someone (``Proposed``) and an outcome that needs a person
(``Reconciling``: someone must check with the provider; ``Failed``: someone gives support its
reference) each make one row. Nothing is sent in the commit that records the event: a sender
(``infrastructure/notifications``) reads this table afterwards and keeps what it delivered in
operational tables of its own. Delivery state never lives here, so a rebuild gives back the
very same rows, and the same event ids, without resending anything.

The club's webhook endpoints (``Organization.WebhookEndpointAdded/Removed``) are kept here too:
where the sender POSTs. Their signing secrets are not events and not in these tables.
"""

from __future__ import annotations

from datetime import UTC
from hashlib import sha1
from typing import Any
from uuid import UUID

from countersign.domain.notifications import AWAITING_APPROVAL, FAILED, NEEDS_RECONCILIATION
from countersign.projections.base import (
    Column,
    KeptRows,
    Projection,
    Rows,
    Table,
    aggregate_id,
    aggregate_text,
    event_time,
    handles,
    id_text,
)

NOTIFICATIONS = "notifications"
PROPOSALS = "notification_proposals"
ENDPOINTS = "webhook_endpoints"

_NAMESPACE = UUID("0b8f3c52-91d4-4e0a-a7c4-5d2f7f0d6e13")


#: SHA-1 having read the namespace: each id's hash is a copy of it, fed the name.
_NAMESPACE_SHA1 = sha1(_NAMESPACE.bytes, usedforsecurity=False)


def notification_id(proposal_id: str, version: int) -> str:
    """The stable event id of the notification a proposal's event makes: the same on every
    rebuild, every retry and every target, so receivers can deduplicate by it.

    ``msg_`` and the hex of ``uuid5(_NAMESPACE, f"{proposal_id}/{version}")``, made as
    ``uuid.uuid5`` makes it (SHA-1 of the namespace and the name, version and variant bits
    set) without building the UUID object: a third of the time. The hash of the namespace
    is copied, not made again: a new hash object looks its algorithm up in OpenSSL each
    time, which a copy does not (about a third of this function's time)."""
    hashed = _NAMESPACE_SHA1.copy()
    hashed.update(f"{proposal_id}/{version}".encode())
    digest = bytearray(hashed.digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    return "msg_" + digest.hex()


class Notifications(Projection):
    """The outbox (``notifications``), what it needs to know of each proposal, and the clubs'
    webhook endpoints."""

    name = "notifications"
    #: 2: an approval that no longer counts leaves ``approvers``; 3: ``requested_through``,
    #: what the requester presented (an agent token's name), which the e-mail names.
    version = 3
    tables = (
        Table(
            NOTIFICATIONS,
            (
                Column("event_id"),
                Column("position", "int"),
                Column("organization_id"),
                Column("proposal_id"),
                Column("operation"),
                Column("section"),
                Column("reason"),
                Column("requester"),
                Column("approvers", "json"),
                Column("occurred_at", "time"),
                Column("requested_through"),
            ),
            key=("event_id",),
            indexes=(("position",), ("organization_id", "occurred_at")),
            append_only=True,
        ),
        Table(
            PROPOSALS,
            (
                Column("proposal_id"),
                Column("organization_id"),
                Column("operation"),
                Column("section"),
                Column("requester"),
                Column("approvers", "json"),
                Column("requested_through"),
            ),
            key=("proposal_id",),
        ),
        Table(
            ENDPOINTS,
            (
                Column("endpoint_id"),
                Column("organization_id"),
                Column("url"),
                Column("added_by"),
                Column("added_at", "time"),
                Column("removed_at", "time"),
                Column("active", "bool"),
            ),
            key=("endpoint_id",),
            indexes=(("organization_id", "active"),),
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        key = aggregate_text(event.originator_id)
        proposal = {
            "proposal_id": key,
            "organization_id": id_text(event.organization_id),
            "operation": event.kind,
            "section": str(event.section),
            "requester": event.requested_by,
            "approvers": [],
            # ``person``, ``assistant``, ``agent_token:<name>``...; absent (None) from a
            # proposal recorded before credentials were.
            "requested_through": getattr(event, "requested_through", None),
        }
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        batch.kept[key] = batch.changed[key] = proposal  # put at the batch's end
        self._notify(
            position, rows, proposal, AWAITING_APPROVAL, event.originator_version, event.timestamp
        )

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        batch, key = (
            (rows.batch.get(self) or _Batch.of(self, rows)),
            aggregate_text(event.originator_id),
        )
        proposal = batch.proposal(key)
        approved_by = event.approved_by
        if proposal is not None and approved_by not in proposal["approvers"]:
            # A new list, never changed in place: a row read from an earlier batch shares
            # it with that batch's rows, which may still be on their way to the database.
            proposal["approvers"] = [*proposal["approvers"], approved_by]
            batch.changed[key] = proposal

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        """An approval the quorum recheck no longer counts: its approver is not told about
        the outcome as one of its approvers (unless they approve again)."""
        batch, key = (
            (rows.batch.get(self) or _Batch.of(self, rows)),
            aggregate_text(event.originator_id),
        )
        proposal = batch.proposal(key)
        if proposal is not None and event.approved_by in proposal["approvers"]:
            proposal["approvers"] = [a for a in proposal["approvers"] if a != event.approved_by]
            batch.changed[key] = proposal

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        proposal = (rows.batch.get(self) or _Batch.of(self, rows)).proposal(
            aggregate_text(event.originator_id)
        )
        if proposal is not None:
            self._notify(
                position,
                rows,
                proposal,
                NEEDS_RECONCILIATION,
                event.originator_version,
                event.timestamp,
            )

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        proposal = (rows.batch.get(self) or _Batch.of(self, rows)).proposal(
            aggregate_text(event.originator_id)
        )
        if proposal is not None:
            self._notify(
                position, rows, proposal, FAILED, event.originator_version, event.timestamp
            )

    def end_batch(self, rows: Rows) -> None:
        """The proposals the batch put or changed are put, each once, in the order it first
        had them."""
        _Batch.end(self, rows)

    @handles("Organization.WebhookEndpointAdded")
    def endpoint_added(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            ENDPOINTS,
            {
                "endpoint_id": event.endpoint_id,
                "organization_id": aggregate_id(event),
                "url": event.url,
                "added_by": event.added_by,
                "added_at": event_time(event),
                "removed_at": None,
                "active": True,
            },
        )

    @handles("Organization.WebhookEndpointRemoved")
    def endpoint_removed(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(ENDPOINTS, (event.endpoint_id,), removed_at=event_time(event), active=False)

    @staticmethod
    def _notify(
        position: int, rows: Rows, proposal: Any, reason: str, version: int, at: Any
    ) -> None:
        """``version`` and ``at``: the event's ``originator_version`` and ``timestamp``, read by
        the handler (at its line the read is specialised for its event class: see
        ``base.aggregate_text``)."""
        # As its values in column order (``Rows.put_values``): an outbox row is put once and
        # never read back here, so no dict is made of it.
        rows.put_values(
            NOTIFICATIONS,
            (
                notification_id(proposal["proposal_id"], version),  # event_id
                position,
                proposal["organization_id"],
                proposal["proposal_id"],
                proposal["operation"],
                proposal["section"],
                reason,
                proposal["requester"],
                list(proposal["approvers"]),  # approvers
                at if at.tzinfo is UTC else at.astimezone(UTC),  # occurred_at
                proposal["requested_through"],
            ),
        )


class _Batch(KeptRows):
    """The ``notification_proposals`` rows one batch has put or read (``KeptRows``): an
    approval changes one, an outcome reads it."""

    __slots__ = ()
    table = PROPOSALS
    shape = Notifications.tables[1]
    proposal = KeptRows.row
