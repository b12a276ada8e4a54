"""The projection codecs' conversions of values for the database, unit by unit: each fast
path must give exactly the text the plain conversion gives (stored rows never change)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, timezone
from typing import Any

import pytest
from countersign.infrastructure.projection_engine import codecs
from countersign.projections.base import Column, Table


class _Moment(datetime):
    """A datetime subclass: not the exact type the fast path takes."""


_TIMES = [
    datetime(2026, 12, 3, 9, 10, 11, 123456, tzinfo=UTC),
    datetime(2026, 12, 3, 9, 10, 11, tzinfo=UTC),  # no microseconds: none written
    datetime(2026, 12, 3, 9, 10, 11, 120000, tzinfo=UTC),  # trailing zeros kept
    datetime(2026, 12, 3, 9, 10, 11, 1, tzinfo=UTC),
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(5, 1, 2, 3, 4, 5, 6, tzinfo=UTC),  # a year of one digit
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 29, 1, 30, tzinfo=UTC, fold=1),
    None,
]


def _reference(values: list[Any]) -> list[Any]:
    return [None if v is None else v.astimezone(UTC).isoformat() for v in values]


def test_utc_times_are_written_as_isoformat_writes_them():
    assert codecs._times_to_text(_TIMES) == _reference(_TIMES)
    assert codecs._times_to_text(tuple(_TIMES)) == _reference(_TIMES)
    assert codecs._times_to_text([]) == []
    assert codecs._times_to_text([None, None]) == [None, None]


@pytest.mark.parametrize(
    "odd",
    [
        datetime(2026, 12, 3, 9, 10, 11, 5, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 12, 3, 9, 10, 11, tzinfo=timezone(timedelta(0))),  # UTC, not the object
        datetime(2026, 12, 3, 9, 10, 11, tzinfo=timezone(timedelta(seconds=30))),
        _Moment(2026, 12, 3, 9, 10, 11, 7, tzinfo=UTC),
    ],
)
def test_a_column_with_any_other_time_is_written_value_by_value(odd):
    values = [*_TIMES, odd]
    assert codecs._times_to_text(values) == _reference(values)


class _Zoned:
    """Not a datetime, but with a ``tzinfo`` of UTC: orjson does not know it."""

    tzinfo = UTC

    def isoformat(self) -> str:
        return "zoned"


class _FalsyTime(datetime):
    """A datetime subclass that is falsy: not counted by the check's ``filter(None, ...)``."""

    def __bool__(self) -> bool:
        return False


def _value_by_value(values: list[Any]) -> list[Any]:
    return [None if v is None else codecs._time_text(v) for v in values]


@pytest.mark.parametrize(
    "odd",
    [
        _Zoned(),  # a tzinfo of UTC, a type orjson refuses
        time(9, 10, 11, tzinfo=UTC),  # a tzinfo of UTC, refused by orjson with its zone
        _FalsyTime(2026, 12, 3, 9, 10, 11, tzinfo=UTC),  # not counted: falsy
    ],
)
def test_values_with_a_utc_zone_that_are_not_exact_datetimes_go_value_by_value(odd):
    """The check counts zones, not types: what else has a ``tzinfo`` of UTC, or escapes the
    count, is written as value by value writes it, not by orjson."""
    values = [*_TIMES, odd]
    assert codecs._times_to_text(values) == _value_by_value(values)
    assert codecs._times_to_text([odd]) == _value_by_value([odd])


@pytest.mark.parametrize("odd", [0, "", "2026-12-03T09:10:11+00:00", 1.5])
def test_a_time_column_holding_something_else_is_refused_as_value_by_value_refuses(odd):
    """A falsy value is not counted as a None, a text is not taken for a time: each raises
    as ``isoformat`` value by value does (no ``tzinfo``), not written."""
    with pytest.raises(AttributeError):
        codecs._times_to_text([*_TIMES, odd])
    with pytest.raises(AttributeError):
        codecs._times_to_text([odd, None])


def test_a_utc_column_is_written_without_isoformat(monkeypatch):
    """The whole column in C (orjson), not one ``isoformat`` a time (``_time_text``)."""

    def refuse(value: Any) -> str:
        raise AssertionError("isoformat called for a UTC column")

    monkeypatch.setattr(codecs, "_time_text", refuse)
    table = Table("timed", (Column("k"), Column("t", "time"), Column("j", "json")), key=("k",))
    codec = codecs._Codec(table, "sqlite")
    at = _TIMES[0]
    rows = [("a", at, {"b": 1, "a": [2]}), ("b", at, []), ("c", None, None)]
    assert codec.rows_to_db(rows, {}) == [
        ("a", at.isoformat(), '{"a":[2],"b":1}'),
        ("b", at.isoformat(), "[]"),
        ("c", None, None),
    ]
    with pytest.raises(AssertionError):
        codecs._times_to_text([at.astimezone(timezone(timedelta(hours=1)))])


_MIXED = Table(
    "mixed",
    (
        Column("k"),
        Column("n", "int"),
        Column("t", "time"),
        Column("j", "json"),
        Column("b", "bool"),
        Column("r", "real"),
        Column("s"),
    ),
    key=("k",),
)


def _mixed_rows(count: int) -> list[tuple[Any, ...]]:
    at = datetime(2026, 12, 3, 9, 10, 11, 5, tzinfo=UTC)
    shared = {"z": "é", "a": [1, None, 2.5]}
    return [
        (
            f"k{i}",
            None if i % 7 == 0 else i * 2**33,
            None if i % 5 == 0 else at + timedelta(seconds=i),
            shared if i % 3 else ([] if i % 2 else None),
            None if i % 11 == 0 else bool(i % 2),
            None if i % 13 == 0 else i / 3,
            "naïve ✓ " + "x" * (i % 4) if i % 17 else None,
        )
        for i in range(count)
    ]


