"""Where a proposal is in its lifecycle, and why a pending one was retired.

Split from proposal.py (the aggregate) and re-exported there. Stored events and snapshots
hold these as their text (``"pending"``), never by topic (tests/test_proposal_topics.py).
"""

from __future__ import annotations

from datetime import datetime
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


# Each status by its own name, read once here. In Python 3.11 reading an attribute of an enum
# class goes through ``EnumType.__getattr__``'s hook (a call of ``type.__getattribute__``
# through a method wrapper: about 900 instructions under callgrind, where a module's global
# takes a few dozen); the aggregate's commands and events and the approve path read these.
PENDING = ProposalStatus.PENDING
EXECUTING = ProposalStatus.EXECUTING
RECONCILING = ProposalStatus.RECONCILING
SUCCEEDED = ProposalStatus.SUCCEEDED
REVISION_REQUIRED = ProposalStatus.REVISION_REQUIRED
FAILED = ProposalStatus.FAILED
DECLINED = ProposalStatus.DECLINED
EXPIRED = ProposalStatus.EXPIRED
SUPERSEDED = ProposalStatus.SUPERSEDED


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


def status_at(status: str, expires_at: datetime | None, now: datetime) -> str:
    """The status a reader is told at ``now``: a pending proposal past its expiry is
    ``expired`` (nobody can approve or decline it now), though its stream records Expired
    only when the sweeper, or an approve or decline sent to it, gets there. Every surface
    (the pages, the API's card and status, MCP, the command line) reads it so; reading it
    writes nothing."""
    if status == PENDING and expires_at is not None and now >= expires_at:
        return str(EXPIRED)
    return str(status)
