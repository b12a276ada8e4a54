"""A small DB-API helper so the sandbox and tools speak to SQLite and PostgreSQL alike."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from countersign.infrastructure.persistence.hung_up import hung_up
from countersign.infrastructure.settings import SQLITE_MAINTENANCE_WAIT, Database

# psycopg is imported only by a process that uses PostgreSQL: a SQLite process never loads it
# (about 17 MB). These give the errors to catch of whichever drivers this process has loaded.


def _psycopg() -> Any:
    return sys.modules.get("psycopg")


def integrity_errors() -> tuple[type[Exception], ...]:
    """What a broken constraint raises, for ``except``."""
    psycopg = _psycopg()
    return (sqlite3.IntegrityError,) + ((psycopg.errors.IntegrityError,) if psycopg else ())


def unique_violations() -> tuple[type[Exception], ...]:
    """What a duplicate key raises, for ``except``."""
    psycopg = _psycopg()
    return (sqlite3.IntegrityError,) + ((psycopg.errors.UniqueViolation,) if psycopg else ())


def postgres_unreachable() -> tuple[type[Exception], ...]:
    """What connecting to PostgreSQL raises when the server cannot be reached (nothing, in a
    process that never used PostgreSQL), for ``except``."""
    psycopg = _psycopg()
    return (psycopg.OperationalError,) if psycopg else ()


#: One advisory-lock key for every schema change countersign makes.
SCHEMA_LOCK_KEY = 7_361_902_114


#: PostgreSQL's statement timeout off for the rest of the transaction (``SET LOCAL``), as of
#: the next statement (a statement's own timeout is set when it starts); its lock waits stay
#: bounded by the connection's ``lock_timeout``: pg_waits.py.
NO_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', '0', true)"


#: The schema lock, waited for without a limit by a connection that has one: no statement or
#: lock timeout until the end of the transaction, which is the end of the two statements when
#: they are sent together on a connection in autocommit (one implicit transaction); the
#: lock, a session's, is held after it.
_WAIT_FOR_SCHEMA_LOCK = (
    "SELECT set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true);"
    f" SELECT pg_advisory_lock({SCHEMA_LOCK_KEY})"
)


class SqlDatabase:
    """One lazily opened connection, one transaction at a time, ``?`` placeholders.

    ``timeout``: on PostgreSQL, seconds each statement may wait for a lock or run (its
    connection's ``statement_timeout`` and ``lock_timeout``, set as it connects: pg_waits.py);
    None, no limit (the maintenance commands, a rebuild's writer process and index
    builders). On SQLite, seconds a write waits for the database's write lock (another
    process's transaction, an operator's ``BEGIN EXCLUSIVE`` in the sqlite3 shell), then
    "database is locked", which is the database unavailable (``unavailable.py``); None,
    ``SQLITE_MAINTENANCE_WAIT``. ``schema_lock`` waits for the schema lock without a limit."""

    def __init__(self, database: Database, *, timeout: float | None = None) -> None:
        self.database = database
        self.timeout = timeout
        self._lock = threading.Lock()
        self._connection: Any = None
        # A second connection, for reads of committed data while another process writes.
        self._read_lock = threading.Lock()
        self._reader: Any = None

    @property
    def is_postgres(self) -> bool:
        return self.database.kind == "postgres"

    def _connect(self, *, autocommit: bool = False) -> Any:
        if self.is_postgres:
            import psycopg  # here: a SQLite process (the projection writer's) never loads it

            db = self.database
            # The URL's libpq parameters (TLS, keepalives...), then the statements' timeouts.
            # A server that does not answer at all (a host that drops the packets) is given
            # up after 10 s, unless the URL says otherwise: a start's first connection is one
            # of these (``schema_lock``, ``presence``).
            options: dict[str, Any] = {"connect_timeout": "10", **dict(db.params)}
            from countersign.infrastructure.persistence.pg_waits import session_options

            # Without a timeout, one of 0 said all the same: the role's or the database's
            # own never applies to what is meant to have none.
            options["options"] = session_options(self.timeout)
            return psycopg.connect(
                host=db.host,
                port=db.port,
                user=db.user,
                password=db.password,
                dbname=db.dbname,
                autocommit=autocommit,
                **options,
            )
        waits = self.timeout if self.timeout is not None else SQLITE_MAINTENANCE_WAIT
        connection = sqlite3.connect(
            self.database.sqlite_path, timeout=waits, isolation_level=None, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode=WAL")
        return connection

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Cursor]:
        """A write transaction; SQLite takes its write lock at BEGIN so read-then-write is safe.

        ``durable=False``: its commit returns without waiting for the disk (PostgreSQL's
        ``synchronous_commit`` off, SQLite's ``synchronous=NORMAL``, for this transaction
        alone). It is in the database's write-ahead log all the same, before whatever commits
        after it, so the next durable commit to the database makes it durable too; a crash of
        the machine before then loses it whole. Only for what may be lost that way (the
        payment sandbox's refunds: payment_sandbox.py says why)."""
        with self._lock:
            if self._connection is not None and self.is_postgres and hung_up(self._connection):
                self._drop()  # the server ended it while it waited: a new one, not a failure
            if self._connection is None:
                self._connection = self._connect()
            connection = self._connection
            try:
                if self.is_postgres:
                    if not durable:
                        connection.execute("SET LOCAL synchronous_commit TO off")
                else:
                    if not durable:
                        connection.execute("PRAGMA synchronous=NORMAL")
                    connection.execute("BEGIN IMMEDIATE")
                yield Cursor(connection.cursor(), self.is_postgres)
                connection.commit() if self.is_postgres else connection.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):  # the connection is dropped just below
                    connection.rollback() if self.is_postgres else connection.execute("ROLLBACK")
                self._drop()
                raise
            finally:
                if not durable and not self.is_postgres and self._connection is connection:
                    # Back to SQLite's default for this connection's other transactions.
                    connection.execute("PRAGMA synchronous=FULL")

    @contextmanager
    def reading(self) -> Iterator[Cursor]:
        """Reads of committed data on a connection of their own, each statement on its own
        (autocommit): they never wait for, nor hold up, this object's write transaction."""
        with self._autocommit() as cursor:
            yield cursor

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        """Reads of committed data on the reading connection, taking no write lock: on SQLite
        in one read transaction (``BEGIN``, deferred: the statements see one state of the
        database, whichever connection holds its write lock meanwhile); on PostgreSQL each
        statement on its own, as a transaction at its default isolation (read committed)
        would see them, without the two round trips of its BEGIN and COMMIT."""
        with self._autocommit() as cursor:
            if self.is_postgres:
                yield cursor
                return
            cursor.execute("BEGIN")
            try:
                yield cursor
            finally:
                cursor.execute("ROLLBACK")  # it wrote nothing: its snapshot is let go

    @contextmanager
    def statements(self) -> Iterator[Cursor]:
        """Statements each committed on its own (autocommit), on the connection ``reading``
        uses: one round trip for a write that is whole in one statement (a lone INSERT, a
        call of a server-side function that does all its work itself), where ``transaction``
        takes three (BEGIN, the statement, COMMIT) and waits for this object's write
        transaction."""
        with self._autocommit() as cursor:
            yield cursor

    @contextmanager
    def _autocommit(self) -> Iterator[Cursor]:
        with self._read_lock:
            if self._reader is not None and self.is_postgres and hung_up(self._reader):
                reader, self._reader = self._reader, None  # the server ended it while it waited
                with contextlib.suppress(Exception):
                    reader.close()
            if self._reader is None:
                self._reader = self._connect(autocommit=True)
            try:
                yield Cursor(self._reader.cursor(), self.is_postgres)
            except integrity_errors():
                raise  # the statement failed and was rolled back; the connection is fine
            except Exception:  # the connection may be broken: the next statement opens another
                reader, self._reader = self._reader, None
                with contextlib.suppress(Exception):
                    reader.close()
                raise

    def lock_schema(self, cursor: Cursor, *, long: bool = False) -> None:
        """Serialise schema changes across processes for the rest of this transaction.

        Concurrent CREATE TABLE IF NOT EXISTS can still collide in PostgreSQL's catalogue;
        SQLite's BEGIN IMMEDIATE already serialises them.

        ``long``: the transaction's statements may rightly run long (building indexes on a
        projection's full tables, dropping them): no statement timeout for the rest of it;
        each still waits for a lock only as long as the connection's ``lock_timeout``.
        """
        if self.is_postgres:
            if long and self.timeout is not None:
                cursor.execute(NO_STATEMENT_TIMEOUT)
            cursor.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK_KEY,))

    def schema_statements(self, cursor: Cursor, statements: Sequence[str]) -> None:
        """``lock_schema``, then ``statements`` (DDL without parameters, written as the
        database takes them: no ``?`` is rewritten), in the transaction under way: on
        PostgreSQL all in one round trip (``Cursor.execute_all``), where one each took a
        start about 30 of its round trips (2026-12-07); on SQLite one by one."""
        lock = [f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})"] if self.is_postgres else []
        cursor.execute_all([*lock, *statements])

    def make_schema(self, statements: Sequence[str]) -> None:
        """``schema_statements`` in a transaction of their own. On PostgreSQL, on the
        connection ``statements`` uses, in one round trip: the string's statements run as
        one transaction (the server's own for a string of several statements: all or
        nothing, the schema lock held to its end), without the BEGIN and COMMIT of
        ``transaction`` nor, at a start, the writing connection opened for them alone."""
        if self.is_postgres:
            with self.statements() as cursor:
                self.schema_statements(cursor, statements)
            return
        with self.transaction() as cursor:
            self.schema_statements(cursor, statements)

    @contextmanager
    def schema_lock(self) -> Iterator[None]:
        """Hold the schema lock (PostgreSQL) while another library creates its tables. It is
        waited for without a limit: another countersign process holds it only while it
        changes the schema (a start's tables: moments; a rebuild's index builds: minutes),
        and a process starting meanwhile waits for it to finish.

        Taken on the connection ``reading`` uses (a start opened one of its own for it, one
        connection of four, 2026-12-07), without the statement and lock timeouts for that
        one statement alone (``_WAIT_FOR_SCHEMA_LOCK``), and given back on it. A statement
        that fails on that connection meanwhile ends the connection and, with it, the lock:
        nothing reads through this object while it is held (a start, a rebuild's index
        builds, each on connections of their own)."""
        if not self.is_postgres:
            yield
            return
        with self._autocommit():
            holder = self._reader
            # psycopg sends a query without parameters as it is: both statements in one
            # round trip, as one transaction, whose end ends the settings too.
            holder.execute(_WAIT_FOR_SCHEMA_LOCK)
        try:
            yield
        finally:
            with self._autocommit():
                if self._reader is holder:  # else the lock went with the connection
                    holder.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK_KEY,))

    def _drop(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None

    def close(self) -> None:
        with self._lock:
            self._drop()
        with self._read_lock:
            reader, self._reader = self._reader, None
            if reader is not None:
                reader.close()


class Cursor:
    """A cursor that accepts ``?`` placeholders on both databases."""

    def __init__(self, cursor: Any, is_postgres: bool) -> None:
        self._cursor = cursor
        self._is_postgres = is_postgres

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        if self._is_postgres:
            sql = sql.replace("?", "%s")
        self._cursor.execute(sql, tuple(params))
        return self

    def execute_native(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Execute with the driver's own placeholders (``%s``/``%b`` for psycopg), as written."""
        self._cursor.execute(sql, tuple(params))
        return self

    def execute_all(self, statements: Sequence[str]) -> None:
        """``statements``, without parameters and run as written (no ``?`` rewritten), in
        turn: on PostgreSQL sent as one string, in one round trip (psycopg sends a query
        without parameters as it is; the server runs its statements in the transaction under
        way, and the first that fails fails it, the rest not run; each semicolon on a line
        of its own, so that a statement's closing ``--`` comment cannot hide it); on SQLite
        one by one."""
        if self._is_postgres:
            if statements:
                self._cursor.execute("\n;\n".join(statements))
            return
        for statement in statements:
            self._cursor.execute(statement)

    def copy_in(self, sql: str, types: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """PostgreSQL only: run ``COPY ... FROM STDIN``, sending each row's values as ``types``."""
        with self._cursor.copy(sql) as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Cursor:
        if self._is_postgres:
            sql = sql.replace("?", "%s")
        self._cursor.executemany(sql, [tuple(row) for row in rows])
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        row = self._cursor.fetchone()
        return tuple(row) if row is not None else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._cursor.fetchall()]

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)
