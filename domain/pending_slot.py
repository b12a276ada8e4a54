"""Supersession's index: the pending proposal for each thing a proposal can be about.

A new proposal for the same organization, operation and resource (narrowed by the contract's
``subject`` where one resource holds many independent things: the roster's members, an
order's discounts) supersedes the pending one. Finding that one must be exact under
concurrency, so it is not a read model: it is this small aggregate, one per organization and
resource, read and written in the same commit as the new ``Proposed`` and the old one's
``Superseded``. Two proposals frozen at once for the same resource both write it, so one of
them decides again (and supersedes the other, if it is about the same thing).

An execution that makes other operations' previews stale reads the slot of its resource (it
exists: the proposal being executed was frozen through it) and supersedes every proposal of
those operations it holds that is still pending.

The slot forgets what can no longer be pending: each hold (version 2 of ``Held``) records its
proposal's expiry and the application's time of the hold, and once the slot holds
``FORGET_FROM`` subjects of the operation, drops those whose proposal expired by then. So it
holds the proposals still inside their lifetime and a few more, not every subject ever
proposed (a roster's every e-mail: an agent token adding a new one each request grew it
without end). An expired proposal is never approved (the approve path checks
its expiry), so one the expiry sweeper has not reached yet is not superseded by a newer one:
it expires. Subjects held by version 1, which recorded no expiry, stay until held again.
"""

from __future__ import annotations

from datetime import datetime
from math import ceil, floor
from typing import Any
from uuid import UUID

from countersign.domain.club.ids import stable_id
from eventsourcing.domain import Aggregate, event


class PendingSlot(Aggregate):
    """The latest proposal frozen for each operation and subject of one resource; whether it
    is still pending is the proposal's own state.

    Version 2 adds ``until`` (operation kind -> subject -> the held proposal's expiry, in
    Unix seconds)."""

    class_version = 2

    @staticmethod
    def create_id(organization_id: UUID, resource_id: UUID) -> UUID:
        return stable_id("pending-slot", organization_id, resource_id)

    @event("Opened")
    def __init__(self, organization_id: UUID, resource_id: UUID) -> None:
        self.organization_id = organization_id
        self.resource_id = resource_id
        #: operation kind -> subject -> the latest proposal's id
        self.latest: dict[str, dict[str, UUID]] = {}
        #: operation kind -> subject -> when the latest proposal expires, in Unix seconds (if
        #: its hold said)
        self.until: dict[str, dict[str, int]] = {}

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A version 1 snapshot knew no expiries: its subjects stay until held again."""
        state["until"] = {}

    def latest_for(self, kind: str, subject: str) -> UUID | None:
        return self.latest.get(kind, {}).get(subject)

    def latest_of(self, kind: str) -> list[UUID]:
        """The latest proposal of ``kind`` for each subject."""
        return list(self.latest.get(kind, {}).values())

    def hold(
        self,
        kind: str,
        subject: str,
        proposal_id: UUID,
        *,
        expires_at: datetime | None = None,
        at: datetime | None = None,
    ) -> None:
        """``proposal_id`` is now the latest proposal of ``kind`` for ``subject``; it expires at
        ``expires_at``; as of ``at`` (the application's time, the clock ``expires_at`` was
        reckoned by) the subjects of ``kind`` whose proposal has expired are forgotten, once
        there are ``FORGET_FROM`` of them."""
        self.trigger_event(
            self.Held,
            kind=kind,
            subject=subject,
            proposal_id=proposal_id,
            # Whole seconds, rounded so that nothing is forgotten before it expires: an
            # integer is written and compared for a fraction of a time's cost.
            expires_s=None if expires_at is None else ceil(expires_at.timestamp()),
            # Only once there is something to forget: a slot of a few subjects (a form's
            # drafts, an order's refund) is written with no time of its own.
            at_s=None
            if at is None or len(self.until.get(kind, ())) < FORGET_FROM
            else floor(at.timestamp()),
        )

    class Held(Aggregate.Event):
        """Version 2 records the proposal's expiry (``expires_s``) and, once the slot holds
        ``FORGET_FROM`` subjects of the operation, the application's time of the hold
        (``at_s``), both in Unix seconds, by which it forgets those expired; None in version
        1's."""

        class_version = 2
        kind: str
        subject: str
        proposal_id: UUID
        expires_s: int | None
        at_s: int | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["expires_s"] = None
            state["at_s"] = None

        def apply(self, aggregate: PendingSlot) -> None:
            kind, subject, expires_s = self.kind, self.subject, self.expires_s
            latest, until = aggregate.latest, aggregate.until
            subjects = latest.get(kind, {})
            expiries = until.get(kind, {})
            at_s = self.at_s
            if at_s is not None and len(expiries) >= FORGET_FROM:
                gone = [held for held, expiry in expiries.items() if expiry <= at_s]
                if gone:
                    subjects = _without(subjects, gone)
                    expiries = _without(expiries, gone)
            aggregate.latest = {**latest, kind: {**subjects, subject: self.proposal_id}}
            if expires_s is not None:
                aggregate.until = {**until, kind: {**expiries, subject: expires_s}}
            elif subject in expiries:  # held again with no expiry: none is known
                aggregate.until = {**until, kind: _without(expiries, [subject])}
            elif expiries is not until.get(kind, expiries):
                aggregate.until = {**until, kind: expiries}


#: A slot forgets expired subjects of an operation once it holds this many of it: a few
#: (one form's drafts, one order's refund) cost no scan at each hold, and a roster's slot
#: never holds more than this many beyond the proposals still inside their lifetime.
FORGET_FROM = 16


def _without(mapping: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """A copy of ``mapping`` without ``keys`` (a new dictionary: the aggregate's are shared
    with its frozen copies)."""
    left = dict(mapping)
    for key in keys:
        left.pop(key, None)
    return left
