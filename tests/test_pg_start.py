"""What a start holds on PostgreSQL: the connections a process has open once ``bootstrap``
returns, which docs/deploy.md ("Connections") budgets for each process. Two: the event store's
pool keeps one, and ``SqlDatabase``'s reading connection, on which the start asked whether the
database holds countersign and took the schema lock. (Until 2026-12-07 a start opened four: one
of its own for the lock, closed once it was let go, and the pool two for its first request.)"""

from __future__ import annotations

import time

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import _truncate_postgres

pytestmark = pytest.mark.postgres


def _held(url: str) -> int:
    """The connections others hold on the database."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _settled(url: str, expected: int) -> int:
    """``_held``, given ten seconds to reach ``expected`` (a closed connection's server process
    leaves the list a moment after the client has closed it, and a second is a short moment
    while other work holds both cores at a load of 10; the wait ends once it is reached)."""
    deadline = time.monotonic() + 10.0
    held = _held(url)
    while held != expected and time.monotonic() < deadline:
        time.sleep(0.02)
        held = _held(url)
    return held


def _pool_settled(cs: Countersign) -> None:
    """Wait until the event store's pool opens no more connections: every one it counts (in
    the pool, out, or being opened by its worker) is in the pool, ready, so the server's list
    holds them all. Fails, never passes, if that takes more than ten seconds."""
    pool = cs.app.recorder.datastore.pool
    deadline = time.monotonic() + 10.0
    stats = pool.get_stats()
    while stats["pool_available"] != stats["pool_size"]:
        if time.monotonic() > deadline:
            pytest.fail(f"the pool was still opening connections after ten seconds: {stats}")
        time.sleep(0.01)
        stats = pool.get_stats()


@pytest.mark.parametrize("made", [False, True], ids=["empty", "made"])
def test_a_start_holds_two_connections_and_its_close_gives_them_back(
    postgres_url: str, made: bool
) -> None:
    _truncate_postgres(postgres_url)
    if made:  # a restart: the tables are there
        bootstrap(Settings(database_url=postgres_url)).close()
    before = _settled(postgres_url, 0)
    cs = bootstrap(Settings(database_url=postgres_url), create=made is False)
    try:
        started = _held(postgres_url)
        # A connection the pool was still opening (a second one for its first request, as
        # before 2026-12-07) is counted once the pool has opened it.
        _pool_settled(cs)
        after_a_moment = _held(postgres_url)
    finally:
        cs.close()
    closed = _settled(postgres_url, before)
    assert (started - before, after_a_moment - before, closed - before) == (2, 2, 0)
