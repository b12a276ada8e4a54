"""Event recorders: one round trip per commit, with the reads it relied on checked inside it.

Both recorders accept ``expected_versions`` (aggregate id -> the version this commit's
decisions were based on) for aggregates it READ but does not write; the aggregates it writes
are already checked by the primary key ``(originator_id, originator_version)``. Under the
writers' lock, before inserting anything, the commit verifies that each of them is still at
that version, and raises ``ReadSetChangedError`` otherwise. This is what lets the application
decide on state it already holds in memory instead of reading it again first: a decision taken
on an out-of-date fact can never be committed.

PostgreSQL: eventsourcing 9.5.6 can insert through a server-side function (one round trip
instead of the two of its pipelined transaction), but that function skips the table lock that
keeps notification ids in commit order, so a projection following the log could pass over an
event committed late with a lower id. ``countersign_events_insert`` takes the lock, checks the
read set, notifies listeners and inserts, all in one statement run in autocommit mode.

SQLite: the commit is a ``BEGIN IMMEDIATE`` transaction, so the check and the insert see the
same database even when several processes write to one file. ``CountersignSQLiteFactory`` is
the library's SQLite persistence with one fix: its connections cache prepared statements.

Both recorders also read the log as plain rows (``select_log``) for the projection runners,
which decode the events themselves (``infrastructure/persistence/log_decoder.py``).
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple
from uuid import UUID

import psycopg
from eventsourcing.persistence import (
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteFactory,
    SQLiteTransaction,
)
from eventsourcing.utils import retry
from psycopg.adapt import Dumper
from psycopg.postgres import types as pg_types
from psycopg.pq import Format
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier

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


class ReadSetChangedError(Exception):
    """An aggregate this commit relied on has changed since it was read; nothing was written."""

    def __init__(self, aggregate_id: str) -> None:
        super().__init__(f"aggregate {aggregate_id} changed since it was read")
        self.aggregate_id = aggregate_id


class _PackedArray:
    """A one-dimensional PostgreSQL array already in its binary wire format (``array_send``).

    psycopg adapts Python lists element by element in Python; packing the arrays of a commit
    here is several times faster, and the commit path runs for every proposal and approval.
    """

    __slots__ = ("data",)
    element_type = ""

    def __init__(self, data: bytes) -> None:
        self.data = data


def _array_header(element_oid: int, count: int) -> bytes:
    # ndim, has-nulls flag, element type; then (size, lower bound) for the one dimension.
    if not count:
        return struct.pack("!iiI", 0, 0, element_oid)
    return struct.pack("!iiIii", 1, 0, element_oid, count, 1)


class _UUIDs(_PackedArray):
    __slots__ = ()
    element_type = "uuid"

    @classmethod
    def of(cls, values: Sequence[UUID | str]) -> _UUIDs:
        head = _array_header(pg_types["uuid"].oid, len(values))
        return cls(head + b"".join([b"\0\0\0\x10" + _uuid(v).bytes for v in values]))


def _uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(value)


class _BigInts(_PackedArray):
    __slots__ = ()
    element_type = "int8"

    @classmethod
    def of(cls, values: Sequence[int]) -> _BigInts:
        head = _array_header(pg_types["int8"].oid, len(values))
        body = struct.pack("!" + "iq" * len(values), *[x for v in values for x in (8, v)])
        return cls(head + body)


class _Bytes(_PackedArray):
    """``text[]`` or ``bytea[]``: length-prefixed elements (text as UTF-8)."""

    __slots__ = ()

    @classmethod
    def of(cls, values: Iterable[bytes], count: int) -> _Bytes:
        head = _array_header(pg_types[cls.element_type].oid, count)
        return cls(head + b"".join([struct.pack("!i", len(v)) + v for v in values]))


class _Texts(_Bytes):
    __slots__ = ()
    element_type = "text"


class _Byteas(_Bytes):
    __slots__ = ()
    element_type = "bytea"


def _packed_dumper(packed: type[_PackedArray]) -> type[Dumper]:
    class PackedDumper(Dumper):
        format = Format.BINARY
        oid = pg_types[packed.element_type].array_oid

        def dump(self, obj: Any) -> bytes:
            return obj.data  # type: ignore[no-any-return]

    PackedDumper.__name__ = f"{packed.__name__}Dumper"
    return PackedDumper


# Registered on psycopg's global adapters: these private types appear nowhere else.
for _packed in (_UUIDs, _BigInts, _Texts, _Byteas):
    psycopg.adapters.register_dumper(_packed, _packed_dumper(_packed))


def _expected(kwargs: Mapping[str, Any]) -> Mapping[UUID, int]:
    expected: Mapping[UUID, int] | None = kwargs.get(EXPECTED_VERSIONS)
    return expected or {}


class CountersignPostgresRecorder(PostgresApplicationRecorder):
    """The library's recorder, inserting through its own insert function."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name=events_table_name)
        schema = Identifier(self.datastore.schema)
        table = Identifier(self.events_table_name)
        # Named after the table: one function per events table, wherever the schema is shared.
        function = Identifier(f"{self.events_table_name}_insert")
        self.sql_create_statements.append(
            SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{function}("
                "ids uuid[], versions bigint[], topics text[], states bytea[], "
                "check_ids uuid[], check_versions bigint[]) "
                "RETURNS SETOF bigint LANGUAGE plpgsql AS $BODY$ "
                "DECLARE stale uuid; "
                "BEGIN "
                "SET LOCAL lock_timeout = '{lock_timeout}s'; "
                # One writer at a time, so that notification ids follow commit order.
                "LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
                # Taken after the lock, this snapshot sees every commit before ours.
                "SELECT c.id INTO stale FROM unnest(check_ids, check_versions) AS c(id, version) "
                "WHERE c.version IS DISTINCT FROM ("
                "SELECT max(e.originator_version) FROM {schema}.{table} AS e "
                "WHERE e.originator_id = c.id) LIMIT 1; "
                "IF stale IS NOT NULL THEN "
                "RAISE EXCEPTION USING ERRCODE = '{sqlstate}', MESSAGE = stale::text; "
                "END IF; "
                "NOTIFY {channel}; "
                "RETURN QUERY INSERT INTO {schema}.{table} "
                "(originator_id, originator_version, topic, state) "
                "SELECT * FROM unnest(ids, versions, topics, states) "
                "RETURNING notification_id; "
                "END; $BODY$"
            ).format(
                schema=schema,
                function=function,
                table=table,
                lock_timeout=self.datastore.lock_timeout,
                sqlstate=SQL(STALE_READ_SQLSTATE),
                channel=Identifier(self.channel_name),
            )
        )
        self._call_insert = SQL(
            "SELECT * FROM {schema}.{function}("
            "%s::uuid[], %s::bigint[], %s::text[], %s::bytea[], %s::uuid[], %s::bigint[])"
        ).format(schema=schema, function=function)

        self._select_log = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {schema}.{table} WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(schema=schema, table=table)

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_log(self, after: int, limit: int) -> list[LogEntry]:
        """Up to ``limit`` log entries after notification id ``after``, in order."""
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(self._select_log, (after, limit), prepare=True, binary=True)
            return list(map(LogEntry._make, cursor.fetchall()))

    # The library's own retry: a dropped connection is retried; if the first attempt had in
    # fact committed, the retry reports an IntegrityError for our own write (the application
    # reloads and checks before treating it as somebody else's).
    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        expected = _expected(kwargs)
        # Parallel arrays, packed in binary: nothing to escape, nothing adapted one by one.
        count = len(stored_events)
        params = (
            _UUIDs.of([e.originator_id for e in stored_events]),
            _BigInts.of([e.originator_version for e in stored_events]),
            _Texts.of((e.topic.encode() for e in stored_events), count),
            _Byteas.of((e.state for e in stored_events), count),
            _UUIDs.of(list(expected)),
            _BigInts.of(list(expected.values())),
        )
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            try:
                cursor.execute(self._call_insert, params, prepare=True, binary=True)
            except psycopg.Error as error:
                if error.sqlstate == STALE_READ_SQLSTATE:
                    detail = error.diag.message_primary or "?"
                    raise ReadSetChangedError(detail) from None
                raise
            return [next(iter(row.values())) for row in cursor.fetchall()]


