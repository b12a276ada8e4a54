"""Runs projections over the notification log in batches, exactly once.

Each batch reads up to ``batch_size`` notifications, applies them to a batch-scoped row cache,
then writes the changed rows and the new tracking position in ONE transaction. The transaction
first re-reads the tracking position under a lock, so two runners of one projection never both
apply a batch. A killed runner resumes from its last committed batch; a rebuild recreates the
tables and replays the whole log through the same code.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from eventsourcing.persistence import Notification
from psycopg.types.json import Jsonb

from infrastructure.event_store import CountersignApplication
from infrastructure.sql import Cursor, SqlDatabase
from projections.base import Projection, Table

log = logging.getLogger("countersign.projections")

TRACKING_TABLE = "projection_tracking"

_SQL_TYPES = {
    "sqlite": {
        "text": "TEXT",
        "int": "INTEGER",
        "bool": "INTEGER",
        "time": "TEXT",
        "json": "TEXT",
        "real": "REAL",
    },
    "postgres": {
        "text": "TEXT",
        "int": "BIGINT",
        "bool": "BOOLEAN",
        "time": "TIMESTAMPTZ",
        "json": "JSONB",
        "real": "DOUBLE PRECISION",
    },
}


class ProjectionStoppedError(Exception):
    """Raised when a projection meets an event it cannot process; it resumes from that event."""


class ProjectionRaceError(Exception):
    """Raised when another runner of the same projection committed the batch first."""


@dataclass(frozen=True)
class ProjectionStatus:
    """Where a projection stands against the head of the log."""

    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "position": self.position, "head": self.head, "lag": self.lag}


def _identity(value: Any) -> Any:
    return value


def _time_to_text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _time_to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _json_to_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _bool_to_int(value: Any) -> int:
    return int(bool(value))


_TO_DB: dict[str, dict[str, Callable[[Any], Any]]] = {
    "sqlite": {"time": _time_to_text, "json": _json_to_text, "bool": _bool_to_int},
    "postgres": {"time": _time_to_utc, "json": Jsonb},
}
_FROM_DB: dict[str, dict[str, Callable[[Any], Any]]] = {
    "sqlite": {"time": datetime.fromisoformat, "json": json.loads, "bool": bool},
    "postgres": {"time": _time_to_utc},
}


class _Codec:
    """Per-table, per-dialect value converters, computed once."""

    def __init__(self, spec: Table, dialect: str) -> None:
        to_db, from_db = _TO_DB[dialect], _FROM_DB[dialect]
        self.names = spec.column_names()
        self.columns = frozenset(self.names)
        self.key = spec.key
        self.to_db = [to_db.get(column.type, _identity) for column in spec.columns]
        self.from_db = [from_db.get(column.type, _identity) for column in spec.columns]
        by_name = dict(zip(self.names, self.to_db, strict=True))
        self.key_to_db = [by_name[name] for name in spec.key]
        self.select = f"SELECT {', '.join(self.names)} FROM {spec.name} WHERE " + " AND ".join(
            f"{column} = ?" for column in spec.key
        )
        self.delete = f"DELETE FROM {spec.name} WHERE " + " AND ".join(
            f"{column} = ?" for column in spec.key
        )
        self.upsert = _upsert_sql(spec)

    def row_to_db(self, row: dict[str, Any]) -> list[Any]:
        return [
            None if (value := row[name]) is None else convert(value)
            for name, convert in zip(self.names, self.to_db, strict=True)
        ]

    def key_params(self, key: tuple[Any, ...]) -> list[Any]:
        return [
            None if value is None else convert(value)
            for value, convert in zip(key, self.key_to_db, strict=True)
        ]

    def row_from_db(self, row: tuple[Any, ...]) -> dict[str, Any]:
        return {
            name: None if value is None else convert(value)
            for name, value, convert in zip(self.names, row, self.from_db, strict=True)
        }


class SqlRows:
    """The ``Rows`` port over SQL, caching a batch's reads and writes until ``flush``."""

    def __init__(self, cursor: Cursor, tables: Iterable[Table], dialect: str) -> None:
        self.cursor = cursor
        self.tables = {table.name: table for table in tables}
        self.dialect = dialect
        self.codecs = {name: _Codec(spec, dialect) for name, spec in self.tables.items()}
        # (table, key) -> [row or None, changed in this batch]
        self._cache: dict[tuple[str, tuple[Any, ...]], list[Any]] = {}

    def _entry(self, table: str, key: tuple[Any, ...]) -> list[Any]:
        entry = self._cache.get((table, key))
        if entry is None:
            codec = self.codecs[table]
            row = self.cursor.execute(codec.select, codec.key_params(key)).fetchone()
            entry = [None if row is None else codec.row_from_db(row), False]
            self._cache[(table, key)] = entry
        return entry

    def get(self, table: str, key: tuple[Any, ...]) -> Mapping[str, Any] | None:
        row = self._entry(table, key)[0]
        return MappingProxyType(row) if row is not None else None

    def update(self, table: str, key: tuple[Any, ...], **changes: Any) -> dict[str, Any] | None:
        unknown = set(changes) - set(self.codecs[table].names)
        if unknown:
            raise ValueError(f"{table} has no column {sorted(unknown)}")
        entry = self._entry(table, key)
        if entry[0] is None:
            return None
        entry[0].update(changes)
        entry[1] = True
        return dict(entry[0])

    def put(self, table: str, row: dict[str, Any]) -> None:
        codec = self.codecs[table]
        if row.keys() != codec.columns:
            raise ValueError(f"{table} row must have exactly the columns {sorted(codec.columns)}")
        self._cache[(table, tuple(row[name] for name in codec.key))] = [dict(row), True]

    def delete(self, table: str, key: tuple[Any, ...]) -> None:
        self._cache[(table, key)] = [None, True]

    def flush(self) -> int:
        """Write every changed row; returns how many rows were written or deleted."""
        deletes: dict[str, list[list[Any]]] = {name: [] for name in self.tables}
        puts: dict[str, list[list[Any]]] = {name: [] for name in self.tables}
        for (table, key), (row, dirty) in self._cache.items():
            if not dirty:
                continue
            codec = self.codecs[table]
            if row is None:
                deletes[table].append(codec.key_params(key))
            else:
                puts[table].append(codec.row_to_db(row))
        written = 0
        for name, codec in self.codecs.items():
            if deletes[name]:
                self.cursor.executemany(codec.delete, deletes[name])
            if puts[name]:
                self.cursor.executemany(codec.upsert, puts[name])
            written += len(deletes[name]) + len(puts[name])
        self._cache.clear()
        return written

    def decode(self, spec: Table, row: tuple[Any, ...]) -> dict[str, Any]:
        codec = self.codecs.get(spec.name) or _Codec(spec, self.dialect)
        return codec.row_from_db(row)


