"""Each stored snapshot against its aggregate's events replayed (``audit verify``'s check,
infrastructure/audit/snapshot_check.py): a cold load starts from a snapshot, so one a writer
edited would change what it decides while every event still holds."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

from countersign.application.errors import CorruptRecordError
from countersign.infrastructure.persistence import stored_snapshots
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import (
    _UNREADABLE,
    _table_name,
    is_domain_class,
    replayed,
)
from eventsourcing.persistence import StoredEvent


def count_snapshots(app: CountersignApplication, sql: SqlDatabase) -> int:
    """How many snapshots are stored (what ``replayed_snapshots`` reads, for its progress)."""
    with sql.reading() as cursor:
        row = cursor.execute(
            f"SELECT COUNT(*) FROM {_table_name(app.snapshot_recorder)}"
        ).fetchone()
    return int(row[0]) if row else 0


def replayed_snapshots(
    app: CountersignApplication,
    sql: SqlDatabase,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[UUID, str, int, str | None]]:
    """For each stored snapshot a load would read (one it cannot read is ignored there, and
    here): its stream, its aggregate's class, its version, and how it differs from its events
    replayed up to that version (``changed``; ``events_missing``: they end before it;
    ``events_unreadable``), or None. ``progress`` is told of each stored snapshot read."""
    for stored in _stored(app, sql):
        if progress is not None:
            progress(1)
        try:
            held = stored_snapshots.revive(app.mapper, stored, is_domain_class)
        except (stored_snapshots.UnreadableSnapshotError, *_UNREADABLE):
            continue  # a load ignores it and replays the events: nothing it says is used
        stream_id, version = UUID(str(stored.originator_id)), stored.originator_version
        yield stream_id, type(held).__name__, version, _problem(app, stream_id, version, held)


def _stored(app: CountersignApplication, sql: SqlDatabase) -> list[StoredEvent]:
    table = _table_name(app.snapshot_recorder)
    with sql.reading() as cursor:
        rows = cursor.execute(
            f"SELECT originator_id, originator_version, topic, state FROM {table} "
            "ORDER BY originator_id, originator_version"
        ).fetchall()
    return [
        StoredEvent(UUID(str(raw_id)), int(version), str(topic), bytes(state))
        for raw_id, version, topic, state in rows
    ]


def _problem(app: CountersignApplication, stream_id: UUID, version: int, held: Any) -> str | None:
    events = list(app.recorder.select_events(stream_id, lte=version))
    try:
        aggregate, _views = replayed(app, None, events)
    except CorruptRecordError:
        return "events_unreadable"
    if aggregate is None or aggregate.version != version:
        return "events_missing"
    return None if _state(aggregate) == _state(held) else "changed"


def _state(aggregate: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k != "_pending_events"}
