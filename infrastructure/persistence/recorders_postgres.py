"""The PostgreSQL event recorder: one round trip per commit, through countersign's own insert
function (``recorders.py`` says why), and the log read as plain rows.

A module of its own so that a process on SQLite never imports psycopg: the settings name this
recorder by its topic, which the library imports when it builds a PostgreSQL application.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Mapping, Sequence
from random import random
from time import monotonic, sleep
from typing import Any
from uuid import UUID

import psycopg
from countersign.infrastructure.persistence import pg_statements
from countersign.infrastructure.persistence.known_reads import KnownReads
from countersign.infrastructure.persistence.pg_arrays import (
    BigInts,
    Byteas,
    Texts,
    UUIDs,
    commit_arrays,
)
from countersign.infrastructure.persistence.pg_commit_function import (
    commit_function,
    known_commit_function,
)
from countersign.infrastructure.persistence.pg_pool import PooledConnection, given_back, taken
from countersign.infrastructure.persistence.pg_waits import UnboundedCreate, bound_of
from countersign.infrastructure.persistence.recorders import (
    EXPECTED_VERSIONS,
    STALE_READ_SQLSTATE,
    LogEntry,
    ReadSetChangedError,
    log_entry,
)
from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.postgres import types as pg_types
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier, Literal

#: The insert function's parameters, in order (``_commit_known`` has a seventh, an ``int8``).
_INSERT_PARAMETERS = (UUIDs, BigInts, Texts, Byteas, UUIDs, BigInts)
_INT8_OID = pg_types["int8"].oid
_INT8 = struct.Struct("!q")


def _numbered(query: bytes) -> bytes:
    """psycopg's ``%s`` placeholders as PostgreSQL's own ``$1``, ``$2``..."""
    first, *rest = query.split(b"%s")
    return first + b"".join(b"$%d" % n + part for n, part in enumerate(rest, 1))


#: A transaction that waits for the disk as the session's ``synchronous_commit`` says, whatever
#: else it does: a transaction id and a record in the log (a plain ``SELECT`` commits neither,
#: so its commit waits for nothing). Its commit's flush covers every commit before it. The
#: message names the database, for whoever reads the log (the log is the server's).
_FLUSH = "pg_logical_emit_message(true, 'countersign', current_database())"
#: The same, only when the session's commits wait for the disk: with ``synchronous_commit``
#: off, nothing is written and nothing waited for (a commit through the function alone would
#: not wait either).
_FLUSH_IF_DURABLE = f"SELECT {_FLUSH} WHERE current_setting('synchronous_commit') <> 'off'"
#: What a connection sends in its place once it has written the message (its session's commits
#: wait for the disk): the setting is not read again, which cost the server about 4,200
#: instructions a commit (docs/speed.md, s31-pgserver). The store changes that setting only for
#: a transaction (the commit function's ``set_config(..., true)``), so on that connection
#: commits go on waiting. A session set off afterwards by someone else would have the message
#: written and, as its commit then does not wait, nothing waited for: only a record in the log
#: more. A session that was off goes on reading it, and waits as soon as it is set on.
_FLUSH_ALWAYS = f"SELECT {_FLUSH}"
#: What the commit function run by the recorder does first: its transaction's commit does not
#: wait for the disk, whatever the session's setting (``_FLUSH_IF_DURABLE`` waits after it).
_NOT_WAITING = "SET LOCAL synchronous_commit = off; "

#: The attribute of a pooled psycopg connection holding its commit cursor.
_COMMIT_CURSOR = "_countersign_commit_cursor"


def _commit_cursor(conn: psycopg.Connection[Any]) -> psycopg.Cursor[tuple[Any, ...]]:
    """The connection's own cursor for commits, kept open for the next commit on it (making
    one per commit cost a cursor, its row maker and its close each time). The pool hands a
    connection to one thread at a time, and a connection it replaces takes its cursor
    with it."""
    cursor: psycopg.Cursor[tuple[Any, ...]] | None = conn.__dict__.get(_COMMIT_CURSOR)
    if cursor is None or cursor.closed:
        cursor = conn.cursor(row_factory=tuple_row)
        conn.__dict__[_COMMIT_CURSOR] = cursor
    return cursor


#: The events table's ``toast_tuple_target``: rows up to this many bytes keep their state as it
#: is (PostgreSQL's default compresses any row over about 2 kB). Two rows fill an 8 kB page.
TOAST_TARGET = 4080


def _table_change_once(unchanged: str, change: str, errors: str) -> SQL:
    """A DO block that, if the catalog says ``unchanged``, runs ``ALTER TABLE {schema}.{table}
    change``, waiting at most a second for the table's lock (queued behind a long holder, it
    would hold up every later statement on the table): a later start makes it then. The
    ``errors`` named (a server or a role that cannot make it) are passed over: only speed and
    size are at stake."""
    return SQL(
        "DO $BODY$ DECLARE waits text := current_setting('lock_timeout'); BEGIN "
        f"IF {unchanged} THEN "
        "PERFORM set_config('lock_timeout', '1s', true); "
        f"ALTER TABLE {{schema}}.{{table}} {change}; "
        "PERFORM set_config('lock_timeout', waits, true); "
        "END IF; "
        f"EXCEPTION WHEN {errors} THEN NULL; "
        "END $BODY$"
    )


class CountersignPostgresRecorder(UnboundedCreate, PostgresApplicationRecorder):
    """The library's recorder, inserting through its own insert function; its tables and
    functions made at a start with no statement timeout (pg_waits.UnboundedCreate)."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name=events_table_name)
        #: Its connections' timeout in seconds (None: none): ``insert_events`` retries within it.
        self._bound = bound_of(datastore)
        # Every connection taken from this datastore, by any of its recorders, comes through
        # the library's get_connection written as a class (pg_pool.PooledConnection).
        if not isinstance(vars(datastore).get("get_connection"), functools.partial):
            datastore.get_connection = functools.partial(PooledConnection, datastore)  # type: ignore[method-assign,assignment]
        #: What the datastore's connections come through, if pg_pool's: a commit then takes
        #: pg_pool's steps itself (``_commit``).
        self._get_connection: Any = None
        get_connection = vars(datastore).get("get_connection")
        if (
            isinstance(get_connection, functools.partial)
            and get_connection.func is PooledConnection
            and get_connection.args == (datastore,)
            and not get_connection.keywords
        ):
            self._get_connection = get_connection
        schema = Identifier(self.datastore.schema)
        table = Identifier(self.events_table_name)
        # Named after the table: one function per events table, wherever the schema is shared.
        # ``_commit``, not the ``_insert`` of earlier versions: that one returned its rows'
        # notification ids as a set, this one the last id, and CREATE OR REPLACE cannot
        # change a function's result type. An earlier version's ``_insert`` stays where it
        # is, for that version's processes during an upgrade: it takes the same advisory
        # lock (the same key), so both are serialised.
        function = Identifier(f"{self.events_table_name}_commit")
        # Two functions of one body: ``_commit``, whose transaction commits as the session
        # says (for a connection not in autocommit: the caller's own transaction), and
        # ``_commit_async``, whose transaction's commit does not wait for the disk (``SET
        # LOCAL synchronous_commit = off`` first), which insert_events runs with a second
        # transaction after it that does wait. The writers' lock is held until the first
        # transaction ends, which is then when its commit record is in the log's buffers,
        # not when a flush of the log has ended: commits' flushes do not queue behind the
        # lock one by one, and PostgreSQL's group commit can make several in one. The
        # second transaction (_FLUSH: a logical message, a transaction id and a record in
        # the log, so its commit waits as the session's synchronous_commit says) ends when
        # the log is flushed up to its own commit, which comes after ours: insert_events
        # returns only once the events are durable. With synchronous_commit off for the
        # session, it writes nothing and waits for nothing, as a commit through the
        # function alone would not. What another reader may see meanwhile:
        # docs/concurrency.md, "Durable before the answer".
        function_async = Identifier(f"{self.events_table_name}_commit_async")
        # What insert_events calls (since 2026-12-04, s27-pgserver): ``_commit_async`` with a
        # seventh parameter, the last notification id as of which this process knows the read
        # set to be current (known_reads), to skip the check's probes when nothing has been
        # committed since. A function of its own, so ``_commit_async`` stays as it was for a
        # process of the previous version.
        function_known = Identifier(f"{self.events_table_name}_commit_known")
        for name, head in ((function, ""), (function_async, _NOT_WAITING)):
            self.sql_create_statements.append(
                commit_function(
                    name,
                    head,
                    schema_name=self.datastore.schema,
                    table_name=self.events_table_name,
                    lock_timeout=self.datastore.lock_timeout,
                    channel=self.channel_name,
                )
            )
        self.sql_create_statements.append(
            known_commit_function(
                function_known,
                schema_name=self.datastore.schema,
                table_name=self.events_table_name,
                channel=self.channel_name,
            )
        )
        # What the previous version's recorder calls (until 2026-12-04, s25-cycle): the same
        # two transactions in one CALL of a procedure. Kept as it was, for that version's
        # processes during an upgrade. This one sends them as statements in one round trip
        # (insert_events, pg_statements.run_then): the procedure's CALL, in the non-atomic
        # context its COMMIT needs, cost the server about 49,000 instructions a commit more
        # (scripts/cycle_server_cpu.py --callgrind-out: 855,581 -> 757,683 a cycle).
        self.sql_create_statements.append(
            SQL(
                "CREATE OR REPLACE PROCEDURE {schema}.{procedure}("
                "ids uuid[], versions bigint[], topics text[], states bytea[], "
                "check_ids uuid[], check_versions bigint[], INOUT last bigint DEFAULT NULL) "
                "LANGUAGE plpgsql AS $BODY$ "
                "DECLARE durable boolean := current_setting('synchronous_commit') <> 'off'; "
                "BEGIN "
                "IF durable THEN SET LOCAL synchronous_commit = off; END IF; "
                "last := {schema}.{function}(ids, versions, topics, states, "
                "check_ids, check_versions); "
                "COMMIT; "
                "IF durable THEN PERFORM {flush}; END IF; "
                "END; $BODY$"
            ).format(
                schema=schema,
                procedure=Identifier(f"{self.events_table_name}_commit_durably"),
                function=function,
                flush=SQL(_FLUSH),
            )
        )
        # New events' states compressed with LZ4 rather than PostgreSQL's default pglz: a
        # proposal's Proposed event (about 2.7 kB) is over the 2 kB at which a row is
        # compressed, and pglz took about a fifth of the server's instructions a cycle
        # (about 216,000), LZ4 about a tenth of that, for the same size (1,318 and 1,305
        # bytes). What a read returns is the same bytes; rows stored before stay as they
        # were (each value names its own method). Changed once: the catalog is read first,
        # and the ALTER, which takes the table's exclusive lock, waits at most a second for
        # it (queued behind a long reader, it would hold up every other statement on the
        # table): if it cannot have it, a later start changes it. A server without LZ4
        # (built without it, or older than 14), or a role that may write the table but does
        # not own it, keeps pglz: only speed is at stake.
        self.sql_create_statements.append(
            _table_change_once(
                "(SELECT a.attcompression FROM pg_attribute AS a "
                "JOIN pg_class AS c ON c.oid = a.attrelid "
                "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
                "WHERE n.nspname = {schema_name} AND c.relname = {table_name} "
                "AND a.attname = 'state') IS DISTINCT FROM 'l'",
                "ALTER COLUMN state SET COMPRESSION lz4",
                "feature_not_supported OR undefined_column OR syntax_error "
                "OR lock_not_available OR insufficient_privilege",
            ).format(
                schema=schema,
                table=table,
                schema_name=Literal(self.datastore.schema),
                table_name=Literal(self.events_table_name),
            )
        )
        # States stored as they are, not compressed, in rows of up to TOAST_TARGET bytes: a
        # row over 2 kB (a proposal's Proposed event, about 2.8 kB) is otherwise compressed
        # until it fits in 2 kB, which cost about 44,000 of the server's instructions a cycle
        # with LZ4. A larger row is compressed (and moved out of line) as before, down to
        # this size. Only new rows: what is stored stays as it is, and reads return the same
        # bytes either way. Set once, as LZ4 above is (the catalog first; the lock, a SHARE
        # UPDATE EXCLUSIVE one, waited for a second at most, else a later start sets it);
        # a role that does not own the table, or a server whose pages are too small for this
        # target, keeps PostgreSQL's default: only speed and size are at stake.
        self.sql_create_statements.append(
            _table_change_once(
                "NOT EXISTS (SELECT FROM pg_class AS c "
                "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
                "WHERE n.nspname = {schema_name} AND c.relname = {table_name} "
                "AND {option} = ANY(c.reloptions))",
                f"SET (toast_tuple_target = {TOAST_TARGET})",
                "invalid_parameter_value OR lock_not_available OR insufficient_privilege",
            ).format(
                schema=schema,
                table=table,
                schema_name=Literal(self.datastore.schema),
                table_name=Literal(self.events_table_name),
                option=Literal(f"toast_tuple_target={TOAST_TARGET}"),
            )
        )
        # The two statements every commit and every log read run, rendered to bytes once:
        # given the composed form, psycopg renders it again (quoting each identifier,
        # joining the parts) on every execute, before it even looks the prepared statement
        # up. (Quoted without a connection: double quotes, inner ones doubled, as the
        # server's own quote_ident does.)
        self._call_known = (
            SQL(
                "SELECT {schema}.{function}(%s::uuid[], %s::bigint[], %s::text[], "
                "%s::bytea[], %s::uuid[], %s::bigint[], %s::bigint)"
            )
            .format(schema=schema, function=function_known)
            .as_bytes(None)
        )
        self._call_insert = (
            SQL(
                "SELECT {schema}.{function}("
                "%s::uuid[], %s::bigint[], %s::text[], %s::bytea[], %s::uuid[], %s::bigint[])"
            )
            .format(schema=schema, function=function)
            .as_bytes(None)
        )

        self._select_log = (
            SQL(
                "SELECT notification_id, originator_id, originator_version, topic, state "
                "FROM {schema}.{table} WHERE notification_id > %s "
                "ORDER BY notification_id LIMIT %s"
            )
            .format(schema=schema, table=table)
            .as_bytes(None)
        )
        # The same two, prepared and run on the connection's libpq object (pg_statements):
        # the same text with $n parameters, of the types psycopg gives the packed arrays.
        self._insert_statement = pg_statements.Statement(
            _numbered(self._call_known),
            [*(pg_types[t.element_type].array_oid for t in _INSERT_PARAMETERS), _INT8_OID],
        )
        #: What this process knows to be current as of its last commit.
        self._known = KnownReads()
        self._flush_statement = pg_statements.Statement(
            _FLUSH_IF_DURABLE.encode(),
            (),
            once_it_returned_rows=pg_statements.Statement(_FLUSH_ALWAYS.encode(), ()),
        )
        self._log_statement = pg_statements.Statement(
            _numbered(self._select_log), [_INT8_OID, _INT8_OID]
        )

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_log(self, after: int, limit: int) -> list[LogEntry]:
        """Up to ``limit`` log entries after notification id ``after``, in order."""
        with self.datastore.get_connection() as conn:
            if pg_statements.runs_alone(conn):
                result = pg_statements.run(
                    conn, self._log_statement, (_INT8.pack(after), _INT8.pack(limit))
                )
                return pg_statements.rows(conn, result, log_entry)
            with conn.cursor(row_factory=tuple_row) as cursor:
                cursor.execute(self._select_log, (after, limit), prepare=True, binary=True)
                return list(map(log_entry, cursor.fetchall()))

    # The library's own retry (``eventsourcing.utils.retry``, as on ``select_log``): a dropped
    # connection is retried; if the first attempt had in fact committed, the retry reports an
    # IntegrityError for our own write (the application reloads and checks before treating
    # it as somebody else's). Written out here rather than as the decorator's wrapper, whose
    # call with ``*args, **kwargs`` (a tuple and a dict made again) each commit paid: the
    # same attempts (at most ``_ATTEMPTS``), the same errors retried, the same pause between
    # them (``_pause``), the last error raised as it was. Two bounds of its own: no attempt
    # starts once the connections' timeout (``COUNTERSIGN_DATABASE_TIMEOUT``) has passed
    # since the first failed; and a commit the server cancelled on that timeout (a lock held
    # that long: a DatabaseTimeoutError, not an OperationalError) is not retried at all, so
    # a held lock makes a commit wait that timeout once, not ten times. Such a commit is not
    # committed: the server cancels only a statement under way, here the commit function's
    # (the statement after it, ``_FLUSH``'s, takes no lock, and the wait for the disk in its
    # commit is not cancelled by a timeout), and its transaction is rolled back.
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        try:
            return self._commit(stored_events, kwargs)
        except _RETRIED:
            until = monotonic() + (self._bound if self._bound is not None else _NO_BOUND)
            _pause()
        attempts = 1
        while True:
            try:
                return self._commit(stored_events, kwargs)
            except _RETRIED:
                attempts += 1
                if attempts >= _ATTEMPTS or monotonic() >= until:
                    raise
                _pause()

    def _commit(self, stored_events: Sequence[StoredEvent], kwargs: Any) -> Sequence[int] | None:
        """One attempt of ``insert_events``."""
        if not stored_events:
            return []
        expected: Mapping[UUID, int | None] = kwargs.get(EXPECTED_VERSIONS) or {}
        # Parallel arrays, packed in binary: nothing to escape, nothing adapted one by one;
        # all six in one pass (pg_arrays.commit_arrays).
        arrays = commit_arrays(stored_events, expected)
        datastore = self.datastore
        if datastore.get_connection is not self._get_connection:
            # (The datastore's connections are no longer pg_pool's: through its own.)
            with datastore.get_connection() as conn:
                return self._committed_on(conn, stored_events, expected, arrays)
        # pg_pool.PooledConnection's steps, as ``with`` takes them, without the object.
        conn = taken(datastore)
        try:
            ids = self._committed_on(conn, stored_events, expected, arrays)
        except BaseException as error:
            given_back(datastore, conn, type(error), error, error.__traceback__)
            raise
        given_back(datastore, conn, None, None)
        return ids

    def _committed_on(
        self,
        conn: psycopg.Connection[Any],
        stored_events: Sequence[StoredEvent],
        expected: Mapping[UUID, int | None],
        arrays: tuple[bytes, bytes, bytes, bytes, bytes, bytes],
    ) -> list[int]:
        count = len(stored_events)
        try:
            if pg_statements.runs_alone(conn):
                # The commit function's transaction, committed without waiting for the
                # disk, then the waiting one (_FLUSH), sent together and run in turn:
                # the answer comes once both have run, whether or not the first was
                # refused (a commit refused because of another, which may not be durable
                # yet, is so raised only once that one is: the caller decides again on
                # what it sees). docs/concurrency.md, "Durable before the answer".
                known = self._known
                claimed = known.claim(expected)
                result = pg_statements.run_then(
                    conn,
                    self._insert_statement,
                    (*arrays, None if claimed is None else _INT8.pack(claimed)),
                    self._flush_statement,
                )
                last = pg_statements.first_int8(result)
                first = last - count + 1
                known.committed(first, last, stored_events, expected, claimed)
                return list(range(first, last + 1))
            cursor = _commit_cursor(conn)
            params = [kind(data) for kind, data in zip(_INSERT_PARAMETERS, arrays, strict=True)]
            cursor.execute(self._call_insert, params, prepare=True, binary=True)
        except psycopg.Error as error:
            if error.sqlstate == STALE_READ_SQLSTATE:
                detail = error.diag.message_primary or "?"
                raise ReadSetChangedError(detail) from None
            raise
        (last,) = [row[0] for row in cursor.fetchall()]
        return list(range(last - count + 1, last + 1))


#: What ``insert_events`` retries, how often, and how long it waits between attempts: the
#: library's ``retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)``.
_RETRIED = (InterfaceError, OperationalError)
_ATTEMPTS = 10
_WAIT = 0.2
#: How long after a first failure ``insert_events`` may start another attempt when its
#: connections have no timeout (the ten attempts' pauses take about 2 s).
_NO_BOUND = 60.0


def _pause() -> None:
    """The library's ``retry``'s pause between attempts: ``wait``, give or take 5%."""
    sleep(_WAIT * (1 + 0.1 * (random() - 0.5)))  # noqa: S311
