"""The rebuild's pipeline to its writer process: ``WriterProcess.IN_FLIGHT`` batches sent before
the oldest is answered, the batch being prepared reading the rows of those in flight from
memory (``in_flight.InFlight``), and the indexes built after the last batch
(``together.create_indexes``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from countersign.infrastructure.projection_engine import together
from countersign.infrastructure.projection_engine.rows import Packed, ProjectionRaceError
from countersign.infrastructure.projection_engine.runner import (
    ProjectionRunner,
    ProjectionStoppedError,
)
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.infrastructure.projection_engine.writer import WriterProcess, _commit
from countersign.projections.audit_trail import EVENTS

from tests.conftest import AVA, DRAFT
from tests.support.proposing import propose_on
from tests.test_projections import DRAFT_REQUEST, catch_up_all, snapshot


def _interleaved_history(cs, seeded, proposals: int = 6) -> None:
    """Proposals made one after another, then each approved or declined: a proposal's rows
    are written by one batch and read again by a batch several batches later."""
    form = seeded["broadcast_forms"]["granite"]
    ids = [propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT) for _ in range(proposals)]
    for n, proposal_id in enumerate(ids):
        if n % 3 == 2:
            cs.proposals.decline(proposal_id, AVA, "not now")
        else:
            cs.proposals.approve(proposal_id, AVA)


def _rebuilt_in_process(cs) -> dict[str, list[tuple[Any, ...]]]:
    rebuild_together(cs.projection_runners(batch_size=1000), parallel=False)
    return snapshot(cs)


class _HoldingWriter:
    """The writer process's end of the protocol, in this process, committing a batch only when
    one more is sent than ``IN_FLIGHT`` allows: every batch is prepared while the ``IN_FLIGHT``
    before it are still uncommitted, the most a writer process can have left uncommitted."""

    IN_FLIGHT = 2

    def __init__(self, runners: list[ProjectionRunner]) -> None:
        self.sql = runners[0].sql
        self.dialect = runners[0].dialect
        self.tables = {runner.name: runner.projection.tables for runner in runners}
        self.held: list[tuple[str, int, int, list[tuple[str, Packed]]]] = []
        self.most_held = 0

    def submit(self, position: int, last: int, batches: list[tuple[str, Packed]]) -> None:
        while len(self.held) >= self.IN_FLIGHT:
            self.wait()
        self.held.append(("batch", position, last, batches))
        self.most_held = max(self.most_held, len(self.held))

    def wait(self) -> None:
        reply = _commit(self.sql, self.dialect, self.tables, self.held.pop(0), None)
        assert reply == ("ok",), reply

    def finish(self) -> None:
        while self.held:
            self.wait()

    def settle(self) -> None:
        self.finish()


@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_a_batch_prepared_behind_two_uncommitted_ones_reads_their_rows(cs, seeded, batch_size):
    """Every batch is prepared while the two before it are still uncommitted: the rows they
    wrote (a card put by the batch before last, approved in this one) come from memory, the
    later batch's over the earlier's, so the tables are those of a rebuild in one process."""
    _interleaved_history(cs, seeded)
    expected = _rebuilt_in_process(cs)
    runners = cs.projection_runners(batch_size=batch_size)
    for runner in runners:
        runner.reset(indexes=False)
    writer = _HoldingWriter(runners)

    together._rebuild_shared(runners, None, writer)
    together.create_indexes(runners)

    assert writer.most_held == 2
    assert snapshot(cs) == expected
    assert {runner.position() for runner in runners} == {runners[0].head()}


@pytest.mark.parametrize("in_flight", [1, 2, 3])
def test_a_rebuild_through_the_writer_process_stores_what_one_in_process_does(
    cs, seeded, monkeypatch, in_flight
):
    """Through the real writer process, with one, two and three batches in flight: every
    table of every projection equal to the rebuild in one process, every position at the
    head; then the single projection's rebuild too."""
    _interleaved_history(cs, seeded)
    expected = _rebuilt_in_process(cs)
    monkeypatch.setattr(WriterProcess, "IN_FLIGHT", in_flight)

    rebuild_together(cs.projection_runners(batch_size=2), parallel=True)
    assert snapshot(cs) == expected
    runners = cs.projection_runners(batch_size=2)
    assert {runner.position() for runner in runners} == {runners[0].head()}

    for runner in runners:
        runner.rebuild(parallel=True)
    assert snapshot(cs) == expected


