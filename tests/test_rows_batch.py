"""``Rows.batch``: what a projection gathers over a batch lives in that batch's rows and goes
with it. The engine empties it once the batch is packed, so nothing a projection kept there
(often the rows themselves) holds a batch's rows alive after it: the rows live on as the next
batch's overlay, and a cycle through them would wait for the collector, which a rebuild runs
rarely."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import pytest
from countersign.infrastructure.projection_engine.rows import SqlRows
from countersign.infrastructure.projection_engine.runner import ProjectionStoppedError
from countersign.infrastructure.projection_engine.stops import end_batch
from countersign.projections.base import Column, Projection, Rows, Table

_TABLE = Table("gathered", (Column("n", "int"), Column("text")), key=("n",))
_LAST = SimpleNamespace(
    id=7, topic="countersign.domain.proposal:Proposal.Claimed", originator_id=None
)


class _Gathering(Projection):
    """Keeps a memory that refers to its rows, as ``browser_view``'s ``_Batch`` does."""

    name = "gathering"
    tables = (_TABLE,)

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def gather(self, rows: Rows, n: int) -> None:
        memory = rows.batch.setdefault(self, SimpleNamespace(rows=rows, seen=[]))
        memory.seen.append(n)

    def end_batch(self, rows: Rows) -> None:
        if self.fail:
            raise ValueError("a roll-up it cannot make")
        for n in rows.batch[self].seen:
            rows.put("gathered", {"n": n, "text": str(n)})


def _rows() -> SqlRows:
    return SqlRows(None, [_TABLE], "sqlite")  # type: ignore[arg-type] - nothing is read


def test_each_batch_has_a_memory_of_its_own() -> None:
    projection, first, second = _Gathering(), _rows(), _rows()
    projection.gather(first, 1)
    projection.gather(second, 2)
    projection.gather(first, 3)
    assert first.batch[projection].seen == [1, 3]
    assert second.batch[projection].seen == [2]


def test_the_memory_is_emptied_once_the_batch_is_packed() -> None:
    projection, rows = _Gathering(), _rows()
    projection.gather(rows, 1)
    projection.gather(rows, 2)
    end_batch("gathering", projection, rows, _LAST)  # type: ignore[arg-type]
    assert rows.batch == {}
    assert rows.packed() == {"gathered": ([(1, "1"), (2, "2")], [])}


def test_a_batch_is_freed_by_its_count_not_left_for_the_collector() -> None:
    projection, rows = _Gathering(), _rows()
    projection.gather(rows, 1)
    end_batch("gathering", projection, rows, _LAST)  # type: ignore[arg-type]
    gone = weakref.ref(rows)
    gc.disable()
    try:
        del rows
        assert gone() is None
    finally:
        gc.enable()


def test_a_batch_that_stops_at_its_end_is_emptied_too() -> None:
    projection, rows = _Gathering(fail=True), _rows()
    projection.gather(rows, 1)
    with pytest.raises(ProjectionStoppedError, match="ValueError"):
        end_batch("gathering", projection, rows, _LAST)  # type: ignore[arg-type]
    assert rows.batch == {}
