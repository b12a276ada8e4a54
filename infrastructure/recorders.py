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
same database even when several processes write to one file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteCursor,
    SQLiteTransaction,
)
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier

#: The keyword argument of ``insert_events`` (and of ``Application.save``) carrying the read set.
EXPECTED_VERSIONS = "expected_versions"
#: The SQLSTATE countersign's insert function raises when a read aggregate moved on.
STALE_READ_SQLSTATE = "CS409"


class ReadSetChangedError(Exception):
    """An aggregate this commit relied on has changed since it was read; nothing was written."""

    def __init__(self, aggregate_id: str) -> None:
        super().__init__(f"aggregate {aggregate_id} changed since it was read")
        self.aggregate_id = aggregate_id


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
        # Parallel arrays in binary: no composite values to escape as text on either side.
        params = (
            [e.originator_id for e in stored_events],
            [e.originator_version for e in stored_events],
            [e.topic for e in stored_events],
            [e.state for e in stored_events],
            list(expected),
            list(expected.values()),
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
    """The library's recorder, checking the read set inside an immediate transaction."""

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        expected = _expected(kwargs)
        check = (
            f"SELECT max(originator_version) FROM {self.events_table_name} WHERE originator_id = ?"
        )
        connection: SQLiteConnection
        with (
            self.datastore.get_connection(commit=True) as connection,
            _ImmediateTransaction(connection, commit=True) as cursor,
            cursor,
        ):
            for aggregate_id, version in expected.items():
                cursor.execute(check, (aggregate_id.hex,))
                row = cursor.fetchone()
                if row is None or row[0] != version:
                    raise ReadSetChangedError(str(aggregate_id))
            return self._insert_events(cursor, stored_events, **kwargs)
