"""PostgreSQL commits' waiting transaction on a connection whose session waits for the disk: it
reads the session's ``synchronous_commit`` only until it first finds the session waiting, then
writes its message without reading the setting again (``pg_statements.Statement``'s
``once_it_returned_rows``). Every commit still returns only once the log is flushed past it; a
session that does not wait writes no message, however many commits it makes, and one set to
wait later waits from then on (docs/concurrency.md, "Durable before the answer").

The store's pool hands its connections out in turn; what a test sets or reads on them, it does
on each. What reached the disk is read from the log with ``pg_walinspect``, as in
tests/test_pg_durable_commit.py.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.persistence import pg_statements
from countersign.infrastructure.persistence.recorders_postgres import (
    _FLUSH_ALWAYS,
    _FLUSH_IF_DURABLE,
)

from tests.test_optimistic_reads import Counter, _stored
from tests.test_pg_durable_commit import (
    _bootstrap,
    _committed,
    _flush,
    _flushed_records,
    _insert_lsn,
    _ours,
    _writer,
    durable_cs,
)

__all__ = ["durable_cs"]  # (the fixture, used here by name)


def _commit_is_durable_when_it_returns(cs: Countersign, url: str) -> None:
    since = _insert_lsn(url)
    counter = Counter()
    cs.app.recorder.insert_events(_stored(cs, counter))
    records = _flushed_records(url, since)  # before anything else flushes the log
    writer = _writer(url, counter.id, 1)
    assert writer in _committed(records), "the call returned before its commit was on disk"
    after = records[[x for x, *_ in records].index(writer) :]
    flushing = _ours(url, after)
    assert flushing, "no flushing transaction after the commit"
    assert flushing[0] in _committed(after)


def _every_connection(cs: Countersign, run: Callable[[Any], Any]) -> list[Any]:
    """``run`` of each connection the store's pool holds (all taken at once, so each is a
    different one)."""
    datastore = cs.app.recorder.datastore
    with ExitStack() as taken:
        return [
            run(taken.enter_context(datastore.get_connection()))
            for _ in range(datastore.pool.get_stats()["pool_size"])
        ]


def _run_here(cs: Countersign) -> set[str]:
    """The prepared statements run on the store's connections (each session's own list, with
    the plans its runs chose)."""
    query = "SELECT statement FROM pg_prepared_statements WHERE generic_plans + custom_plans > 0"
    return {
        str(row["statement"])
        for rows in _every_connection(cs, lambda conn: conn.execute(query).fetchall())
        for row in rows
    }


def _set_on_the_stores_connections(cs: Countersign, setting: str) -> None:
    _every_connection(cs, lambda conn: conn.execute(f"SET synchronous_commit = {setting}"))


def test_every_commit_on_a_waiting_session_returns_only_once_it_is_on_disk(
    durable_cs: Countersign, postgres_url: str
) -> None:
    for _ in range(4):
        _commit_is_durable_when_it_returns(durable_cs, postgres_url)
    # From the second commit on, the message is written without reading the setting.
    assert _FLUSH_ALWAYS in _run_here(durable_cs)


def test_a_session_that_does_not_wait_writes_no_message_however_many_commits(
    postgres_url: str, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cs = _bootstrap(postgres_url, clock, monkeypatch, "off")
    try:
        since = _insert_lsn(postgres_url)
        counters = [Counter() for _ in range(4)]
        for counter in counters:
            cs.app.recorder.insert_events(_stored(cs, counter))
        _flush(postgres_url)
        records = _flushed_records(postgres_url, since)
        prepared = _run_here(cs)
    finally:
        cs.close()
    for counter in counters:
        assert _writer(postgres_url, counter.id, 1) in _committed(records)
    assert _ours(postgres_url, records) == []
    assert _FLUSH_IF_DURABLE in prepared
    assert _FLUSH_ALWAYS not in prepared


def test_a_session_set_to_wait_after_its_first_commits_waits_from_then_on(
    postgres_url: str, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cs = _bootstrap(postgres_url, clock, monkeypatch, "off")
    try:
        for _ in range(2):
            cs.app.recorder.insert_events(_stored(cs, Counter()))
        _set_on_the_stores_connections(cs, "on")
        _commit_is_durable_when_it_returns(cs, postgres_url)
        _commit_is_durable_when_it_returns(cs, postgres_url)
    finally:
        cs.close()


def test_a_waiting_session_set_off_later_has_its_message_written_and_waits_for_nothing(
    durable_cs: Countersign, postgres_url: str
) -> None:
    """What the shortcut gives up: set off by someone else after its first commit, the session
    still writes the message (a record in the log more), whose commit then waits for nothing,
    as the session says."""
    _commit_is_durable_when_it_returns(durable_cs, postgres_url)
    _set_on_the_stores_connections(durable_cs, "off")
    since = _insert_lsn(postgres_url)
    counter = Counter()
    durable_cs.app.recorder.insert_events(_stored(durable_cs, counter))
    _flush(postgres_url)
    records = _flushed_records(postgres_url, since)
    assert _writer(postgres_url, counter.id, 1) in _committed(records)
    assert len(_ours(postgres_url, records)) == 1


@pytest.mark.parametrize("pipelines", [True, False], ids=["pipelined", "one-then-the-other"])
def test_a_statement_is_sent_in_its_place_only_where_it_returned_a_row(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, pipelines: bool
) -> None:
    """``run_then``'s ``then`` with a statement for its place: sent while it returns no row;
    once it has returned one on a connection, the other is sent there, and there only (what
    a connection has been sent is in its ``pg_prepared_statements``)."""
    monkeypatch.setattr(pg_statements, "PIPELINES", pipelines)
    first = pg_statements.Statement(b"SELECT 1", ())
    instead = pg_statements.Statement(b"SELECT 2", ())
    then = pg_statements.Statement(
        b"SELECT 3 WHERE current_setting('application_name') = 'yes'",
        (),
        once_it_returned_rows=instead,
    )

    def sent(conn: psycopg.Connection[Any]) -> set[str]:
        rows = conn.execute(
            "SELECT statement FROM pg_prepared_statements WHERE generic_plans + custom_plans > 0"
        ).fetchall()
        return {str(row[0]) for row in rows}

    with (
        psycopg.connect(postgres_url, autocommit=True, application_name="no") as one,
        psycopg.connect(postgres_url, autocommit=True, application_name="no") as other,
    ):
        pg_statements.run_then(one, first, (), then)
        assert "SELECT 2" not in sent(one)
        one.execute("SET application_name = 'yes'")
        pg_statements.run_then(one, first, (), then)  # returns its row
        assert "SELECT 2" not in sent(one)
        one.execute("SET application_name = 'no'")
        pg_statements.run_then(one, first, (), then)
        pg_statements.run_then(one, first, (), then)
        assert "SELECT 2" in sent(one)
        pg_statements.run_then(other, first, (), then)
        assert "SELECT 2" not in sent(other)
        # Forgotten by the server (DISCARD ALL), it is prepared again and still sent.
        one.execute("DISCARD ALL")
        pg_statements.run_then(one, first, (), then)
        assert "SELECT 2" in sent(one)
        assert then.query.decode() not in sent(one)
