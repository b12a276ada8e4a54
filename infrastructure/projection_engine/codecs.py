"""Projection table codecs: per table and database, the statements that write and read its
rows and the conversions of their values, computed once (``codec``).

Apart from ``rows`` (the batch-scoped ``Rows`` over SQL) to keep each module to one job; a
writer process imports both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from operator import attrgetter, countOf, itemgetter
from types import NoneType
from typing import Any

import orjson
from countersign.projections.base import Table

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


def _time_to_utc(value: datetime) -> datetime:
    return value if value.tzinfo is UTC else value.astimezone(UTC)


_json_encode = json.JSONEncoder(sort_keys=True).encode  # json.dumps(value, sort_keys=True)
#: orjson writes what the standard library would (sorted keys), compactly and in C; a value it
#: would write otherwise is passed through to raise, and goes to the standard library instead:
#: a subclass (a str enum, say), a date or a dataclass. What orjson refuses (a key that is
#: not a string, an integer past 64 bits) goes there too.
_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_orjson_dumps = orjson.dumps
_orjson_loads = orjson.loads


def _json_bytes(value: Any) -> bytes:
    """The UTF-8 JSON text of a value, keys sorted: orjson's, the standard library's where
    orjson refuses the value (``orjson.JSONEncodeError`` is a TypeError)."""
    try:
        return _orjson_dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:
        return _json_encode(value).encode()


# Converters take a whole column of a batch (None stays None): one list comprehension per
# column and batch, not a function call per value.
_tzinfo = attrgetter("tzinfo")
_count_of = countOf
#: orjson refusing (TypeError) what it would otherwise write of a subclass or a dataclass.
_EXACT_TYPES = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


def _times_to_text(values: Sequence[Any]) -> list[Any]:
    """SQLite: times as the text of ``astimezone(UTC).isoformat()`` (None stays None).

    A column whose values are all exact datetimes in UTC (or None), as a rebuild's are, is
    written by orjson as one JSON array and read back as one list of texts: both loops in C.
    orjson writes a UTC datetime exactly as ``isoformat`` does (``+00:00``, the microseconds
    only when there are any; ``tests/test_projection_codecs.py`` checks them side by side),
    and ``isoformat`` was about 11,600 instructions a time (its ``PyUnicode_FromFormat`` and
    the offset's ``sprintf``), some 16% of the writer process's. Any other column (a naive
    time, another zone, a subclass) goes value by value through ``isoformat`` as before.

    Which columns those are, in one pass in C: every value but the Nones has a ``tzinfo``
    equal to UTC (``countOf``; a falsy value is not counted, one without ``tzinfo`` raises,
    and ``timezone(timedelta(0))``, equal to UTC, is written alike, as the sets of zones
    before took it), and orjson takes the column: of the objects with a ``tzinfo``, it
    writes exact datetimes and refuses (TypeError) a subclass, a ``time`` with a zone and
    any type it does not know; anything that raises goes value by value. It was two passes
    of ``set(map(...))``, the types and then the zones: a rebuild of all seven 142,626 ->
    142,083 instructions an event (callgrind, ``scripts/rebuild_instructions.py --store``).
    """
    try:
        nones = values.count(None)
        utc = _count_of(map(_tzinfo, filter(None, values) if nones else values), UTC)
        if utc + nones == len(values):
            texts: list[Any] = _orjson_loads(_orjson_dumps(values, option=_EXACT_TYPES))
            return texts
    except Exception:  # noqa: S110 - no ``tzinfo``, or not orjson's: value by value decides
        pass
    return [v if v is None else _time_text(v) for v in values]


def _times_to_utc(values: Sequence[Any]) -> list[Any]:
    return [v if v is None or v.tzinfo is UTC else v.astimezone(UTC) for v in values]


def _jsons_to_text(values: Sequence[Any]) -> list[Any]:
    return [v if v is None else _json_bytes(v).decode() for v in values]


def _time_text(value: datetime) -> str:
    return (value if value.tzinfo is UTC else value.astimezone(UTC)).isoformat()


def _json_text(value: Any) -> str:
    # An empty list (a card's approvals, an outbox row's approvers) is most of a batch's
    # JSON values after its previews and outcomes; its text needs no encoder.
    return "[]" if type(value) is list and not value else _json_bytes(value).decode()


def _texts(values: Sequence[Any], made: dict[int, tuple[Any, str]], text: Any) -> list[Any]:
    """``text(v)`` for each value (None stays None), made once per value object of a batch.

    A batch holds the same object in several rows and tables: a preview is the card's and the
    hand-back's, and a writer process receives each once (pickle keeps shared objects
    shared). ``made`` is one batch's, by the object's identity, and holds the object, so its
    ``id`` cannot pass to another while it is there; the batch's values are not changed while
    it is written. Used for JSON values; times were too until ``_times_to_text`` wrote a
    whole column in C for less than the lookups cost (as were a third of the times)."""
    out: list[Any] = []
    append = out.append
    known = made.get
    for value in values:
        if value is None:
            append(None)
            continue
        found = known(id(value))
        if found is None:
            found = made[id(value)] = (value, text(value))
        append(found[1])
    return out


def _jsons_to_jsonb(values: Sequence[Any]) -> list[Any]:
    """PostgreSQL: JSON values as jsonb, their text written by orjson (``_json_bytes``), not
    psycopg's default ``json.dumps``."""
    from psycopg.types.json import Jsonb  # only on PostgreSQL (the writer process's import)

    return [v if v is None else Jsonb(v, _json_bytes) for v in values]


