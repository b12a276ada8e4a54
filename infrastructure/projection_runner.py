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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
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


class SqlRows:
    """The ``Rows`` port over SQL, caching a batch's reads and writes until ``flush``."""

    def __init__(self, cursor: Cursor, tables: Iterable[Table], dialect: str) -> None:
        self.cursor = cursor
        self.tables = {table.name: table for table in tables}
        self.dialect = dialect
        # (table, key) -> (row or None, changed in this batch)
        self._cache: dict[tuple[str, tuple[Any, ...]], tuple[dict[str, Any] | None, bool]] = {}

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        cached = self._cache.get((table, key))
        if cached is None:
            spec = self.tables[table]
            where = " AND ".join(f"{column} = ?" for column in spec.key)
            params = [self._to_db(spec, n, v) for n, v in zip(spec.key, key, strict=True)]
            row = self.cursor.execute(
                f"SELECT {', '.join(spec.column_names())} FROM {table} WHERE {where}", params
            ).fetchone()
            cached = (None if row is None else self.decode(spec, row), False)
            self._cache[(table, key)] = cached
        return dict(cached[0]) if cached[0] is not None else None

    def put(self, table: str, row: dict[str, Any]) -> None:
        spec = self.tables[table]
        missing = set(spec.column_names()) - set(row)
        if missing:
            raise ValueError(f"{table} row lacks {sorted(missing)}")
        self._cache[(table, tuple(row[name] for name in spec.key))] = (dict(row), True)

    def delete(self, table: str, key: tuple[Any, ...]) -> None:
        self._cache[(table, key)] = (None, True)

    def flush(self) -> int:
        """Write every changed row; returns how many rows were written or deleted."""
        written = 0
        for spec in self.tables.values():
            changed = [
                (key, row)
                for (table, key), (row, dirty) in self._cache.items()
                if table == spec.name and dirty
            ]
            where = " AND ".join(f"{column} = ?" for column in spec.key)
            deletes = [
                [self._to_db(spec, n, v) for n, v in zip(spec.key, key, strict=True)]
                for key, row in changed
                if row is None
            ]
            if deletes:
                self.cursor.executemany(f"DELETE FROM {spec.name} WHERE {where}", deletes)
            puts = [
                [self._to_db(spec, c, row[c]) for c in spec.column_names()]
                for _, row in changed
                if row is not None
            ]
            if puts:
                self.cursor.executemany(_upsert_sql(spec), puts)
            written += len(changed)
        self._cache.clear()
        return written

    def _to_db(self, spec: Table, column: str, value: Any) -> Any:
        kind = _column_type(spec, column)
        if value is None:
            return None
        if kind == "time":
            moment = value.astimezone(UTC)
            return moment if self.dialect == "postgres" else moment.isoformat()
        if kind == "json":
            return Jsonb(value) if self.dialect == "postgres" else json.dumps(value, sort_keys=True)
        if kind == "bool" and self.dialect == "sqlite":
            return int(bool(value))
        return value

    def decode(self, spec: Table, row: tuple[Any, ...]) -> dict[str, Any]:
        result = {}
        for column, value in zip(spec.columns, row, strict=True):
            if value is not None and self.dialect == "sqlite":
                if column.type == "time":
                    value = datetime.fromisoformat(value)
                elif column.type == "json":
                    value = json.loads(value)
                elif column.type == "bool":
                    value = bool(value)
            elif value is not None and column.type == "time":
                value = value.astimezone(UTC)
            result[column.name] = value
        return result


def _column_type(spec: Table, name: str) -> str:
    for column in spec.columns:
        if column.name == name:
            return column.type
    raise KeyError(name)


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


def create_statements(spec: Table, dialect: str) -> list[str]:
    types = _SQL_TYPES[dialect]
    columns = ", ".join(f"{c.name} {types[c.type]}" for c in spec.columns)
    statements = [
        f"CREATE TABLE IF NOT EXISTS {spec.name} ({columns}, PRIMARY KEY ({', '.join(spec.key)}))"
    ]
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

    def setup(self) -> None:
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
                for statement in create_statements(table, self.dialect):
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
        notifications = self.app.recorder.select_notifications(position + 1, limit=self.batch_size)
        if not notifications:
            return 0
        events = [(n, self._decode(n)) for n in notifications]
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
                try:
                    self.projection.process(event, notification.id, rows)
                except Exception as error:
                    raise ProjectionStoppedError(
                        _stopped(self.name, notification, type(error).__name__)
                    ) from error
            rows.flush()
            cursor.execute(
                f"UPDATE {TRACKING_TABLE} SET position = ?, updated_at = ? WHERE projection = ?",
                (notifications[-1].id, datetime.now(tz=UTC).isoformat(), self.name),
            )
        self.known_position = notifications[-1].id
        return len(notifications)

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

    def reset(self) -> None:
        """Drop the projection's tables and tracking position, ready for a rebuild."""
        with self.sql.transaction() as cursor:
            self.sql.lock_schema(cursor)
            for table in self.projection.tables:
                cursor.execute(f"DROP TABLE IF EXISTS {table.name}")
            cursor.execute(f"DELETE FROM {TRACKING_TABLE} WHERE projection = ?", (self.name,))
        self.known_position = None
        self.setup()

    def _decode(self, notification: Notification) -> Any:
        try:
            return self.app.mapper.to_domain_event(notification)
        except Exception as error:
            raise ProjectionStoppedError(
                _stopped(self.name, notification, type(error).__name__)
            ) from None


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
