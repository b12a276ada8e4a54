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
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from types import MappingProxyType, NoneType
from typing import Any

import psycopg
from eventsourcing.persistence import Notification
from psycopg.types.json import Jsonb

from infrastructure.event_store import CountersignApplication
from infrastructure.projection_events import ProjectionDecoder
from infrastructure.recorders import LogEntry
from infrastructure.sql import Cursor, SqlDatabase
from projections.base import Projection, Table

log = logging.getLogger("countersign.projections")

#: A log entry as a runner reads it: the recorder's plain row, or the library's notification.
Entry = LogEntry | Notification

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


def _time_to_utc(value: datetime) -> datetime:
    return value if value.tzinfo is UTC else value.astimezone(UTC)


_json_encode = json.JSONEncoder(sort_keys=True).encode  # json.dumps(value, sort_keys=True)


# Converters take a whole column of a batch (None stays None): one list comprehension per
# column and batch, not a function call per value.
def _times_to_text(values: Sequence[Any]) -> list[Any]:
    return [
        v if v is None else (v if v.tzinfo is UTC else v.astimezone(UTC)).isoformat()
        for v in values
    ]


def _times_to_utc(values: Sequence[Any]) -> list[Any]:
    return [v if v is None or v.tzinfo is UTC else v.astimezone(UTC) for v in values]


def _jsons_to_text(values: Sequence[Any]) -> list[Any]:
    return [v if v is None else _json_encode(v) for v in values]


def _jsons_to_jsonb(values: Sequence[Any]) -> list[Any]:
    return [v if v is None else Jsonb(v) for v in values]


def _bools_to_int(values: Sequence[Any]) -> list[Any]:
    return [v if v is None else int(bool(v)) for v in values]


def _bools_to_bool(values: Sequence[Any]) -> list[Any]:
    return [v if v is None else bool(v) for v in values]


Converter = Callable[[Sequence[Any]], list[Any]]

#: How a column's values are converted for the database, by dialect and column type.
_TO_DB: dict[str, dict[str, Converter]] = {
    "sqlite": {"time": _times_to_text, "json": _jsons_to_text, "bool": _bools_to_int},
    # PostgreSQL arrays of values (see ``_unnest``): JSON goes as jsonb.
    "postgres": {"time": _times_to_utc, "json": _jsons_to_jsonb, "bool": _bools_to_bool},
}
#: PostgreSQL COPY dumps each value as its column's type, JSON included.
_COPY_TO_DB: dict[str, Converter] = {"time": _times_to_utc, "bool": _bools_to_bool}
_FROM_DB: dict[str, dict[str, Callable[[Any], Any]]] = {
    "sqlite": {"time": datetime.fromisoformat, "json": json.loads, "bool": bool},
    "postgres": {"time": _time_to_utc},
}
#: The PostgreSQL type values are sent as (in arrays, or by COPY), by column type.
_PG_TYPES = {
    "text": "text",
    "int": "int8",
    "bool": "bool",
    "time": "timestamptz",
    "json": "jsonb",
    "real": "float8",
}
#: PostgreSQL is sent a column's values as one Python type: a column holding others (an int
#: in a "real" column, say) is coerced first.
_PG_COERCE: dict[str, type] = {"text": str, "int": int, "real": float}
#: From this many rows of one table in one batch, PostgreSQL writes them with COPY into a
#: temporary table and one upsert from it; fewer go as arrays in one statement (one round
#: trip). COPY builds its rows in C, which pays for its extra round trips on bulk batches.
_COPY_ROWS = 100


