"""The golden streams on PostgreSQL: each release's dump loaded once per worker, copied per test.

Loading a release's dump (``tests/fixtures/golden_*/postgres.sql``) into the test's empty
database cost 0.4-0.7 s a test on the 2-core machine and 0.7-1.6 s while other work loaded it;
``CREATE DATABASE … TEMPLATE`` copies a loaded one, catalogs and all, in 0.06-0.14 s and
0.2-0.6 s (2026-12-07, the same runs). A copy is the release's database exactly, whatever
today's code then does to its schema, which a reset of its rows (``databases.py``) would not
undo. Each copy is dropped with the worker's other databases at the session's end
(``TestDatabases.drop_at_close``): a DROP DATABASE waits for a checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from countersign.infrastructure.testing.databases import (
    POSTGRES_SERVER,
    TestDatabases,
    worker_tag,
)


def _admin() -> psycopg.Connection[Any]:
    return psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True)


def _load(dump: Path, url: str) -> None:
    """Load the dump into an empty database (psql's meta-commands are not SQL)."""
    script = "\n".join(line for line in dump.read_text().splitlines() if not line.startswith("\\"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(script)  # type: ignore[arg-type]  # a trusted, committed file


class GoldenPostgres:
    """This worker's loaded golden databases, one per release, and the copies made of them."""

    def __init__(self, databases: TestDatabases) -> None:
        self._databases = databases
        self._loaded: dict[Path, str] = {}
        self._copies = 0

    def copy(self, dump: Path) -> str:
        """The URL of a new database holding exactly what ``dump`` holds."""
        template = self._loaded.get(dump) or self._load_once(dump)
        return self._new(f"TEMPLATE {template}")

    def _load_once(self, dump: Path) -> str:
        url = self._new("")
        _load(dump, url)
        name = url.rpartition("/")[2]
        self._loaded[dump] = name
        return name

    def _new(self, clause: str) -> str:
        self._copies += 1
        # The names are the session's own: the worker tag and a count.
        name = f"countersign_test_{worker_tag()}_golden{self._copies}"
        url = f"{POSTGRES_SERVER}/{name}"
        with _admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name} {clause}")
            conn.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
        self._databases.drop_at_close(url)
        return url
