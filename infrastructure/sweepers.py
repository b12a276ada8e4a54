"""The sweepers ``countersign worker`` runs on a schedule: one pass of each, then a pause.

* reconcile: settle uncertain external effects under their original idempotency keys;
* expire: record Expired for pending proposals past their expiry;
* notify: deliver the notification outbox (webhooks and e-mail, ``countersign notify run``).

Each is safe to run in several processes at once (every change is a decision whose commit
checks what it read), so a second worker during a deploy does no harm. A sweeper that fails
is logged with a correlation id and tried again at the next pass; the others still run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from countersign.application.errors import new_correlation_id
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications.webhooks import notification_sender

log = logging.getLogger("countersign.worker")


@dataclass(frozen=True)
class Sweeper:
    """One sweeper: its name, the verb for what it did, and one pass (how many it did)."""

    name: str
    verb: str
    run: Callable[[], int]


def sweepers(cs: Countersign) -> list[Sweeper]:
    """The sweepers of this countersign, in the order a pass runs them."""
    sender = notification_sender(cs)
    return [
        Sweeper("reconcile", "settled", lambda: len(cs.proposals.reconcile())),
        Sweeper("expire", "expired", lambda: len(cs.proposals.expire_due())),
        # The outbox: notifications of what the passes above (and every approval) recorded.
        Sweeper("notify", "delivered", lambda: sender.run_once().delivered),
    ]


@dataclass
class PassReport:
    """What one pass did: each sweeper's count, the ones that failed, how long it took."""

    number: int
    done: dict[str, int]
    failed: list[str]
    seconds: float


@dataclass
class Totals:
    """Everything the schedule did since it started."""

    passes: int = 0
    done: dict[str, int] = field(default_factory=dict)
    failures: int = 0


def run_pass(sweepers: list[Sweeper], number: int) -> PassReport:
    started = time.perf_counter()
    done: dict[str, int] = {}
    failed: list[str] = []
    for sweeper in sweepers:
        try:
            done[sweeper.name] = sweeper.run()
        except Exception:
            correlation_id = new_correlation_id()
            log.exception("%s pass failed, correlation id %s", sweeper.name, correlation_id)
            failed.append(sweeper.name)
    return PassReport(number, done, failed, time.perf_counter() - started)


def run_schedule(
    sweepers: list[Sweeper],
    stop: threading.Event,
    interval: float,
    on_pass: Callable[[PassReport], None] = lambda report: None,
    once: bool = False,
) -> Totals:
    """A pass of every sweeper, then ``interval`` seconds' pause, until ``stop`` is set (a
    pass under way finishes first: each of its steps is a decision that commits or not)."""
    totals = Totals(done={sweeper.name: 0 for sweeper in sweepers})
    while not stop.is_set():
        report = run_pass(sweepers, totals.passes + 1)
        totals.passes += 1
        totals.failures += len(report.failed)
        for name, count in report.done.items():
            totals.done[name] += count
        on_pass(report)
        if once:
            break
        stop.wait(interval)
    return totals
