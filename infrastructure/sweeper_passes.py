"""The ``SweeperPasses`` port over the shared database: when each sweeper last finished a
pass, in any process (``countersign worker``, or ``serve`` on the embedded database), so a
page can tell a lost answer the provider has not settled yet from one nothing is settling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from countersign.application.ports import SweeperPass
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import SqlDatabase

_TABLE = "sweeper_passes"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (sweeper TEXT PRIMARY KEY,"
    " finished_at BIGINT NOT NULL, every_ms BIGINT NOT NULL)",
)


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


class SqlSweeperPasses:
    """One row per sweeper: its latest pass, whichever process ran it."""

    def __init__(self, sql: SqlDatabase) -> None:
        self.sql = sql
        ensure_tables(sql, _TABLE, _SCHEMA)

    def record(self, sweeper: str, finished_at: datetime, every: timedelta) -> None:
        with self.sql.transaction() as cursor:
            cursor.execute(
                f"INSERT INTO {_TABLE} (sweeper, finished_at, every_ms) VALUES (?, ?, ?)"
                " ON CONFLICT (sweeper) DO UPDATE SET finished_at = excluded.finished_at,"
                " every_ms = excluded.every_ms",
                (sweeper, _ms(finished_at), round(every.total_seconds() * 1000)),
            )

    def last(self, sweeper: str) -> SweeperPass | None:
        with self.sql.reading() as cursor:
            row = cursor.execute(
                f"SELECT finished_at, every_ms FROM {_TABLE} WHERE sweeper = ?", (sweeper,)
            ).fetchone()
        if row is None:
            return None
        return SweeperPass(
            finished_at=datetime.fromtimestamp(int(row[0]) / 1000, UTC),
            every=timedelta(milliseconds=int(row[1])),
        )
