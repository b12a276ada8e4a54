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
"""

from __future__ import annotations

from uuid import UUID

from countersign.domain.club.ids import stable_id
from eventsourcing.domain import Aggregate, event


class PendingSlot(Aggregate):
    """The latest proposal frozen for each operation and subject of one resource; whether it
    is still pending is the proposal's own state."""

    @staticmethod
    def create_id(organization_id: UUID, resource_id: UUID) -> UUID:
        return stable_id("pending-slot", organization_id, resource_id)

    @event("Opened")
    def __init__(self, organization_id: UUID, resource_id: UUID) -> None:
        self.organization_id = organization_id
        self.resource_id = resource_id
        #: operation kind -> subject -> the latest proposal's id
        self.latest: dict[str, dict[str, UUID]] = {}

    def latest_for(self, kind: str, subject: str) -> UUID | None:
        return self.latest.get(kind, {}).get(subject)

    def latest_of(self, kind: str) -> list[UUID]:
        """The latest proposal of ``kind`` for each subject."""
        return list(self.latest.get(kind, {}).values())

    def hold(self, kind: str, subject: str, proposal_id: UUID) -> None:
        """``proposal_id`` is now the latest proposal of ``kind`` for ``subject``."""
        self.trigger_event(self.Held, kind=kind, subject=subject, proposal_id=proposal_id)

    class Held(Aggregate.Event):
        kind: str
        subject: str
        proposal_id: UUID

        def apply(self, aggregate: PendingSlot) -> None:
            latest = aggregate.latest
            aggregate.latest = {
                **latest,
                self.kind: {**latest.get(self.kind, {}), self.subject: self.proposal_id},
            }
