"""Open work for the operators' sweepers: proposals that may still need expiry or reconciling.

A proposal leaves this table as soon as it has a final outcome, so the expiry sweeper and the
reconciler read a handful of rows instead of scanning the whole log. A superseded proposal has
one (nothing can approve it, so nothing needs to expire it); a proposal with some of the
approvals its quorum needs is still pending, and still expires if the rest never come.
"""

from __future__ import annotations

from typing import Any

from countersign.projections.base import (
    Column,
    Projection,
    Rows,
    Table,
    aggregate_id,
    handles,
)

OPEN = "open_proposals"


class OpenWork(Projection):
    """Pending, executing and reconciling proposals, with the times the sweepers need."""

    name = "open_work"
    version = 2  # superseded proposals leave
    tables = (
        Table(
            OPEN,
            (
                Column("proposal_id"),
                Column("status"),
                Column("expires_at", "time"),
                Column("claimed_at", "time"),
            ),
            key=("proposal_id",),
            indexes=(("status", "expires_at"), ("status", "claimed_at")),
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            OPEN,
            {
                "proposal_id": aggregate_id(event),
                "status": "pending",
                "expires_at": event.expires_at,
                "claimed_at": None,
            },
        )

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(OPEN, (aggregate_id(event),), status="executing", claimed_at=event.claimed_at)

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(OPEN, (aggregate_id(event),), status="reconciling")

    @handles(
        "Proposal.Succeeded",
        "Proposal.RevisionRequired",
        "Proposal.Failed",
        "Proposal.Declined",
        "Proposal.Expired",
        "Proposal.Superseded",
    )
    def closed(self, event: Any, position: int, rows: Rows) -> None:
        rows.delete(OPEN, (aggregate_id(event),))
