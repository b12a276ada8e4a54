"""Open work folds a batch's events of each proposal before writing (issue 27, s24-handlers):
what it writes at the batch's end is what a put, an update and a delete an event left, in the
order they first wrote each proposal (the golden digests of ``tests/test_handler_rows.py``
check the rows rebuilt in batches of 1,000 and of 2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from uuid import uuid4

from countersign.projections.open_work import OPEN, OpenWork

AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


class _Rows:
    """The ``Rows`` port over a dict of stored rows; ``writes`` lists what was written, in
    order: ("put", row) or ("delete", key)."""

    def __init__(self, stored: dict[tuple[Any, ...], dict[str, Any]] | None = None) -> None:
        self.stored = dict(stored or {})
        self.writes: list[tuple[str, Any]] = []
        self.batch: dict[Any, Any] = {}

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        assert table == OPEN
        row = self.stored.get(key)
        return None if row is None else dict(row)

    def put(self, table: str, row: dict[str, Any]) -> None:
        assert table == OPEN
        self.stored[(row["proposal_id"],)] = row
        self.writes.append(("put", row))

    def update(self, table: str, key: tuple[Any, ...], **changes: Any) -> None:
        raise AssertionError("open rows are changed in the batch and written once")

    def delete(self, table: str, key: tuple[Any, ...]) -> None:
        assert table == OPEN
        self.stored.pop(key, None)
        self.writes.append(("delete", key))


def _event(name: str, proposal: Any, **fields: Any) -> Any:
    return type(name, (SimpleNamespace,), {})(originator_id=proposal, timestamp=AT, **fields)


def test_a_lifecycle_within_one_batch_comes_to_one_delete() -> None:
    work, first, second = OpenWork(), uuid4(), uuid4()
    rows = _Rows()
    work.proposed(_event("Proposed", first, expires_at=AT + timedelta(days=1)), 1, rows)
    work.proposed(_event("Proposed", second, expires_at=AT + timedelta(days=2)), 2, rows)
    work.claimed(_event("Claimed", first, claimed_at=AT), 3, rows)
    work.closed(_event("Succeeded", first), 4, rows)
    work.reconciling(_event("Reconciling", first), 5, rows)  # closed: stays closed
    assert rows.writes == []
    work.end_batch(rows)

    assert rows.writes == [
        ("delete", (str(first),)),
        (
            "put",
            {
                "proposal_id": str(second),
                "status": "pending",
                "expires_at": AT + timedelta(days=2),
                "claimed_at": None,
            },
        ),
    ]


def test_a_row_of_an_earlier_batch_is_read_changed_and_put_again() -> None:
    work, proposal = OpenWork(), uuid4()
    earlier = _Rows()
    work.proposed(_event("Proposed", proposal, expires_at=AT), 1, earlier)
    work.end_batch(earlier)
    stored = dict(earlier.stored[(str(proposal),)])

    rows = _Rows(earlier.stored)
    work.claimed(_event("Claimed", proposal, claimed_at=AT), 2, rows)
    work.reconciling(_event("Reconciling", proposal), 3, rows)
    work.end_batch(rows)

    assert rows.writes == [("put", {**stored, "status": "reconciling", "claimed_at": AT})]
    assert earlier.stored[(str(proposal),)] is not rows.stored[(str(proposal),)]


def test_a_claim_of_a_proposal_with_no_row_writes_nothing() -> None:
    work, rows = OpenWork(), _Rows()
    work.claimed(_event("Claimed", uuid4(), claimed_at=AT), 1, rows)
    work.reconciling(_event("Reconciling", uuid4()), 2, rows)
    work.end_batch(rows)
    assert rows.writes == []
    assert rows.batch == {}
