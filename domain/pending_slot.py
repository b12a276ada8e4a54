"""Supersession's index: the pending proposal for each thing a proposal can be about.

A new proposal for the same organization, operation and resource (narrowed by the contract's
``subject`` where one resource holds many independent things: the roster's members, an
order's discounts) supersedes the pending one. Finding that one must be exact under
concurrency, so it is not a read model: it is this small aggregate, one per organization,
operation and resource, read and written in the same commit as the new ``Proposed`` and the
old one's ``Superseded``. Two proposals frozen at once for the same thing both write it, so
one of them decides again and supersedes the other.

An execution that makes other operations' previews stale reads their slots on the same
resource and supersedes every proposal they hold that is still pending.
"""

from __future__ import annotations

from uuid import UUID

from countersign.domain.club.ids import stable_id
from eventsourcing.domain import Aggregate, event


class PendingSlot(Aggregate):
    """The latest proposal frozen for each subject of one (organization, operation,
    resource); whether it is still pending is the proposal's own state."""

    @staticmethod
    def create_id(organization_id: UUID, kind: str, resource_id: UUID) -> UUID:
        return stable_id("pending-slot", organization_id, kind, resource_id)

    @event("Opened")
    def __init__(self, organization_id: UUID, kind: str, resource_id: UUID) -> None:
        self.organization_id = organization_id
        self.kind = kind
        self.resource_id = resource_id
        self.latest: dict[str, UUID] = {}

    def latest_for(self, subject: str) -> UUID | None:
        return self.latest.get(subject)

    def hold(self, subject: str, proposal_id: UUID) -> None:
        """``proposal_id`` is now the latest proposal for ``subject``."""
        self._held(subject=subject, proposal_id=proposal_id)

    @event("Held")
    def _held(self, subject: str, proposal_id: UUID) -> None:
        self.latest = {**self.latest, subject: proposal_id}
