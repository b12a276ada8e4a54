"""The ``ProposalCounts`` port over the shared database: when each member's recent proposals
were made, so that ``COUNTERSIGN_PROPOSAL_LIMIT`` holds across every process."""

from __future__ import annotations

from datetime import UTC, datetime

from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import SqlDatabase

_TABLE = "proposal_counts"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (member_key TEXT NOT NULL, made_at BIGINT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {_TABLE}_key ON {_TABLE} (member_key, made_at)",
)


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


class SqlProposalCounts:
    """One row per proposal made through a limited entry point, kept for the window only."""

    def __init__(self, sql: SqlDatabase) -> None:
        self.sql = sql
        ensure_tables(sql, _TABLE, _SCHEMA)

    def newest(self, key: str, after: datetime, limit: int) -> list[datetime]:
        with self.sql.transaction() as cursor:
            rows = cursor.execute(
                f"SELECT made_at FROM {_TABLE} WHERE member_key = ? AND made_at > ?"
                " ORDER BY made_at DESC LIMIT ?",
                (key, _ms(after), limit),
            ).fetchall()
        return [datetime.fromtimestamp(int(row[0]) / 1000, UTC) for row in rows]

    def add(self, key: str, at: datetime, forget_before: datetime) -> None:
        with self.sql.transaction() as cursor:
            cursor.execute(
                f"DELETE FROM {_TABLE} WHERE member_key = ? AND made_at <= ?",
                (key, _ms(forget_before)),
            )
            cursor.execute(
                f"INSERT INTO {_TABLE} (member_key, made_at) VALUES (?, ?)", (key, _ms(at))
            )
