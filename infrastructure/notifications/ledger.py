"""The delivery ledger: operational tables, beside the event store, that the sender keeps.

``notification_deliveries``: one row per notification and target, its status (``pending``,
``delivered``, ``dead``), attempts and when the next is due. ``notification_attempts``: one
row per attempt (status code, latency, error class, next try). ``notification_fanout``: how
far the sender has fanned the outbox out. ``webhook_secrets``: each endpoint's signing secret
(never an event). These are not projection tables: a rebuild of the ``notifications``
projection leaves them, and so what was delivered, as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase

PENDING, DELIVERED, DEAD, SKIPPED = "pending", "delivered", "dead", "skipped"
#: The error class of an attempt that sent nothing because the proposal no longer awaits
#: approval: the delivery ends as ``skipped``.
NO_LONGER_PENDING = "NoLongerPending"
WEBHOOK, EMAIL = "webhook", "email"
_NAMESPACE = UUID("4c1e2a7b-6f53-4d0e-8b9a-1f2e3d4c5b6a")
_OUTBOX = "outbox"

#: Every column of the ledger's analyst-readable tables and its type (docs/analytics.md).
COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "notification_deliveries": {
        "delivery_id": ("TEXT", "TEXT"),
        "event_id": ("TEXT", "TEXT"),
        "organization_id": ("TEXT", "TEXT"),
        "channel": ("TEXT", "TEXT"),
        "target": ("TEXT", "TEXT"),
        "language": ("TEXT", "TEXT"),
        "status": ("TEXT", "TEXT"),
        "attempts": ("INTEGER", "INTEGER"),
        "next_attempt_at": ("TIMESTAMPTZ", "TEXT"),
        "created_at": ("TIMESTAMPTZ", "TEXT"),
        "delivered_at": ("TIMESTAMPTZ", "TEXT"),
        "seconds_to_deliver": ("DOUBLE PRECISION", "REAL"),
        "last_error": ("TEXT", "TEXT"),
    },
    "notification_attempts": {
        "delivery_id": ("TEXT", "TEXT"),
        "attempt": ("INTEGER", "INTEGER"),
        "started_at": ("TIMESTAMPTZ", "TEXT"),
        "status_code": ("INTEGER", "INTEGER"),
        "latency_ms": ("INTEGER", "INTEGER"),
        "error_class": ("TEXT", "TEXT"),
        "outcome": ("TEXT", "TEXT"),
        "next_attempt_at": ("TIMESTAMPTZ", "TEXT"),
    },
}
#: Columns that may be NULL: a delivery not yet delivered, an attempt that got no answer (no
#: status code) or did not fail, and an attempt that left nothing to try next.
_NULLABLE = {
    "delivered_at",
    "seconds_to_deliver",
    "last_error",
    "status_code",
    "error_class",
    "next_attempt_at",
}


def _schema(dialect: int) -> list[str]:
    statements = []
    for table, columns in COLUMNS.items():
        body = ", ".join(
            f"{name} {types[dialect]}"
            + ("" if name in _NULLABLE and not _due(table, name) else " NOT NULL")
            for name, types in columns.items()
        )
        key = "delivery_id" if table == "notification_deliveries" else "delivery_id, attempt"
        statements.append(f"CREATE TABLE IF NOT EXISTS {table} ({body}, PRIMARY KEY ({key}))")
    return [
        *statements,
        "CREATE INDEX IF NOT EXISTS notification_deliveries_due"
        " ON notification_deliveries (status, next_attempt_at)",
        "CREATE INDEX IF NOT EXISTS notification_deliveries_by_organization"
        " ON notification_deliveries (organization_id, status, created_at)",
        "CREATE TABLE IF NOT EXISTS notification_fanout ("
        " name TEXT PRIMARY KEY, position BIGINT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS webhook_secrets ("
        " endpoint_id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, secret TEXT NOT NULL,"
        " created_at TEXT NOT NULL)",
    ]


def _due(table: str, column: str) -> bool:
    """A delivery always has a next attempt time (due, or when it ended)."""
    return table == "notification_deliveries" and column == "next_attempt_at"


def delivery_id(event_id: str, channel: str, target: str) -> str:
    """The same notification to the same target is one delivery, however often fanned out."""
    return f"dlv_{uuid5(_NAMESPACE, f'{event_id}/{channel}/{target}').hex}"


def may_name_a_delivery(text: str) -> bool:
    """Whether ``text`` may be a delivery's id at all: one holding a NUL byte names none
    (PostgreSQL's text cannot hold it, and refused the query with an error, a 500)."""
    return "\x00" not in text


@dataclass(frozen=True)
class Target:
    """Where one notification goes: an endpoint id (webhook) or an address (e-mail)."""

    channel: str
    target: str
    language: str = "en"


@dataclass(frozen=True)
class Claimed:
    """A due delivery, claimed for one attempt, with what the attempt needs to send it."""

    delivery_id: str
    event_id: str
    organization_id: str
    channel: str
    target: str
    language: str
    attempts: int
    notification: dict[str, Any]
    url: str | None  # the endpoint's, for a webhook; None once the endpoint was removed
    secret: str | None


@dataclass(frozen=True)
class Attempt:
    """How one attempt went."""

    started_at: datetime
    latency_ms: int
    status_code: int | None = None
    error_class: str | None = None

    @property
    def delivered(self) -> bool:
        return (
            self.error_class is None
            and self.status_code is not None
            and (200 <= self.status_code < 300)
        )


_NOTIFICATION_COLUMNS = (
    "event_id",
    "position",
    "organization_id",
    "proposal_id",
    "operation",
    "section",
    "reason",
    "requester",
    "approvers",
    "occurred_at",
    "requested_through",
)


class DeliveryLedger:
    """The ledger's reads and writes, on SQLite and PostgreSQL alike."""

    def __init__(self, sql: SqlDatabase, *, create: bool = True) -> None:
        """``create=False``: only to read (``delivery_log``), the tables left unmade if the
        sender never ran; the reads see them missing and answer that nothing was sent."""
        self.sql = sql
        self.postgres = sql.is_postgres
        if create:
            ensure_tables(sql, "notification_ledger", _schema(0 if self.postgres else 1))

    def _t(self, moment: datetime | None) -> Any:
        """A time as the column holds it (SQLite: ISO text in UTC, which sorts in time)."""
        if moment is None or self.postgres:
            return moment
        return moment.astimezone(UTC).isoformat()

    @staticmethod
    def _time(value: Any) -> datetime | None:
        if value is None or isinstance(value, datetime):
            return value
        return datetime.fromisoformat(str(value))

    # -- secrets --------------------------------------------------------------------------------

    def store_secret(
        self, endpoint_id: str, organization_id: str, secret: str, at: datetime
    ) -> None:
        with self.sql.transaction() as cursor:
            cursor.execute(
                "INSERT INTO webhook_secrets (endpoint_id, organization_id, secret, created_at)"
                " VALUES (?, ?, ?, ?)",
                (endpoint_id, organization_id, secret, at.astimezone(UTC).isoformat()),
            )

    def forget_secret(self, endpoint_id: str) -> None:
        with self.sql.transaction() as cursor:
            cursor.execute("DELETE FROM webhook_secrets WHERE endpoint_id = ?", (endpoint_id,))

    # -- fan-out --------------------------------------------------------------------------------

    def fanout_position(self) -> int:
        with self.sql.transaction() as cursor:
            row = cursor.execute(
                "SELECT position FROM notification_fanout WHERE name = ?", (_OUTBOX,)
            ).fetchone()
        return int(row[0]) if row else 0

    def outbox_after(self, position: int, limit: int) -> list[dict[str, Any]]:
        """Outbox rows after ``position``, in log order (the projection's table)."""
        with self.sql.transaction() as cursor:
            if not table_exists(cursor, "notifications", self.postgres):
                return []
            rows = cursor.execute(
                f"SELECT {', '.join(_NOTIFICATION_COLUMNS)} FROM notifications"
                " WHERE position > ? ORDER BY position LIMIT ?",
                (position, limit),
            ).fetchall()
        return [self._notification(row) for row in rows]

    def _notification(self, row: Sequence[Any]) -> dict[str, Any]:
        found = dict(zip(_NOTIFICATION_COLUMNS, row, strict=True))
        approvers = found["approvers"]
        if isinstance(approvers, str):
            approvers = json.loads(approvers)
        found["approvers"] = list(approvers or [])
        found["occurred_at"] = self._time(found["occurred_at"])
        return found

    def active_endpoints(self, organization_id: str) -> list[str]:
        with self.sql.transaction() as cursor:
            if not table_exists(cursor, "webhook_endpoints", self.postgres):
                return []
            rows = cursor.execute(
                "SELECT endpoint_id FROM webhook_endpoints"
                " WHERE organization_id = ? AND active = ? ORDER BY added_at, endpoint_id",
                (organization_id, True),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def fan_out(
        self,
        after: int,
        last: int,
        deliveries: Iterable[tuple[dict[str, Any], Target]],
        now: datetime,
    ) -> int:
        """Record the deliveries of the outbox rows after ``after`` up to ``last`` and move the
        cursor there, in one transaction; nothing if another sender moved it first. Returns
        how many deliveries were new."""
        created = 0
        with self.sql.transaction() as cursor:
            cursor.execute(
                "INSERT INTO notification_fanout (name, position) VALUES (?, 0)"
                " ON CONFLICT (name) DO NOTHING",
                (_OUTBOX,),
            )
            lock = " FOR UPDATE" if self.postgres else ""
            row = cursor.execute(
                f"SELECT position FROM notification_fanout WHERE name = ?{lock}", (_OUTBOX,)
            ).fetchone()
            if row is None or int(row[0]) != after:
                return 0
            for notification, target in deliveries:
                cursor.execute(
                    "INSERT INTO notification_deliveries (delivery_id, event_id, organization_id,"
                    " channel, target, language, status, attempts, next_attempt_at, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (delivery_id) DO NOTHING",
                    (
                        delivery_id(notification["event_id"], target.channel, target.target),
                        notification["event_id"],
                        notification["organization_id"],
                        target.channel,
                        target.target,
                        target.language,
                        PENDING,
                        self._t(now),
                        self._t(now),
                    ),
                )
                created += max(cursor.rowcount, 0)
            cursor.execute(
                "UPDATE notification_fanout SET position = ? WHERE name = ?", (last, _OUTBOX)
            )
        return created

    # -- attempts -------------------------------------------------------------------------------

    def claim_due(
        self,
        now: datetime,
        lease: timedelta,
        limit: int,
        *,
        busy_endpoints: Sequence[str] = (),
        busy_clubs: Sequence[str] = (),
    ) -> list[Claimed]:
        """Due pending deliveries, each claimed until ``now + lease``: another sender leaves
        them alone until then (and attempts them again if this one never records how it went).
        Webhook deliveries to ``busy_endpoints`` or of ``busy_clubs`` are left for later."""
        skip = " FOR UPDATE SKIP LOCKED" if self.postgres else ""
        where = "status = ? AND next_attempt_at <= ?"
        params: list[Any] = [PENDING, self._t(now)]
        for column, busy in (("target", busy_endpoints), ("organization_id", busy_clubs)):
            if busy:
                marks = ", ".join("?" for _ in busy)
                where += f" AND NOT (channel = ? AND {column} IN ({marks}))"
                params += [WEBHOOK, *busy]
        with self.sql.transaction() as cursor:
            ids = [
                str(row[0])
                for row in cursor.execute(
                    f"SELECT delivery_id FROM notification_deliveries WHERE {where}"
                    f" ORDER BY next_attempt_at, delivery_id LIMIT ?{skip}",
                    (*params, limit),
                ).fetchall()
            ]
            if not ids:
                return []
            marks = ", ".join("?" for _ in ids)
            cursor.execute(
                f"UPDATE notification_deliveries SET next_attempt_at = ?"
                f" WHERE delivery_id IN ({marks})",
                (self._t(now + lease), *ids),
            )
            rows = cursor.execute(
                "SELECT d.delivery_id, d.event_id, d.organization_id, d.channel, d.target,"
                " d.language, d.attempts, "
                + ", ".join(f"n.{c}" for c in _NOTIFICATION_COLUMNS)
                + " FROM notification_deliveries d"
                " JOIN notifications n ON n.event_id = d.event_id"
                f" WHERE d.delivery_id IN ({marks}) ORDER BY d.next_attempt_at, d.delivery_id",
                ids,
            ).fetchall()
            endpoints = self._endpoints(cursor, {str(r[4]) for r in rows if r[3] == WEBHOOK})
        claimed = []
        for row in rows:
            url, secret = (
                endpoints.get(str(row[4]), (None, None))
                if row[3] == WEBHOOK
                else (
                    None,
                    None,
                )
            )
            claimed.append(
                Claimed(
                    delivery_id=str(row[0]),
                    event_id=str(row[1]),
                    organization_id=str(row[2]),
                    channel=str(row[3]),
                    target=str(row[4]),
                    language=str(row[5]),
                    attempts=int(row[6]),
                    notification=self._notification(row[7:]),
                    url=url,
                    secret=secret,
                )
            )
        return claimed

    def release(self, deliveries: Sequence[Claimed], now: datetime) -> None:
        """Give claimed deliveries back, due at ``now``, without an attempt (their endpoint
        or club already has as many attempts under way as it may)."""
        if not deliveries:
            return
        marks = ", ".join("?" for _ in deliveries)
        with self.sql.transaction() as cursor:
            cursor.execute(
                f"UPDATE notification_deliveries SET next_attempt_at = ?"
                f" WHERE status = ? AND delivery_id IN ({marks})",
                (self._t(now), PENDING, *(d.delivery_id for d in deliveries)),
            )

    @staticmethod
    def _endpoints(cursor: Cursor, ids: set[str]) -> dict[str, tuple[str | None, str | None]]:
        """Active endpoints' URLs and secrets, by id."""
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = cursor.execute(
            "SELECT e.endpoint_id, e.url, s.secret FROM webhook_endpoints e"
            " LEFT JOIN webhook_secrets s ON s.endpoint_id = e.endpoint_id"
            f" WHERE e.active = ? AND e.endpoint_id IN ({marks})",
            (True, *sorted(ids)),
        ).fetchall()
        return {str(row[0]): (row[1], row[2]) for row in rows}

    def record(
        self, claimed: Claimed, attempt: Attempt, next_attempt_at: datetime | None, dead: bool
    ) -> str:
        """Record how an attempt went and what follows it; returns the delivery's status."""
        if attempt.delivered:
            status, outcome = DELIVERED, DELIVERED
        elif attempt.error_class == NO_LONGER_PENDING:
            status, outcome = SKIPPED, SKIPPED
        elif dead:
            status, outcome = DEAD, DEAD
        else:
            status, outcome = PENDING, "retry"
        error = attempt.error_class or (
            None if attempt.delivered else f"HTTP {attempt.status_code}"
        )
        occurred_at = claimed.notification.get("occurred_at")
        seconds = (
            round((attempt.started_at - occurred_at).total_seconds(), 3)
            if status == DELIVERED and occurred_at is not None
            else None
        )
        with self.sql.transaction() as cursor:
            row = cursor.execute(
                "SELECT COUNT(*) FROM notification_attempts WHERE delivery_id = ?",
                (claimed.delivery_id,),
            ).fetchone()
            number = (int(row[0]) if row else 0) + 1
            cursor.execute(
                "INSERT INTO notification_attempts (delivery_id, attempt, started_at,"
                " status_code, latency_ms, error_class, outcome, next_attempt_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    claimed.delivery_id,
                    number,
                    self._t(attempt.started_at),
                    attempt.status_code,
                    attempt.latency_ms,
                    attempt.error_class,
                    outcome,
                    self._t(next_attempt_at) if status == PENDING else None,
                ),
            )
            cursor.execute(
                "UPDATE notification_deliveries SET status = ?, attempts = attempts + 1,"
                " next_attempt_at = ?, delivered_at = ?, seconds_to_deliver = ?, last_error = ?"
                " WHERE delivery_id = ? AND status = ?",
                (
                    status,
                    self._t(next_attempt_at or attempt.started_at),
                    self._t(attempt.started_at) if status == DELIVERED else None,
                    seconds,
                    error,
                    claimed.delivery_id,
                    PENDING,
                ),
            )
        return status

    def redeliver(
        self, organization_id: str, delivery: str | None, now: datetime, endpoints: Sequence[str]
    ) -> list[str]:
        """Put the club's dead letters (one, or all) back in line, due now, with a fresh set of
        tries; the ids put back. A delivery that is not a dead letter of this club is left, and
        so is a webhook's to an endpoint not in ``endpoints`` (the club's): one removed.

        One statement whatever their number: the ids come back from the UPDATE itself, not as
        its parameters (a list of ids as parameters failed past 65,535 dead letters on
        PostgreSQL, which takes no more in one statement)."""
        marks = ", ".join("?" for _ in endpoints) or "NULL"
        where = f"organization_id = ? AND status = ? AND (channel <> ? OR target IN ({marks}))"
        params: list[Any] = [organization_id, DEAD, WEBHOOK, *endpoints]
        if delivery is not None:
            if not may_name_a_delivery(delivery):
                return []
            where += " AND delivery_id = ?"
            params.append(delivery.strip())
        with self.sql.transaction() as cursor:
            rows = cursor.execute(
                "UPDATE notification_deliveries SET status = ?, attempts = 0,"
                f" next_attempt_at = ? WHERE {where} RETURNING delivery_id",
                (PENDING, self._t(now), *params),
            ).fetchall()
        return sorted(str(row[0]) for row in rows)


def table_exists(cursor: Cursor, table: str, postgres: bool) -> bool:
    """Whether the projection made its table yet (a sender may start before it)."""
    if postgres:
        row = cursor.execute("SELECT to_regclass(?)", (table,)).fetchone()
        return row is not None and row[0] is not None
    row = cursor.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return row is not None
