"""What a rebuild sends its writer process, and how (``writer.flat_batch``, ``writer.Sender``).

On SQLite a batch goes flat: each table's rows in one list, their times already the text
SQLite stores (``rows.flat_packed``), marshalled where marshal takes the whole message; the
writer converts the rest (``_Codec.flat_rest``). The rows stored must be those the packed
rows store, value for value; a message marshal refuses is pickled; a message cut short reads
as the writer's other end gone.
"""

from __future__ import annotations

import io
import pickle
from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum

import pytest
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.rows import SqlRows, create_statements
from countersign.infrastructure.projection_engine.writer import Sender, _read, flat_batch
from countersign.infrastructure.settings import Database
from countersign.projections.base import Column, Table


def _table(name: str) -> Table:
    return Table(
        name,
        (
            Column("k"),
            Column("at", "time"),
            Column("until", "time"),
            Column("body", "json"),
            Column("flag", "bool"),
            Column("n", "int"),
            Column("x", "real"),
        ),
        key=("k",),
    )


PACKED, FLAT = _table("wire_packed"), _table("wire_flat")

_NOW = datetime(2026, 12, 4, 22, 30, 1, 123456, tzinfo=UTC)
_SHARED = {"subject": "Ice times", "audience_count": 4, "leagues": ["Thursday Seniors"]}


class _Kind(StrEnum):
    DRAFT = "draft"


def _rows() -> list[tuple[object, ...]]:
    """Every kind of value a time, JSON or boolean column meets, objects shared between rows."""
    whole = _NOW.replace(microsecond=0)
    other_zone = _NOW.astimezone(timezone(timedelta(hours=-5)))
    return [
        ("a", _NOW, None, _SHARED, True, 1, 1.5),
        ("b", _NOW, whole, _SHARED, False, None, None),
        ("c", whole, _NOW + timedelta(days=1), [], None, 2**40, 0.1),
        ("d", None, None, None, True, 0, -0.0),
        ("e", other_zone, _NOW, {"kind": _Kind.DRAFT, "n": [1, 2]}, False, -3, 2.0),
        ("f", _NOW.replace(tzinfo=None), whole, "plain text", True, 7, None),
    ]


def _stored(sql: SqlDatabase, table: Table) -> list[tuple[object, ...]]:
    names = ", ".join(f"quote({column.name})" for column in table.columns)
    with sql.reading() as reader:
        return reader.execute(f"SELECT {names} FROM {table.name} ORDER BY k").fetchall()


def test_a_flat_batch_stores_what_its_packed_rows_store(tmp_path):
    """Every value stored from the flat batch is the one stored from the rows as packed; the
    flat batch holds texts where the rows held times (none left for the writer to format)."""
    sql = SqlDatabase(Database(kind="sqlite", sqlite_path=str(tmp_path / "wire.db")))
    try:
        with sql.transaction() as cursor:
            for table in (PACKED, FLAT):
                for statement in create_statements(table, "sqlite"):
                    cursor.execute(statement)
        rows = _rows()
        message = flat_batch("sqlite", {"p": (FLAT,)}, 0, 6, [("p", {FLAT.name: (rows, [])})])
        assert message[0] == "flat"
        ((_, sent),) = message[3]
        flat = sent[FLAT.name][0]
        assert len(flat) == len(rows) * 7
        assert not any(isinstance(value, datetime) for value in flat)
        # Through the wire as the writer reads it: a str enum in a JSON value is pickled.
        stream = io.BytesIO()
        Sender(stream).send(message, plain=True)
        stream.seek(0)
        received = _read(stream)
        with sql.transaction() as cursor:
            SqlRows.of_packed(cursor, [PACKED], "sqlite", {PACKED.name: (rows, [])}).flush()
            ((_, flat_tables),) = received[3]
            SqlRows.of_packed(cursor, [FLAT], "sqlite", flat_tables, flat=True).flush()
        assert _stored(sql, FLAT) == _stored(sql, PACKED)
        assert len(_stored(sql, FLAT)) == len(rows)
    finally:
        sql.close()


def test_postgres_batches_go_as_packed():
    """PostgreSQL takes times as datetimes (COPY, arrays): its batches are not flattened, and
    flat rows are refused there rather than read as rows."""
    packed = {PACKED.name: (_rows(), [])}
    assert flat_batch("postgres", {"p": (PACKED,)}, 0, 6, [("p", packed)]) == (
        "batch",
        0,
        6,
        [("p", packed)],
    )
    with pytest.raises(ValueError, match="only SQLite"):
        SqlRows.of_packed(None, [PACKED], "postgres", packed, flat=True)  # type: ignore[arg-type]


def test_a_message_marshal_takes_is_marshalled_and_keeps_its_shared_objects():
    shared = {"preview": ["x"]}
    stream = io.BytesIO()
    Sender(stream).send(("flat", 1, 2, [shared, shared, "text", 3, None, 1.5]), plain=True)
    assert stream.getvalue()[:1] == b"M"
    stream.seek(0)
    kind, position, last, values = _read(stream)
    assert (kind, position, last, values) == ("flat", 1, 2, [shared, shared, "text", 3, None, 1.5])
    assert values[0] is values[1]  # one object, as the writer's texts of a batch expect


@pytest.mark.parametrize(
    "odd", [_Kind.DRAFT, datetime(2026, 1, 1, tzinfo=UTC), ("a", frozenset({1}), object)]
)
def test_a_message_marshal_refuses_is_pickled(odd):
    """A str subclass, a datetime, a class: marshal refuses them (ValueError), so the
    message goes pickled, and arrives as it was sent, types and all."""
    stream = io.BytesIO()
    sender = Sender(stream)
    sender.send(("flat", 1, 2, [odd]), plain=True)
    sender.send(("ok",))  # not plain: pickled whatever it holds
    assert stream.getvalue()[:1] == b"P"
    stream.seek(0)
    received = _read(stream)
    assert received == ("flat", 1, 2, [odd])
    assert type(received[3][0]) is type(odd)
    assert _read(stream) == ("ok",)


@pytest.mark.parametrize("plain", [True, False])
def test_a_message_cut_short_reads_as_the_other_end_gone(plain):
    """The writer (or the runner) died while sending: EOFError, as for an empty stream."""
    stream = io.BytesIO()
    Sender(stream).send(("flat", 1, 2, ["x" * 100, list(range(50))]), plain=plain)
    whole = stream.getvalue()
    for cut in (1, 5, 9, len(whole) // 2, len(whole) - 1):
        with pytest.raises(EOFError):
            _read(io.BytesIO(whole[:cut]))
    with pytest.raises(EOFError):
        _read(io.BytesIO(b""))
    with pytest.raises(pickle.UnpicklingError):
        _read(io.BytesIO(b"X" + whole[1:]))
