"""The store's own SQL on the library's recorders: reading aggregates' events (and their
stored snapshots) in one query, and replacing stored snapshots. Both databases: the SQLite
and PostgreSQL texts differ only in their parameter marks, except where PostgreSQL does in one
statement what SQLite does in two."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from countersign.infrastructure.persistence import stored_keys
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder


def select_events(
    recorder: Any,
    table: str,
    snapshot_table: str,
    after: list[tuple[UUID, int]],
    cold: Sequence[UUID],
) -> list[tuple[bool, StoredEvent]]:
    """The events of each aggregate in ``after`` past its version; for each aggregate in
    ``cold``, its newest stored snapshot that no event outruns (True: a snapshot, first)
    and its events after it. In order of aggregate and version."""
    statement = select_statement(recorder, table, snapshot_table, after, cold)
    if statement is None:
        return []
    sql, params = statement
    if isinstance(recorder, SQLiteAggregateRecorder):
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(sql, params)
            rows = [tuple(r) for r in cursor.fetchall()]
    else:  # PostgreSQL (its module is imported only by a process that uses it)
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(sql, params, prepare=True)
            rows = [
                (
                    r["kind"],
                    r["originator_id"],
                    r["originator_version"],
                    r["topic"],
                    r["state"],
                )
                for r in cursor.fetchall()
            ]
    try:
        return [
            (
                kind == 0,
                StoredEvent(
                    originator_id=UUID(str(originator_id)),
                    # A version a writer made no whole number from 1 (SQLite's 1.5 or "x",
                    # either's -1) is a damaged record, never read as another (1.5 as 1).
                    originator_version=stored_keys.version(version),
                    topic=topic,
                    # A state a writer emptied (NULL) reads as no state, which no event
                    # decodes from: named as the damaged record it is, never a crash.
                    state=b"" if state is None else bytes(state),
                ),
            )
            for kind, originator_id, version, topic, state in rows
        ]
    except stored_keys.StoredKeyError as error:
        from countersign.infrastructure.persistence.stored_events import _corrupt

        raise _corrupt([*(i for i, _ in after), *cold], error, recorder=recorder) from None


def select_statement(
    recorder: Any,
    table: str,
    snapshot_table: str,
    after: list[tuple[UUID, int]],
    cold: Sequence[UUID],
) -> tuple[str, list[Any]] | None:
    """The one query of ``select_events`` and its parameters (None: nothing to read).

    Every part of it is a seek in a primary key (originator_id, originator_version), so a
    cold load reads the same few index entries after 10 events as after 100,000: the newest
    event's version (the last entry of the aggregate), the newest snapshot not past it, and
    the events after that snapshot, each driven from the list of cold ids. (It used to join
    the events to the snapshot's version with ``LEFT JOIN ... > COALESCE(v, 0)``, which no
    index serves: both databases then read every event of the aggregate to keep the few
    after the snapshot, about 0.2 µs an event: docs/concurrency.md, "Stored snapshots".)"""
    sqlite = isinstance(recorder, SQLiteAggregateRecorder)
    mark = "?" if sqlite else "%s"
    columns = "originator_id, originator_version, topic, state"
    parts = []
    params: list[Any] = []
    if cold:
        values = ", ".join(f"({mark})" if sqlite else f"({mark}::uuid)" for _ in cold)
        # For each cold aggregate, the version of its newest snapshot not newer than its
        # newest event (0: none), each found by one seek from the end of its key range.
        latest = (
            f"WITH cold(oid) AS (VALUES {values}), "
            f"latest AS (SELECT c.oid AS oid, COALESCE(("
            f"SELECT s.originator_version FROM {snapshot_table} s "
            f"WHERE s.originator_id = c.oid AND s.originator_version <= ("
            f"SELECT e.originator_version FROM {table} e WHERE e.originator_id = c.oid "
            f"ORDER BY e.originator_version DESC LIMIT 1) "
            f"ORDER BY s.originator_version DESC LIMIT 1), 0) AS v FROM cold c) "
        )
        parts.append(
            f"SELECT 0 AS kind, s.originator_id, s.originator_version, s.topic, s.state "
            f"FROM latest l JOIN {snapshot_table} s "
            f"ON s.originator_id = l.oid AND s.originator_version = l.v"
        )
        parts.append(
            f"SELECT 1 AS kind, e.originator_id, e.originator_version, e.topic, e.state "
            f"FROM latest l JOIN {table} e "
            f"ON e.originator_id = l.oid AND e.originator_version > l.v"
        )
        params += [i.hex if sqlite else i for i in cold]
    if after:
        where = " OR ".join(
            f"(originator_id = {mark} AND originator_version > {mark})" for _ in after
        )
        parts.append(f"SELECT 1 AS kind, {columns} FROM {table} WHERE {where}")
        params += [v for i, version in after for v in (i.hex if sqlite else i, version)]
    if not parts:
        return None
    if cold:
        return latest + " UNION ALL ".join(parts) + " ORDER BY 2, 1, 3", params
    # the hot path, as it always was
    return f"SELECT 1 AS kind, {columns} FROM {table} WHERE {where} ORDER BY 2, 3", params


def replace_snapshots(
    recorder: Any, snapshot_table: str, aggregates: list[Aggregate], snapshots: list[StoredEvent]
) -> None:
    """Store ``snapshots`` (one of each aggregate) and delete the older ones of the same
    aggregates: only the newest is ever read, and each holds the whole state."""
    if isinstance(recorder, SQLiteAggregateRecorder):
        recorder.insert_events(snapshots)
        where = " OR ".join("(originator_id = ? AND originator_version < ?)" for _ in aggregates)
        params = [v for a in aggregates for v in (a.id.hex, a.version)]
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(f"DELETE FROM {snapshot_table} WHERE {where}", params)
    else:
        _replace_snapshots_postgres(recorder, snapshot_table, snapshots)


def _replace_snapshots_postgres(
    recorder: Any, snapshot_table: str, snapshots: list[StoredEvent]
) -> None:
    """PostgreSQL: the new snapshots inserted and the older ones of the same aggregates
    deleted in one statement, so one round trip and one commit (the library's insert and a
    DELETE in a transaction of its own took four round trips and two commits). Whole or
    not at all: if a snapshot of the same version is there already (another process
    stored it), nothing is deleted either, as before."""
    ids = [s.originator_id for s in snapshots]
    versions = [s.originator_version for s in snapshots]
    with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
        cursor.execute(
            f"WITH older AS (DELETE FROM {snapshot_table} AS s "
            "USING unnest(%s::uuid[], %s::bigint[]) AS n(id, version) "
            "WHERE s.originator_id = n.id AND s.originator_version < n.version) "
            f"INSERT INTO {snapshot_table} "
            "(originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(%s::uuid[], %s::bigint[], %s::text[], %s::bytea[])",
            (
                ids,
                versions,
                ids,
                versions,
                [s.topic for s in snapshots],
                [s.state for s in snapshots],
            ),
        )