def _audit_row_at(cs, seeded) -> tuple[list[str], tuple[Any, ...]]:
    """The columns of the audit trail's events and one of its rows, about halfway in the log."""
    _interleaved_history(cs, seeded)
    catch_up_all(cs)
    table = next(
        t for t in cs.projection_runners(["audit_trail"])[0].projection.tables if t.name == EVENTS
    )
    rows = snapshot(cs)[EVENTS]
    return list(table.column_names()), rows[len(rows) // 2]


def test_a_batch_the_writer_refuses_in_the_pipeline_stops_it_by_name_and_nothing_after_it(
    cs, seeded, monkeypatch
):
    """An audit row is already there when the writer inserts it again, in a batch sent while
    the one before it is still in flight and followed by another: the rebuild stops naming the
    projection and the batch, every projection stands where the batch before it left them, and
    the batch sent after it is not committed (each position in one place, the tables those of
    the committed batches: taking the row away, a catch-up ends with the whole log's tables)."""
    columns, row = _audit_row_at(cs, seeded)
    complete = snapshot(cs)
    position = row[columns.index("position")]
    sent: list[int] = []
    submit = WriterProcess.submit

    def planting_first(self, at, last, batches):
        if not sent:  # the tables were just emptied; the row goes in behind the rebuild
            with cs.sql.transaction() as cursor:
                cursor.execute(
                    f"INSERT INTO {EVENTS} ({', '.join(columns)})"
                    f" VALUES ({', '.join('?' for _ in columns)})",
                    row,
                )
        submit(self, at, last, batches)
        sent.append(last)

    monkeypatch.setattr(WriterProcess, "submit", planting_first)
    runners = cs.projection_runners(batch_size=2)

    with pytest.raises(ProjectionStoppedError, match=r"audit_trail.*already there") as stopped:
        rebuild_together(runners, parallel=True)

    failed = min(last for last in sent if last >= position)
    assert f"notification {failed}" in str(stopped.value)
    assert any(last > failed for last in sent), "no batch was in flight behind the failed one"
    before = max((last for last in sent if last < failed), default=0)
    assert {runner.position() for runner in runners} == {before}
    with cs.sql.transaction() as cursor:
        cursor.execute(f"DELETE FROM {EVENTS} WHERE position = ?", (position,))
    monkeypatch.undo()
    catch_up_all(cs)
    assert snapshot(cs) == complete


def test_a_batch_sent_behind_one_the_writer_refused_is_not_committed(cs, seeded):
    """The batch after a refused one was prepared on the refused one's rows, so the writer
    commits nothing after it, even a batch whose own position check would pass (its position
    is where another runner happened to leave the projection)."""
    runner = cs.projection_runners(["audit_trail"])[0]
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "UPDATE projection_tracking SET position = 5 WHERE projection = ?", (runner.name,)
        )
    writer = WriterProcess(cs.sql.database, runner.dialect, {runner.name: runner.projection.tables})
    try:
        writer.submit(0, 5, [(runner.name, {})])  # refused: the projection is at 5, not 0
        writer.submit(5, 9, [(runner.name, {})])
        with pytest.raises(ProjectionRaceError):
            writer.finish()
    finally:
        writer.close()

    assert runner.position() == 5


def test_an_index_that_cannot_be_built_fails_the_rebuild_that_builds_it(cs, seeded, monkeypatch):
    """On PostgreSQL the indexes are built on threads of their own: what one of them meets
    still reaches the caller."""
    _interleaved_history(cs, seeded)
    runners = cs.projection_runners(batch_size=3)
    audit = next(runner for runner in runners if runner.name == "audit_trail")
    tables = tuple(
        replace(table, indexes=(*table.indexes, ("nowhere",))) if table.name == EVENTS else table
        for table in audit.projection.tables
    )
    monkeypatch.setattr(audit.projection, "tables", tables)

    with pytest.raises(Exception, match="nowhere"):
        rebuild_together(runners, parallel=True)


def test_an_index_a_crash_lost_after_a_rebuild_is_built_again_at_the_next_start(cs, seeded):
    """The indexes' commits do not wait for the disk (``ProjectionRunner.create_indexes``,
    ``together._build``): a crash of the machine can lose only them, never the rows and
    positions committed before. Lost as by that crash (dropped), the next start builds them."""
    _interleaved_history(cs, seeded)
    rebuild_together(cs.projection_runners(batch_size=3), parallel=True)
    rebuilt = snapshot(cs)
    lost = "audit_events_proposal_id_version_idx"
    with cs.sql.transaction() as cursor:
        cursor.execute(f"DROP INDEX {lost}")

    cs.projection_runners()  # a start: each runner's ``setup``

    with cs.sql.transaction() as cursor:
        if cs.sql.is_postgres:
            found = cursor.execute("SELECT indexname FROM pg_indexes").fetchall()
        else:
            found = cursor.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    assert lost in {name for (name,) in found}
    assert snapshot(cs) == rebuilt


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # SQLite's connection settings
def test_building_the_indexes_leaves_the_connection_waiting_for_the_disk(cs, seeded):
    """SQLite: the commit that does not wait for the disk is the index statements' alone; the
    connection's other transactions wait for it again."""
    _interleaved_history(cs, seeded)
    runner = cs.projection_runners()[0]

    runner.create_indexes()

    with runner.sql.transaction() as cursor:
        assert cursor.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
