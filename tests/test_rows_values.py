"""Rows put as their values in column order (``Rows.put_values``, issue 27): stored exactly as
the same rows put as dicts, checked as strictly (width, key, append-only), read back and
updated as dicts, carried to the next batch (a writer process's overlay), and given to a
``Rows`` without the method as dicts (``values_putter``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.rows import SqlRows, create_statements
from countersign.projections.base import Column, Table, values_putter

_VALUES = Table(
    "values_rows",
    (
        Column("k"),
        Column("n", "int"),
        Column("t", "time"),
        Column("j", "json"),
        Column("r", "real"),
        Column("b", "bool"),
        Column("note"),
    ),
    key=("k", "n"),
)
#: The same columns as a dict-put table, to compare what each stores.
_DICTS = Table("dict_rows", _VALUES.columns, key=_VALUES.key)
#: A key that is not the first columns (every built-in table's is): found by position.
_LATE_KEY = Table(
    "late_key_rows",
    (Column("note"), Column("n", "int"), Column("k")),
    key=("k", "n"),
)
_LOG = Table("values_log", (Column("n", "int"), Column("text")), key=("n",), append_only=True)


def _row(i: int) -> dict[str, Any]:
    offset = timezone(timedelta(hours=-5)) if i % 3 else UTC  # stored as the same instant
    return {
        "k": f"k{i % 7}",
        "n": i,
        "t": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).astimezone(offset) if i % 5 else None,
        "j": {"i": i, "list": [i, "é"]} if i % 4 else None,
        "r": i if i % 2 else i + 0.5,
        "b": None if i % 11 == 0 else bool(i % 2),
        "note": None if i % 6 == 0 else f"note {i}",
    }


def _values(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[name] for name in _VALUES.column_names())


def _dialect(cs: Any) -> str:
    return "postgres" if cs.sql.is_postgres else "sqlite"


def _stored(cursor: Any, table: str) -> list[tuple[Any, ...]]:
    names = ", ".join(_VALUES.column_names())
    return sorted(
        (tuple(row) for row in cursor.execute(f"SELECT {names} FROM {table}").fetchall()),
        key=repr,
    )


@pytest.fixture
def database(cs: Any) -> Any:
    other = SqlDatabase(cs.database)
    with other.transaction() as cursor:
        for table in (_VALUES, _DICTS, _LATE_KEY, _LOG):
            for statement in create_statements(table, _dialect(cs)):
                cursor.execute(statement)
    yield other
    other.close()


@pytest.mark.parametrize("count", [3, 230])  # one statement; many (COPY on PostgreSQL)
def test_rows_put_as_values_are_stored_as_the_same_rows_put_as_dicts(cs, database, count):
    with database.transaction() as cursor:
        rows = SqlRows(cursor, [_VALUES, _DICTS], _dialect(cs))
        for i in range(count):
            rows.put_values("values_rows", _values(_row(i)))
            rows.put("dict_rows", _row(i))
        assert rows.flush() == 2 * count
    with database.transaction() as cursor:
        assert _stored(cursor, "values_rows") == _stored(cursor, "dict_rows")
        assert len(_stored(cursor, "values_rows")) == count


def test_a_row_put_as_values_reads_back_and_updates_as_a_dict(cs, database):
    with database.transaction() as cursor:
        rows = SqlRows(cursor, [_VALUES], _dialect(cs))
        rows.put_values("values_rows", _values(_row(1)))
        rows.put_values("values_rows", _values(_row(2)))
        found = rows.get("values_rows", ("k1", 1))
        assert found is not None
        assert dict(found) == _row(1)
        with pytest.raises(TypeError):
            found["note"] = "read-only"  # type: ignore[index]
        changed = rows.update("values_rows", ("k2", 2), note="changed", r=7.5)
        assert changed is not None
        assert dict(changed) == {**_row(2), "note": "changed", "r": 7.5}
        rows.put_values("values_rows", _values({**_row(1), "note": "put again"}))  # replaced
        rows.flush()
    with database.transaction() as cursor:
        rows = SqlRows(cursor, [_VALUES], _dialect(cs))
        assert dict(rows.get("values_rows", ("k1", 1)) or {}) == {**_row(1), "note": "put again"}
        assert dict(rows.get("values_rows", ("k2", 2)) or {})["note"] == "changed"


def test_the_next_batch_reads_a_row_put_as_values_from_the_one_before(cs, database):
    """A rebuild with a writer process prepares a batch over the previous batch's writes
    (``overlay``), which may not be committed yet: a row put as values reads as a dict, a
    copy, and the earlier batch's tuple is left as it was sent."""
    with database.transaction() as cursor:
        first = SqlRows(cursor, [_VALUES], _dialect(cs))
        first.put_values("values_rows", _values(_row(4)))
        first.pack()
        second = SqlRows(cursor, [_VALUES], _dialect(cs), overlay=first.written)
        assert dict(second.get("values_rows", ("k4", 4)) or {}) == _row(4)
        second.update("values_rows", ("k4", 4), note="second batch")
        assert first.written["values_rows"][("k4", 4)] == _values(_row(4))
        assert first.packed()["values_rows"][0] == [_values(_row(4))]
        assert second.packed()["values_rows"][0] == [_values({**_row(4), "note": "second batch"})]


