"""What needs a manager's attention once a proposal is decided, until it no longer does.

A decided proposal needs attention while it is being reconciled (the provider owes an answer:
someone may have to tell the member), when it failed (someone gives support its reference),
and when it was not executed because a fact changed (someone may want a new proposal). It stops
needing attention when it settles, or, for a failure or a revision, once a newer proposal
follows it up: one made in the same conversation, or one for the same thing (the same operation
on the same record and subject: the ``PendingSlot`` its freezing holds), whoever made it and
wherever (a manager who follows a not-executed proposal's "Ask the assistant for a new
proposal" starts a conversation of their own). A proposal the manager declined
never needs attention: declining was that person's own decision, and nothing is owed to anyone.
Nor does a superseded one: a newer proposal, or an execution, has taken its place. Nor does
one not executed because what it asked for already holds (its outcome says ``already_so``:
the same removal approved twice, in either order): nothing is owed, nothing is left to do.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from countersign.domain.outcomes import is_already_so
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
    utc,
)

ITEMS = "attention_items"
THREADS = "attention_threads"
SLOTS = "attention_slots"

#: Outcomes that need attention until a newer proposal follows them up: one made in the same
#: conversation, or one for the same thing (its pending slot), wherever it was made.
_FOLLOWED_UP_BY_A_NEW_PROPOSAL = frozenset({"failed", "revision_required"})


class Attention(Projection):
    """One row per proposal: its status, and whether it needs attention now (``open``)."""

    name = "attention"
    # 2: superseded proposals; "superseded" (by a newer one in the thread) renamed. 3: a newer
    # proposal for the same thing follows one up, in whatever conversation. 4: a revision
    # required because what it asked for already holds ("already_so") needs none.
    version = 4
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
        Table(
            SLOTS,
            (Column("slot_id"), Column("kind"), Column("subject"), Column("proposal_id")),
            key=("slot_id", "kind", "subject"),
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        organization_id = id_text(event.organization_id)
        interaction_id = str(event.interaction_id)
        uuid = event.originator_id
        proposal_id = aggregate_text(uuid)
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        batch.texts[uuid.int] = proposal_id
        earlier = rows.get(THREADS, (organization_id, interaction_id))
        if earlier is not None:
            item = batch.item(earlier["proposal_id"])
            if item is not None:
                _set(item, item["status"], True)
                batch.changed[earlier["proposal_id"]] = item
        rows.put(
            THREADS,
            {
                "organization_id": organization_id,
                "interaction_id": interaction_id,
                "proposal_id": proposal_id,
            },
        )
        batch.kept[proposal_id] = batch.changed[proposal_id] = {
            "proposal_id": proposal_id,
            "organization_id": organization_id,
            "section": event.section,
            "status": "pending",
            "followed_up": False,
            "open": False,
            "since": utc(event.timestamp),
        }

    @handles("PendingSlot.Held")
    def held(self, event: Any, position: int, rows: Rows) -> None:
        """A proposal is now the latest for its operation and subject of a record: the one it
        follows, if any, is followed up (``PendingSlot.Held`` is in the new proposal's
        commit)."""
        slot_id, proposal_id = aggregate_id(event), id_text(event.proposal_id)
        earlier = rows.get(SLOTS, (slot_id, event.kind, event.subject))
        if earlier is not None and earlier["proposal_id"] != proposal_id:
            batch = rows.batch.get(self) or _Batch.of(self, rows)
            item = batch.item(earlier["proposal_id"])
            if item is not None and not item["followed_up"]:
                _set(item, item["status"], True)
                batch.changed[earlier["proposal_id"]] = item
        rows.put(
            SLOTS,
            {
                "slot_id": slot_id,
                "kind": event.kind,
                "subject": event.subject,
                "proposal_id": proposal_id,
            },
        )

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "executing")

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "reconciling")

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "failed")

    @handles("Proposal.RevisionRequired")
    def revision_required(self, event: Any, position: int, rows: Rows) -> None:
        batch, key = (rows.batch.get(self) or _Batch.of(self, rows)), aggregate_id(event)
        item = batch.item(key)
        if item is not None and item["status"] != "declined":  # a decline's outcome
            status = "already_so" if is_already_so(event.outcome) else "revision_required"
            _set(item, status, None, event_time(event))
            batch.changed[key] = item

    @handles("Proposal.Succeeded")
    def succeeded(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "succeeded")

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "declined")

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "expired")

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        self._status(event.originator_id, event.timestamp, rows, "superseded")

    def _status(self, uuid: Any, at: Any, rows: Rows, status: str) -> None:
        """The item of the proposal ``uuid`` takes ``status`` at ``at`` in UTC (the event's
        ``originator_id`` and ``timestamp``, read at the handler's line: see
        ``base.aggregate_text``)."""
        try:
            batch: _Batch = rows.batch[self]
        except KeyError:
            batch = rows.batch.get(self) or _Batch.of(self, rows)
        key = batch.texts.get(uuid.int) or aggregate_text(uuid)
        item = batch.item(key)
        if item is not None:
            _set(item, status, None, at if at.tzinfo is UTC else at.astimezone(UTC))
            batch.changed[key] = item

    def end_batch(self, rows: Rows) -> None:
        """The items the batch changed are put, each once, in the order it first had them."""
        _Batch.end(self, rows)


def _set(item: dict[str, Any], status: str, followed_up: bool | None, since: Any = None) -> None:
    """The item's new status and whether it needs attention now; ``followed_up``: None
    leaves it as it was; ``since``: None leaves it as it was."""
    if followed_up is None:
        followed_up = bool(item["followed_up"])
    item["status"] = status
    item["followed_up"] = followed_up
    item["open"] = status == "reconciling" or (
        status in _FOLLOWED_UP_BY_A_NEW_PROPOSAL and not followed_up
    )
    if since is not None:
        item["since"] = since


class _Batch(KeptRows):
    """The ``attention_items`` rows one batch has put or read (``KeptRows``): an item
    changes at its proposal's claim and outcome."""

    __slots__ = ()
    table = ITEMS
    shape = Attention.tables[0]
    item = KeptRows.row