#: jsonb's binary format: its version (1), then the JSON text.
_JSONB_VERSION = b"\x01"


def _jsons_to_jsonb_copy(values: Sequence[Any]) -> list[Any]:
    """PostgreSQL COPY (binary): each JSON value as the bytes psycopg's jsonb dumper makes of
    ``Jsonb(v, _json_bytes)`` (jsonb's version byte and orjson's text), made here in one list
    comprehension and sent as they are (``_Codec.copy_types`` names ``bytea`` for these
    columns: its dumper, in C, writes the bytes unchanged, and the server reads the field as
    the column's jsonb). The dumper was a Python call a value and a ``Jsonb`` object."""
    return [v if v is None else _JSONB_VERSION + _json_bytes(v) for v in values]


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
#: SQLite's converters whose texts ``_texts`` makes once per object of a batch.
_SQLITE_TEXTS: dict[Converter, Callable[[Any], str]] = {_jsons_to_text: _json_text}
#: PostgreSQL COPY dumps each value as its column's type; JSON goes as jsonb written by orjson
#: (its binary form, made here).
_COPY_TO_DB: dict[str, Converter] = {
    "time": _times_to_utc,
    "bool": _bools_to_bool,
    "json": _jsons_to_jsonb_copy,
}
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
#: COPY sends JSON values already in jsonb's binary form (``_jsons_to_jsonb_copy``).
_COPY_TYPES = {"json": "bytea"}
#: PostgreSQL is sent a column's values as one Python type: a column holding others (an int
#: in a "real" column, say) is coerced first.
_PG_COERCE: dict[str, type] = {"text": str, "int": int, "real": float}
#: From this many rows of one table in one batch, PostgreSQL writes them with COPY into a
#: temporary table and one upsert from it; fewer go as arrays in one statement (one round
#: trip). COPY builds its rows in C, which pays for its extra round trips on bulk batches.
_COPY_ROWS = 100
#: SQLite: keys a statement deletes at once (``_Codec.delete_many``).
_DELETES_PER_STATEMENT = 100