def test_a_key_found_by_position_when_it_is_not_the_first_columns(cs, database):
    with database.transaction() as cursor:
        rows = SqlRows(cursor, [_LATE_KEY], _dialect(cs))
        rows.put_values("late_key_rows", ("first", 1, "a"))
        rows.put_values("late_key_rows", ("second", 1, "a"))  # the same key: replaced
        rows.put_values("late_key_rows", ("third", 2, "a"))
        assert dict(rows.get("late_key_rows", ("a", 1)) or {}) == {
            "note": "second",
            "n": 1,
            "k": "a",
        }
        assert rows.flush() == 2


def test_values_are_refused_as_strictly_as_dicts(cs, database):
    with database.transaction() as cursor:
        rows = SqlRows(cursor, [_VALUES, _LOG], _dialect(cs))
        for wrong in [_values(_row(1))[:-1], (*_values(_row(1)), "extra"), ()]:
            with pytest.raises(ValueError, match=r"tuple of 7 values, in the order"):
                rows.put_values("values_rows", wrong)
        with pytest.raises(ValueError, match="it was given a list"):
            rows.put_values("values_rows", list(_values(_row(1))))  # type: ignore[arg-type]
        with pytest.raises(KeyError):
            rows.put_values("no_such_table", _values(_row(1)))
        rows.put_values("values_log", (1, "one"))
        with pytest.raises(ValueError, match="append-only"):
            rows.put_values("values_log", (1, "again"))
        with pytest.raises(ValueError, match="append-only"):
            rows.put("values_log", {"n": 1, "text": "again, as a dict"})
        with pytest.raises(ValueError, match="append-only"):
            rows.update("values_log", (1,), text="changed")
        assert rows.packed() == {"values_log": ([(1, "one")], [])}  # nothing refused was kept


def test_a_rows_without_put_values_is_given_dicts() -> None:
    """``values_putter``: a ``Rows`` written before ``put_values`` (a plug-in's test double,
    say) receives each row as a dict of the table's columns by ``put``."""

    class OldRows:
        def __init__(self) -> None:
            self.put_rows: list[tuple[str, dict[str, Any]]] = []

        def put(self, table: str, row: dict[str, Any]) -> None:
            self.put_rows.append((table, row))

    old = OldRows()
    values_putter(old, [_VALUES, _LOG])("values_log", (1, "one"))  # type: ignore[arg-type]
    assert old.put_rows == [("values_log", {"n": 1, "text": "one"})]

    class NewRows(OldRows):
        def put_values(self, table: str, values: tuple[Any, ...]) -> None:
            raise AssertionError("the method itself is given")

    new = NewRows()
    assert values_putter(new, [_LOG]) == new.put_values  # type: ignore[arg-type]