def _getter(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """``row -> tuple of row[name] for name in names``, at C speed (a 1-tuple for one name)."""
    if len(names) == 1:
        (name,) = names
        return lambda row: (row[name],)
    return itemgetter(*names)


class _Codec:
    """Per-table, per-dialect statements and value converters, computed once."""

    def __init__(self, spec: Table, dialect: str) -> None:
        to_db, from_db = _TO_DB[dialect], _FROM_DB[dialect]
        self.postgres = dialect == "postgres"
        self.append_only = spec.append_only
        self.names = tuple(spec.column_names())
        self.columns = frozenset(self.names)
        self.key = spec.key
        types = {column.name: column.type for column in spec.columns}
        self.types = [types[name] for name in self.names]
        self.key_types = [types[name] for name in spec.key]
        self.values = _getter(self.names)
        self.key_of = _getter(spec.key)
        # Only the columns whose values need converting, by position.
        self.to_db = [(i, to_db[t]) for i, t in enumerate(self.types) if t in to_db]
        self.key_to_db = [(i, to_db[t]) for i, t in enumerate(self.key_types) if t in to_db]
        self.from_db = [
            (i, name, from_db[t])
            for i, (name, t) in enumerate(zip(self.names, self.types, strict=True))
            if t in from_db
        ]
        self.select = f"SELECT {', '.join(self.names)} FROM {spec.name} WHERE " + " AND ".join(
            f"{column} = ?" for column in spec.key
        )
        if self.postgres:
            columns = ", ".join(self.names)
            # Few rows: one statement, an array of values per column.
            self.upsert = _upsert_sql(
                spec, "SELECT * FROM " + _unnest([_PG_TYPES[t] for t in self.types])
            )
            # Many rows: COPY into a temporary table of the same columns, then one upsert.
            self.copy_to_db = [
                (i, _COPY_TO_DB[t]) for i, t in enumerate(self.types) if t in _COPY_TO_DB
            ]
            self.copy_types = [_PG_TYPES[t] for t in self.types]
            stage = f"countersign_stage_{spec.name}"
            self.create_stage = (
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} ("
                + ", ".join(f"{c.name} {_SQL_TYPES[dialect][c.type]}" for c in spec.columns)
                + ") ON COMMIT DELETE ROWS"
            )
            self.copy = f"COPY pg_temp.{stage} ({columns}) FROM STDIN (FORMAT BINARY)"
            self.upsert_staged = _upsert_sql(spec, f"SELECT {columns} FROM pg_temp.{stage}")
            if spec.append_only:  # nothing to merge: straight into the table
                self.copy = f"COPY {spec.name} ({columns}) FROM STDIN (FORMAT BINARY)"
            self.delete = (
                f"DELETE FROM {spec.name} AS t USING "
                + _unnest([_PG_TYPES[t] for t in self.key_types])
                + f" AS d ({', '.join(spec.key)}) WHERE "
                + " AND ".join(f"t.{column} = d.{column}" for column in spec.key)
            )
        else:
            row = f"({', '.join('?' for _ in self.names)})"
            self.upsert = _upsert_sql(spec, f"VALUES {row}")
            # Many rows per INSERT: SQLite runs one statement per row of executemany, and a
            # statement costs about as much again as the row it inserts. 999 parameters a
            # statement at most, the limit of the oldest SQLite builds.
            self.rows_per_insert = max(1, min(50, 999 // len(self.names)))
            self.upsert_many = _upsert_sql(
                spec, "VALUES " + ", ".join([row] * self.rows_per_insert)
            )
            self.delete = f"DELETE FROM {spec.name} WHERE " + " AND ".join(
                f"{column} = ?" for column in spec.key
            )

    def key_params(self, key: tuple[Any, ...]) -> list[Any]:
        params = list(key)
        for i, convert in self.key_to_db:
            params[i] = convert([params[i]])[0]
        return params

    def rows_to_db(self, rows: list[dict[str, Any]]) -> list[Any]:
        """PostgreSQL: one array of values per column; SQLite: one tuple per row."""
        values = list(map(self.values, rows))
        if self.postgres:
            return self._columns(values, self.to_db, self.types)
        if not self.to_db:
            return values
        columns: list[Any] = list(zip(*values, strict=True))
        for i, convert in self.to_db:
            columns[i] = convert(columns[i])
        return list(zip(*columns, strict=True))

    def rows_to_copy(self, rows: list[dict[str, Any]]) -> Iterable[tuple[Any, ...]]:
        """PostgreSQL: the rows' values for COPY, one tuple per row."""
        columns = self._columns(list(map(self.values, rows)), self.copy_to_db, self.types)
        return zip(*columns, strict=True)

    def keys_to_db(self, keys: list[tuple[Any, ...]]) -> list[Any]:
        """PostgreSQL: one array per key column; SQLite: the keys' parameters."""
        if self.postgres:
            return self._columns(keys, self.key_to_db, self.key_types)
        return [self.key_params(key) for key in keys] if self.key_to_db else keys

    @staticmethod
    def _columns(
        rows: list[tuple[Any, ...]], converters: list[tuple[int, Converter]], types: list[str]
    ) -> list[Any]:
        """PostgreSQL: the rows' values column by column, converted, one Python type each."""
        columns: list[Any] = list(zip(*rows, strict=True))
        for i, convert in converters:
            columns[i] = convert(columns[i])
        for i, values in enumerate(columns):
            expected = _PG_COERCE.get(types[i])
            if expected is not None and not set(map(type, values)) <= {expected, NoneType}:
                values = [v if v is None else expected(v) for v in values]
            columns[i] = values if type(values) is list else list(values)
        return columns

    def row_from_db(self, row: tuple[Any, ...]) -> dict[str, Any]:
        decoded = dict(zip(self.names, row, strict=True))
        for i, name, convert in self.from_db:
            value = row[i]
            if value is not None:
                decoded[name] = convert(value)
        return decoded


_ABSENT: Any = object()


@lru_cache(maxsize=256)
def _codec(spec: Table, dialect: str) -> _Codec:
    return _Codec(spec, dialect)


def _unnest(array_types: list[str]) -> str:
    # %b: arrays travel in PostgreSQL's binary format, far cheaper to build than text.
    return f"unnest({', '.join(f'%b::{t}[]' for t in array_types)})"


class SqlRows:
    """The ``Rows`` port over SQL, caching a batch's reads and writes until ``flush``."""

    def __init__(self, cursor: Cursor, tables: Iterable[Table], dialect: str) -> None:
        self.cursor = cursor
        self.tables = {table.name: table for table in tables}
        self.dialect = dialect
        self.codecs = {name: _codec(spec, dialect) for name, spec in self.tables.items()}
        # Per table, the rows written in this batch (None: deleted), in first-write order ...
        self._written: dict[str, dict[tuple[Any, ...], dict[str, Any] | None]] = {
            name: {} for name in self.tables
        }
        # ... and the rows read from the database (None: no such row). A key is looked up in
        # the written rows first.
        self._read: dict[str, dict[tuple[Any, ...], dict[str, Any] | None]] = {
            name: {} for name in self.tables
        }

    def _load(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The row as it stands in the database (before this batch), read at most once."""
        read = self._read[table]
        row: dict[str, Any] | None = read.get(key, _ABSENT)
        if row is _ABSENT:
            codec = self.codecs[table]
            found = self.cursor.execute(codec.select, codec.key_params(key)).fetchone()
            row = read[key] = None if found is None else codec.row_from_db(found)
        return row

    def get(self, table: str, key: tuple[Any, ...]) -> Mapping[str, Any] | None:
        row: dict[str, Any] | None = self._written[table].get(key, _ABSENT)
        if row is _ABSENT:
            row = self._load(table, key)
        return None if row is None else MappingProxyType(row)

    def update(self, table: str, key: tuple[Any, ...], **changes: Any) -> Mapping[str, Any] | None:
        if self.codecs[table].append_only:
            raise ValueError(f"{table} is append-only: its rows are never changed")
        columns = self.codecs[table].columns
        if not columns.issuperset(changes):
            raise ValueError(f"{table} has no column {sorted(set(changes) - columns)}")
        written = self._written[table]
        row: dict[str, Any] | None = written.get(key, _ABSENT)
        if row is _ABSENT:
            row = self._load(table, key)
            if row is None:
                return None
            written[key] = row
        elif row is None:
            return None
        row.update(changes)
        return MappingProxyType(row)

    def put(self, table: str, row: dict[str, Any]) -> None:
        codec = self.codecs[table]
        # The first test is the cheap one when the row lists its columns in table order.
        if tuple(row) != codec.names and row.keys() != codec.columns:
            raise ValueError(f"{table} row must have exactly the columns {sorted(codec.columns)}")
        key = codec.key_of(row)
        if codec.append_only and key in self._written[table]:
            raise ValueError(f"{table} is append-only: {key!r} was already put")
        self._written[table][key] = dict(row)

    def delete(self, table: str, key: tuple[Any, ...]) -> None:
        if self.codecs[table].append_only:
            raise ValueError(f"{table} is append-only: its rows are never deleted")
        self._written[table][key] = None

    def flush(self) -> int:
        """Write every changed row; returns how many rows were written or deleted."""
        written = 0
        for name, codec in self.codecs.items():
            changes = self._written[name]
            if not changes:
                continue
            puts = [row for row in changes.values() if row is not None]
            if len(puts) < len(changes):
                deletes = codec.keys_to_db([key for key, row in changes.items() if row is None])
                if codec.postgres:
                    self.cursor.execute_native(codec.delete, deletes)
                else:
                    self.cursor.executemany(codec.delete, deletes)
            if puts:
                if codec.postgres and len(puts) >= _COPY_ROWS and codec.append_only:
                    self.cursor.copy_in(codec.copy, codec.copy_types, codec.rows_to_copy(puts))
                elif codec.postgres and len(puts) >= _COPY_ROWS:
                    self.cursor.execute(codec.create_stage)
                    self.cursor.copy_in(codec.copy, codec.copy_types, codec.rows_to_copy(puts))
                    self.cursor.execute(codec.upsert_staged)
                elif codec.postgres:
                    self.cursor.execute_native(codec.upsert, codec.rows_to_db(puts))
                else:
                    self._upsert_sqlite(codec, codec.rows_to_db(puts))
            written += len(changes)
            changes.clear()
            self._read[name].clear()
        return written

    def _upsert_sqlite(self, codec: _Codec, rows: list[tuple[Any, ...]]) -> None:
        size = codec.rows_per_insert
        whole = len(rows) - len(rows) % size
        for start in range(0, whole, size):
            self.cursor.execute(
                codec.upsert_many, list(chain.from_iterable(rows[start : start + size]))
            )
        if whole < len(rows):
            self.cursor.executemany(codec.upsert, rows[whole:])

    def decode(self, spec: Table, row: tuple[Any, ...]) -> dict[str, Any]:
        codec = self.codecs.get(spec.name) or _codec(spec, self.dialect)
        return codec.row_from_db(row)


def _upsert_sql(spec: Table, source: str) -> str:
    columns = spec.column_names()
    if spec.append_only:
        return f"INSERT INTO {spec.name} ({', '.join(columns)}) {source}"
    others = [column for column in columns if column not in spec.key]
    action = (
        "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in others)
        if others
        else "DO NOTHING"
    )
    return (
        f"INSERT INTO {spec.name} ({', '.join(columns)}) {source} "
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
        # Topic -> whether the projection handles it (only those events are decoded).
        self._wanted: dict[str, bool] = {}
        # Handlers read events decoded by orjson (infrastructure/projection_events.py) from
        # the recorder's plain log rows: the read and decode cost half of what they did.
        self.decode_event = ProjectionDecoder(app.mapper)
        select_log = getattr(app.recorder, "select_log", None)
        self._read_log: Callable[[int, int], Sequence[Entry]] = select_log or (
            lambda after, limit: app.recorder.select_notifications(after + 1, limit=limit)
        )
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
        return self._apply(self._select(position), position, decoded=False)

    def read(
        self, position: int, wanted: Callable[[str], bool] | None = None
    ) -> list[tuple[Entry, Any]]:
        """The next batch after ``position``; only events some handler wants are decoded
        (the others still advance the position: their event is None)."""
        wanted = wanted or self.projection.handles_topic
        notifications = self._select(position)
        return [(n, self._decode(n) if wanted(n.topic) else None) for n in notifications]

    def apply(self, events: list[tuple[Entry, Any]], position: int) -> int:
        """Apply a decoded batch that starts right after ``position``, in one transaction."""
        return self._apply(events, position, decoded=True)

    def _apply(self, batch: Sequence[Any], position: int, *, decoded: bool) -> int:
        """Apply a batch of notifications, decoded (``(notification, event)`` pairs) or not.

        Undecoded notifications are decoded one at a time as they are applied, so a batch's
        events never all live at once: that keeps memory flat and the garbage collector idle.
        """
        if not batch:
            return 0
        last = (batch[-1][0] if decoded else batch[-1]).id
        with self.sql.transaction() as cursor:
            self._lock_position(cursor, position)
            rows = SqlRows(cursor, self.projection.tables, self.dialect)
            process = self.projection.process
            to_domain_event = self.decode_event
            wanted = self._wanted
            for item in batch:
                if decoded:
                    notification, event = item
                    if event is None:
                        continue
                else:
                    notification = item
                    wants = wanted.get(notification.topic)
                    if wants is None:
                        wants = self._wants(notification.topic)
                    if not wants:
                        continue
                    try:
                        event = to_domain_event(notification)
                    except Exception as error:
                        raise ProjectionStoppedError(
                            _stopped(self.name, notification, type(error).__name__)
                        ) from None
                try:
                    process(event, notification.id, rows)
                except Exception as error:
                    raise ProjectionStoppedError(
                        _stopped(self.name, notification, type(error).__name__)
                    ) from error
            _flush(self.name, rows, last)
            self._save_position(cursor, last)
        self.known_position = last
        return len(batch)

    def _lock_position(self, cursor: Cursor, position: int) -> None:
        """Lock this projection's tracking row; raise if it is no longer at ``position``."""
        locked = cursor.execute(
            f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?"
            + (" FOR UPDATE" if self.sql.is_postgres else ""),
            (self.name,),
        ).fetchone()
        if locked is None or int(locked[0]) != position:
            self.known_position = None
            raise ProjectionRaceError(self.name)

    def _save_position(self, cursor: Cursor, last: int) -> None:
        cursor.execute(
            f"UPDATE {TRACKING_TABLE} SET position = ?, updated_at = ? WHERE projection = ?",
            (last, datetime.now(tz=UTC).isoformat(), self.name),
        )

    def _wants(self, topic: str) -> bool:
        """Whether the projection handles events of this topic (only those are decoded)."""
        wants = self._wanted.get(topic)
        if wants is None:
            wants = self._wanted[topic] = self.projection.handles_topic(topic)
        return wants

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

    def _select(self, position: int) -> Sequence[Entry]:
        return self._read_log(position, self.batch_size)

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
            secure_delete = None
            if not self.sql.is_postgres:
                # Some SQLite builds (Debian's) zero every freed page by default, which makes
                # dropping a big table write it all again. The dropped rows are derived from
                # the log, which stays in the same file: zero only what costs no extra I/O.
                found = cursor.execute("PRAGMA secure_delete").fetchone()
                secure_delete = int(found[0]) if found else None
                cursor.execute("PRAGMA secure_delete = FAST")
            try:
                for table in self.projection.tables:
                    cursor.execute(f"DROP TABLE IF EXISTS {table.name}")
            finally:
                if secure_delete is not None:
                    cursor.execute(f"PRAGMA secure_delete = {secure_delete}")
            cursor.execute(f"DELETE FROM {TRACKING_TABLE} WHERE projection = ?", (self.name,))
        self.known_position = None
        self.setup(indexes=indexes)

    def _decode(self, notification: Entry) -> Any:
        try:
            return self.decode_event(notification)
        except Exception as error:
            raise ProjectionStoppedError(
                _stopped(self.name, notification, type(error).__name__)
            ) from None


def rebuild_together(
    runners: list[ProjectionRunner], progress: Callable[[int], None] | None = None
) -> int:
    """Rebuild several projections reading and decoding the log once for all of them.

    Each projection keeps its own tracking position, so a rebuild interrupted part-way resumes
    like any catch-up. Runners sharing one database (as Countersign's do) apply each batch in
    ONE transaction, every projection's rows and position together, decoding each event once
    as it is applied, so a batch's events never all live at once. Returns the log events read.
    """
    for runner in runners:
        runner.reset(indexes=False)
    position = 0
    total = 0
    shared = all(runner.sql is runners[0].sql for runner in runners)

    def wanted(topic: str) -> bool:
        return any(runner.projection.handles_topic(topic) for runner in runners)

    try:
        while runners:
            if shared:
                batch = runners[0]._select(position)
                if not batch:
                    break
                _apply_together(runners, batch, position)
                read, position = len(batch), batch[-1].id
            else:
                decoded = runners[0].read(position, wanted)
                if not decoded:
                    break
                for runner in runners:
                    try:
                        runner.apply(decoded, position)
                    except ProjectionRaceError:
                        raise ProjectionStoppedError(_advanced(runner.name)) from None
                read, position = len(decoded), decoded[-1][0].id
            total += read
            if progress is not None:
                progress(read)
    finally:
        for runner in runners:  # whatever happened, readers get their indexes back
            runner.create_indexes()
    return total


def _apply_together(runners: list[ProjectionRunner], batch: Sequence[Entry], position: int) -> None:
    """Apply one batch to every runner (all on one database) in one transaction."""
    first = runners[0]
    last = batch[-1].id
    with first.sql.transaction() as cursor:
        rows = []
        for runner in runners:
            try:
                runner._lock_position(cursor, position)
            except ProjectionRaceError:
                raise ProjectionStoppedError(_advanced(runner.name)) from None
            rows.append(SqlRows(cursor, runner.projection.tables, runner.dialect))
        to_domain_event = first.decode_event
        # Topic -> the runners (by index) that handle it.
        wanting: dict[str, list[int]] = {}
        for notification in batch:
            topic = notification.topic
            indexes = wanting.get(topic)
            if indexes is None:
                indexes = wanting[topic] = [
                    i for i, runner in enumerate(runners) if runner._wants(topic)
                ]
            if not indexes:
                continue
            try:
                event = to_domain_event(notification)
            except Exception as error:
                raise ProjectionStoppedError(
                    _stopped(runners[indexes[0]].name, notification, type(error).__name__)
                ) from None
            for i in indexes:
                try:
                    runners[i].projection.process(event, notification.id, rows[i])
                except Exception as error:
                    raise ProjectionStoppedError(
                        _stopped(runners[i].name, notification, type(error).__name__)
                    ) from error
        for runner, runner_rows in zip(runners, rows, strict=True):
            _flush(runner.name, runner_rows, last)
            runner._save_position(cursor, last)
    for runner in runners:
        runner.known_position = last


def _advanced(name: str) -> str:
    return (
        f"projection {name!r} was advanced by another runner during the rebuild; "
        "stop 'countersign projections run' and rebuild again"
    )


def _flush(name: str, rows: SqlRows, last: int) -> None:
    """Write a batch's rows; a row an append-only table already holds stops the projection."""
    try:
        rows.flush()
    except (sqlite3.IntegrityError, psycopg.errors.IntegrityError) as error:
        raise ProjectionStoppedError(
            f"projection {name!r} stopped writing the batch that ends at notification {last}: "
            f"{type(error).__name__} (a row it puts once is already there). Nothing of the "
            "batch was applied; fix the cause and run the projection again."
        ) from error


def _stopped(name: str, notification: Entry, error: str) -> str:
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