def _getter(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """``row -> tuple of row[name] for name in names``, at C speed (a 1-tuple for one name)."""
    if len(names) == 1:
        (name,) = names
        return lambda row: (row[name],)
    return itemgetter(*names)


def _positions_getter(positions: list[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """``values -> tuple of values[i] for i in positions``, at C speed: a slice when the
    positions are the first ones (every built-in table's key), else ``itemgetter``."""
    if positions == list(range(len(positions))):
        return itemgetter(slice(0, len(positions)))
    if len(positions) == 1:
        (position,) = positions
        return lambda values: (values[position],)
    return itemgetter(*positions)


class _Codec:
    """Per-table, per-dialect statements and value converters, computed once."""

    def __init__(self, spec: Table, dialect: str) -> None:
        to_db, from_db = _TO_DB[dialect], _FROM_DB[dialect]
        self.postgres = dialect == "postgres"
        self.append_only = spec.append_only
        self.names = tuple(spec.column_names())
        self.columns = frozenset(self.names)
        self.width = len(self.names)
        #: The columns ``update`` may change: none of an append-only table.
        self.updatable = frozenset() if spec.append_only else self.columns
        self.key = spec.key
        types = {column.name: column.type for column in spec.columns}
        self.types = [types[name] for name in self.names]
        self.key_types = [types[name] for name in spec.key]
        self.values = _getter(self.names)
        self.key_of = _getter(spec.key)
        #: A row given as its values in column order (``SqlRows.put_values``) -> its key. A
        #: key that is the first columns, as every built-in table's is, is one slice in C.
        self.key_of_values = _positions_getter([self.names.index(name) for name in spec.key])
        # Only the columns whose values need converting, by position.
        self.to_db = [(i, to_db[t]) for i, t in enumerate(self.types) if t in to_db]
        self.key_to_db = [(i, to_db[t]) for i, t in enumerate(self.key_types) if t in to_db]
        #: SQLite: the time columns (``flat_values``) and the others to convert (``flat_rest``).
        self.time_columns = [i for i, t in enumerate(self.types) if t == "time"]
        self.to_db_rest = [(i, convert) for i, convert in self.to_db if self.types[i] != "time"]
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
            self.copy_types = [_COPY_TYPES.get(t) or _PG_TYPES[t] for t in self.types]
            stage = f"countersign_stage_{spec.name}"
            self.create_stage = (
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} ("
                + ", ".join(f"{c.name} {_SQL_TYPES[dialect][c.type]}" for c in spec.columns)
                + ") ON COMMIT DELETE ROWS"
            )
            self.copy = f"COPY pg_temp.{stage} ({columns}) FROM STDIN (FORMAT BINARY)"
            self.upsert_staged = _upsert_sql(spec, f"SELECT {columns} FROM pg_temp.{stage}")
            #: Rows known to be new (``rows.WrittenKeys``): straight into the table.
            self.copy_into_table = f"COPY {spec.name} ({columns}) FROM STDIN (FORMAT BINARY)"
            if spec.append_only:  # nothing to merge: straight into the table
                self.copy = self.copy_into_table
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
            # OR FAIL, not the default ABORT: a statement that writes many rows and may abort
            # part-way makes SQLite keep a statement journal (the page as it was, for each page
            # the statement changes first), in a temporary file once past 64 KB: a rebuild's
            # writer process made 188,740 of its 502,483 write calls there (strace, 100,051
            # events of every projection; 313,743 without the journal). With FAIL a refused
            # row leaves the statement's earlier rows in place; every caller writes in a
            # transaction that a refused row rolls back whole (``flush`` raises through it),
            # so nothing of the batch is kept either way.
            self.upsert_many = _upsert_sql(
                spec, "VALUES " + ", ".join([row] * self.rows_per_insert), verb="INSERT OR FAIL"
            )
            self.delete = f"DELETE FROM {spec.name} WHERE " + " AND ".join(
                f"{column} = ?" for column in spec.key
            )
            #: A table keyed by one column deletes many keys in one statement: as with the
            #: inserts, SQLite runs each row of executemany as a statement of its own.
            self.delete_many = (
                f"DELETE FROM {spec.name} WHERE {spec.key[0]} IN ("
                + ", ".join("?" * _DELETES_PER_STATEMENT)
                + ")"
                if len(spec.key) == 1
                else None
            )

    def key_params(self, key: tuple[Any, ...]) -> list[Any]:
        params = list(key)
        for i, convert in self.key_to_db:
            params[i] = convert([params[i]])[0]
        return params

    def rows_to_db(
        self, values: list[tuple[Any, ...]], made: dict[int, tuple[Any, str]] | None = None
    ) -> list[Any]:
        """Rows' values (in column order) as sent: PostgreSQL: one array per column; SQLite:
        one tuple per row, its times and JSON values as text, each made once per object
        into ``made`` (one batch's, see ``_texts``) if given."""
        if self.postgres:
            return self._columns(values, self.to_db, self.types)
        if not self.to_db:
            return values
        columns: list[Any] = list(zip(*values, strict=True))
        if made is None:
            for i, convert in self.to_db:
                columns[i] = convert(columns[i])
        else:
            for i, convert in self.to_db:
                text = _SQLITE_TEXTS.get(convert)
                columns[i] = convert(columns[i]) if text is None else _texts(columns[i], made, text)
        return list(zip(*columns, strict=True))

    def flat_params(
        self, values: list[tuple[Any, ...]], made: dict[int, tuple[Any, str]]
    ) -> list[Any]:
        """SQLite: rows' values (in column order) as sent, one flat list of every row's
        parameters in turn, as ``rows_to_db`` converts them (``made``: see ``_texts``).

        For SQLite's multi-row INSERTs (``SqlRows._upsert_sqlite``): a column is
        converted in place through a slice of the flat list (``flat[i::n]``), where
        ``rows_to_db`` turned the rows into columns and back, a tuple allocated per row each
        way, and the statements then chained each slice of rows into a list again. In two
        steps, which a rebuild takes in its two processes (``writer.flat_batch``): the rows
        flattened with their times as text (``flat_values``), then the rest (``flat_rest``)."""
        return self.flat_rest(self.flat_values(values), made)

    def flat_values(self, values: list[tuple[Any, ...]]) -> list[Any]:
        """SQLite: rows' values (in column order) as one flat list, their times as text
        (``_times_to_text``); the other conversions are ``flat_rest``'s."""
        # Each row's values appended by ``list.extend`` from a tuple (a copy in C), one
        # Python step a row: about half the instructions of ``list(chain.from_iterable())``,
        # which steps an iterator a value (callgrind: 39 against 80 instructions a value).
        flat: list[Any] = []
        extend = flat.extend
        for row in values:
            extend(row)
        step = self.width
        for i in self.time_columns:
            flat[i::step] = _times_to_text(flat[i::step])
        return flat

    def flat_rest(self, flat: list[Any], made: dict[int, tuple[Any, str]]) -> list[Any]:
        """SQLite: ``flat_values``' list with its other columns converted (JSON as text, each
        made once per object into ``made``, and booleans as integers), in place."""
        step = self.width
        for i, convert in self.to_db_rest:
            text = _SQLITE_TEXTS.get(convert)
            column = flat[i::step]
            flat[i::step] = convert(column) if text is None else _texts(column, made, text)
        return flat

    def rows_to_copy(self, values: list[tuple[Any, ...]]) -> Iterable[tuple[Any, ...]]:
        """PostgreSQL: rows' values (in column order) for COPY, one tuple per row."""
        columns = self._columns(values, self.copy_to_db, self.types)
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


@lru_cache(maxsize=256)
def _codec(spec: Table, dialect: str) -> _Codec:
    return _Codec(spec, dialect)


def _unnest(array_types: list[str]) -> str:
    # %b: arrays travel in PostgreSQL's binary format, far cheaper to build than text.
    return f"unnest({', '.join(f'%b::{t}[]' for t in array_types)})"


def _upsert_sql(spec: Table, source: str, verb: str = "INSERT") -> str:
    columns = spec.column_names()
    if spec.append_only:
        return f"{verb} INTO {spec.name} ({', '.join(columns)}) {source}"
    others = [column for column in columns if column not in spec.key]
    action = (
        "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in others)
        if others
        else "DO NOTHING"
    )
    return (
        f"{verb} INTO {spec.name} ({', '.join(columns)}) {source} "
        f"ON CONFLICT ({', '.join(spec.key)}) {action}"
    )