def _upsert_sql(spec: Table) -> str:
    columns = spec.column_names()
    placeholders = ", ".join("?" for _ in columns)
    others = [column for column in columns if column not in spec.key]
    action = (
        "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in others)
        if others
        else "DO NOTHING"
    )
    return (
        f"INSERT INTO {spec.name} ({', '.join(columns)}) VALUES ({placeholders}) "
        f"ON CONFLICT ({', '.join(spec.key)}) {action}"
    )


def create_statements(spec: Table, dialect: str, *, indexes: bool = True) -> list[str]:
    types = _SQL_TYPES[dialect]
    columns = ", ".join(f"{c.name} {types[c.type]}" for c in spec.columns)
    statements = [
        f"CREATE TABLE IF NOT EXISTS {spec.name} ({columns}, PRIMARY KEY ({', '.join(spec.key)}))"
    ]
    return statements + (index_statements(spec) if indexes else [])


def index_statements(spec: Table) -> list[str]:
    statements = []
    for index in spec.indexes:
        name = f"{spec.name}_{'_'.join(index)}_idx"
        statements.append(f"CREATE INDEX IF NOT EXISTS {name} ON {spec.name} ({', '.join(index)})")
    return statements


class ProjectionRunner:
    """Applies one projection to the log, batch by batch."""

    def __init__(
        self,
        app: CountersignApplication,
        sql: SqlDatabase,
        projection: Projection,
        batch_size: int = 1000,
    ) -> None:
        self.app = app
        self.sql = sql
        self.projection = projection
        self.batch_size = batch_size
        self.dialect = "postgres" if sql.is_postgres else "sqlite"
        # The position this runner last committed or read; the batch transaction re-checks it.
        self.known_position: int | None = None
        self.setup()

    @property
    def name(self) -> str:
        return self.projection.name

    def setup(self, *, indexes: bool = True) -> None:
        with self.sql.transaction() as cursor:
            self.sql.lock_schema(cursor)
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} ("
                " projection TEXT PRIMARY KEY, position BIGINT NOT NULL, updated_at TEXT)"
            )
            cursor.execute(
                f"INSERT INTO {TRACKING_TABLE} (projection, position) VALUES (?, 0)"
                " ON CONFLICT (projection) DO NOTHING",
                (self.name,),
            )
            for table in self.projection.tables:
                for statement in create_statements(table, self.dialect, indexes=indexes):
                    cursor.execute(statement)

    def position(self) -> int:
        with self.sql.transaction() as cursor:
            row = cursor.execute(
                f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?", (self.name,)
            ).fetchone()
        self.known_position = int(row[0]) if row else 0
        return self.known_position

    def head(self) -> int:
        return int(self.app.recorder.max_notification_id() or 0)

    def status(self) -> ProjectionStatus:
        return ProjectionStatus(self.name, self.position(), self.head())

    def run_batch(self, start_after: int | None = None) -> int:
        """Process the next batch; returns the number of events processed (0: caught up)."""
        if start_after is not None:
            position = start_after
        elif self.known_position is not None:
            position = self.known_position
        else:
            position = self.position()
        return self.apply(self.read(position), position)

    def read(
        self, position: int, wanted: Callable[[str], bool] | None = None
    ) -> list[tuple[Notification, Any]]:
        """The next batch after ``position``; only events some handler wants are decoded
        (the others still advance the position: their event is None)."""
        wanted = wanted or self.projection.handles_topic
        notifications = self.app.recorder.select_notifications(position + 1, limit=self.batch_size)
        return [(n, self._decode(n) if wanted(n.topic) else None) for n in notifications]

    def apply(self, events: list[tuple[Notification, Any]], position: int) -> int:
        """Apply a decoded batch that starts right after ``position``, in one transaction."""
        if not events:
            return 0
        last = events[-1][0].id
        with self.sql.transaction() as cursor:
            locked = cursor.execute(
                f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?"
                + (" FOR UPDATE" if self.sql.is_postgres else ""),
                (self.name,),
            ).fetchone()
            if locked is None or int(locked[0]) != position:
                self.known_position = None
                raise ProjectionRaceError(self.name)
            rows = SqlRows(cursor, self.projection.tables, self.dialect)
            for notification, event in events:
                if event is None:
                    continue
                try:
                    self.projection.process(event, notification.id, rows)
                except Exception as error:
                    raise ProjectionStoppedError(
                        _stopped(self.name, notification, type(error).__name__)
                    ) from error
            rows.flush()
            cursor.execute(
                f"UPDATE {TRACKING_TABLE} SET position = ?, updated_at = ? WHERE projection = ?",
                (last, datetime.now(tz=UTC).isoformat(), self.name),
            )
        self.known_position = last
        return len(events)

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Process batches until the log is exhausted; returns the events processed."""
        total = 0
        while True:
            try:
                processed = self.run_batch()
            except ProjectionRaceError:
                continue  # another runner moved on; carry on from its position
            if processed == 0:
                return total
            total += processed
            if progress is not None:
                progress(processed)

    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Drop and rebuild from the whole log; secondary indexes are built once, at the end."""
        self.reset(indexes=False)
        processed = self.catch_up(progress)
        self.create_indexes()
        return processed

    def create_indexes(self) -> None:
        with self.sql.transaction() as cursor:
            self.sql.lock_schema(cursor)
            for table in self.projection.tables:
                for statement in index_statements(table):
                    cursor.execute(statement)

    def reset(self, *, indexes: bool = True) -> None:
        """Drop the projection's tables and tracking position, ready for a rebuild."""
        with self.sql.transaction() as cursor:
            self.sql.lock_schema(cursor)
            for table in self.projection.tables:
                cursor.execute(f"DROP TABLE IF EXISTS {table.name}")
            cursor.execute(f"DELETE FROM {TRACKING_TABLE} WHERE projection = ?", (self.name,))
        self.known_position = None
        self.setup(indexes=indexes)

    def _decode(self, notification: Notification) -> Any:
        try:
            return self.app.mapper.to_domain_event(notification)
        except Exception as error:
            raise ProjectionStoppedError(
                _stopped(self.name, notification, type(error).__name__)
            ) from None


