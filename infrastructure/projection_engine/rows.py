"""Projection tables over SQL: column codecs, the batch-scoped ``Rows`` implementation, the
tracking table, and the one transaction that writes a batch with its new position.

Kept apart from the runner (and from the event store) so that a writer process imports only
this, the SQL helper and the projections' table declarations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from types import MappingProxyType, NoneType
from typing import Any

from countersign.infrastructure.persistence.sql import Cursor, integrity_errors
from countersign.infrastructure.projection_engine.key_filter import KeyFilter
from countersign.projections.base import Table

TRACKING_TABLE = "projection_tracking"
#: Each projection's ``fingerprint`` as its tables were built: a different one rebuilds them.
SCHEMA_TABLE = "projection_schemas"

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
    from psycopg.types.json import Jsonb  # only on PostgreSQL (the writer process's import)

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


#: Per table, a batch's written rows by key (None: deleted): what ``SqlRows.written`` returns.
Written = Mapping[str, Mapping[tuple[Any, ...], dict[str, Any] | None]]


class SqlRows:
    """The ``Rows`` port over SQL, caching a batch's reads and writes until ``flush``.

    ``cursor`` serves the reads. ``overlay`` holds the previous batch's writes when those may
    not be committed yet (a writer process has them): a key it holds is read from it. ``known``
    (a rebuild's) tells keys no batch has written, which are not looked for.
    """

    def __init__(
        self,
        cursor: Cursor,
        tables: Iterable[Table],
        dialect: str,
        overlay: Written | None = None,
        known: KeyFilter | None = None,
    ) -> None:
        self.cursor = cursor
        self.overlay = overlay
        self.known = known
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
        if row is _ABSENT and self.overlay is not None:
            pending = self.overlay[table].get(key, _ABSENT)
            if pending is not _ABSENT:
                # A copy: the previous batch's rows are on their way to the database.
                row = read[key] = None if pending is None else dict(pending)
        if row is _ABSENT and self.known is not None and not self.known.might_hold(table, key):
            row = read[key] = None
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

    @property
    def written(self) -> Written:
        """Per table, the rows this batch wrote (None: deleted), unchanged by ``flush``."""
        return self._written

    def prune(self, known: KeyFilter) -> None:
        """Before the batch is written: ``KeyFilter.prune`` its writes."""
        known.prune(self._written)

    @classmethod
    def of_written(
        cls, cursor: Cursor, tables: Iterable[Table], dialect: str, written: Written
    ) -> SqlRows:
        """Rows to flush that another process prepared (``written`` of its ``SqlRows``)."""
        rows = cls(cursor, tables, dialect)
        for table, changes in written.items():
            rows._written[table].update(changes)
        return rows

    def flush(self, cursor: Cursor | None = None) -> int:
        """Write every changed row through ``cursor`` (by default the reading one); returns
        how many rows were written or deleted. Once per batch: the rows stay ``written``."""
        cursor = cursor or self.cursor
        written = 0
        for name, codec in self.codecs.items():
            changes = self._written[name]
            if not changes:
                continue
            puts = [row for row in changes.values() if row is not None]
            if len(puts) < len(changes):
                deletes = codec.keys_to_db([key for key, row in changes.items() if row is None])
                if codec.postgres:
                    cursor.execute_native(codec.delete, deletes)
                else:
                    cursor.executemany(codec.delete, deletes)
            if puts:
                if codec.postgres and len(puts) >= _COPY_ROWS and codec.append_only:
                    cursor.copy_in(codec.copy, codec.copy_types, codec.rows_to_copy(puts))
                elif codec.postgres and len(puts) >= _COPY_ROWS:
                    cursor.execute(codec.create_stage)
                    cursor.copy_in(codec.copy, codec.copy_types, codec.rows_to_copy(puts))
                    cursor.execute(codec.upsert_staged)
                elif codec.postgres:
                    cursor.execute_native(codec.upsert, codec.rows_to_db(puts))
                else:
                    self._upsert_sqlite(cursor, codec, codec.rows_to_db(puts))
            written += len(changes)
        return written

    @staticmethod
    def _upsert_sqlite(cursor: Cursor, codec: _Codec, rows: list[tuple[Any, ...]]) -> None:
        size = codec.rows_per_insert
        whole = len(rows) - len(rows) % size
        for start in range(0, whole, size):
            cursor.execute(codec.upsert_many, list(chain.from_iterable(rows[start : start + size])))
        if whole < len(rows):
            cursor.executemany(codec.upsert, rows[whole:])

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


def lock_position(cursor: Cursor, name: str, position: int, *, postgres: bool) -> None:
    """Lock a projection's tracking row; ProjectionRaceError if it is not at ``position``."""
    locked = cursor.execute(
        f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?"
        + (" FOR UPDATE" if postgres else ""),
        (name,),
    ).fetchone()
    if locked is None or int(locked[0]) != position:
        raise ProjectionRaceError(name)


def save_position(cursor: Cursor, name: str, last: int) -> None:
    cursor.execute(
        f"UPDATE {TRACKING_TABLE} SET position = ?, updated_at = ? WHERE projection = ?",
        (last, datetime.now(tz=UTC).isoformat(), name),
    )


def flush(name: str, rows: SqlRows, last: int, cursor: Cursor | None = None) -> None:
    """Write a batch's rows; a row an append-only table already holds stops the projection."""
    try:
        rows.flush(cursor)
    except Exception as error:
        if not isinstance(error, integrity_errors()):
            raise
        raise ProjectionStoppedError(
            f"projection {name!r} stopped writing the batch that ends at notification {last}: "
            f"{type(error).__name__} (a row it puts once is already there). Nothing of the "
            "batch was applied; fix the cause and run the projection again."
        ) from error


def commit_batch(
    cursor: Cursor,
    batches: Sequence[tuple[str, SqlRows]],
    position: int,
    last: int,
    *,
    postgres: bool,
) -> None:
    """Inside one transaction: for each projection, check it still stands at ``position``,
    write its rows and move it to ``last``."""
    for name, rows in batches:
        lock_position(cursor, name, position, postgres=postgres)
        flush(name, rows, last, cursor)
        save_position(cursor, name, last)
