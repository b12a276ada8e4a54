"""How an approved external effect's settlement stands, for the people waiting on it: since
when it waits, and whether anything is settling it.

A lost provider answer (``Reconciling``), or a claim whose process died before recording
one, is settled by the reconciler: the ``reconcile`` sweeper of ``countersign worker``, or of
``countersign serve`` on the embedded database. It takes a reconciling proposal at its next
pass, and an executing one once the lease has passed, so by the lease plus one pass after
the claim a running reconciler has had its chance. Past that the proposal is *overdue*:
either the provider has still not answered (the reconciler runs and asks again at every
pass), or no reconciler runs and an operator must start one. The sweepers' schedules record
their passes (``SweeperPasses``), which tells the two apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from countersign.application.ports import SweeperPass

RECONCILE = "reconcile"
"""The reconciler's name among the sweepers."""
DEFAULT_EVERY = timedelta(seconds=10)
"""How often a schedule runs a pass when none has said (``countersign worker``'s default)."""
ALIVE_GRACE = timedelta(seconds=60)
"""How late a schedule's next pass may be (a long pass, a slow provider) before it no longer
counts as running: two of its intervals, and this."""


@dataclass(frozen=True)
class Settling:
    """An executing or reconciling proposal's wait for its provider's answer."""

    since: datetime
    """When it was claimed: the approval that ran it."""
    waited: timedelta
    overdue: bool
    """Past the lease plus one reconciler pass: a running reconciler would have settled it,
    unless the provider itself has not answered."""
    reconciler_running: bool
    """Whether a reconciler's pass was recorded recently, in any process."""
    every: timedelta
    """How often the reconciler passes (its schedule's interval)."""

    @property
    def unattended(self) -> bool:
        """Overdue, and nothing is settling it: an operator must start the worker."""
        return self.overdue and not self.reconciler_running


def settling_of(
    claimed_at: datetime, now: datetime, lease: timedelta, last_pass: SweeperPass | None
) -> Settling:
    """How a claim made at ``claimed_at`` stands at ``now``, given the reconciler's latest
    recorded pass (None: no reconciler ever recorded one)."""
    every = last_pass.every if last_pass is not None else DEFAULT_EVERY
    running = last_pass is not None and now - last_pass.finished_at <= 2 * every + ALIVE_GRACE
    return Settling(
        since=claimed_at,
        waited=max(now - claimed_at, timedelta(0)),
        overdue=now >= overdue_at(claimed_at, lease, every),
        reconciler_running=running,
        every=every,
    )


def overdue_at(claimed_at: datetime, lease: timedelta, every: timedelta) -> datetime:
    """When a claim made at ``claimed_at`` becomes overdue: the lease and one pass later."""
    return claimed_at + lease + every
