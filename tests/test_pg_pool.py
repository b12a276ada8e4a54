"""pg_pool: a connection taken from psycopg_pool's pool and given back a step at a time, as the
pool's own ``getconn`` and ``putconn`` do: the same connections in the same order, the same
statistics and log records, and the pool's own steps wherever the way differs (no connection
ready, a check function, a closed pool, a connection in a transaction or broken)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.persistence import pg_pool
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

pytestmark = pytest.mark.postgres

Take = Callable[[ConnectionPool[Any]], psycopg.Connection[Any]]
Give = Callable[[ConnectionPool[Any], psycopg.Connection[Any]], None]

#: The pool's own methods, and this module's steps.
WAYS: dict[str, tuple[Take, Give]] = {
    "pool": (lambda pool: pool.getconn(), lambda pool, conn: pool.putconn(conn)),
    "steps": (pg_pool.getconn, pg_pool.putconn),
}


@pytest.fixture
def make_pool(postgres_url: str) -> Iterator[Callable[..., ConnectionPool[Any]]]:
    pools: list[ConnectionPool[Any]] = []

    def make(**options: Any) -> ConnectionPool[Any]:
        options.setdefault("min_size", 2)
        options.setdefault("timeout", 5.0)
        pool: ConnectionPool[Any] = ConnectionPool(
            postgres_url, open=False, kwargs={"autocommit": True}, **options
        )
        pool.open(wait=True)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()


def test_the_steps_are_taken_only_for_psycopg_pool_3_3s_own_pool(
    make_pool: Callable[..., ConnectionPool[Any]],
) -> None:
    class Checked(ConnectionPool[Any]):
        def _return_connection(self, conn: Any, from_getconn: bool) -> None:
            super()._return_connection(conn, from_getconn)

    assert pg_pool.steps_here(make_pool()) is pg_pool._KNOWN_VERSION
    assert not pg_pool.steps_here(Checked.__new__(Checked))


@pytest.mark.parametrize("way", sorted(WAYS))
def test_ready_connections_go_out_and_back_as_the_pool_hands_them(
    make_pool: Callable[..., ConnectionPool[Any]], way: str, caplog: pytest.LogCaptureFixture
) -> None:
    take, give = WAYS[way]
    pool = make_pool()
    caplog.set_level(logging.INFO, logger="psycopg.pool")
    first = take(pool)
    second = take(pool)
    assert first is not second
    assert first._pool is pool
    assert second._pool is pool
    assert first.execute("SELECT 1").fetchone() == (1,)
    give(pool, first)
    give(pool, second)
    assert first._pool is None
    # First in, first out: the connection given back first is handed out first.
    again = take(pool)
    assert again is first
    give(pool, again)
    stats = pool.get_stats()
    assert (stats["requests_num"], stats["pool_available"], stats["pool_size"]) == (3, 2, 2)
    assert "requests_queued" not in stats
    assert "requests_errors" not in stats
    name = repr(pool.name)
    messages = [
        r.getMessage()
        for r in caplog.records
        if r.name == "psycopg.pool" and name in r.getMessage()
    ]
    requested, given, returning = (
        f"connection requested from {name}",
        f"connection given by {name}",
        f"returning connection to {name}",
    )
    # Two taken, both given back, one taken and given back again.
    assert messages == [
        *(requested, given, requested, given),
        *(returning, returning),
        *(requested, given, returning),
    ]


@pytest.mark.parametrize("way", sorted(WAYS))
def test_without_a_ready_connection_a_taker_waits_for_one_given_back(
    make_pool: Callable[..., ConnectionPool[Any]], way: str
) -> None:
    take, give = WAYS[way]
    pool = make_pool(min_size=1, timeout=0.3)
    held = take(pool)
    with pytest.raises(PoolTimeout, match=r"couldn't get a connection after 0\.30 sec"):
        take(pool)
    got: list[psycopg.Connection[Any]] = []
    waiter = threading.Thread(target=lambda: got.append(take(pool)))
    pool.timeout = 5.0
    waiter.start()
    while not pool.get_stats().get("requests_waiting"):
        threading.Event().wait(0.01)
    give(pool, held)  # to the waiting taker, not the ready queue
    waiter.join(5)
    assert got == [held]
    assert pool.get_stats()["pool_available"] == 0
    give(pool, held)
    assert pool.get_stats()["pool_available"] == 1


@pytest.mark.parametrize("way", sorted(WAYS))
def test_a_connection_in_a_transaction_or_broken_is_rolled_back_or_replaced(
    make_pool: Callable[..., ConnectionPool[Any]], way: str
) -> None:
    take, give = WAYS[way]
    pool = make_pool(min_size=1)
    conn = take(pool)
    conn.autocommit = False
    conn.execute("SELECT 1")
    assert conn.info.transaction_status is TransactionStatus.INTRANS
    give(pool, conn)
    assert conn.info.transaction_status is TransactionStatus.IDLE
    assert take(pool) is conn
    conn.close()
    give(pool, conn)  # discarded; the pool opens another
    assert pool.get_stats()["returns_bad"] == 1
    pool.wait(5)
    replacement = take(pool)
    assert replacement is not conn
    assert not replacement.closed
    give(pool, replacement)


@pytest.mark.parametrize("way", sorted(WAYS))
def test_a_closed_pool_refuses_takers_and_closes_what_is_given_back(
    make_pool: Callable[..., ConnectionPool[Any]], way: str
) -> None:
    take, give = WAYS[way]
    pool = make_pool(min_size=1)
    conn = take(pool)
    pool.close()
    with pytest.raises(PoolClosed):
        take(pool)
    give(pool, conn)
    assert conn.closed
    with (
        psycopg.Connection.connect(pool.conninfo) as stranger,
        pytest.raises(ValueError, match="can't return connection"),
    ):
        give(make_pool(min_size=1), stranger)


def test_a_pool_with_a_check_or_reset_function_takes_its_own_steps(
    make_pool: Callable[..., ConnectionPool[Any]],
) -> None:
    checked: list[Any] = []
    reset: list[Any] = []
    pool = make_pool(min_size=1, check=checked.append, reset=reset.append)
    conn = pg_pool.getconn(pool)
    assert checked == [conn]
    pg_pool.putconn(pool, conn)
    pool.wait(5)  # the reset runs in the pool's worker
    for _ in range(500):
        if reset:
            break
        threading.Event().wait(0.01)
    assert reset == [conn]


def test_a_pool_opened_for_a_server_that_does_not_answer_times_out_and_stays_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``pg_pool.opened``, the first request's wait for the pool's first connection: past the
    pool's timeout, getconn's error; the pool is left open, to go on connecting (psycopg_pool's
    own ``open(wait=True)`` would close it for good)."""
    waits: list[tuple[float | None, bool]] = []

    class Recorded(pg_pool._FirstConnection):
        """The opener's wait, as it was asked for and as it ended (True: served)."""

        def wait(self, timeout: float | None = None) -> bool:
            # A hang guard, not the behaviour: a wait without the pool's timeout fails here,
            # loudly, rather than waiting for a server that never answers.
            assert timeout is not None, "the opener waits for its first connection forever"
            assert timeout <= 5.0, f"the opener waits {timeout} s, not the pool's 0.5 s"
            served = super().wait(timeout)
            waits.append((timeout, served))
            return served

    monkeypatch.setattr(pg_pool, "_FirstConnection", Recorded)
    pool: ConnectionPool[Any] = ConnectionPool(
        "postgresql://postgres@127.0.0.1:9/nothing", open=False, min_size=1, timeout=0.5
    )
    try:
        with pytest.raises(PoolTimeout) as timed_out:
            pg_pool.opened(pool)
        assert str(timed_out.value) == "couldn't get a connection after 0.50 sec"
        # One wait, of the pool's timeout, ended by that timeout (never served).
        assert waits == [(0.5, False)]
        assert not pool.closed
        pg_pool.opened(pool)  # open already: nothing to wait for here
    finally:
        pool.close()


