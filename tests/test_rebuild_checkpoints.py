"""SQLite's checkpoints in a rebuild's writer process, sized by the log it rebuilds
(``writer.checkpoint_pages``): every 8,000 pages of the write-ahead log for a log of up to
128,000 events, then one page for every 16 events, at most 64,000 pages. The rebuild tells its
writer how long the log is, and the writer sets its own connection so."""

from __future__ import annotations

import io
from typing import Any

import pytest
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine import runner as runner_module
from countersign.infrastructure.projection_engine import together, writer
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.infrastructure.projection_engine.writer import (
    WriterProcess,
    _read,
    _write,
    checkpoint_pages,
    serve,
    tune,
)
from countersign.infrastructure.settings import Database

from tests.test_projections import snapshot
from tests.test_rebuild_pipeline import _interleaved_history, _rebuilt_in_process


@pytest.mark.parametrize(
    ("events", "pages"),
    [
        (0, 8000),
        (100_051, 8000),
        (128_000, 8000),
        (128_016, 8001),
        (500_000, 31_250),
        (1_000_051, 62_503),
        (1_024_000, 64_000),
        (10_000_000, 64_000),
    ],
)
def test_checkpoints_come_every_8000_pages_for_a_short_log_and_later_for_a_long_one(events, pages):
    assert checkpoint_pages(events) == pages


def _autocheckpoint(sql: SqlDatabase) -> int:
    with sql.transaction() as cursor:
        found = cursor.execute("PRAGMA wal_autocheckpoint").fetchone()
    assert found is not None
    return int(found[0])


@pytest.mark.parametrize(("events", "pages"), [(0, 8000), (1_000_051, 62_503), (5_000_000, 64_000)])
def test_the_writer_sets_its_sqlite_connection_for_the_log_it_rebuilds(tmp_path, events, pages):
    sql = SqlDatabase(Database.parse(f"sqlite:///{tmp_path / 'projections.db'}"))
    try:
        assert _autocheckpoint(sql) == 1000  # SQLite's own default, before
        tune(sql, events)
        assert _autocheckpoint(sql) == pages
    finally:
        sql.close()


def test_the_writer_takes_the_length_of_the_log_from_its_setup(tmp_path, monkeypatch):
    """``serve`` reads the events from the setup message and tunes its one connection by them:
    the setting is read back on that connection, before it is closed."""
    seen: list[tuple[int, int]] = []

    def spied(sql: SqlDatabase, events: int) -> None:
        tune(sql, events)
        seen.append((events, _autocheckpoint(sql)))

    monkeypatch.setattr(writer, "tune", spied)
    database = Database.parse(f"sqlite:///{tmp_path / 'projections.db'}")
    requests, replies = io.BytesIO(), io.BytesIO()
    _write(requests, ("setup", database, "sqlite", {}, 1_000_051))
    _write(requests, None)
    requests.seek(0)
    serve(requests, replies)
    assert seen == [(1_000_051, 62_503)]
    replies.seek(0)
    with pytest.raises(EOFError):
        _read(replies)  # a setup is not answered


def test_a_rebuild_tells_its_writer_process_how_long_the_log_is(cs, seeded, monkeypatch):
    """Every projection together and each alone, through the real writer process: each
    writer is told the log's head, and the tables are those of a rebuild in one process."""
    _interleaved_history(cs, seeded)
    expected = _rebuilt_in_process(cs)
    told: list[int] = []

    class Told(WriterProcess):
        def __init__(self, *args: Any, events: int = 0) -> None:
            told.append(events)
            super().__init__(*args, events=events)

    monkeypatch.setattr(together, "WriterProcess", Told)
    monkeypatch.setattr(runner_module, "WriterProcess", Told)
    runners = cs.projection_runners(batch_size=3)
    head = runners[0].head()
    assert head > 0

    rebuild_together(runners, parallel=True)
    assert told == [head]
    assert snapshot(cs) == expected

    told.clear()
    runners[0].rebuild(parallel=True)
    assert told == [head]
    assert snapshot(cs) == expected
