"""PostgreSQL's writers' lock, seen from another process's commit still in flight.

The insert function serialises its callers with a transaction-scoped advisory lock and, before
its read-set check, takes a ROW EXCLUSIVE lock on the events table, which conflicts with the
EXCLUSIVE lock that the library's own recorder and earlier versions of the function take.
Here another process's commit through the function is left in flight; tests/test_optimistic_reads.py
and tests/test_optimistic_races.py hold the EXCLUSIVE lock themselves (an older writer: the
check must still see its commit, which fails without the ROW EXCLUSIVE lock).

Waits are observed, not timed: a commit held up is seen waiting on a lock in
``pg_stat_activity``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence.recorders import EXPECTED_VERSIONS, ReadSetChangedError
from countersign.infrastructure.settings import Settings
from psycopg import sql

from tests.conftest import _truncate_postgres, events_table
from tests.test_optimistic_reads import Counter, _stored


@pytest.fixture
def pg_cs(postgres_url: str, clock: Any) -> Iterator[Countersign]:
    _truncate_postgres(postgres_url)
    cs = bootstrap(Settings(database_url=postgres_url), clock=clock)
    try:
        yield cs
    finally:
        cs.close()


def _in_flight(
    holder: psycopg.Connection[Any], cs: Countersign, stored: Sequence[Any]
) -> list[int]:
    """Another process's commit through the insert function, its transaction left open; the
    notification ids of its rows (the function returns the last)."""
    row = holder.execute(
        f"SELECT {events_table(cs)}_commit("
        "%s::uuid[], %s::bigint[], %s::text[], %s::bytea[], %s::uuid[], %s::bigint[])",
        (
            [e.originator_id for e in stored],
            [e.originator_version for e in stored],
            [e.topic for e in stored],
            [e.state for e in stored],
            [],
            [],
        ),
    ).fetchone()
    assert row is not None
    last = int(row[0])
    return list(range(last - len(stored) + 1, last + 1))


def _wait_for_a_lock_wait(url: str) -> None:
    """Until a server process of this database waits on a heavyweight lock (10 s at most)."""
    with psycopg.connect(url, autocommit=True) as watcher:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if waiting and waiting[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no commit waited for the writers' lock")


def _behind_a_commit_in_flight(
    url: str, cs: Countersign, in_flight: Sequence[Any], commit: Callable[[], object]
) -> tuple[list[int], list[object]]:
    """``in_flight``'s events committed through the function by another connection, left open
    until ``commit`` (in a thread of this process) is seen waiting for it; then the ids of
    the first and what ``commit`` returned or raised."""
    return _behind(url, lambda holder: _in_flight(holder, cs, in_flight), commit)


def _behind(
    url: str, hold: Callable[[psycopg.Connection[Any]], list[int]], commit: Callable[[], object]
) -> tuple[list[int], list[object]]:
    """What ``hold`` does on another connection, left uncommitted until ``commit`` (in a
    thread of this process) is seen waiting for it; then what ``hold`` returned, and what
    ``commit`` returned or raised."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(commit())
        except Exception as error:
            outcome.append(error)

    with psycopg.connect(url) as holder:
        first = hold(holder)
        writer = threading.Thread(target=run)
        writer.start()
        _wait_for_a_lock_wait(url)
        assert not outcome, "a commit went past another commit in flight"
        holder.commit()
    writer.join(timeout=15)
    assert len(outcome) == 1, outcome
    return first, outcome


def test_a_commit_waits_for_one_in_flight_and_its_check_sees_that_commit(
    pg_cs: Countersign, postgres_url: str
) -> None:
    recorder = pg_cs.app.recorder
    read = Counter()
    recorder.insert_events(_stored(pg_cs, read))
    read.increment()
    moved = _stored(pg_cs, read)  # version 2, by the commit in flight
    written = Counter()

    _, outcome = _behind_a_commit_in_flight(
        postgres_url,
        pg_cs,
        moved,
        lambda: recorder.insert_events(
            _stored(pg_cs, written), **{EXPECTED_VERSIONS: {read.id: 1}}
        ),
    )

    assert isinstance(outcome[0], ReadSetChangedError), outcome
    assert list(recorder.select_events(written.id)) == []
    assert [e.originator_version for e in recorder.select_events(read.id)] == [1, 2]