def rebuild_together(
    runners: list[ProjectionRunner], progress: Callable[[int], None] | None = None
) -> int:
    """Rebuild several projections reading and decoding the log once for all of them.

    Each projection still commits each batch with its own tracking position, so a rebuild
    interrupted part-way resumes like any catch-up. Returns the log events read.
    """
    for runner in runners:
        runner.reset(indexes=False)
    position = 0
    total = 0

    def wanted(topic: str) -> bool:
        return any(runner.projection.handles_topic(topic) for runner in runners)

    try:
        while runners:
            decoded = runners[0].read(position, wanted)
            if not decoded:
                break
            for runner in runners:
                try:
                    runner.apply(decoded, position)
                except ProjectionRaceError:
                    raise ProjectionStoppedError(
                        f"projection {runner.name!r} was advanced by another runner during the "
                        "rebuild; stop 'countersign projections run' and rebuild again"
                    ) from None
            position = decoded[-1][0].id
            total += len(decoded)
            if progress is not None:
                progress(len(decoded))
    finally:
        for runner in runners:  # whatever happened, readers get their indexes back
            runner.create_indexes()
    return total


def _stopped(name: str, notification: Notification, error: str) -> str:
    return (
        f"projection {name!r} stopped at notification {notification.id} "
        f"({notification.topic.rpartition(':')[2]} of {notification.originator_id}): {error}. "
        "Nothing after it was applied; fix the cause and run the projection again: "
        "it resumes from this event."
    )


def run_forever(
    runners: list[ProjectionRunner],
    stop: threading.Event,
    idle_sleep: float = 0.02,
    on_batch: Callable[[str, int], None] | None = None,
) -> None:
    """Follow the log until ``stop`` is set; poll with a short sleep while caught up.

    While caught up, one cheap read of the log's head per poll decides whether any runner
    has work, so idle projections cost one query per ``idle_sleep``, not one per projection.
    """
    while not stop.is_set():
        busy = False
        head = runners[0].head() if runners else 0
        for runner in runners:
            if runner.known_position is not None and runner.known_position >= head:
                continue
            try:
                processed = runner.run_batch()
            except ProjectionRaceError:
                busy = True
                continue
            if processed:
                busy = True
                if on_batch is not None:
                    on_batch(runner.name, processed)
        if not busy:
            stop.wait(idle_sleep)
