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
from collections.abc import Mapping, Sequence
from functools import lru_cache, partial
from typing import Any, NamedTuple, NoReturn
from uuid import UUID

from countersign.infrastructure.persistence.hexes import HEXES as _HEXES
from countersign.infrastructure.persistence.hexes import hex_of as _hex
from countersign.infrastructure.persistence.known_reads import KnownReads
from countersign.infrastructure.persistence.sqlite_known_reads import first_moved
from countersign.infrastructure.persistence.sqlite_pool import (  # the pool's home since s29
    STATEMENT_CACHE as STATEMENT_CACHE,
)
from countersign.infrastructure.persistence.sqlite_pool import (
    _commit_cursor,
    _StatementCachingPool,
)
from countersign.infrastructure.persistence.sqlite_pool import _QueueLock as _QueueLock
from eventsourcing.persistence import (
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
    SQLiteApplicationRecorder,
    SQLiteConnection,
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
            # a Python call; this one is kept for the next commit: sqlite_pool): BEGIN
            # IMMEDIATE, the statements, then commit, or rollback on any error, sqlite3's
            # errors raised as the library's.
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
                notification_ids += self._insert_chunk(
                    c, stored_events[start : start + self.INSERT_CHUNK]
                )
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
