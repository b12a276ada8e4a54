"""Where a proposal is in its lifecycle, and why a pending one was retired.

Split from proposal.py (the aggregate) and re-exported there. Stored events and snapshots
hold these as their text (``"pending"``), never by topic (tests/test_proposal_topics.py).
"""

from __future__ import annotations

from enum import StrEnum


class ProposalStatus(StrEnum):
    """Where a proposal is in its lifecycle."""

    PENDING = "pending"
    EXECUTING = "executing"
    RECONCILING = "reconciling"
    SUCCEEDED = "succeeded"
    REVISION_REQUIRED = "revision_required"
    FAILED = "failed"
    DECLINED = "declined"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"


class SupersessionReason(StrEnum):
    """Why a pending proposal was retired (``Superseded.reason``)."""

    REVISED = "revised"
    """An edit of it took its place (the new proposal's ``revision_of`` names it)."""
    REPLACED = "replaced"
    """A newer proposal for the same thing took its place."""
    WITHDRAWN = "withdrawn"
    """Another proposal was carried out and changed what this one relied on (a refund
    changed the order's balance a cancellation was computed from)."""


FINISHED = frozenset(
    {
        ProposalStatus.SUCCEEDED,
        ProposalStatus.REVISION_REQUIRED,
        ProposalStatus.FAILED,
        ProposalStatus.DECLINED,
        ProposalStatus.SUPERSEDED,
    }
)
