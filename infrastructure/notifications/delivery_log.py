"""What operators and managers read of the delivery ledger: a club's deliveries, newest
first, each with every attempt (``Webhooks.deliveries`` turns them into what a club sees),
and each endpoint's health: its last attempt, its recent attempts and its next retry."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from countersign.domain.errors import NotFoundError
from countersign.infrastructure.notifications.ledger import (
    DEAD,
    DELIVERED,
    NO_LONGER_PENDING,
    PENDING,
    WEBHOOK,
    DeliveryLedger,
    may_name_a_delivery,
    table_exists,
)


def deliveries(
    ledger: DeliveryLedger,
    organization_id: str,
    *,
    dead_only: bool = False,
    limit: int = 50,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """The club's deliveries, newest first, each with its attempts; with ``before`` (a
    delivery id of the club's, the last of a page), the ones listed after it: the next page,
    however many deliveries were made since (NotFoundError for an id the club has none of)."""
    where = "d.organization_id = ?" + (" AND d.status = ?" if dead_only else "")
    params: list[Any] = [organization_id] + ([DEAD] if dead_only else [])
    with ledger.sql.transaction() as cursor:
        # The notifications are the outbox projection's, the deliveries the sender's: either
        # may not be made yet.
        if not all(
            table_exists(cursor, table, ledger.postgres)
            for table in ("notifications", "notification_deliveries")
        ):
            if before is not None:
                raise NotFoundError("delivery")
            return []
        if before is not None:
            if not may_name_a_delivery(before):
                raise NotFoundError("delivery")
            # The order below, from where that delivery stands in it: older, or as old and
            # after it by id.
            mark = cursor.execute(
                "SELECT created_at FROM notification_deliveries"
                " WHERE delivery_id = ? AND organization_id = ?",
                (before, organization_id),
            ).fetchone()
            if mark is None:
                raise NotFoundError("delivery")
            where += " AND (d.created_at < ? OR (d.created_at = ? AND d.delivery_id > ?))"
            params += [mark[0], mark[0], before]
        rows = cursor.execute(
            "SELECT d.delivery_id, d.event_id, d.channel, d.target, d.status, d.attempts,"
            " d.next_attempt_at, d.created_at, d.delivered_at, d.last_error,"
            " n.reason, n.proposal_id, n.operation"
            " FROM notification_deliveries d JOIN notifications n ON n.event_id = d.event_id"
            f" WHERE {where} ORDER BY d.created_at DESC, d.delivery_id LIMIT ?",
            [*params, limit],
        ).fetchall()
        found = []
        for row in rows:
            attempts = cursor.execute(
                "SELECT attempt, started_at, status_code, latency_ms, error_class, outcome,"
                " next_attempt_at FROM notification_attempts WHERE delivery_id = ?"
                " ORDER BY attempt",
                (row[0],),
            ).fetchall()
            found.append(
                {
                    "delivery_id": row[0],
                    "event_id": row[1],
                    "channel": row[2],
                    "target": row[3],
                    "status": row[4],
                    # Every attempt made, a redelivered dead letter's earlier ones too (the
                    # ledger's own count starts again at a redelivery, for the tries left).
                    "attempts": len(attempts),
                    "next_attempt_at": ledger._time(row[6]) if row[4] == PENDING else None,
                    "created_at": ledger._time(row[7]),
                    "delivered_at": ledger._time(row[8]),
                    "last_error": row[9],
                    "type": f"proposal.{row[10]}",
                    "proposal_id": row[11],
                    "operation": row[12],
                    "attempt_log": [
                        {
                            "attempt": int(a[0]),
                            "started_at": ledger._time(a[1]),
                            "status_code": a[2],
                            "latency_ms": int(a[3]),
                            "error_class": a[4],
                            "outcome": a[5],
                            "next_attempt_at": ledger._time(a[6]),
                        }
                        for a in attempts
                    ],
                }
            )
    return found


def endpoint_health(
    ledger: DeliveryLedger, organization_id: str, endpoint_id: str, since: datetime
) -> dict[str, Any]:
    """One webhook endpoint of the club: its last attempt (None before the first), the
    attempts made since ``since`` (``attempts``, of which ``failed``; an attempt that sent
    nothing because the proposal no longer awaited approval is not one), and the deliveries
    that failed and will be tried again (``retrying``, the next one due at ``next_retry_at``)."""
    health: dict[str, Any] = {
        "last_attempt": None,
        "attempts": 0,
        "failed": 0,
        "retrying": 0,
        "next_retry_at": None,
    }
    joined = (
        "notification_attempts a JOIN notification_deliveries d ON d.delivery_id = a.delivery_id"
        " WHERE d.organization_id = ? AND d.channel = ? AND d.target = ?"
        " AND (a.error_class IS NULL OR a.error_class <> ?)"
    )
    scope = [organization_id, WEBHOOK, endpoint_id, NO_LONGER_PENDING]
    with ledger.sql.transaction() as cursor:
        if not table_exists(cursor, "notification_attempts", ledger.postgres):
            return health
        last = cursor.execute(
            f"SELECT a.started_at, a.status_code, a.error_class FROM {joined}"
            " ORDER BY a.started_at DESC LIMIT 1",
            scope,
        ).fetchone()
        recent = cursor.execute(
            f"SELECT COUNT(*), SUM(CASE WHEN a.outcome = ? THEN 0 ELSE 1 END)"
            f" FROM {joined} AND a.started_at >= ?",
            [DELIVERED, *scope, ledger._t(since)],
        ).fetchone()
        retrying = cursor.execute(
            "SELECT COUNT(*), MIN(next_attempt_at) FROM notification_deliveries"
            " WHERE organization_id = ? AND channel = ? AND target = ? AND status = ?"
            " AND attempts > 0",
            (organization_id, WEBHOOK, endpoint_id, PENDING),
        ).fetchone()
    if last is not None:
        health["last_attempt"] = {
            "started_at": ledger._time(last[0]),
            "status_code": last[1],
            "error_class": last[2],
        }
    if recent is not None:
        health["attempts"], health["failed"] = int(recent[0] or 0), int(recent[1] or 0)
    if retrying is not None and int(retrying[0] or 0):
        health["retrying"] = int(retrying[0])
        health["next_retry_at"] = ledger._time(retrying[1])
    return health


def failing_deliveries(ledger: DeliveryLedger, organization_id: str) -> int:
    """How many of the club's deliveries (webhooks and e-mail) failed at least once and will
    be tried again: not dead letters yet, not delivered either."""
    with ledger.sql.transaction() as cursor:
        if not table_exists(cursor, "notification_deliveries", ledger.postgres):
            return 0
        found = cursor.execute(
            "SELECT COUNT(*) FROM notification_deliveries"
            " WHERE organization_id = ? AND status = ? AND attempts > 0",
            (organization_id, PENDING),
        ).fetchone()
    return int(found[0]) if found else 0


def dead_letter_to(ledger: DeliveryLedger, organization_id: str, delivery: str) -> str | None:
    """The webhook endpoint a dead letter of the club's was for; None for another delivery."""
    if not may_name_a_delivery(delivery):
        return None
    with ledger.sql.transaction() as cursor:
        found = cursor.execute(
            "SELECT target FROM notification_deliveries WHERE organization_id = ?"
            " AND status = ? AND channel = ? AND delivery_id = ?",
            (organization_id, DEAD, WEBHOOK, delivery.strip()),
        ).fetchone()
    return str(found[0]) if found else None
