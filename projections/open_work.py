"""Open work for the operators' sweepers: proposals that may still need expiry or reconciling.

A proposal leaves this table as soon as it has a final outcome, so the expiry sweeper and the
reconciler read a handful of rows instead of scanning the whole log. A superseded proposal has
one (nothing can approve it, so nothing needs to expire it); a proposal with some of the
approvals its quorum needs is still pending, and still expires if the rest never come.
"""

from __future__ import annotations

from typing import Any

from countersign.projections.base import (
    Column,
    Projection,
    Rows,
    Table,
    aggregate_text,
    handles,
    values_putter,
)

OPEN = "open_proposals"


class OpenWork(Projection):
    """Pending, executing and reconciling proposals, with the times the sweepers need.

    A batch folds each proposal's events before writing (``_Batch``): a lifecycle that opens
    and closes within one batch (proposed, claimed, succeeded) comes to one delete, as the
    put, update and delete one by one left it, without the row's dict being put, checked and
    updated on the way."""

    name = "open_work"
    version = 2  # superseded proposals leave
    tables = (
        Table(
            OPEN,
            (
                Column("proposal_id"),
                Column("status"),
                Column("expires_at", "time"),
                Column("claimed_at", "time"),
            ),
            key=("proposal_id",),
            indexes=(("status", "expires_at"), ("status", "claimed_at")),
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        key = aggregate_text(event.originator_id)
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        # proposal_id, status, expires_at, claimed_at: in column order (``_Batch.end``)
        batch.rows[key] = batch.changed[key] = [key, "pending", event.expires_at, None]

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        key = aggregate_text(event.originator_id)
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        row = batch.row(key)
        if row is not None:  # a missing row stays missing, as ``rows.update`` leaves it
            row[1] = "executing"  # status
            row[3] = event.claimed_at  # claimed_at
            batch.changed[key] = row

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        key = aggregate_text(event.originator_id)
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        row = batch.row(key)
        if row is not None:
            row[1] = "reconciling"  # status
            batch.changed[key] = row

    @handles(
        "Proposal.Succeeded",
        "Proposal.RevisionRequired",
        "Proposal.Failed",
        "Proposal.Declined",
        "Proposal.Expired",
        "Proposal.Superseded",
    )
    def closed(self, event: Any, position: int, rows: Rows) -> None:
        key = aggregate_text(event.originator_id)
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        batch.rows[key] = batch.changed[key] = None  # deleted, whether it was there or not

    def end_batch(self, rows: Rows) -> None:
        """Each proposal the batch changed is written once, in the order it first changed
        it: its row as the batch left it, or a delete."""
        batch = rows.batch.pop(self, None)
        if batch is not None:
            batch.end()


class _Batch:
    """One batch's open rows, by proposal id: each as a list of its values in column order
    (None: deleted or not there), read at most once (a copy: the stored row is read-only);
    ``changed`` holds those to write, in the order the batch first changed them, which is
    the order a put, update or delete an event wrote them in."""

    __slots__ = ("changed", "rows", "source")

    @staticmethod
    def of(projection: object, rows: Rows) -> _Batch:
        """The projection's open rows of the batch ``rows`` belongs to, made at its first event."""
        try:
            batch: _Batch = rows.batch[projection]
        except KeyError:
            batch = rows.batch[projection] = _Batch(rows)
        return batch

    def __init__(self, source: Rows) -> None:
        self.source = source
        self.rows: dict[str, list[Any] | None] = {}
        self.changed: dict[str, list[Any] | None] = {}

    def row(self, key: str) -> list[Any] | None:
        found = self.rows.get(key, _UNREAD)
        if found is _UNREAD:
            stored = self.source.get(OPEN, (key,))
            found = self.rows[key] = None if stored is None else [stored[c] for c in _COLUMNS]
        return found  # type: ignore[no-any-return]

    def end(self) -> None:
        source = self.source
        put = values_putter(source, OpenWork.tables)
        for key, row in self.changed.items():
            if row is None:
                source.delete(OPEN, (key,))
            else:
                put(OPEN, tuple(row))


_UNREAD: Any = object()
_COLUMNS = tuple(OpenWork.tables[0].column_names())
