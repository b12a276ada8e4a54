"""PostgreSQL: a rebuild's writer process COPYs the rows of keys it never wrote straight into
their tables (``rows.WrittenKeys``), the others through the staging table and the upsert: the
rows stored are the same either way, and a "new" row a table already holds (tables that were
not empty after all) costs a second try of its batch, never the batch."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from countersign.infrastructure.projection_engine import codecs
from countersign.infrastructure.projection_engine.rows import (
    TRACKING_TABLE,
    SqlRows,
    WrittenKeys,
    create_statements,
)
from countersign.projections.base import Column, Table

_TABLE = Table(
    "writer_keys_rows",
    (
        Column("k"),
        Column("n", "int"),
        Column("t", "time"),
        Column("j", "json"),
        Column("b", "bool"),
        Column("s"),
    ),
    key=("k",),
)


def _rows(keys: range, version: int) -> list[tuple[Any, ...]]:
    at = datetime(2026, 12, 3, 9, 10, 11, 5, tzinfo=UTC)
    return [
        (
            f"k{i}",
            None if i % 7 == 0 else i * 2**33 + version,
            None if i % 5 == 0 else at + timedelta(seconds=i + version),
            {"v": version, "z": "é"} if i % 3 else None,
            None if i % 11 == 0 else bool((i + version) % 2),
            f"naïve ✓ {version}" if i % 13 else None,
        )
        for i in keys
    ]


def test_written_keys_tell_the_rows_of_keys_never_put_from_the_others():
    known = WrittenKeys()
    first = _rows(range(0, 150), 0)
    fresh, others = known.split("t", codecs._codec(_TABLE, "postgres").key_of_values, first)
    assert (fresh, others) == (first, [])
    second = _rows(range(100, 300), 1)
    fresh, others = known.split("t", codecs._codec(_TABLE, "postgres").key_of_values, second)
    assert others == second[:50]
    assert fresh == second[50:]
    fresh, others = known.split("u", codecs._codec(_TABLE, "postgres").key_of_values, first)
    assert fresh == first  # each table has its own keys


#: Batches of puts: new keys; new keys and fewer than ``_COPY_ROWS`` written before; only
#: keys written before, ``_COPY_ROWS`` or more of them.
_BATCHES = [
    _rows(range(0, 150), 0),
    _rows(range(100, 300), 1),
    _rows(range(0, 250), 2),
]


def _stored(cursor: Any) -> list[tuple[Any, ...]]:
    columns = ", ".join(f"{c.name}::text" for c in _TABLE.columns)
    query = f"SELECT {columns} FROM {_TABLE.name} ORDER BY k"
    return [tuple(row) for row in cursor.execute(query).fetchall()]


def test_rows_of_new_keys_copied_straight_in_are_stored_as_the_staged_ones(postgres_url):
    from countersign.infrastructure.persistence.sql import SqlDatabase
    from countersign.infrastructure.settings import Database

    assert all(len(batch) >= codecs._COPY_ROWS for batch in _BATCHES)
    stored = []
    sql = SqlDatabase(Database.parse(postgres_url))
    try:
        for known in (None, WrittenKeys()):
            with sql.transaction() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {_TABLE.name}")
                for statement in create_statements(_TABLE, "postgres"):
                    cursor.execute(statement)
            for batch in _BATCHES:
                with sql.transaction() as cursor:
                    packed = {_TABLE.name: (batch, [])}
                    SqlRows.of_packed(cursor, [_TABLE], "postgres", packed, known).flush()
            with sql.transaction() as cursor:
                stored.append(_stored(cursor))
                cursor.execute(f"DROP TABLE {_TABLE.name}")
    finally:
        sql.close()
    assert stored[0] == stored[1]
    assert len(stored[0]) == 300
    last = {row[0]: row for row in stored[0]}
    assert (last["k1"][5], last["k298"][5]) == ("naïve ✓ 2", "naïve ✓ 1")  # each key's last


def test_a_new_row_the_table_already_holds_makes_the_writer_write_its_batch_again(
    postgres_url,
):
    """The writer process on tables that were not empty: the first batch's COPY of a row
    it takes for new fails on the row already there; the batch is written again without
    ``WrittenKeys`` and commits, and so do the batches after it."""
    from countersign.infrastructure.persistence.sql import SqlDatabase
    from countersign.infrastructure.projection_engine.writer import _read, _write, serve
    from countersign.infrastructure.settings import Database

    database = Database.parse(postgres_url)
    sql = SqlDatabase(database)
    name = "writer_keys_projection"
    try:
        with sql.transaction() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} ("
                " projection TEXT PRIMARY KEY, position BIGINT NOT NULL, updated_at TEXT)"
            )
            cursor.execute(
                f"INSERT INTO {TRACKING_TABLE} (projection, position) VALUES (?, 0)"
                " ON CONFLICT (projection) DO UPDATE SET position = 0",
                (name,),
            )
            cursor.execute(f"DROP TABLE IF EXISTS {_TABLE.name}")
            for statement in create_statements(_TABLE, "postgres"):
                cursor.execute(statement)
            # A row left from before, of a key the first batch puts.
            cursor.execute(f"INSERT INTO {_TABLE.name} (k, s) VALUES ('k5', 'left over')")
        requests, replies = io.BytesIO(), io.BytesIO()
        _write(requests, ("setup", database, "postgres", {name: (_TABLE,)}, 300))
        _write(requests, ("batch", 0, 10, [(name, {_TABLE.name: (_rows(range(0, 150), 0), [])})]))
        _write(
            requests, ("batch", 10, 20, [(name, {_TABLE.name: (_rows(range(150, 300), 1), [])})])
        )
        _write(requests, None)
        requests.seek(0)
        serve(requests, replies)
        replies.seek(0)
        assert [_read(replies), _read(replies)] == [("ok",), ("ok",)]
        with sql.transaction() as cursor:
            stored = _stored(cursor)
            position = cursor.execute(
                f"SELECT position FROM {TRACKING_TABLE} WHERE projection = ?", (name,)
            ).fetchone()[0]
            cursor.execute(f"DROP TABLE {_TABLE.name}")
            cursor.execute(f"DELETE FROM {TRACKING_TABLE} WHERE projection = ?", (name,))
    finally:
        sql.close()
    assert position == 20
    assert len(stored) == 300
    assert {row[0]: row[5] for row in stored}["k5"] == "naïve ✓ 0"
