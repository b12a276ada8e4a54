"""What operators and managers read of the delivery ledger: a club's deliveries, newest
first, each with every attempt (``Webhooks.deliveries`` turns them into what a club sees)."""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.notifications.ledger import (
    DEAD,
    PENDING,
    DeliveryLedger,
    table_exists,
)


def deliveries(
    ledger: DeliveryLedger, organization_id: str, *, dead_only: bool = False, limit: int = 50
) -> list[dict[str, Any]]:
    """The club's deliveries, newest first, each with its attempts."""
    where = "d.organization_id = ?" + (" AND d.status = ?" if dead_only else "")
    params: list[Any] = [organization_id] + ([DEAD] if dead_only else [])
    with ledger.sql.transaction() as cursor:
        if not table_exists(cursor, "notifications", ledger.postgres):
            return []
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
                    "attempts": int(row[5]),
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
