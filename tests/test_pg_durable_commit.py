"""PostgreSQL commits: the writers' lock is let go when the commit is in the log's buffers, and
the caller gets its answer only once the log is flushed past the commit.

The recorder commits in two transactions sent together: the insert function in a transaction
that does not wait for the disk, then a second transaction (a logical message) whose commit
does, as the session's ``synchronous_commit`` says (docs/concurrency.md, "Durable before the
answer").
What reached the disk is read from the log itself with ``pg_walinspect``, which shows only
records up to the flushed position: a commit found there is durable. Nothing is timed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence.recorders import EXPECTED_VERSIONS, ReadSetChangedError
from countersign.infrastructure.settings import Settings

from tests.conftest import _truncate_postgres
from tests.test_optimistic_reads import Counter, _stored
from tests.test_pg_writers_lock import (
    _in_flight,
    ids_follow_commit_order,
)


def _bootstrap(url: str, clock: Any, monkeypatch: pytest.MonkeyPatch, setting: str) -> Countersign:
    _truncate_postgres(url)
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        except psycopg.Error as error:  # pragma: no cover - a server without contrib
            pytest.skip(f"pg_walinspect is not available: {error}")
    # Every connection the store opens starts with this setting (libpq's PGOPTIONS), over
    # whatever the database's default is.
    monkeypatch.setenv("PGOPTIONS", f"-c synchronous_commit={setting}")
    return bootstrap(Settings(database_url=url), clock=clock)


@pytest.fixture(params=[True, False], ids=["pipelined", "one-then-the-other"])
def durable_cs(
    postgres_url: str, clock: Any, monkeypatch: pytest.MonkeyPatch, request: Any
) -> Iterator[Countersign]:
    """Commits that wait for the disk, sent in one round trip (libpq's pipeline mode), and
    in two where libpq has none (before 14: ``pg_statements.PIPELINES``)."""
    from countersign.infrastructure.persistence import pg_statements

    monkeypatch.setattr(pg_statements, "PIPELINES", request.param)
    cs = _bootstrap(postgres_url, clock, monkeypatch, "on")
    try:
        yield cs
    finally:
        cs.close()


def _insert_lsn(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    return str(row[0])


def _flushed_records(url: str, since: str) -> list[tuple[int, str, str]]:
    """The log's records from ``since`` up to the position flushed to disk now (pg_walinspect
    reads no further): (transaction id, resource manager and record type, description)."""
    with psycopg.connect(url, autocommit=True) as conn:
        flushed = conn.execute(
            "SELECT pg_current_wal_flush_lsn()::text WHERE pg_current_wal_flush_lsn() > %s",
            (since,),
        ).fetchone()
        if flushed is None:  # nothing since (pg_walinspect refuses an empty range)
            return []
        rows = conn.execute(
            "SELECT xid::text::bigint, resource_manager || ' ' || record_type, description "
            "FROM pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn) ORDER BY start_lsn",
            (since, flushed[0]),
        ).fetchall()
    return [(int(x), str(kind), str(text or "")) for x, kind, text in rows]


def _flush(url: str) -> None:
    """The log flushed up to now, by a transaction of this test's that waits for the disk."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = on")
        conn.execute("SELECT pg_logical_emit_message(true, 'test', 'flush')")


def _writer(url: str, originator: Any, version: int) -> int:
    """The transaction id that wrote one event of an aggregate."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xmin::text::bigint FROM countersign_events "
            "WHERE originator_id = %s AND originator_version = %s",
            (originator, version),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _committed(records: list[tuple[int, str, str]]) -> list[int]:
    return [xid for xid, kind, _ in records if kind == "Transaction COMMIT"]


def _ours(url: str, records: list[tuple[int, str, str]]) -> list[int]:
    """The transactions of the recorder's flushing messages in this database (the log is the
    whole server's): prefix ``countersign``, the database's name as the payload, in hex."""
    name = " ".join(f"{b:02X}" for b in url.rsplit("/", 1)[1].encode())
    return [
        x
        for x, kind, text in records
        if kind.startswith("LogicalMessage") and '"countersign"' in text and name in text.upper()
    ]


def test_a_commit_returns_only_once_the_log_is_flushed_past_it(
    durable_cs: Countersign, postgres_url: str
) -> None:
    since = _insert_lsn(postgres_url)
    counter = Counter()

    durable_cs.app.recorder.insert_events(_stored(durable_cs, counter))

    records = _flushed_records(postgres_url, since)  # before anything else flushes the log
    writer = _writer(postgres_url, counter.id, 1)
    assert writer in _committed(records), "the call returned before its commit was on disk"
    # What flushed it is the recorder's second transaction, committed after the events'.
    after = records[[x for x, *_ in records].index(writer) :]
    flushing = _ours(postgres_url, after)
    assert flushing, "no flushing transaction after the commit"
    assert flushing[0] in _committed(after)


def test_with_synchronous_commit_off_nothing_is_waited_for(
    postgres_url: str, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose commits do not wait for the disk commits as before: in one transaction,
    with no second one to wait for the disk."""
    cs = _bootstrap(postgres_url, clock, monkeypatch, "off")
    try:
        since = _insert_lsn(postgres_url)
        counter = Counter()
        cs.app.recorder.insert_events(_stored(cs, counter))
        _flush(postgres_url)
        records = _flushed_records(postgres_url, since)
    finally:
        cs.close()
    assert _writer(postgres_url, counter.id, 1) in _committed(records)
    assert _ours(postgres_url, records) == []


def test_a_commit_refused_because_of_another_waits_until_that_one_is_durable(
    durable_cs: Countersign, postgres_url: str
) -> None:
    """The loser decides again on what the winner wrote and may answer from it: the winner's
    commit (here one that did not wait for the disk) is durable before the refusal is raised."""
    recorder = durable_cs.app.recorder
    read = Counter()
    recorder.insert_events(_stored(durable_cs, read))
    read.increment()
    since = _insert_lsn(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as winner:
        winner.execute("SET synchronous_commit = off")
        with winner.transaction():
            _in_flight(winner, durable_cs, _stored(durable_cs, read))  # version 2
    written = Counter()

    with pytest.raises(ReadSetChangedError):
        recorder.insert_events(_stored(durable_cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})

    assert _writer(postgres_url, read.id, 2) in _committed(_flushed_records(postgres_url, since))


def test_notification_ids_follow_commit_order_when_commits_wait_for_the_disk(
    durable_cs: Countersign, postgres_url: str
) -> None:
    """The lock is let go earlier, but still only once the commit is visible: a commit behind
    one in flight gets later ids, and a reader sees both in order."""
    ids_follow_commit_order(durable_cs, postgres_url)
