"""SQLite's connection pool, as the library's with a statement cache on each connection and its
busiest steps written out (``recorders.py``'s factory makes it), and the commit cursor each
pooled connection keeps for the recorder's commits."""

from __future__ import annotations

import sqlite3
import threading
from time import time
from typing import Any

from eventsourcing.persistence import (
    ConnectionNotFromPoolError,
    ConnectionPoolClosedError,
    ConnectionUnavailableError,
    InterfaceError,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteConnection,
    SQLiteConnectionPool,
)

#: The attribute of a pooled SQLite connection holding its commit cursor.
_COMMIT_CURSOR = "_countersign_commit_cursor"


def _commit_cursor(connection: SQLiteConnection) -> sqlite3.Cursor:
    """The connection's own cursor for commits, made once and kept for its next commit
    (made, given its row factory and closed at every commit, it cost about 2,000
    instructions a commit). Rows as plain tuples: the read-set check indexes its one row
    (the connection's ``sqlite3.Row`` is a Python object made for each row fetched). Only
    a writer uses it, and the pool hands a connection to one thread at a time; each
    statement it runs resets the one before, as a new cursor's would start afresh. Kept
    with the sqlite3 connection it was made on: a connection the pool replaces (closed at
    its age) takes its cursor with it, and one whose sqlite3 connection was swapped (a
    wrapper, as a fault-injecting test uses) is given a cursor of the new one."""
    sqlite_conn = connection._sqlite_conn
    kept: tuple[sqlite3.Connection, sqlite3.Cursor] | None = connection.__dict__.get(_COMMIT_CURSOR)
    if kept is not None and kept[0] is sqlite_conn:
        return kept[1]
    cursor = sqlite_conn.cursor()
    cursor.row_factory = None
    connection.__dict__[_COMMIT_CURSOR] = (sqlite_conn, cursor)
    return cursor


