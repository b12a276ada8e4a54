"""The ``ProposalCounts`` port over the shared database: when each member's recent proposals
were made, so that ``COUNTERSIGN_PROPOSAL_LIMIT`` holds across every process; and, in tables
of their own, when their recent assistant turns began (``TURN_COUNTS``, for
``COUNTERSIGN_TURN_LIMIT``) and when they last changed their passkeys (``PASSKEY_COUNTS``, for
``COUNTERSIGN_PASSKEY_CHANGE_LIMIT``).

``take`` checks and counts in one transaction that no other ``take`` of the same member can
interleave with: SQLite's ``BEGIN IMMEDIATE`` serialises write transactions, and PostgreSQL
takes a transaction-scoped advisory lock on the member's key first. Reading the count in one
transaction and adding to it in another would let a concurrent burst past the limit.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase

_TABLE = "proposal_counts"
TURN_COUNTS = "turn_counts"
"""The assistant turns' counts (``turn_limits.TurnLimiter``)."""
PASSKEY_COUNTS = "passkey_change_counts"
"""The passkey changes' counts (``passkeys.PasskeyService``)."""
TOKEN_WRITE_COUNTS = "token_write_counts"  # noqa: S105 - a table name, not a secret
"""An API token's counts of changes to club settings (``token_write_limit.TokenWriteLimiter``)."""
#: The first half of the two-part PostgreSQL advisory lock key for one member's counts, by
#: table.
_LOCK_CLASSES = {
    _TABLE: 1_347_571_532,
    TURN_COUNTS: 1_347_571_533,
    PASSKEY_COUNTS: 1_347_571_534,
    TOKEN_WRITE_COUNTS: 1_347_571_535,
}


def _schema(table: str) -> tuple[str, ...]:
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (member_key TEXT NOT NULL, made_at BIGINT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {table}_key ON {table} (member_key, made_at)",
    )


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


class SqlProposalCounts:
    """One row per proposal made through a limited entry point (or, in ``TURN_COUNTS``, per
    assistant turn begun), kept for the window only."""

    def __init__(self, sql: SqlDatabase, table: str = _TABLE) -> None:
        self.sql = sql
        self.table = table
        self._lock_class = _LOCK_CLASSES[table]
        ensure_tables(sql, table, _schema(table))

    def take(self, key: str, at: datetime, after: datetime, limit: int) -> datetime | None:
        with self.sql.transaction() as cursor:
            self._lock(cursor, key)
            cursor.execute(
                f"DELETE FROM {self.table} WHERE member_key = ? AND made_at <= ?", (key, _ms(after))
            )
            rows = cursor.execute(
                f"SELECT made_at FROM {self.table} WHERE member_key = ?"
                " ORDER BY made_at DESC LIMIT ?",
                (key, limit),
            ).fetchall()
            if len(rows) >= limit:
                return datetime.fromtimestamp(int(rows[-1][0]) / 1000, UTC)
            cursor.execute(
                f"INSERT INTO {self.table} (member_key, made_at) VALUES (?, ?)", (key, _ms(at))
            )
        return None

    def give_back(self, key: str, at: datetime) -> None:
        row = "ctid" if self.sql.is_postgres else "rowid"  # one of identical rows
        with self.sql.transaction() as cursor:
            self._lock(cursor, key)
            cursor.execute(
                f"DELETE FROM {self.table} WHERE {row} IN (SELECT {row} FROM {self.table}"
                " WHERE member_key = ? AND made_at = ? LIMIT 1)",
                (key, _ms(at)),
            )

    def _lock(self, cursor: Cursor, key: str) -> None:
        """Serialise the member's counts across processes until the transaction ends."""
        if not self.sql.is_postgres:
            return  # BEGIN IMMEDIATE already serialises SQLite's write transactions
        half = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big", signed=True)
        cursor.execute(
            "SELECT pg_advisory_xact_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))",
            (self._lock_class, half),
        )
