"""Event recorders: one round trip per commit, with the reads it relied on checked inside it.

Both recorders accept ``expected_versions`` (aggregate id -> the version this commit's
decisions were based on) for aggregates it READ but does not write; the aggregates it writes
are already checked by the primary key ``(originator_id, originator_version)``. Under the
writers' lock, before anything it inserts is committed, the commit verifies that each of them
is still at that version (or knows it: below), and raises ``ReadSetChangedError`` otherwise,
having written nothing. This is what lets the application
decide on state it already holds in memory instead of reading it again first: a decision taken
on an out-of-date fact can never be committed.

PostgreSQL: eventsourcing 9.5.6 can insert through a server-side function (one round trip
instead of the two of its pipelined transaction), but that function skips the table lock that
keeps notification ids in commit order, so a projection following the log could pass over an
event committed late with a lower id. The commit function (``countersign_events_commit_known``,
``pg_commit_function.py``) takes the writers' lock, checks the read set (or skips its probes
where nothing was committed since this process's last commit: ``known_reads.py``),
notifies listeners and inserts, all in one statement.

SQLite: the commit is a ``BEGIN IMMEDIATE`` transaction, so the check and the insert see the
same database even when several processes write to one file; the check is skipped where the
INSERT's first rowid shows that nothing was inserted since this process's last commit, as of
which it knows the read set to be current (``sqlite_known_reads.py``).
``CountersignSQLiteFactory`` is the library's SQLite persistence with one fix: its connections
cache prepared statements.

The PostgreSQL recorder lives in ``recorders_postgres.py``, imported (with psycopg) only by
a process that uses PostgreSQL: the settings name it by topic.

Both recorders also read the log as plain rows (``select_log``) for the projection runners,
which decode the events themselves (``infrastructure/persistence/log_decoder.py``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache, partial
from time import time
from typing import Any, NamedTuple, NoReturn
from uuid import UUID

from countersign.infrastructure.persistence.hexes import HEXES as _HEXES
from countersign.infrastructure.persistence.hexes import hex_of as _hex
from countersign.infrastructure.persistence.known_reads import KnownReads
from countersign.infrastructure.persistence.sqlite_known_reads import first_moved
from eventsourcing.persistence import (
    ConnectionNotFromPoolError,
    ConnectionPoolClosedError,
    ConnectionUnavailableError,
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    Notification,
    NotSupportedError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteFactory,
)

#: The keyword argument of ``insert_events`` (and of ``Application.save``) carrying the read set.
EXPECTED_VERSIONS = "expected_versions"
#: The SQLSTATE countersign's insert function raises when a read aggregate moved on.
STALE_READ_SQLSTATE = "CS409"


class LogEntry(NamedTuple):
    """One stored event as the log holds it, for readers that decode it themselves.

    Like the library's ``Notification`` without its per-row costs: ``originator_id`` is as
    the database returns it (a ``UUID`` from PostgreSQL, 32 hex digits from SQLite)."""

    id: int
    originator_id: UUID | str
    originator_version: int
    topic: str
    state: bytes


#: A log entry as a reader gets it: the recorder's plain row, or the library's notification.
Entry = LogEntry | Notification

#: A row's values (a tuple or a list, in ``LogEntry``'s order) as a ``LogEntry``, in C: the
#: named tuple's own ``_make`` is a Python call a row (about 5,000 instructions a row of the
#: SQLite log read, with the ``sqlite3.Row`` it was read as).
log_entry: Any = partial(tuple.__new__, LogEntry)


class ReadSetChangedError(Exception):
    """An aggregate this commit relied on has changed since it was read; nothing was written."""

    def __init__(self, aggregate_id: str) -> None:
        super().__init__(f"aggregate {aggregate_id} changed since it was read")
        self.aggregate_id = aggregate_id


def expected_versions(kwargs: Mapping[str, Any]) -> Mapping[UUID, int | None]:
    """Aggregate id -> the version the commit relied on; None: that it did not exist."""
    expected: Mapping[UUID, int | None] | None = kwargs.get(EXPECTED_VERSIONS)
    return expected or {}


#: sqlite3's errors as the library's ``SQLiteTransaction`` raises them, in its order.
_SQLITE_ERRORS: tuple[tuple[type[sqlite3.Error], type[PersistenceError]], ...] = (
    (sqlite3.InterfaceError, InterfaceError),
    (sqlite3.DataError, DataError),
    (sqlite3.OperationalError, OperationalError),
    (sqlite3.IntegrityError, IntegrityError),
    (sqlite3.InternalError, InternalError),
    (sqlite3.ProgrammingError, ProgrammingError),
    (sqlite3.NotSupportedError, NotSupportedError),
    (sqlite3.DatabaseError, DatabaseError),
    (sqlite3.Error, PersistenceError),
)


def translated_error(
    error: Exception,
    table: tuple[tuple[type[Exception], type[PersistenceError]], ...],
    argument: Any,
) -> PersistenceError:
    """``error`` as the library raises it: the first of ``table``'s classes it is an instance
    of (a driver's errors, a subclass before its base), made with ``argument``."""
    for theirs, ours in table:
        if isinstance(error, theirs):
            return ours(argument)
    return PersistenceError(argument)  # pragma: no cover - each table ends with the base


def _library_error(error: sqlite3.Error) -> PersistenceError:
    return translated_error(error, _SQLITE_ERRORS, error)


def _rolled_back(sqlite_conn: sqlite3.Connection, error: BaseException) -> NoReturn:
    """What the library's ``SQLiteTransaction.__exit__`` does with an error in its block:
    roll back, and raise the error, a sqlite3 one (the rollback's own too) as the
    library's."""
    try:
        sqlite_conn.rollback()
        raise error
    except sqlite3.Error as failed:
        raise _library_error(failed) from failed


@lru_cache(maxsize=256)
def _insert_statement(table: str, count: int) -> str:
    """The INSERT of ``count`` events, its text made once (as the read-set check's is:
    a commit's check and insert are the same few statements every time)."""
    rows = ",".join(["(?,?,?,?)"] * count)
    return f"INSERT INTO {table} VALUES {rows}"


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
    kept: tuple[sqlite3.Connection, sqlite3.Cursor] | None = connection.__dict__.get(
        _COMMIT_CURSOR
    )
    if kept is not None and kept[0] is sqlite_conn:
        return kept[1]
    cursor = sqlite_conn.cursor()
    cursor.row_factory = None
    connection.__dict__[_COMMIT_CURSOR] = (sqlite_conn, cursor)
    return cursor


class CountersignSQLiteRecorder(SQLiteApplicationRecorder):
    """The library's recorder, checking the read set inside an immediate transaction.

    A commit's events go in one multi-row INSERT (the library runs one statement per event).
    """

    #: Events per INSERT statement: 4 parameters each, under the 999 that SQLite before 3.32
    #: allows in one statement.
    INSERT_CHUNK = 200
    #: Aggregates per read-set check statement: one parameter and one result column each,
    #: under SQLite's 999 parameters (before 3.32) and 2,000 result columns.
    CHECK_CHUNK = 500

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What this process knows to be current as of its last commit (sqlite_known_reads).
        self._known = KnownReads()

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # ``expected_versions(kwargs)``, inline (a Python call a commit).
        expected: Mapping[UUID, int | None] = kwargs.get(EXPECTED_VERSIONS) or {}
        # The datastore's get_connection(commit=True), without its generator-based context
        # manager: the pool's writer connection, given back whatever happens.
        pool = self.datastore.pool
        connection: SQLiteConnection = pool.get_connection(is_writer=True)
        try:
            known = self._known
            # Claimed holding the pool's writer connection: this process's other commits
            # through this recorder wait for it, so what is known is its last commit's. One
            # INSERT's worth of events at most (sqlite_known_reads); none, nothing to claim.
            claimed = (
                known.claim(expected)
                if expected and 0 < len(stored_events) <= self.INSERT_CHUNK
                else None
            )
            # The library's SQLiteTransaction, begun IMMEDIATE (the write lock is taken
            # first, so no other process can commit between our check and our insert), on
            # the sqlite3 connection's own cursor (the library's wraps each of its methods in
            # a Python call; this one kept for the next commit): BEGIN IMMEDIATE, the
            # statements, then commit, or rollback on any error, sqlite3's errors raised as the library's.
            sqlite_conn = connection._sqlite_conn
            cursor = _commit_cursor(connection)
            try:
                cursor.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:  # "database is locked" past the timeout
                raise OperationalError(error) from error
            try:
                if claimed is None:
                    if expected:
                        self._check_read_set(cursor, expected)
                    ids = self._insert_events(cursor, stored_events)
                else:
                    # Known current as of rowid ``claimed``: the INSERT (one statement,
                    # so a failed one wrote nothing) first, and the check only if rows
                    # came between, or if the INSERT failed (sqlite_known_reads).
                    try:
                        # One INSERT's worth (the claim's condition): its one statement.
                        ids = self._insert_chunk(cursor, stored_events)
                    except sqlite3.Error:
                        # Refused as when the check came first: a moved read set ahead
                        # of the INSERT's own error (the primary key's, most often).
                        self._check_read_set(cursor, expected)
                        raise
                    if ids[0] != claimed + 1:
                        self._check_read_set(cursor, expected, ids[0])
            except BaseException as error:
                # Whatever this commit was to be, nothing of it is known (a refusal says
                # another commit came between anyway).
                known.forget()
                _rolled_back(sqlite_conn, error)
            try:
                # COMMIT as a statement of the connection's cache: the sqlite3 module's
                # ``commit()`` compiles "COMMIT" again at every call (Python 3.11). The
                # same statement, so the same outcome: a failed COMMIT (SQLITE_BUSY)
                # leaves the transaction open, as ``commit()`` does.
                cursor.execute("COMMIT")
            except sqlite3.Error as error:
                known.forget()  # committed or not: not known
                raise _library_error(error) from error
            if ids:
                known.committed(ids[0], ids[-1], stored_events, expected, claimed)
            return ids
        finally:
            pool.put_connection(connection)

    def select_log(self, after: int, limit: int) -> list[LogEntry]:
        """Up to ``limit`` log entries after notification id ``after``, in order."""
        with self.datastore.transaction(commit=False) as cursor:
            # Plain tuples (the connection's rows are ``sqlite3.Row``s, which the library's
            # reads index by name), each made a LogEntry in C as the cursor yields it.
            rows: sqlite3.Cursor = cursor.sqlite_cursor
            rows.row_factory = None
            rows.execute(
                "SELECT rowid, originator_id, originator_version, topic, state "
                f"FROM {self.events_table_name} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (after, limit),
            )
            return list(map(log_entry, rows))

    def _check_read_set(
        self,
        cursor: sqlite3.Cursor,
        expected: Mapping[UUID, int | None],
        before: int | None = None,
    ) -> None:
        """Raises ``ReadSetChangedError`` for the first aggregate not at the version relied
        on (``sqlite_known_reads.first_moved``; ``before``: as the table was before this
        transaction's INSERT, from that rowid on)."""
        moved = first_moved(cursor, self.events_table_name, expected, self.CHECK_CHUNK, before)
        if moved is not None:
            raise ReadSetChangedError(str(moved))

    def _insert_events(
        self, c: SQLiteCursor | sqlite3.Cursor, stored_events: Sequence[StoredEvent], **_: Any
    ) -> list[int]:
        count = len(stored_events)
        if count > self.INSERT_CHUNK:
            notification_ids: list[int] = []
            for start in range(0, count, self.INSERT_CHUNK):
                notification_ids += self._insert_chunk(c, stored_events[start : start + self.INSERT_CHUNK])
            return notification_ids
        return self._insert_chunk(c, stored_events) if count else []

    def _insert_chunk(
        self, c: SQLiteCursor | sqlite3.Cursor, chunk: Sequence[StoredEvent]
    ) -> list[int]:
        """One INSERT of up to ``INSERT_CHUNK`` events; their notification ids."""
        # The parameters in one flat list, filled by a loop (a comprehension over a tuple
        # made for each event is a function call and a tuple an event more).
        values: list[Any] = []
        append = values.append
        for e in chunk:
            originator_id = e.originator_id
            if type(originator_id) is UUID:
                append(_HEXES.get(originator_id.int) or _hex(originator_id))
            elif isinstance(originator_id, UUID):
                append(originator_id.hex)
            else:
                append(originator_id)
            append(e.originator_version)
            append(e.topic)
            # A blob as a bytearray: the sqlite3 module binds both alike, but passes only
            # exact int, float, str and bytearray values without asking its adapter
            # registry first (about 1,350 instructions a bytes value, against the copy's
            # cost).
            append(bytearray(e.state))
        count = len(chunk)
        c.execute(_insert_statement(self.events_table_name, count), values)
        # One statement under the write lock: each row's rowid is one more than the largest
        # before it, so the chunk's ids are the ones up to the last.
        last: int = c.lastrowid  # type: ignore[assignment]  # set by the INSERT
        return list(range(last - count + 1, last + 1))


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
        # Each lock tried without waiting first: most often it is free, and then taking it so
        # is what the library's timed wait comes to, without the clock read and the remaining
        # time worked out for it (``started``, None: nothing waited for yet; the library's
        # remaining time is then the whole timeout, give or take the steps in between).
        started: float | None = None
        wait = 0.0
        if not queue.acquire(False):
            wait = self.pool_timeout if timeout is None else timeout
            started = time()
            if not queue.acquire(True, wait):
                msg = "Timed out waiting for connection pool semaphore"
                raise ConnectionUnavailableError(msg)
        try:
            if is_writer is True:
                writer = self._writer_lock
                if not writer.acquire(False):
                    if started is None:
                        wait = self.pool_timeout if timeout is None else timeout
                        started = time()
                    if not writer.acquire(timeout=max(0.0, wait + started - time())):
                        msg = "Timed out waiting for return of writer"
                        raise ConnectionUnavailableError(msg)
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
                if started is None:
                    wait = self.pool_timeout if timeout is None else timeout
                    started = time()
                conn = self._get_connection(timeout=max(0.0, wait + started - time()))
            conn.is_writer = is_writer
            return conn
        finally:
            queue.release()

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


class CountersignSQLiteFactory(SQLiteFactory):
    """The library's SQLite persistence, its connections caching their statements."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        pool = self.datastore.pool  # no connection is open yet: replace it as it was built
        self.datastore.pool = _StatementCachingPool(
            db_name=pool.db_name,
            lock_timeout=pool.lock_timeout,
            pool_size=pool.pool_size,
            max_overflow=pool.max_overflow,
            pool_timeout=pool.pool_timeout,
            max_age=pool.max_age,
            pre_ping=pool.pre_ping,
        )
