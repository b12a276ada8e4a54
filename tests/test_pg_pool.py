"""PostgreSQL: a commit's connection is taken from and given back to psycopg_pool's pool by
``pg_pool.take`` and ``give_back``, psycopg_pool's ``getconn`` and ``putconn`` with their
helpers inlined for the common case. Each scenario runs both ways on two pools alike and
compares what a user of the pool sees: the connection, the pool's statistics, its log lines
and what it holds, and the errors raised."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.persistence import pg_pool
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

pytestmark = pytest.mark.postgres

_WAYS: dict[str, tuple[Callable[[Any], Any], Callable[[Any, Any], None]]] = {
    "library": (lambda pool: pool.getconn(), lambda pool, conn: pool.putconn(conn)),
    "inlined": (pg_pool.take, pg_pool.give_back),
}
#: Statistics that count time, which two runs never share.
_TIMED = {"requests_wait_ms", "connections_ms", "usage_ms"}


@pytest.fixture
def make_pool(postgres_url: str) -> Iterator[Callable[..., ConnectionPool[Any]]]:
    pools: list[ConnectionPool[Any]] = []

    def make(**options: Any) -> ConnectionPool[Any]:
        options.setdefault("min_size", 2)
        pool: ConnectionPool[Any] = ConnectionPool(postgres_url, open=False, **options)
        pool.open(wait=True)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()


def _stats(pool: ConnectionPool[Any]) -> dict[str, int]:
    return {k: v for k, v in pool.get_stats().items() if k not in _TIMED}


def test_the_inlined_steps_are_the_ones_taken_here() -> None:
    """The installed psycopg_pool is the one they were written for, so the commits of the
    rest of the suite take them (another version takes the library's methods)."""
    import psycopg_pool

    assert psycopg_pool.__version__ == pg_pool.WRITTEN_FOR
    assert pg_pool._fits(ConnectionPool)


def test_taking_and_giving_back_leaves_the_same_pool_and_logs(
    make_pool: Callable[..., ConnectionPool[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    seen: dict[str, Any] = {}
    for way, (take, give_back) in _WAYS.items():
        pool = make_pool()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="psycopg.pool"):
            for _ in range(3):
                first = take(pool)
                second = take(pool)
                assert first._pool is pool
                assert second._pool is pool
                first.execute("SELECT 1")
                give_back(pool, second)
                give_back(pool, first)
                assert first._pool is None
                assert second._pool is None
        messages = [
            re.sub(r"<psycopg\.Connection .*>", "<connection>", r.getMessage())
            for r in caplog.records
            if r.name == "psycopg.pool"
        ]
        seen[way] = (
            _stats(pool),
            len(pool._pool),
            pool._nconns_min,
            [m.replace(repr(pool.name), "'the pool'") for m in messages],
        )
    assert seen["inlined"] == seen["library"]


@pytest.mark.parametrize("way", list(_WAYS))
def test_what_the_common_case_leaves_out_is_done_as_the_library_does(
    way: str, make_pool: Callable[..., ConnectionPool[Any]]
) -> None:
    take, give_back = _WAYS[way]
    checked: list[Any] = []
    reset: list[Any] = []
    # A check function and a reset function are called on the connection.
    pool = make_pool(check=checked.append, reset=reset.append)
    conn = take(pool)
    assert checked == [conn]
    give_back(pool, conn)
    pool.wait()
    assert reset == [conn]

    pool = make_pool()
    # A connection given back in a transaction is rolled back, then pooled again.
    conn = take(pool)
    conn.execute("CREATE TEMPORARY TABLE t (x int)")
    assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    give_back(pool, conn)
    assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert conn in pool._pool
    # An expired one is closed, and replaced.
    conn = take(pool)
    conn._expire_at = 0
    give_back(pool, conn)
    assert conn.closed
    assert conn not in pool._pool
    # One from another pool is refused.
    other = make_pool(min_size=1)
    stranger = take(other)
    with pytest.raises(ValueError, match="can't return connection"):
        give_back(pool, stranger)
    give_back(other, stranger)
    # None ready and none to grow: the wait times out with the library's message.
    small = make_pool(min_size=1, max_size=1, timeout=0.2)
    held = take(small)
    with pytest.raises(PoolTimeout, match=r"couldn.t get a connection after 0\.20 sec"):
        take(small)
    give_back(small, held)
    # A closed pool refuses, and a connection given back to it is closed.
    held = take(small)
    small.close()
    give_back(small, held)
    assert held.closed
    with pytest.raises(PoolClosed):
        take(small)
