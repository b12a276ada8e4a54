"""Tables the HTTP adapter keeps beside the event store, created once per database handle."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence

from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase

_prepared: weakref.WeakKeyDictionary[SqlDatabase, set[str]] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def ensure_tables(
    sql: SqlDatabase,
    name: str,
    statements: Sequence[str],
    migrate: Callable[[SqlDatabase, Cursor], None] | None = None,
) -> None:
    """Run ``CREATE TABLE IF NOT EXISTS`` statements (then ``migrate``, which must be
    idempotent) once per handle, under the schema lock."""
    if made(sql, name):
        return
    with _guard:
        done = _prepared.setdefault(sql, set())
        if name in done:
            return
        if migrate is None:
            sql.make_schema(statements)
        else:
            with sql.transaction() as cursor:
                sql.schema_statements(cursor, statements)
                migrate(sql, cursor)
        done.add(name)


def made(sql: SqlDatabase, name: str) -> bool:
    """Whether ``ensure_tables(sql, name, ...)`` has made its tables (without the lock: a name
    is added once they are, and never taken away)."""
    done = _prepared.get(sql)
    return done is not None and name in done