def ids_follow_commit_order(cs: Countersign, postgres_url: str) -> None:
    """A commit behind one in flight gets later ids, and a reader sees both in order."""
    recorder = cs.app.recorder

    first, outcome = _behind_a_commit_in_flight(
        postgres_url,
        cs,
        _stored(cs, Counter()),
        lambda: recorder.insert_events(_stored(cs, Counter())),
    )

    later = outcome[0]
    assert isinstance(later, list), outcome
    assert min(later) > max(first)
    assert [e.id for e in recorder.select_log(0, 10)] == [*first, *later]


def test_notification_ids_follow_commit_order_behind_a_commit_in_flight(
    pg_cs: Countersign, postgres_url: str
) -> None:
    ids_follow_commit_order(pg_cs, postgres_url)


@pytest.mark.parametrize("plans", ["force_custom_plan", "force_generic_plan"])
def test_the_check_sees_the_commit_of_an_older_writer_it_waited_for(
    postgres_url: str, clock: Any, plans: str
) -> None:
    """An older writer (the library's recorder, or this function's body before 2026-12-03 in
    another process during an upgrade) holds the table's EXCLUSIVE lock. The check is part of
    the INSERT, whose ROW EXCLUSIVE lock is taken before the statement's snapshot, so it sees
    that writer's commit: with the custom plans of a session's first calls, and with the
    generic plan of the later ones."""
    _truncate_postgres(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        database = sql.Identifier(admin.info.dbname)
        admin.execute(
            sql.SQL("ALTER DATABASE {} SET plan_cache_mode = {}").format(
                database, sql.Identifier(plans)
            )
        )
        cs = bootstrap(Settings(database_url=postgres_url), clock=clock)
        try:
            _refused_behind_an_older_writer(
                cs, postgres_url, f"LOCK TABLE {events_table(cs)} IN EXCLUSIVE MODE"
            )
        finally:
            cs.close()
            admin.execute(sql.SQL("ALTER DATABASE {} RESET plan_cache_mode").format(database))


def test_a_commit_waits_for_an_earlier_versions_function_holding_the_writers_key(
    pg_cs: Countersign, postgres_url: str
) -> None:
    """During an upgrade, a process of the previous version commits through its own
    ``{table}_insert``, which takes the advisory lock under the table's key before its check
    and insert. The commit function takes the same key, so it waits for that commit and its
    check sees it."""
    from countersign.infrastructure.persistence.pg_commit_function import (
        writers_key as _writers_key,
    )

    recorder = pg_cs.app.recorder
    key = _writers_key(recorder.datastore.schema, recorder.events_table_name)
    _refused_behind_an_older_writer(pg_cs, postgres_url, "SELECT pg_advisory_xact_lock(%s)", (key,))


def _refused_behind_an_older_writer(
    cs: Countersign, url: str, lock: str, lock_params: tuple[Any, ...] = ()
) -> None:
    """An older writer takes ``lock`` on another connection and stores version 2 of an
    aggregate; a commit that read version 1 waits for it, and its check refuses it: nothing of
    the commit is stored."""
    recorder = cs.app.recorder
    read = Counter()
    recorder.insert_events(_stored(cs, read))
    read.increment()
    moved = _stored(cs, read)[0]  # version 2, by the older writer
    written = Counter()
    table = events_table(cs)

    def older_writer(holder: psycopg.Connection[Any]) -> list[int]:
        holder.execute(lock, lock_params)
        holder.execute(
            f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
            "VALUES (%s, %s, %s, %s)",
            (moved.originator_id, 2, moved.topic, moved.state),
        )
        return []

    _, outcome = _behind(
        url,
        older_writer,
        lambda: recorder.insert_events(_stored(cs, written), **{EXPECTED_VERSIONS: {read.id: 1}}),
    )

    assert isinstance(outcome[0], ReadSetChangedError), outcome
    assert list(recorder.select_events(written.id)) == []
