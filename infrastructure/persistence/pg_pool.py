"""A connection of the PostgreSQL datastore's pool, taken and given back around each commit and
read: ``PostgresDatastore.get_connection()`` (eventsourcing 9.5.6) written as one class, and
psycopg_pool's ``getconn`` and ``putconn`` taken a step at a time where the pool is the one
whose steps these are.

psycopg_pool's ``getconn`` and ``putconn`` are about 20,000 instructions each under callgrind,
two of each a cycle: a dozen Python calls (a deadline, the open check through ``super()``,
the wait loop, the critical section, the ready connection, the health check, the return
through the reset and expiry checks, the critical section again), of which, with a
connection ready, no check function and no reset function (the datastore's pool), only the
steps below do anything. ``getconn`` and ``putconn`` here take those steps in the pool's order,
on the pool's own state and under its own lock: the same statistics, the same log records
(the pool's logger), the same connection handed out (the first ready one) and given back (to
the end of the ready queue, or to a waiting client). Anything else (no connection ready, a
check or reset function, a closed pool, a connection in a transaction, broken or past its
lifetime) is handed to the pool's own methods at the point where it differs. Only for
psycopg_pool 3.3, whose internals these are, and its ``ConnectionPool`` as it is (a subclass
that changes a step takes the pool's own methods throughout): tests/test_pg_pool.py compares
both ways.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from time import monotonic
from typing import Any

import psycopg
import psycopg_pool
from countersign.infrastructure.persistence.hung_up import hung_up
from countersign.infrastructure.persistence.recorders import translated_error
from countersign.infrastructure.persistence.unavailable import (
    DatabaseTimeoutError,
    NoConnectionError,
)
from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
)
from eventsourcing.postgres import PostgresDatastore
from psycopg.pq import TransactionStatus
from psycopg.types.composite import register_composite
from psycopg_pool import ConnectionPool, PoolTimeout
from psycopg_pool.pool import AddConnection

#: psycopg_pool's own logger: the records its getconn and putconn make.
_logger = logging.getLogger("psycopg.pool")
#: Where a connection the server hung up on is said: psycopg's loggers are set to ERROR by
#: eventsourcing as it is imported, so a warning there reached no operator.
_said = logging.getLogger("countersign.store")
_IDLE = TransactionStatus.IDLE


class _ConnectErrors(logging.Filter):
    """The last failed attempt to connect that psycopg_pool warned of ("error connecting in
    'pool-1': ...", at each retry while the server is out of reach), kept so that a client
    told there was no connection in time hears why (a refusal, a wrong port); the warnings
    themselves still reach no handler, as eventsourcing's ERROR level on the logger meant."""

    #: How long a failed attempt explains a wait for a connection (past it, another cause).
    FRESH_FOR = 60.0

    def __init__(self) -> None:
        super().__init__()
        self.said = ""
        self.at = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.msg == "error connecting in %r: %s" and isinstance(args, tuple) and args:
            lines = str(args[-1]).strip().splitlines()
            self.said = " ".join(lines[0].split())[:300] if lines else ""
            self.at = monotonic()
        # Shown from ERROR, as eventsourcing left the logger; all of them once someone has
        # set the logger's level (a developer following the pool at INFO).
        return record.levelno >= logging.ERROR or _logger.level != _READ_FROM

    def last(self) -> str:
        """The last attempt's words, if it failed within ``FRESH_FOR`` seconds."""
        return self.said if self.said and monotonic() - self.at < self.FRESH_FOR else ""


#: The logger's level here: records at WARNING are made again (eventsourcing set ERROR), for
#: the filter to read; it lets none below ERROR through, so the handlers see what they saw.
_READ_FROM = logging.WARNING
_connect_errors = _ConnectErrors()
_logger.addFilter(_connect_errors)
_logger.setLevel(_READ_FROM)
_INFO = logging.INFO
_REQUESTS_NUM = ConnectionPool._REQUESTS_NUM

#: The methods whose steps ``getconn`` and ``putconn`` take; a pool class that changes any
#: of them takes its own.
_STEPS = (
    "getconn",
    "putconn",
    "_check_open_getconn",
    "_getconn_with_check_loop",
    "_getconn_unchecked",
    "_get_ready_connection",
    "_check_connection",
    "_check_pool_putconn",
    "_maybe_close_connection",
    "_putconn",
    "_return_connection",
    "_reset_connection",
    "_add_to_pool",
)
_KNOWN_VERSION = psycopg_pool.__version__.split(".")[:2] == ["3", "3"]
_known_classes: dict[type[Any], bool] = {}


def steps_here(pool: Any) -> bool:
    """Whether ``pool``'s getconn and putconn are psycopg_pool 3.3's ``ConnectionPool``'s own,
    whose steps ``getconn`` and ``putconn`` take (decided once per class)."""
    cls = type(pool)
    known = _known_classes.get(cls)
    if known is None:
        known = _known_classes[cls] = _KNOWN_VERSION and all(
            getattr(cls, name, None) is getattr(ConnectionPool, name) for name in _STEPS
        )
    return known


def getconn(pool: Any) -> psycopg.Connection[Any]:
    """``pool.getconn()``: a ready connection taken as psycopg_pool 3.3 takes it (the request
    logged and counted, the open check, the first ready connection under the pool's lock,
    the smallest number ready noted, the connection told its pool, logged as given); if none
    is ready, or the pool has a check function, the pool's own steps from there (its wait
    loop, with ``getconn``'s deadline and timeout message). Whether the pool's logger takes
    its records is asked once a call, not once a record."""
    if not (_known_classes.get(type(pool)) or steps_here(pool)) or pool._check is not None:
        return pool.getconn()  # type: ignore[no-any-return]
    timeout = pool.timeout
    logs = _logger.isEnabledFor(_INFO)
    if logs:
        _logger.info("connection requested from %r", pool.name)
    pool._stats[_REQUESTS_NUM] += 1
    if pool._closed or pool._open_implicit:
        pool._check_open_getconn()
    lock = pool._lock
    lock.acquire()
    ready = pool._pool
    # (The pool's deadline, its timeout from now, is needed only to wait: one of no time
    # left is refused before a ready connection is taken.)
    if not ready or timeout <= 0.0:
        if pool._pool_full_event.__class__ is _FirstConnection:
            pool._pool_full_event.set()  # the opener need not wait alone (``opened``)
        lock.release()
        try:
            return pool._getconn_with_check_loop(monotonic() + timeout)  # type: ignore[no-any-return]
        except PoolTimeout:
            raise PoolTimeout(f"couldn't get a connection after {timeout:.2f} sec") from None
    conn = ready.popleft()
    if len(ready) < pool._nconns_min:
        pool._nconns_min = len(ready)
    lock.release()
    if hung_up(conn):
        # The server ended it while it waited (a restart, ``pg_terminate_backend``): not
        # handed out to fail a request, but counted, logged and replaced as the pool's own
        # ``check`` does, and the next one taken.
        pool._stats[pool._CONNECTIONS_LOST] += 1
        _said.warning(
            "discarding broken connection: the server ended it (a restart, "
            "pg_terminate_backend); a new one replaces it (%s)",
            conn,
        )
        with contextlib.suppress(Exception):
            conn.close()
        pool.run_task(AddConnection(pool))
        return getconn(pool)
    conn._pool = pool
    if logs:
        _logger.info("connection given by %r", pool.name)
    return conn  # type: ignore[no-any-return]


def putconn(pool: Any, conn: psycopg.Connection[Any]) -> None:
    """``pool.putconn(conn)``: an idle connection within its lifetime given back as psycopg_pool
    3.3 gives it back (logged, the pool's reference dropped, to a waiting client or the end
    of the ready queue, under the pool's lock); anything else through the pool's own steps
    from where it differs."""
    owner: Any = getattr(conn, "_pool", None)
    if (
        owner is not pool
        or pool._reset is not None
        or pool._closed
        or not (_known_classes.get(type(pool)) or steps_here(pool))
    ):
        pool.putconn(conn)
        return
    if _logger.isEnabledFor(_INFO):
        _logger.info("returning connection to %r", pool.name)
    if (
        conn.pgconn.transaction_status != _IDLE
        or conn._created_at <= pool._drained_at
        or conn._expire_at <= monotonic()
    ):
        pool._return_connection(conn, from_getconn=False)
        return
    conn._pool = None
    lock = pool._lock
    lock.acquire()
    if pool._closed or pool._waiting or pool._pool_full_event is not None:
        first = pool._pool_full_event
        lock.release()
        pool._add_to_pool(conn)  # closes it, hands it to a waiting client, or notifies
        if first.__class__ is _FirstConnection:
            first.set()  # a connection served and given back: the opener takes one too
        return
    pool._pool.append(conn)
    lock.release()


def shrink(pool: Any) -> None:
    """psycopg_pool's ``_shrink_pool``, run by the pool's scheduler every ``max_idle`` seconds
    (never by a taker or a giver), closing every connection above the pool's minimum that the
    last ``max_idle`` seconds did not need rather than one: the fewest ready in that time
    (``_nconns_min``, which ``getconn`` notes) were never all taken at once. The pool's one
    a period left a burst's ten extra connections open for 100 minutes, on a server that
    other services share."""
    with pool._lock:
        unused = min(pool._nconns_min, pool._nconns - pool._min_size, len(pool._pool))
        closing = [pool._pool.popleft() for _ in range(max(0, unused))]
        pool._nconns -= len(closing)
        pool._nconns_min = len(pool._pool)
    if closing:
        _logger.info(
            "shrinking pool %r to %s because %s connections were unused in the last %s sec",
            pool.name,
            pool._nconns,
            len(closing),
            pool.max_idle,
        )
    for conn in closing:
        pool._close_connection(conn)


#: Held while a pool is opened (``opened``): one thread opens it, whichever asks first.
_opening = threading.Lock()


class _FirstConnection(threading.Event):
    """What the request that opened a pool waits on (``opened``): set by the pool once it
    holds ``min_size`` connections, as its own ``wait`` is, or by another request that
    found no connection ready (``getconn``) or gave one back (``putconn``)."""


def opened(pool: Any) -> None:
    """``pool.open(False)``, as the library opens a pool that does not wait to fill, then (with
    psycopg_pool 3.3's ``ConnectionPool``) a wait for its first connection, as long as
    ``getconn`` would wait for one (``pool.timeout``; past it, getconn's PoolTimeout), the
    pool left open to go on connecting as it would be. Opened without that wait, the
    request that opened it waited as a client, and a client waiting while the pool is
    smaller than its maximum makes it grow by one: the pool's first connection and a second
    were both opened for that one request, at every start (a start opened four connections,
    2026-12-07). The wait ends too when another request is served meanwhile, or waits as a
    client: the pool is then not opened for this request alone, and the pool, handing its
    connections to the requests that wait, might not hold ``min_size`` of them at once
    before the timeout (several threads' first requests at once each waited 5 s, and the
    opener's failed). A pool opened meanwhile by another thread is left as it is."""
    with _opening:
        if not pool._closed:
            return
        if not steps_here(pool):
            pool.open(False)
            return  # the pool's own steps: getconn waits for the connection as a client
        filled = _FirstConnection()
        with pool._lock:
            pool._open()  # ``open(False)``'s step: the pool's lock is held while it opens
            if len(pool._pool) >= pool._min_size or pool._pool_full_event is not None:
                return  # (a pool of no minimum size opens no connection to wait for)
            # Set before a request can take the pool's lock: one that finds the pool open
            # finds the event. What the pool's ``wait`` waits on, set by the pool once it
            # holds min_size; not ``wait`` itself, which closes the pool for good if the
            # server does not answer.
            pool._pool_full_event = filled
    try:
        ready = filled.wait(pool.timeout)
    finally:
        with pool._lock:
            if pool._pool_full_event is filled:
                pool._pool_full_event = None
    if not ready:
        raise PoolTimeout(f"couldn't get a connection after {pool.timeout:.2f} sec")


#: psycopg's errors as the library's ``PostgresDatastore.get_connection`` translates them, in
#: its order (a subclass before its base); except a statement the server cancelled (its
#: ``statement_timeout`` or ``lock_timeout``, ``COUNTERSIGN_DATABASE_TIMEOUT``), which the
#: library would raise as an OperationalError, retried up to ten times by most of its reads:
#: a DatabaseTimeoutError, raised at once (unavailable.py).
_TRANSLATED: tuple[tuple[type[psycopg.Error], type[PersistenceError]], ...] = (
    (PoolTimeout, NoConnectionError),  # an OperationalError too: not retried (unavailable.py)
    (psycopg.InterfaceError, InterfaceError),
    (psycopg.errors.QueryCanceled, DatabaseTimeoutError),
    (psycopg.errors.LockNotAvailable, DatabaseTimeoutError),
    (psycopg.OperationalError, OperationalError),
    (psycopg.DataError, DataError),
    (psycopg.IntegrityError, IntegrityError),
    (psycopg.InternalError, InternalError),
    (psycopg.ProgrammingError, ProgrammingError),
    (psycopg.NotSupportedError, NotSupportedError),
    (psycopg.DatabaseError, DatabaseError),
    (psycopg.Error, PersistenceError),
)


def _translated(error: psycopg.Error) -> PersistenceError:
    if isinstance(error, PoolTimeout):
        last = _connect_errors.last()
        if last and last not in str(error):
            # The operator's log then says why ("Connection refused" at which host and port).
            error.args = (f"{error}; the last attempt to connect said: {last}",)
    return translated_error(error, _TRANSLATED, str(error))


class PooledConnection:
    """``PostgresDatastore.get_connection()`` (eventsourcing 9.5.6) over psycopg_pool's
    ``connection()``, as one context manager written as a class: each is a generator-based
    context manager, about a dozen Python calls a commit between them. The same steps: the
    pool opened as the library opens it (every time if it waits for the pool to fill, else
    when it is closed, then its first connection waited for: ``opened``), a connection
    from the pool (``getconn``), the library's composite types registered on it, the
    connection's own context (commit, or rollback on an error: nothing to do, and not
    called, for an idle connection left without an error), the connection given back
    (``putconn``) whatever happens, and psycopg's errors raised as the library's
    (``_translated``). Only psycopg_pool's usage-time statistic (``get_stats()["usage_ms"]``)
    is not counted."""

    __slots__ = ("_conn", "_datastore")

    def __init__(self, datastore: PostgresDatastore) -> None:
        self._datastore = datastore
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> psycopg.Connection[Any]:
        conn = self._conn = taken(self._datastore)
        return conn

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        conn = self._conn
        assert conn is not None
        self._conn = None
        given_back(self._datastore, conn, kind, error, traceback)


def taken(datastore: PostgresDatastore) -> psycopg.Connection[Any]:
    """``PooledConnection.__enter__``: the pool opened as the library opens it, a connection
    from it, the library's composite types registered on it, the connection's own context
    entered; psycopg's errors raised as the library's. (A function, so that the recorder's
    commit can take a connection without the context object: ``given_back`` ends it.)"""
    pool = datastore.pool
    try:
        if datastore.pool_open_timeout is not None:
            pool.open(True, datastore.pool_open_timeout)
        elif pool._closed:
            opened(pool)
        conn = getconn(pool)
    except psycopg.Error as error:
        raise _translated(error) from error
    try:
        for info in datastore.psycopg_type_adapters.values():
            if not conn.adapters.types.get(info.oid):
                register_composite(info, conn)
        conn.__enter__()
    except BaseException as error:
        putconn(pool, conn)
        if isinstance(error, psycopg.Error):
            raise _translated(error) from error
        raise
    return conn


def given_back(
    datastore: PostgresDatastore,
    conn: psycopg.Connection[Any],
    kind: Any,
    error: BaseException | None,
    traceback: Any = None,
) -> None:
    """``PooledConnection.__exit__`` for ``conn`` from ``taken(datastore)``: the connection's
    context left (with ``error``, of class ``kind``, if the block raised one), the connection
    given back whatever happens, and psycopg's errors (the block's included) raised as the
    library's (``traceback``: the error's, as ``with`` gives it)."""
    try:
        # psycopg's Connection.__exit__ commits (nothing to commit when idle), rolls
        # back on an error, and closes a connection that is not the pool's (this one is).
        if (
            kind is not None
            or conn.pgconn.transaction_status != _IDLE
            or conn._tpc is not None
            or conn._num_transactions
        ):
            conn.__exit__(kind, error, traceback)
    except psycopg.Error as failed:
        raise _translated(failed) from failed
    finally:
        putconn(datastore.pool, conn)
    if isinstance(error, psycopg.Error):
        raise _translated(error) from error
