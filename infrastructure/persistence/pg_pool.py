"""psycopg_pool's ``getconn`` and ``putconn`` for a commit's connection, with their helpers
inlined where a connection is ready and nothing else is asked of the pool.

Every commit takes a connection from the datastore's pool and gives it back
(``recorders_postgres._PooledConnection``). In psycopg_pool 3.3.3 that is a dozen Python calls
(``getconn``, ``_check_open_getconn``, ``_getconn_with_check_loop``, ``_getconn_unchecked``,
``_get_ready_connection``, ``_check_connection``; ``putconn``, ``_check_pool_putconn``,
``_maybe_close_connection``, ``_putconn``, ``_return_connection``, ``_reset_connection``), three
``logger.info`` calls and a ``with`` on the pool's lock each way: about 35,000 instructions a
commit under callgrind. ``take`` and ``give_back`` do the same steps in the same order, with
the same statistics, log lines (when the logger would write them), lock and checks, for the
common case: an open pool with no ``check`` or ``reset`` function, a connection ready in it,
and one given back idle and not expired. Anything else (a pool of another version or class,
one that waits or must grow, a connection to check, reset, roll back or discard) takes the
library's own methods from where the common case leaves off, so it is handled exactly as
before.
"""

from __future__ import annotations

import logging
from time import monotonic
from typing import Any

import psycopg_pool
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

#: The psycopg_pool whose steps these are (its private attributes are read): any other takes
#: the library's ``getconn`` and ``putconn`` as they are.
WRITTEN_FOR = "3.3.3"
_FITS_VERSION = psycopg_pool.__version__ == WRITTEN_FOR

#: psycopg_pool's own logger, which its ``getconn`` and ``putconn`` write to.
_log = logging.getLogger("psycopg.pool")
_INFO = logging.INFO
_IDLE = TransactionStatus.IDLE

#: The pool's methods whose steps are inlined: a class that overrides any keeps them all.
_INLINED = (
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
)
#: Pool classes met -> whether they take the inlined steps (decided once per class).
_FITTING: dict[type, bool] = {}


def _fits(cls: type) -> bool:
    fits = _FITTING.get(cls)
    if fits is None:
        fits = _FITTING[cls] = (
            _FITS_VERSION
            and issubclass(cls, ConnectionPool)
            and all(getattr(cls, name) is getattr(ConnectionPool, name) for name in _INLINED)
        )
    return fits


def take(pool: ConnectionPool[Any]) -> Any:
    """``pool.getconn()``."""
    if not _fits(type(pool)) or pool._closed or pool._open_implicit or pool._check is not None:
        return pool.getconn()
    timeout = pool.timeout
    deadline = monotonic() + timeout
    informing = _log.isEnabledFor(_INFO)
    if informing:
        _log.info("connection requested from %r", pool.name)
    pool._stats[pool._REQUESTS_NUM] += 1
    # ``_check_open_getconn``: the pool is open (above), and was not opened implicitly.
    conn = None
    lock = pool._lock
    lock.acquire()
    try:
        # ``_get_ready_connection``, when a connection is ready and there is time left.
        ready = pool._pool
        if ready and deadline - monotonic() > 0.0:
            conn = ready.popleft()
            if len(ready) < pool._nconns_min:
                pool._nconns_min = len(ready)
    finally:
        lock.release()
    if conn is None:
        # None ready: the library's own loop (it queues, grows the pool, waits, times out).
        try:
            return pool._getconn_with_check_loop(deadline)
        except PoolTimeout:
            raise PoolTimeout(f"couldn't get a connection after {timeout:.2f} sec") from None
    conn._pool = pool
    # ``_check_connection``: no check function (above).
    if informing:
        _log.info("connection given by %r", pool.name)
    return conn


def give_back(pool: ConnectionPool[Any], conn: Any) -> None:
    """``pool.putconn(conn)``."""
    if (
        not _fits(type(pool))
        or getattr(conn, "_pool", None) is not pool
        or pool._closed
        or pool._reset is not None
        or conn.pgconn.transaction_status != _IDLE
    ):
        pool.putconn(conn)
        return
    if _log.isEnabledFor(_INFO):
        _log.info("returning connection to %r", pool.name)
    # ``_return_connection``: idle, so nothing to roll back or discard, unless it expired.
    if conn._created_at <= pool._drained_at or conn._expire_at <= monotonic():
        pool._return_connection(conn, from_getconn=False)
        return
    pool._add_to_pool(conn)
