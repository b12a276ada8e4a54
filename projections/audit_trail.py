"""The audit trail: one row per proposal lifecycle event, with actor, time and a safe summary."""

from __future__ import annotations

from typing import Any

from countersign.domain.handback import reason_text
from countersign.domain.messages import origin_source
from countersign.domain.outcomes import RevisionReason
from countersign.projections.base import Column, Projection, Rows, Table, event_time, handles

EVENTS = "audit_events"
PROPOSALS = "audit_proposals"
SYSTEM = "countersign"


class AuditTrail(Projection):
    """Who did what to which proposal, when; queryable per proposal, tenant, actor and time."""

    name = "audit_trail"
    tables = (
        Table(
            PROPOSALS,
            (Column("proposal_id"), Column("organization_id"), Column("operation")),
            key=("proposal_id",),
            append_only=True,
        ),
        Table(
            EVENTS,
            (
                Column("position", "int"),
                Column("proposal_id"),
                Column("version", "int"),
                Column("organization_id"),
                Column("operation"),
                Column("event_type"),
                Column("actor"),
                Column("at", "time"),
                Column("summary"),
                Column("chain"),
            ),
            key=("position",),
            indexes=(
                ("proposal_id", "version"),
                ("organization_id", "at"),
                ("actor", "at"),
                ("at",),
            ),
            append_only=True,
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            PROPOSALS,
            {
                "proposal_id": str(event.originator_id),
                "organization_id": str(event.organization_id),
                "operation": event.kind,
            },
        )
        summary = f"proposed {event.kind}"
        source = origin_source(getattr(event, "origin", None))  # absent before origins
        if source is not None:
            summary += f" through {source}"
        self._record(event, position, rows, event.requested_by, summary)

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        self._record(event, position, rows, event.approved_by, "approved")

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        self._record(event, position, rows, SYSTEM, f"claimed for execution ({event.attempt_id})")

    @handles("Proposal.Revalidated")
    def revalidated(self, event: Any, position: int, rows: Rows) -> None:
        checked = ", ".join(sorted(event.facts))
        self._record(event, position, rows, SYSTEM, f"revalidated against current state: {checked}")

    @handles("Proposal.Succeeded")
    def succeeded(self, event: Any, position: int, rows: Rows) -> None:
        self._record(event, position, rows, SYSTEM, "succeeded")

    @handles("Proposal.RevisionRequired")
    def revision_required(self, event: Any, position: int, rows: Rows) -> None:
        reason = RevisionReason.model_validate(event.outcome["reason"])
        summary = f"revision required ({reason.code}): {reason_text(reason)}"
        self._record(event, position, rows, SYSTEM, summary)

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        summary = "needs reconciliation: the provider's response was lost"
        self._record(event, position, rows, SYSTEM, summary)

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        summary = f"terminal failure {event.outcome['correlation_id']} ({event.error_class})"
        self._record(event, position, rows, SYSTEM, summary)

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        self._record(event, position, rows, event.declined_by, "declined")

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        self._record(event, position, rows, SYSTEM, "expired before approval")

    @staticmethod
    def _record(event: Any, position: int, rows: Rows, actor: str, summary: str) -> None:
        proposal_id = str(event.originator_id)
        proposal = rows.get(PROPOSALS, (proposal_id,))
        rows.put(
            EVENTS,
            {
                "position": position,
                "proposal_id": proposal_id,
                "version": event.originator_version,
                "organization_id": None if proposal is None else proposal["organization_id"],
                "operation": None if proposal is None else proposal["operation"],
                "event_type": type(event).__name__,
                "actor": actor,
                "at": event_time(event),
                "summary": summary,
                "chain": event.chain,
            },
        )
