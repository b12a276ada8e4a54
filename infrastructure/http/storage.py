"""Tables the HTTP adapter keeps beside the event store, created once per database handle."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

from countersign.infrastructure.sql import SqlDatabase

_prepared: weakref.WeakKeyDictionary[SqlDatabase, set[str]] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def ensure_tables(sql: SqlDatabase, name: str, statements: Sequence[str]) -> None:
    """Run ``CREATE TABLE IF NOT EXISTS`` statements once per handle, under the schema lock."""
    with _guard:
        done = _prepared.setdefault(sql, set())
        if name in done:
            return
        with sql.transaction() as cursor:
            sql.lock_schema(cursor)
            for statement in statements:
                cursor.execute(statement)
        done.add(name)