class _QueueLock:
    """The pool's queue of threads waiting for a connection: the library's is a
    ``threading.Semaphore()`` of one, written in Python (a condition, a lock, a loop and
    the clock at every take); a lock of the interpreter's own is the same queue in C. Either
    may be released by a thread other than the one that took it."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return self._lock.acquire(blocking, -1 if timeout is None else timeout)

    def release(self) -> None:
        self._lock.release()


class _StatementCachingPool(SQLiteConnectionPool):
    """The library's SQLite connection pool, with a statement cache on each connection.

    eventsourcing 9.5.6 opens its connections with ``cached_statements=True``, which the
    sqlite3 module reads as a cache of ONE prepared statement: every commit's BEGIN, checks
    and INSERT were compiled again each time (a read-set check cost 13 us in a commit
    against 3 us with a cache). This is its ``_create_connection`` with the module's
    default cache of 128 statements; and the queue of threads waiting for a connection is a
    lock in C (``_QueueLock``) where the library's is a semaphore written in Python. Nothing
    else differs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._get_semaphore = _QueueLock()  # type: ignore[assignment]
        # The library's condition over a lock of our own (the library makes it over a new
        # RLock too), so that the short ways below hold that lock without a Python call.
        self._put_lock = threading.RLock()
        self._put_condition = threading.Condition(self._put_lock)

    def get_connection(
        self, timeout: float | None = None, *, is_writer: bool | None = None
    ) -> SQLiteConnection:
        """The library's ``get_connection`` (eventsourcing 9.5.6, ``ConnectionPool``), step for
        step, for this pool: its helpers inlined (the remaining time, the queue's lock, the
        put condition's lock, ``_get_connection``'s taking of a pooled connection). Anything
        else takes the library's own way: a pool whose readers and writers exclude each
        other (in-memory SQLite), one that pings, and an empty pool."""
        if self._mutually_exclusive_read_write or self.pre_ping:
            return super().get_connection(timeout, is_writer=is_writer)
        if self._closed:
            raise ConnectionPoolClosedError
        queue = self._get_semaphore._lock  # type: ignore[attr-defined]
        # Each lock tried without waiting first: most often it is free, and taking it so is
        # what the library's timed wait comes to, without the clock read and the remaining
        # time worked out for it (``_waited``; ``started`` stays None until something is
        # waited for, and the remaining time is then the whole timeout).
        started: float | None = None
        if not queue.acquire(False):
            started = self._waited(queue, timeout, started, "connection pool semaphore")
        try:
            if is_writer is True:
                if not self._writer_lock.acquire(False):
                    started = self._waited(self._writer_lock, timeout, started, "return of writer")
                self._num_writers += 1
            elif is_writer is False:
                with self._no_readers:
                    self._num_readers += 1
            conn = None
            put_lock = self._put_lock
            put_lock.acquire()
            try:
                if self._pool:
                    conn = self._pool.popleft()
                    conn.in_use.acquire()
                    if conn._closed:  # closed by its timer: the library's way takes the next
                        conn = None
                    else:
                        self._in_use[id(conn)] = conn
            finally:
                put_lock.release()
            if conn is None:
                conn = self._get_connection(timeout=self._remaining(timeout, started))
            conn.is_writer = is_writer
            return conn
        finally:
            queue.release()

    def _remaining(self, timeout: float | None, started: float | None) -> float:
        """What is left of ``timeout`` (the pool's if None) since ``started``: all of it if
        nothing was waited for yet (None)."""
        wait = self.pool_timeout if timeout is None else timeout
        return wait if started is None else max(0.0, wait + started - time())

    def _waited(self, lock: Any, timeout: float | None, started: float | None, what: str) -> float:
        """Waits for ``lock`` for what is left of the timeout, as the library's
        ``get_connection`` waits for its semaphore and its writer's lock: raises
        ``ConnectionUnavailableError`` past it. Returns when the waiting began."""
        if started is None:
            started = time()
        if not lock.acquire(True, self._remaining(timeout, started)):
            msg = f"Timed out waiting for {what}"
            raise ConnectionUnavailableError(msg)
        return started

    def put_connection(self, conn: SQLiteConnection) -> None:
        """The library's ``put_connection``, step for step, its helpers inlined."""
        is_writer, conn.is_writer = conn.is_writer, None
        put_lock = self._put_lock  # its own methods, not ``with`` (two special methods)
        put_lock.acquire()
        try:
            if self._closed:
                msg = "Pool is closed"
                raise ConnectionPoolClosedError(msg)
            try:
                del self._in_use[id(conn)]
            except KeyError:
                msg = "Connection not in use in this pool"
                raise ConnectionNotFromPoolError(msg) from None
            if not conn._closed:
                if not conn._closing.is_set() and len(self._pool) < self.pool_size:
                    self._pool.append(conn)
                else:
                    conn.close()
            conn.in_use.release()
            if is_writer is True:
                self._num_writers -= 1
                self._writer_lock.release()
            elif is_writer is False:
                with self._no_readers:
                    self._num_readers -= 1
                    if self._num_readers == 0 and self._mutually_exclusive_read_write:
                        self._no_readers.notify()
            # ``notify`` with nobody waiting does nothing (this thread holds its lock), after
            # a Python call that slices the waiters into a new deque: asked only for someone.
            if self._put_condition._waiters:  # type: ignore[attr-defined]
                self._put_condition.notify()
        finally:
            put_lock.release()

    def _create_connection(self) -> SQLiteConnection:
        try:
            connection = sqlite3.connect(
                database=self.db_name,
                uri=True,
                check_same_thread=False,
                isolation_level=None,  # autocommit; transactions are begun explicitly
                cached_statements=STATEMENT_CACHE,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as error:
            raise InterfaceError(error) from error
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode;")
            if cursor.fetchone()[0].lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL;")
                self.journal_mode_was_changed_to_wal = True
            self.is_journal_mode_wal = True
        connection.row_factory = sqlite3.Row
        return SQLiteConnection(sqlite_conn=connection, max_age=self.max_age)


#: Prepared statements kept per SQLite connection (the sqlite3 module's own default).
STATEMENT_CACHE = 128