def test_flat_params_are_the_converted_rows_one_after_another():
    codec = codecs._Codec(_MIXED, "sqlite")
    rows = _mixed_rows(23)
    flat = codec.flat_params(rows, {})
    assert flat == [value for row in codec.rows_to_db(rows, {}) for value in row]
    assert codec.flat_params([], {}) == []


@pytest.mark.parametrize("count", [1, 49, 2 * 142 + 5])
def test_sqlite_rows_store_what_one_insert_a_row_stores(tmp_path, count):
    """``SqlRows`` on SQLite (flat parameters, whole multi-row statements then the rest row by
    row) against one upsert a row of ``rows_to_db``'s values: the same stored values, byte for
    byte, and the deletes first."""
    from countersign.infrastructure.persistence.sql import SqlDatabase
    from countersign.infrastructure.projection_engine.rows import SqlRows, create_statements
    from countersign.infrastructure.settings import Database

    rows = _mixed_rows(count)
    deleted = [("gone1",), ("k0",)]
    codec = codecs._Codec(_MIXED, "sqlite")
    stored = []
    for way in ("batch", "row by row"):
        sql = SqlDatabase(Database.parse(f"sqlite:///{tmp_path / way.replace(' ', '_')}.db"))
        try:
            with sql.transaction() as cursor:
                for statement in create_statements(_MIXED, "sqlite"):
                    cursor.execute(statement)
                if way == "batch":
                    packed = {"mixed": (rows, deleted)}
                    assert (
                        SqlRows.of_packed(cursor, [_MIXED], "sqlite", packed).flush() == count + 2
                    )
                else:
                    for key in deleted:
                        cursor.execute(codec.delete, key)
                    for params in codec.rows_to_db(rows, {}):
                        cursor.execute(codec.upsert, params)
                quoted = ", ".join(f"quote({c.name})" for c in _MIXED.columns)
                stored.append(cursor.execute(f"SELECT {quoted} FROM mixed ORDER BY k").fetchall())
        finally:
            sql.close()
    assert stored[0] == stored[1]
    assert len(stored[0]) == count  # deletes go first: "k0" is put again after


def test_copy_sends_json_as_the_jsonb_dumper_would():
    """COPY's JSON values (``_jsons_to_jsonb_copy``, sent through bytea's dumper) are the very
    bytes psycopg's jsonb dumper made of ``Jsonb(v, _json_bytes)``."""
    from psycopg.types.json import Jsonb, JsonbBinaryDumper

    dumper = JsonbBinaryDumper(Jsonb)
    values = [{"z": "é", "a": [1, None, 2.5, {"y": True}]}, [], "ok", 3, None, {"k": "✓\n"}]
    expected = [
        None if v is None else bytes(dumper.dump(Jsonb(v, codecs._json_bytes))) for v in values
    ]
    assert codecs._jsons_to_jsonb_copy(values) == expected


@pytest.mark.parametrize("append_only", [False, True])
def test_copy_stores_the_rows_the_insert_of_arrays_stores(postgres_url, append_only):
    """PostgreSQL: a table's rows written by COPY (``_COPY_ROWS`` or more in a batch) and
    by the arrays' INSERT (fewer) are stored alike: JSON, NULLs, unicode, times."""
    from countersign.infrastructure.persistence.sql import SqlDatabase
    from countersign.infrastructure.projection_engine.rows import SqlRows, create_statements
    from countersign.infrastructure.settings import Database

    rows = _mixed_rows(codecs._COPY_ROWS + 21)
    stored = []
    other = SqlDatabase(Database.parse(postgres_url))
    try:
        for name, chunk in (("copied", len(rows)), ("inserted", codecs._COPY_ROWS - 1)):
            table = Table(name, _MIXED.columns, key=("k",), append_only=append_only)
            with other.transaction() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {name}")
                for statement in create_statements(table, "postgres"):
                    cursor.execute(statement)
                for start in range(0, len(rows), chunk):
                    packed = {name: (rows[start : start + chunk], [])}
                    SqlRows.of_packed(cursor, [table], "postgres", packed).flush()
                columns = ", ".join(f"{c.name}::text" for c in _MIXED.columns)
                stored.append(cursor.execute(f"SELECT {columns} FROM {name} ORDER BY k").fetchall())
                cursor.execute(f"DROP TABLE {name}")
    finally:
        other.close()
    assert stored[0] == stored[1]
    assert len(stored[0]) == len(rows)
    assert any(row[3] is not None and "é" in row[3] for row in stored[0])


def test_the_writer_process_configures_sqlite_before_loading_it():
    """``writer_main.configure_sqlite`` in a fresh interpreter, as the writer process runs it:
    SQLite takes its settings (on Linux) and then works as ever; once ``sqlite3`` is loaded
    (as in this process) it is left alone."""
    import subprocess
    import sys

    from countersign.infrastructure.projection_engine import writer, writer_main

    assert writer_main.__name__ == writer._ENTRY
    assert writer_main.configure_sqlite() is False  # this process loaded sqlite3 already
    probe = (
        "import sys\n"
        "from countersign.infrastructure.projection_engine.writer_main import configure_sqlite\n"
        "configured = configure_sqlite()\n"
        "import sqlite3\n"
        "db = sqlite3.connect(':memory:')\n"
        "db.execute('CREATE TABLE t (k TEXT PRIMARY KEY, v)')\n"
        "db.executemany('INSERT INTO t VALUES (?, ?)', [(str(i), None) for i in range(500)])\n"
        "assert db.execute('SELECT count(*) FROM t').fetchone() == (500,)\n"
        "print(configured)\n"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == str(sys.platform.startswith("linux"))
