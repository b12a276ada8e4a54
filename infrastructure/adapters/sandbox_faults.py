"""Scripted faults for the sandbox providers: what their next requests under a key meet.

Test cards and test addresses give a request one fixed behaviour. The fault-schedule suite
(tests/test_fault_schedules.py) needs sequences instead: the first request under a key meets
an outage, the reconciler's replay a lost response, a late original a slow network. A script
is a list of faults for one idempotency key, kept in the database so that every process
sharing it (approvers, the reconciler) meets the same schedule; each request takes the next
step, and a key whose script is used up behaves normally again.

========================  ==================================================================
fault                     what the request meets
========================  ==================================================================
``ok``                    the provider, working normally
``lost_response``         handled normally, but the response is lost (a timeout)
``outage``                a 503 before the request is looked at: nothing is applied
``decline``               a definitive refusal, stored under the key like any answer (if
                          the key already holds one, that answer: it never changes)
``slow``                  the request reaches the provider only after ``slow_seconds``
``duplicate``             delivered twice (a network-level retry): the second is answered
                          from what the first stored, and counted as a request
========================  ==================================================================

The sandboxes' own semantics are untouched: one answer per key, counted requests, lookups
(which no script affects). A sandbox reads scripts only once ``follow`` or ``script`` was
called on it: otherwise a request costs no extra query.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar, get_args

from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import SqlDatabase

Fault = Literal["ok", "lost_response", "outage", "decline", "slow", "duplicate"]
FAULTS: tuple[Fault, ...] = get_args(Fault)
T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sandbox_fault_scripts ("
    " provider TEXT NOT NULL, idempotency_key TEXT NOT NULL, step INTEGER NOT NULL,"
    " fault TEXT NOT NULL, taken INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (provider, idempotency_key, step))"
)


class ScriptedFaults:
    """One sandbox's scripts, by idempotency key."""

    def __init__(self, db: SqlDatabase, provider: str, *, slow_seconds: float = 0.02) -> None:
        self.db = db
        self.provider = provider
        self.slow_seconds = slow_seconds
        self.following = False
        # Once per handle: both sandboxes keep their scripts in this one table.
        ensure_tables(db, "sandbox_fault_scripts", [_SCHEMA])

    def follow(self) -> None:
        """Read scripts from now on (each process that should meet them calls this)."""
        self.following = True

    def script(self, key: str, faults: Sequence[Fault]) -> None:
        """Append ``faults`` to what the next requests under ``key`` meet."""
        unknown = sorted(set(faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown faults {unknown}; known: {', '.join(FAULTS)}")
        self.follow()
        with self.db.transaction() as cursor:
            row = cursor.execute(
                "SELECT COALESCE(MAX(step), 0) FROM sandbox_fault_scripts"
                " WHERE provider = ? AND idempotency_key = ?",
                (self.provider, key),
            ).fetchone()
            first = int(row[0]) + 1 if row else 1
            cursor.executemany(
                "INSERT INTO sandbox_fault_scripts (provider, idempotency_key, step, fault)"
                " VALUES (?, ?, ?, ?)",
                [(self.provider, key, first + n, fault) for n, fault in enumerate(faults)],
            )

    def taken(self) -> list[tuple[str, Fault]]:
        """Every step a request met so far, as (key, fault), in order per key."""
        with self.db.transaction() as cursor:
            rows = cursor.execute(
                "SELECT idempotency_key, fault FROM sandbox_fault_scripts"
                " WHERE provider = ? AND taken = 1 ORDER BY idempotency_key, step",
                (self.provider,),
            ).fetchall()
        return [(str(key), _fault(str(fault))) for key, fault in rows]

    def _next(self, key: str) -> Fault | None:
        """Take the key's next step, in its own transaction: concurrent requests under one
        key each take their own (PostgreSQL skips a step another request holds)."""
        skip_locked = " FOR UPDATE SKIP LOCKED" if self.db.is_postgres else ""
        with self.db.transaction() as cursor:
            row = cursor.execute(
                "SELECT step, fault FROM sandbox_fault_scripts"
                " WHERE provider = ? AND idempotency_key = ? AND taken = 0"
                " ORDER BY step LIMIT 1" + skip_locked,
                (self.provider, key),
            ).fetchone()
            if row is None:
                return None
            cursor.execute(
                "UPDATE sandbox_fault_scripts SET taken = 1"
                " WHERE provider = ? AND idempotency_key = ? AND step = ?",
                (self.provider, key, row[0]),
            )
        return _fault(str(row[1]))

    def around(
        self,
        key: str,
        request: Callable[[bool], T],
        *,
        unavailable: Callable[[str], Exception],
        lost: Callable[[str], Exception],
    ) -> T:
        """Handle one request under ``key`` (``request(declined)``) as its next step says."""
        fault = self._next(key) if self.following else None
        if fault == "outage":
            raise unavailable("503 Service Unavailable: nothing was applied")
        if fault == "slow":
            time.sleep(self.slow_seconds)
        answer = request(fault == "decline")
        if fault == "duplicate":
            answer = request(False)
        if fault == "lost_response":
            raise lost("read timed out")
        return answer


def _fault(value: str) -> Fault:
    return next(f for f in FAULTS if f == value)
