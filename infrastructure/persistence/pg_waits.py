"""How long a PostgreSQL statement of countersign's may wait: ``COUNTERSIGN_DATABASE_TIMEOUT``.

Every connection a service makes (the event store's pool, ``SqlDatabase``'s) has that many
seconds as its ``statement_timeout`` and its ``lock_timeout``, set once, when it connects:
in libpq's ``options`` (``-c statement_timeout=5000 -c lock_timeout=5000``), which go to the
server in the connection's startup packet, so they cost no round trip, neither at the
connection nor in a request. A statement that waits longer for a lock (an operator's ``LOCK
TABLE`` left open in psql, a migration's ``ALTER TABLE``) or runs longer is cancelled by the
server, and nothing of it took effect: the entry points answer "the database did not answer"
(unavailable.py), and ``projections run`` says who holds the lock and tries again.

What may rightly run longer has no statement timeout, deliberately, for its transaction
alone (``sql.NO_STATEMENT_TIMEOUT``, a ``SET LOCAL``), its lock waits still bounded: creating
the tables and functions at a start (the recorders' ``_create_table``), and a projection's
reset and index builds (``SqlDatabase.lock_schema(long=True)``). The schema lock itself,
which a rebuild holds for minutes while it builds indexes, is waited for without a limit at a
start (``SqlDatabase.schema_lock``: the timeouts off for that statement alone). The maintenance
commands (``projections rebuild``, ``audit verify``, ``audit export``: the command line's
``maintenance``) run with no timeout at all, and a rebuild's writer process and index builders
connect without one: their connections say so themselves (``statement_timeout`` and
``lock_timeout`` 0), so that a timeout set on the role or the database (which docs/deploy.md
suggests behind a pooler that drops startup options) never cuts them off.
"""

from __future__ import annotations

import functools
import os
from typing import Any
from urllib.parse import parse_qsl

from countersign.infrastructure.persistence.sql import NO_STATEMENT_TIMEOUT
from countersign.infrastructure.settings import (
    DEFAULT_POOL_IDLE,
    PARAMETERS_KEY,
    POOL_IDLE_KEY,
    TIMEOUT_KEY,
    milliseconds,
)
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresFactory
from psycopg.sql import SQL

__all__ = ["TIMEOUT_KEY", "CountersignPostgresFactory", "UnboundedCreate", "session_options"]

#: The attribute of a datastore holding its connections' timeout, in seconds.
_BOUND = "_countersign_timeout"


def session_options(seconds: float | None) -> str:
    """libpq's ``options`` for a connection whose statements wait at most ``seconds`` (None:
    without a limit, said as 0, so that no ``statement_timeout`` or ``lock_timeout`` set on
    the role or the database cuts off a maintenance command), with what ``PGOPTIONS`` says
    after them: libpq reads that variable only for a connection made without ``options``, and
    the last setting of a name is the one taken, so an operator's ``PGOPTIONS`` keeps the last
    word."""
    waits = 0 if seconds is None else milliseconds(seconds)
    ours = f"-c statement_timeout={waits} -c lock_timeout={waits}"
    theirs = os.environ.get("PGOPTIONS", "").strip()
    return f"{ours} {theirs}" if theirs else ours


def bound_of(datastore: Any) -> float | None:
    """The timeout of ``datastore``'s connections, in seconds (None: none)."""
    bound: float | None = getattr(datastore, _BOUND, None)
    return bound