class _ImmediateTransaction(SQLiteTransaction):
    """The library's transaction (and its error translation), begun IMMEDIATE: the write lock
    is taken first, so no other process can commit between our check and our insert."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        try:
            cursor.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:  # "database is locked" past the timeout
            cursor.sqlite_cursor.close()
            raise OperationalError(error) from error
        return cursor


class CountersignSQLiteRecorder(SQLiteApplicationRecorder):
    """The library's recorder, checking the read set inside an immediate transaction.

    A commit's events go in one multi-row INSERT (the library runs one statement per event).
    """

    #: Events per INSERT statement: 4 parameters each, under the 999 that SQLite before 3.32
    #: allows in one statement.
    INSERT_CHUNK = 200

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        expected = _expected(kwargs)
        connection: SQLiteConnection
        with (
            self.datastore.get_connection(commit=True) as connection,
            _ImmediateTransaction(connection, commit=True) as cursor,
            cursor,
        ):
            if expected:
                self._check_read_set(cursor, expected)
            return self._insert_events(cursor, stored_events, **kwargs)

    def select_log(self, after: int, limit: int) -> list[LogEntry]:
        """Up to ``limit`` log entries after notification id ``after``, in order."""
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                "SELECT rowid, originator_id, originator_version, topic, state "
                f"FROM {self.events_table_name} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (after, limit),
            )
            return list(map(LogEntry._make, cursor.fetchall()))

    def _check_read_set(self, cursor: SQLiteCursor, expected: Mapping[UUID, int]) -> None:
        check = (
            f"SELECT max(originator_version) FROM {self.events_table_name} WHERE originator_id = ?"
        )
        for aggregate_id, version in expected.items():
            cursor.execute(check, (aggregate_id.hex,))
            row = cursor.fetchone()
            if row is None or row[0] != version:
                raise ReadSetChangedError(str(aggregate_id))

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **_: Any
    ) -> Sequence[int] | None:
        notification_ids: list[int] = []
        for start in range(0, len(stored_events), self.INSERT_CHUNK):
            chunk = stored_events[start : start + self.INSERT_CHUNK]
            rows = ",".join(["(?,?,?,?)"] * len(chunk))
            c.execute(
                f"INSERT INTO {self.events_table_name} VALUES {rows}",
                [
                    value
                    for e in chunk
                    for value in (
                        e.originator_id.hex
                        if isinstance(e.originator_id, UUID)
                        else e.originator_id,
                        e.originator_version,
                        e.topic,
                        e.state,
                    )
                ],
            )
            # One statement under the write lock: each row's rowid is one more than the
            # largest before it, so the chunk's ids are the ones up to the last.
            last = c.lastrowid
            notification_ids.extend(range(last - len(chunk) + 1, last + 1))
        return notification_ids


class _StatementCachingPool(SQLiteConnectionPool):
    """The library's SQLite connection pool, with a statement cache on each connection.

    eventsourcing 9.5.6 opens its connections with ``cached_statements=True``, which the
    sqlite3 module reads as a cache of ONE prepared statement: every commit's BEGIN, checks
    and INSERT were compiled again each time (a read-set check cost 13 us in a commit
    against 3 us with a cache). This is its ``_create_connection`` with the module's
    default cache of 128 statements; nothing else differs.
    """

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
