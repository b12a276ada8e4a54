"""The SQL of the PostgreSQL recorder's commit function (recorders_postgres.py creates it with
the tables, at every start): one writer at a time under an advisory lock keyed by the events
table, the read-set check as the INSERT's own condition, the listeners notified.
"""

from __future__ import annotations

import hashlib
from typing import Any

from countersign.infrastructure.persistence.recorders import STALE_READ_SQLSTATE
from psycopg.sql import SQL, Composed, Identifier


def writers_key(schema: str, table: str) -> int:
    """The insert function's advisory lock key for one events table: the same in every process
    and version that has it (a bigint from a hash of the table's qualified name)."""
    digest = hashlib.sha256(f"countersign writers {schema}.{table}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


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
    # The function is created again at every start (CREATE OR REPLACE, as the library
    # creates its own), so a database made by an older version takes this body then.
    # What the server does a cycle was measured with scripts/cycle_server_cpu.py
    # (callgrind on the server; docs/design.md, "The server's side"), and
    # the read-set check asks for the latest version at or after the one relied on, not
    # for the latest of all: the same answer (the relied-on version if it is the latest;
    # else another, or none), but the backward walk of the primary key that max() makes
    # now stops at that bound. Without it, a B-tree page read backwards is tested entry
    # by entry down to its first one (a broadcast form with thousands of versions: a few
    # hundred tests a check, six checks a cycle: 18,000 server instructions a cycle of
    # about 840,000, callgrind; more as a page fills with one aggregate's entries).
    # The latest is asked for as the first of them in descending order (ORDER BY ...
    # DESC LIMIT 1), the plan max() is rewritten to, without max()'s Result node and
    # init plan around it: the same backward walk and answer (none: NULL, as max() of
    # no rows), 17,810 server instructions a cycle fewer (663,458 -> 645,648). The
    # plan stays the cached generic one (no planning a call seen in the profile).
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
        # (tests/test_pg_writers_lock.py, with custom and generic plans). The
        # EXCLUSIVE lock this function took before cost about 17,000 server
        # instructions a call, more with max_connections: a strong lock visits
        # every server process's fast-path slots. Taken in an assignment, which
        # plpgsql evaluates as a simple expression, not as PERFORM's query with an
        # executor start of its own (about 3,600 server instructions a call fewer;
        # NOTIFY and SET LOCAL measured the same either way, and stay).
        "locked := pg_advisory_xact_lock({writers_key}) IS NULL; "
        "NOTIFY {channel}; "
        # The read-set check is the INSERT's condition: nothing is inserted if any
        # aggregate read moved on (one statement, one executor start, fewer than
        # a check and an insert of their own). Only then is the stale aggregate
        # looked up, under the same locks, for the error; a refused commit raises
        # even if that finds none, so it never returns as if it had committed.
        # The arrays are unnested in a select list, not in FROM: there, each array
        # of a multi-argument unnest is a function scan materialised into a
        # tuplestore of its own (six a call), set up and filled on every call; in a
        # select list they run side by side in one ProjectSet node, row by row,
        # with the same rows in the same order (a shorter array padded with nulls
        # either way).
        "INSERT INTO {schema}.{table} "
        "(originator_id, originator_version, topic, state) "
        "SELECT unnest(ids), unnest(versions), unnest(topics), unnest(states) "
        "WHERE NOT EXISTS (SELECT FROM {stale_reads}); "
        # The last notification id, not every row's: the rows' ids follow each other,
        # since no other writer can draw from the sequence while this one holds the
        # writers' lock, so the caller counts back from it. A set returned (RETURN
        # QUERY ... RETURNING) was put in a tuplestore twice, here and in the
        # caller's function scan: 19,835 server instructions a cycle of 683,293.
        "IF FOUND THEN RETURN lastval(); END IF; "
        "SELECT c.id INTO stale FROM {stale_reads} LIMIT 1; "
        "IF stale IS NOT NULL OR cardinality(ids) > 0 THEN "
        "RAISE EXCEPTION USING ERRCODE = '{sqlstate}', "
        "MESSAGE = coalesce(stale::text, '?'); "
        "END IF; "
        "RETURN NULL; "
        "END; $BODY$"
    ).format(
        schema=schema,
        function=function,
        table=table,
        lock_timeout=lock_timeout,
        writers_key=SQL(str(writers_key(schema_name, table_name))),
        stale_reads=SQL(
            "(SELECT unnest(check_ids) AS id, unnest(check_versions) AS version) AS c "
            "WHERE c.version IS DISTINCT FROM ("
            "SELECT e.originator_version FROM {schema}.{table} AS e "
            "WHERE e.originator_id = c.id "
            "AND e.originator_version >= coalesce(c.version, {lowest}) "
            "ORDER BY e.originator_version DESC LIMIT 1)"
        ).format(schema=schema, table=table, lowest=SQL(str(-(2**63)))),
        sqlstate=SQL(STALE_READ_SQLSTATE),
        channel=Identifier(channel),
    )