def test_several_first_requests_at_once_are_all_served(postgres_url: str) -> None:
    """Threads making a fresh pool's first requests together: the one that opens it waits for
    its first connection, and is not left waiting for a full pool while the others, queued as
    clients, take every connection as it comes (it failed after the pool's timeout). Each
    thread goes on making requests until every thread has been served once, or has failed."""
    threads = 5
    queued = threading.Event()

    def when_the_others_are_queued(conn: psycopg.Connection[Any]) -> None:
        # The pool's connections come once every thread but the opener waits as a client
        # (as they may at any start): then the opener could not be left alone to fill it.
        deadline = time.monotonic() + 10.0
        while not queued.is_set() and time.monotonic() < deadline:
            if pool.get_stats()["requests_waiting"] >= threads - 1:
                queued.set()
            threading.Event().wait(0.005)

    pool: ConnectionPool[Any] = ConnectionPool(
        postgres_url,
        open=False,
        min_size=2,
        max_size=2,  # fewer than the requests: a connection given back goes to one waiting
        timeout=5.0,
        kwargs={"autocommit": True},
        configure=when_the_others_are_queued,
    )
    start = threading.Barrier(threads)
    lock = threading.Lock()
    answered: list[str] = []
    everyone_answered = threading.Event()

    def answer(said: str) -> None:
        with lock:
            answered.append(said)
            if len(answered) == threads:
                everyone_answered.set()

    def requests() -> None:
        start.wait()
        try:
            if pool.closed:
                pg_pool.opened(pool)
            served = False
            while not served or not everyone_answered.is_set():
                conn = pg_pool.getconn(pool)
                conn.execute("SELECT 1")
                pg_pool.putconn(pool, conn)
                if not served:
                    served = True
                    answer("served")
        except Exception as error:  # the failure is the answer looked at
            answer(f"{type(error).__name__}: {error}")

    workers = [threading.Thread(target=requests) for _ in range(threads)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30.0)
    finally:
        everyone_answered.set()
        pool.close()
    assert answered == ["served"] * threads


def test_a_pool_of_no_minimum_size_is_opened_without_waiting_to_fill(postgres_url: str) -> None:
    """A pool with ``min_size=0`` opens no connection of its own: ``opened`` does not wait for
    one (it would time out), and the first request opens the connection it takes."""
    pool: ConnectionPool[Any] = ConnectionPool(
        postgres_url, open=False, min_size=0, max_size=2, timeout=2.0, kwargs={"autocommit": True}
    )
    try:
        pg_pool.opened(pool)
        conn = pg_pool.getconn(pool)
        assert conn.execute("SELECT 1").fetchone() == (1,)
        pg_pool.putconn(pool, conn)
    finally:
        pool.close()
