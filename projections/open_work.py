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
        uuid = event.originator_id
        number = uuid.int
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        # proposal_id, status, expires_at, claimed_at: in column order (``_Batch.end``)
        batch.rows[number] = batch.changed[number] = [
            aggregate_text(uuid),
            "pending",
            event.expires_at,
            None,
        ]

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        uuid = event.originator_id
        number = uuid.int
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        row = batch.rows.get(number) or batch.row(uuid)
        if row is not None:  # a missing row stays missing, as ``rows.update`` leaves it
            row[1] = "executing"  # status
            row[3] = event.claimed_at  # claimed_at
            batch.changed[number] = row

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        uuid = event.originator_id
        number = uuid.int
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        row = batch.rows.get(number) or batch.row(uuid)
        if row is not None:
            row[1] = "reconciling"  # status
            batch.changed[number] = row

    @handles(
        "Proposal.Succeeded",
        "Proposal.RevisionRequired",
        "Proposal.Failed",
        "Proposal.Declined",
        "Proposal.Expired",
        "Proposal.Superseded",
    )
    def closed(self, event: Any, position: int, rows: Rows) -> None:
        uuid = event.originator_id
        number = uuid.int
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        row = batch.rows.get(number)
        batch.rows[number] = None  # deleted, whether it was there or not: by its key's text
        batch.changed[number] = aggregate_text(uuid) if row is None else row[0]

    def end_batch(self, rows: Rows) -> None:
        """Each proposal the batch changed is written once, in the order it first changed
        it: its row as the batch left it, or a delete."""
        batch = rows.batch.pop(self, None)
        if batch is not None:
            batch.end()


class _Batch:
    """One batch's open rows, by the number of the proposal's UUID (``uuid.int``, the event's
    ``originator_id``: one lookup of an integer, where ``aggregate_text`` and a lookup by
    text cost about 1,400 instructions more, callgrind): each as a list of its values in
    column order (None: deleted or not there), read at most once (a copy: the stored row is
    read-only); ``changed`` holds what to write, in the order the batch first changed them,
    which is the order a put, update or delete an event wrote them in: a row (a list) to
    put, or the text of the key of a row to delete."""

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
        self.rows: dict[int, list[Any] | None] = {}
        self.changed: dict[int, list[Any] | str] = {}

    def row(self, uuid: Any) -> list[Any] | None:
        """The open row of the proposal ``uuid`` as this batch has it (None: none), read
        first if the batch has not; handlers look in ``rows`` first
        (``rows.get(uuid.int) or row(uuid)``): no call for a row the batch has."""
        number = uuid.int
        found = self.rows.get(number, _UNREAD)
        if found is _UNREAD:
            stored = self.source.get(OPEN, (aggregate_text(uuid),))
            found = self.rows[number] = None if stored is None else [stored[c] for c in _COLUMNS]
        return found  # type: ignore[no-any-return]

    def end(self) -> None:
        source = self.source
        put = values_putter(source, OpenWork.tables)
        for row in self.changed.values():
            if type(row) is str:  # the key of a row deleted
                source.delete(OPEN, (row,))
            else:
                put(OPEN, tuple(row))


_UNREAD: Any = object()
_COLUMNS = tuple(OpenWork.tables[0].column_names())
