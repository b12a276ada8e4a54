"""What needs a manager's attention once a proposal is decided, until it no longer does.

A decided proposal needs attention while it is being reconciled (the provider owes an answer:
someone may have to tell the member), when it failed (someone gives support its reference),
and when it was not executed because a fact changed (someone may want a new proposal). It stops
needing attention when it settles, or, for a failure or a revision, once a newer proposal is
made in the same conversation: the manager followed it up. A proposal the manager declined
never needs attention: declining was that person's own decision, and nothing is owed to anyone.
Nor does a superseded one: a newer proposal, or an execution, has taken its place.
"""

from __future__ import annotations

from typing import Any

from countersign.projections.base import (
    Column,
    Projection,
    Rows,
    Table,
    aggregate_id,
    event_time,
    handles,
    id_text,
)

ITEMS = "attention_items"
THREADS = "attention_threads"

#: Outcomes that need attention until a newer proposal follows them in the conversation.
_FOLLOWED_UP_BY_A_NEW_PROPOSAL = frozenset({"failed", "revision_required"})


class Attention(Projection):
    """One row per proposal: its status, and whether it needs attention now (``open``)."""

    name = "attention"
    version = 2  # superseded proposals; "superseded" (by a newer one in the thread) renamed
    tables = (
        Table(
            ITEMS,
            (
                Column("proposal_id"),
                Column("organization_id"),
                Column("section"),
                Column("status"),
                Column("followed_up", "bool"),
                Column("open", "bool"),
                Column("since", "time"),
            ),
            key=("proposal_id",),
            indexes=(("organization_id", "open", "since"),),
        ),
        Table(
            THREADS,
            (Column("organization_id"), Column("interaction_id"), Column("proposal_id")),
            key=("organization_id", "interaction_id"),
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        organization_id = id_text(event.organization_id)
        interaction_id = str(event.interaction_id)
        proposal_id = aggregate_id(event)
        earlier = rows.get(THREADS, (organization_id, interaction_id))
        if earlier is not None:
            item = rows.get(ITEMS, (earlier["proposal_id"],))
            if item is not None:
                self._set(rows, item, item["status"], followed_up=True)
        rows.put(
            THREADS,
            {
                "organization_id": organization_id,
                "interaction_id": interaction_id,
                "proposal_id": proposal_id,
            },
        )
        rows.put(
            ITEMS,
            {
                "proposal_id": proposal_id,
                "organization_id": organization_id,
                "section": event.section,
                "status": "pending",
                "followed_up": False,
                "open": False,
                "since": event_time(event),
            },
        )

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "executing")

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "reconciling")

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "failed")

    @handles("Proposal.RevisionRequired")
    def revision_required(self, event: Any, position: int, rows: Rows) -> None:
        item = rows.get(ITEMS, (aggregate_id(event),))
        if item is not None and item["status"] != "declined":  # a decline's outcome
            self._set(rows, item, "revision_required", since=event_time(event))

    @handles("Proposal.Succeeded")
    def succeeded(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "succeeded")

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "declined")

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "expired")

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event, rows, "superseded")

    def _status(self, event: Any, rows: Rows, status: str) -> None:
        item = rows.get(ITEMS, (aggregate_id(event),))
        if item is not None:
            self._set(rows, item, status, since=event_time(event))

    @staticmethod
    def _set(
        rows: Rows, item: Any, status: str, *, followed_up: bool | None = None, **at: Any
    ) -> None:
        if followed_up is None:
            followed_up = bool(item["followed_up"])
        needs_attention = status == "reconciling" or (
            status in _FOLLOWED_UP_BY_A_NEW_PROPOSAL and not followed_up
        )
        rows.update(
            ITEMS,
            (item["proposal_id"],),
            status=status,
            followed_up=followed_up,
            open=needs_attention,
            **at,
        )
