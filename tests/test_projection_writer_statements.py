"""The projection writer's statements: a batch is still all or nothing.

SQLite's multi-row INSERTs are ``INSERT OR FAIL`` (``codecs._Codec.upsert_many``), so SQLite
keeps no statement journal for them; a row refused part-way through one leaves the rows before
it in the transaction, which the batch's transaction then rolls back whole. PostgreSQL writes
the same batch by COPY. Either way nothing of a refused batch is stored, and its projection's
position does not move.
"""

from __future__ import annotations

import pytest
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.codecs import _codec
from countersign.infrastructure.projection_engine.rows import (
    ProjectionStoppedError,
    SqlRows,
    commit_batch,
    create_statements,
)
from countersign.projections.base import Column, Table

LOG = Table(
    "writer_stmt_log",
    (Column("n", "int"), Column("k"), Column("v", "int")),
    key=("n",),
    append_only=True,
)
STATE = Table("writer_stmt_state", (Column("k"), Column("v", "int")), key=("k",))


def _commit(sql, dialect, position, last, log_rows, state_rows):
    with sql.transaction() as cursor:
        commit_batch(
            cursor,
            [
                (
                    "writer_stmt",
                    SqlRows.of_packed(
                        cursor,
                        [LOG, STATE],
                        dialect,
                        {LOG.name: (log_rows, []), STATE.name: (state_rows, [])},
                    ),
                )
            ],
            position,
            last,
            postgres=sql.is_postgres,
        )


def test_sqlite_multi_row_inserts_fail_rather_than_abort():
    for table in (LOG, STATE):
        codec = _codec(table, "sqlite")
        assert codec.upsert_many.startswith("INSERT OR FAIL INTO ")
        assert codec.upsert.startswith("INSERT INTO ")  # one row: no statement journal anyway
        assert not _codec(table, "postgres").upsert.startswith("INSERT OR")


def test_a_row_refused_inside_a_multi_row_insert_leaves_nothing_of_its_batch(cs):
    dialect = "postgres" if cs.sql.is_postgres else "sqlite"
    sql = SqlDatabase(cs.database)
    try:
        with sql.transaction() as cursor:
            for table in (LOG, STATE):
                for statement in create_statements(table, dialect):
                    cursor.execute(statement)
            cursor.execute(
                "INSERT INTO projection_tracking (projection, position) VALUES (?, 0)"
                " ON CONFLICT (projection) DO NOTHING",
                ("writer_stmt",),
            )
        first = [(n, f"k{n}", n) for n in range(0, 200, 2)]
        _commit(sql, dialect, 0, 1, first, [(f"k{n}", n) for n in range(100)])

        # 130 log rows (two statements of SQLite's 50 and 30 one by one; COPY on PostgreSQL),
        # the 77th of them (in the second statement) already stored by the first batch.
        second = [(n, f"k{n}", -n) for n in range(1001, 1131)]
        second[76] = (first[10][0], "again", 0)
        with pytest.raises(ProjectionStoppedError, match=r"writer_stmt.*already there"):
            _commit(sql, dialect, 1, 2, second, [(f"k{n}", -n) for n in range(150)])

        with sql.transaction() as cursor:
            assert [
                tuple(r)
                for r in cursor.execute(f"SELECT n, k, v FROM {LOG.name} ORDER BY n").fetchall()
            ] == first
            assert [
                tuple(r)
                for r in cursor.execute(f"SELECT k, v FROM {STATE.name} ORDER BY v").fetchall()
            ] == [(f"k{n}", n) for n in range(100)]
            position = cursor.execute(
                "SELECT position FROM projection_tracking WHERE projection = ?", ("writer_stmt",)
            ).fetchone()
            assert int(position[0]) == 1
            cursor.execute("DELETE FROM projection_tracking WHERE projection = ?", ("writer_stmt",))
            for table in (LOG, STATE):
                cursor.execute(f"DROP TABLE {table.name}")
    finally:
        sql.close()
