"""The organization's editable email broadcast form. Applying a draft never sends anything."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.ids import stable_id
from eventsourcing.domain import Aggregate, event


class BroadcastForm(Aggregate):
    """The editable broadcast form a manager finishes and sends through the ordinary interface."""

    @staticmethod
    def create_id(organization_id: UUID) -> UUID:
        return stable_id("broadcast-form", organization_id)

    @event("Opened")
    def __init__(self, organization_id: UUID) -> None:
        self.organization_id = organization_id
        self.filters: dict[str, Any] = {}
        self.subject = ""
        self.body = ""
        self.applied_from: str | None = None

    def apply_draft(
        self, filters: dict[str, Any], subject: str, body: str, proposal_id: UUID
    ) -> None:
        self._draft_applied(
            filters=filters, subject=subject, body=body, proposal_id=str(proposal_id)
        )

    @event("DraftApplied")
    def _draft_applied(
        self, filters: dict[str, Any], subject: str, body: str, proposal_id: str
    ) -> None:
        self.filters = filters
        self.subject = subject
        self.body = body
        self.applied_from = proposal_id