class UnboundedCreate:
    """A recorder whose tables, indexes and functions are made at a start with no statement
    timeout (an upgrade's migration may rightly run long): its ``CREATE`` statements run in
    one transaction, whose first statement here switches it off for the rest of it. A lock
    is still waited for only as long as the connection's ``lock_timeout`` (a ``CREATE INDEX
    IF NOT EXISTS`` queued behind an operator's lock would hold up every commit behind it):
    a start while one is held stops with the database not answering, and the next start
    makes them.

    The library's ``create_table`` (eventsourcing 9.5.6) as one transaction of one round trip:
    the statements sent as one string, in the library's order (its composite types first),
    where it sent one a round trip and made each type in a transaction of its own (three round
    trips each, twice a start: the events' recorder and the snapshots' make the same type). A
    type that is already there is passed over as the library passes it over
    (``duplicate_object``), here in the statement itself; two starts never make one at the same
    time (the schema lock: ``SqlDatabase.schema_lock``). Then the library's type adapters, as
    it registers them."""

    def create_table(self) -> None:
        recorder: Any = self
        statements: list[Any] = [SQL(NO_STATEMENT_TIMEOUT)]
        others = []
        for statement in recorder.sql_create_statements:
            text = statement.as_string()
            if "CREATE TYPE" in text:
                statements.append(_passed_over_if_there(text))
            else:
                others.append(statement)
        # On the datastore's connection, in autocommit (the library's after_connect): the
        # string's statements are one transaction, the server's own, with no BEGIN and COMMIT
        # of their own to send (a connection not in autocommit would commit as it is given
        # back: pg_pool.given_back).
        with recorder.datastore.get_connection() as conn:
            conn.execute(SQL("\n;\n").join([*statements, *others]), prepare=False)
        recorder.datastore.register_type_adapters()


def _passed_over_if_there(create_type: str) -> SQL:
    """``CREATE TYPE`` that does nothing where the type is there (``duplicate_object``), in a
    transaction that goes on (the block's exception handler rolls back only its own)."""
    assert "$TYPE$" not in create_type
    return SQL(
        "DO $TYPE$ BEGIN " + create_type + "; EXCEPTION WHEN duplicate_object THEN NULL; END $TYPE$"
    )


class CountersignPostgresAggregateRecorder(UnboundedCreate, PostgresAggregateRecorder):
    """The library's aggregate recorder (the stored snapshots'), its table made at a start
    with no statement timeout (``UnboundedCreate``)."""


class CountersignPostgresFactory(PostgresFactory):
    """The library's PostgreSQL factory, whose pool's connections are made with the timeout
    ``TIMEOUT_KEY`` says (before any is made: the pool opens at the first recorder)."""

    aggregate_recorder_class = CountersignPostgresAggregateRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        given = self.env.get(PARAMETERS_KEY)
        if given:  # the database URL's libpq parameters (settings.CONNECTION_PARAMETERS)
            pool: Any = self.datastore.pool
            pool.kwargs = {**(pool.kwargs or {}), **dict(parse_qsl(given))}
        waits = self.env.get(TIMEOUT_KEY)
        seconds = int(waits) / 1000 if waits else None
        bounded: Any = self.datastore.pool
        bounded.kwargs = {**(bounded.kwargs or {}), "options": session_options(seconds)}
        if seconds is not None:
            setattr(self.datastore, _BOUND, seconds)
        # Every connection from the datastore through pg_pool's steps, from the first: the
        # library's recorders take one as they are made (their composite types' lookup),
        # before countersign's recorder would set this (recorders_postgres.py), and the
        # library's way of opening the pool opened two connections for it (pg_pool.opened).
        from countersign.infrastructure.persistence.pg_pool import (
            PooledConnection,
            shrink,
            steps_here,
        )

        self.datastore.get_connection = functools.partial(PooledConnection, self.datastore)  # type: ignore[method-assign,assignment]
        # The connections a burst opened beyond the pool's one closed once unused that long,
        # all of them (pg_pool.shrink; one a period with another psycopg_pool than the 3.3
        # whose internals it uses), by the pool's scheduler: set before the pool opens, which
        # is when the scheduler takes ``max_idle``.
        bounded.max_idle = float(self.env.get(POOL_IDLE_KEY) or DEFAULT_POOL_IDLE)
        if steps_here(bounded):
            bounded._shrink_pool = functools.partial(shrink, bounded)
