"""The SQL of the PostgreSQL recorder's commit functions (recorders_postgres.py creates them
with the tables, at every start): one writer at a time under an advisory lock keyed by the
events table, the read-set check as the INSERT's own condition, the listeners notified.

``commit_function`` is the body every version since 2026-12-03 has called (``{table}_commit``
and ``{table}_commit_async``); ``known_commit_function`` (``{table}_commit_known``, since
2026-12-04) is what the recorder calls now: the same, with a seventh parameter that lets it
skip the check's probes when nothing has been committed since this process's last commit
(known_reads).
"""

from __future__ import annotations

import hashlib
from typing import Any

from countersign.infrastructure.persistence.recorders import STALE_READ_SQLSTATE
from psycopg.sql import SQL, Composable, Composed, Identifier, Literal

#: Where the events table's notification-id sequence goes in the known function's text, until
#: ``with_the_sequence`` puts it there.
_SEQUENCE = "__countersign_sequence__"


def writers_key(schema: str, table: str) -> int:
    """The insert function's advisory lock key for one events table: the same in every process
    and version that has it (a bigint from a hash of the table's qualified name)."""
    digest = hashlib.sha256(f"countersign writers {schema}.{table}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _insert(schema: Identifier, table: Identifier) -> Composed:
    # The arrays are unnested in a select list, not in FROM: there, each array of a
    # multi-argument unnest is a function scan materialised into a tuplestore of its own, set
    # up and filled on every call; in a select list they run side by side in one ProjectSet
    # node, row by row, with the same rows in the same order (a shorter array padded with
    # nulls either way).
    return SQL(
        "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) "
        "SELECT unnest(ids), unnest(versions), unnest(topics), unnest(states) "
    ).format(schema=schema, table=table)


def _stale_reads(schema: Identifier, table: Identifier) -> Composed:
    # The latest version at or after the one relied on, not the latest of all: the same
    # answer (the relied-on version if it is the latest; else another, or none), but the
    # backward walk of the primary key stops at that bound. Asked for as the first in
    # descending order, the plan max() is rewritten to, without max()'s Result node and
    # init plan. (docs/speed.md, the server's rounds, for the figures.)
    return SQL(
        "(SELECT unnest(check_ids) AS id, unnest(check_versions) AS version) AS c "
        "WHERE c.version IS DISTINCT FROM ("
        "SELECT e.originator_version FROM {schema}.{table} AS e "
        "WHERE e.originator_id = c.id "
        "AND e.originator_version >= coalesce(c.version, {lowest}) "
        "ORDER BY e.originator_version DESC LIMIT 1)"
    ).format(schema=schema, table=table, lowest=SQL(str(-(2**63))))


def _checked_insert(schema: Identifier, table: Identifier) -> Composed:
    """The statements from the read-set check on, to the end of the body."""
    stale_reads = _stale_reads(schema, table)
    return SQL(
        # Nothing read: nothing to check, and no check's plan to set up (its subplans are
        # made on every call whether or not they run). With nothing inserted either, the
        # checked INSERT below inserts nothing too, and the end is as it was.
        "IF cardinality(check_ids) = 0 AND cardinality(check_versions) = 0 THEN "
        "{insert}; "
        "IF FOUND THEN RETURN lastval(); END IF; "
        "END IF; "
        # The read-set check is the INSERT's condition: nothing is inserted if any
        # aggregate read moved on (one statement, one executor start). Only then is the
        # stale aggregate looked up, under the same locks, for the error; a refused
        # commit raises even if that finds none, so it never returns as if it had
        # committed.
        "{insert}WHERE NOT EXISTS (SELECT FROM {stale_reads}); "
        # The last notification id, not every row's: the rows' ids follow each other,
        # since no other writer can draw from the sequence while this one holds the
        # writers' lock, so the caller counts back from it.
        "IF FOUND THEN RETURN lastval(); END IF; "
        "SELECT c.id INTO stale FROM {stale_reads} LIMIT 1; "
        "IF stale IS NOT NULL OR cardinality(ids) > 0 THEN "
        "RAISE EXCEPTION USING ERRCODE = '{sqlstate}', "
        "MESSAGE = coalesce(stale::text, '?'); "
        "END IF; "
        "RETURN NULL; "
        "END; $BODY$"
    ).format(
        insert=_insert(schema, table), stale_reads=stale_reads, sqlstate=SQL(STALE_READ_SQLSTATE)
    )


def commit_function(
    function: Identifier,
    head: str,
    *,
    schema_name: str,
    table_name: str,
    lock_timeout: Any,
    channel: str,
) -> Composed:
    """``CREATE OR REPLACE FUNCTION`` of a commit function named ``function``, whose body
    runs ``head`` (SQL statements) first."""
    schema = Identifier(schema_name)
    table = Identifier(table_name)
    return SQL(
        "CREATE OR REPLACE FUNCTION {schema}.{function}("
        "ids uuid[], versions bigint[], topics text[], states bytea[], "
        "check_ids uuid[], check_versions bigint[]) "
        "RETURNS bigint LANGUAGE plpgsql AS $BODY$ "
        "DECLARE stale uuid; locked boolean; "
        "BEGIN "
        f"{head}"
        "SET LOCAL lock_timeout = '{lock_timeout}s'; "
        # One writer at a time, so that notification ids follow commit order and no
        # other commit comes between the check and ours; both locks are held until
        # the commit. The advisory lock, keyed by the table, serialises the callers
        # of this function. The INSERT's own ROW EXCLUSIVE lock on the table, taken
        # when its plan is locked, before its snapshot, conflicts with the EXCLUSIVE
        # lock that the library's recorder and this function's earlier bodies take
        # (a process of an older version during an upgrade): it waits for such a
        # writer to commit, and its snapshot then sees that commit
        # (tests/test_pg_writers_lock.py, with custom and generic plans). Taken in an
        # assignment, which plpgsql evaluates as a simple expression, not as PERFORM's
        # query with an executor start of its own.
        "locked := pg_advisory_xact_lock({writers_key}) IS NULL; "
        "NOTIFY {channel}; "
        "{checked_insert}"
    ).format(
        schema=schema,
        function=function,
        lock_timeout=lock_timeout,
        writers_key=SQL(str(writers_key(schema_name, table_name))),
        channel=Identifier(channel),
        checked_insert=_checked_insert(schema, table),
    )


def known_commit_function(
    function: Identifier, *, schema_name: str, table_name: str, channel: str
) -> Composed:
    """``CREATE OR REPLACE FUNCTION`` of the commit function the recorder calls: what
    ``commit_function`` with ``head`` ``SET LOCAL synchronous_commit = off`` does, with a
    seventh parameter, ``known_at``: the last notification id as of which the caller knows
    every version of the read set to be current (known_reads), or NULL.

    It sets no ``lock_timeout`` of its own (``commit_function``'s bodies set 10 s): it waits
    for the writers' lock and the table's as long as its connection's statements wait,
    ``COUNTERSIGN_DATABASE_TIMEOUT`` (pg_waits.py), then the server cancels it and nothing
    of it is committed."""
    schema = Identifier(schema_name)
    table = Identifier(table_name)
    last_value = SQL("pg_sequence_last_value({sequence})").format(sequence=SQL(_SEQUENCE))
    create = SQL(
        "CREATE OR REPLACE FUNCTION {schema}.{function}("
        "ids uuid[], versions bigint[], topics text[], states bytea[], "
        "check_ids uuid[], check_versions bigint[], known_at bigint) "
        "RETURNS bigint LANGUAGE plpgsql AS $BODY$ "
        "DECLARE stale uuid; locked boolean; "
        "BEGIN "
        # The setting, the writers' lock and the notification of commit_function's body
        # (SET LOCAL synchronous_commit, NOTIFY), in one assignment: set_config(..., true)
        # is SET LOCAL, pg_notify with no payload is NOTIFY, each evaluated in turn (each IS
        # NULL is false, so OR goes on to the next), as one simple expression rather than
        # utility statements, each of which plpgsql runs through SPI with a copy of its
        # parse tree. (Its lock timeout is the session's: see the docstring.)
        "locked := set_config('synchronous_commit', 'off', true) IS NULL "
        "OR pg_advisory_xact_lock({writers_key}) IS NULL "
        "OR pg_notify({channel}, NULL) IS NULL; "
        # The read set known current as of known_at (this process's last commit): if the
        # sequence's last value is still that, nothing has drawn an id since, so nothing
        # has been committed since, and the probes would find nothing. Tested first as a
        # simple expression (a moved sequence then costs no statement), then again as the
        # INSERT's own condition, after its ROW EXCLUSIVE lock and its snapshot: an older
        # writer holding the table's EXCLUSIVE lock may draw ids after the first test, and
        # the INSERT waits for it. Where either finds the sequence moved, the full check
        # follows, as in commit_function.
        "IF known_at = {last_value} THEN "
        "{insert}WHERE {last_value} = known_at; "
        "IF FOUND THEN RETURN lastval(); END IF; "
        "END IF; "
        "{checked_insert}"
    ).format(
        schema=schema,
        function=function,
        writers_key=SQL(str(writers_key(schema_name, table_name))),
        channel=Literal(channel),
        last_value=last_value,
        insert=_insert(schema, table),
        checked_insert=_checked_insert(schema, table),
    )
    return _with_the_sequence(create, schema_name=schema_name, table_name=table_name)


def _with_the_sequence(create: Composable, *, schema_name: str, table_name: str) -> Composed:
    """``create`` run with the events table's own notification-id sequence in its text, as
    the server names it (``pg_get_serial_sequence``, at every start: a name the server chose,
    e.g. shortened, is found as it is), a constant of the function's plans."""
    text = create.as_string(None).replace("%", "%%").replace(_SEQUENCE, "%1$L::regclass")
    return SQL(
        "DO $CREATE$ BEGIN EXECUTE format({text}, "
        "pg_get_serial_sequence({table}, 'notification_id')); END $CREATE$"
    ).format(
        text=Literal(text),
        table=Literal(Identifier(schema_name, table_name).as_string(None)),
    )
