"""Analytics: one fact row per proposal and daily roll-ups. Documented in docs/analytics.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countersign.projections.base import Column, Projection, Rows, Table, event_time, handles

ORGANIZATIONS = "analytics_organizations"
FACTS = "proposal_facts"
DAILY = "daily_outcomes"


class Analytics(Projection):
    """Tables for analysts: facts per proposal, roll-ups per day, organization and outcome."""

    name = "analytics"
    tables = (
        Table(
            ORGANIZATIONS,
            (Column("organization_id"), Column("slug"), Column("name")),
            key=("organization_id",),
        ),
        Table(
            FACTS,
            (
                Column("proposal_id"),
                Column("organization_id"),
                Column("operation"),
                Column("section"),
                Column("requested_by"),
                Column("proposed_at", "time"),
                Column("proposed_day"),
                Column("decided_at", "time"),
                Column("decided_by"),
                Column("decision"),
                Column("seconds_to_decision", "real"),
                Column("executed_at", "time"),
                Column("status"),
                Column("outcome"),
                Column("revision_reason"),
                Column("amount_cents", "int"),
                Column("currency"),
            ),
            key=("proposal_id",),
            indexes=(("organization_id", "proposed_day"), ("operation", "outcome")),
        ),
        Table(
            DAILY,
            (
                Column("day"),
                Column("organization_id"),
                Column("operation"),
                Column("outcome"),
                Column("proposals", "int"),
                Column("amount_cents", "int"),
            ),
            key=("day", "organization_id", "operation", "outcome"),
        ),
    )

    @handles("Organization.Registered")
    def registered(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            ORGANIZATIONS,
            {"organization_id": str(event.originator_id), "slug": event.slug, "name": event.name},
        )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        at = event_time(event)
        amount = event.preview.get("amount_cents")
        fact = {
            "proposal_id": str(event.originator_id),
            "organization_id": str(event.organization_id),
            "operation": event.kind,
            "section": event.section,
            "requested_by": event.requested_by,
            "proposed_at": at,
            "proposed_day": at.date().isoformat(),
            "decided_at": None,
            "decided_by": None,
            "decision": None,
            "seconds_to_decision": None,
            "executed_at": None,
            "status": "pending",
            "outcome": "pending",
            "revision_reason": None,
            "amount_cents": amount if isinstance(amount, int) else None,
            "currency": event.preview.get("currency"),
        }
        rows.put(FACTS, fact)
        _count(rows, fact, +1)

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        self._decide(event, rows, "approved", event.approved_by)

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        self._decide(event, rows, "declined", event.declined_by)
        self._settle(event, rows, status="declined", outcome="declined")

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        self._decide(event, rows, "expired", None)
        self._settle(event, rows, status="expired", outcome="expired")

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event, rows, status="executing", outcome="executing")

    @handles("Proposal.Succeeded")
    def succeeded(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event, rows, status="succeeded", outcome="succeeded", executed=True)

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event, rows, status="reconciling", outcome="needs_reconciliation")

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event, rows, status="failed", outcome="terminal_failure")

    @handles("Proposal.RevisionRequired")
    def revision_required(self, event: Any, position: int, rows: Rows) -> None:
        key = (str(event.originator_id),)
        fact = rows.get(FACTS, key)
        if fact is None:
            return
        code = event.outcome["reason"]["code"]
        if fact["status"] == "declined":
            rows.update(FACTS, key, revision_reason=code)
            return
        self._settle(
            event,
            rows,
            status="revision_required",
            outcome="revision_required",
            revision_reason=code,
            key=key,
            fact=fact,
        )

    @staticmethod
    def _decide(event: Any, rows: Rows, decision: str, by: str | None) -> None:
        key = (str(event.originator_id),)
        fact = rows.get(FACTS, key)
        if fact is None:
            return
        at = event_time(event)
        rows.update(
            FACTS,
            key,
            decided_at=at,
            decided_by=by,
            decision=decision,
            seconds_to_decision=round((at - fact["proposed_at"]).total_seconds(), 3),
        )

    @staticmethod
    def _settle(
        event: Any,
        rows: Rows,
        *,
        status: str,
        outcome: str,
        executed: bool = False,
        revision_reason: str | None = None,
        key: tuple[str] | None = None,
        fact: Mapping[str, Any] | None = None,
    ) -> None:
        """Move the proposal to a new status and outcome (and its roll-up with it)."""
        if key is None:
            key = (str(event.originator_id),)
            fact = rows.get(FACTS, key)
        if fact is None:
            return
        _count(rows, fact, -1)
        changes: dict[str, Any] = {"status": status, "outcome": outcome}
        if executed:
            changes["executed_at"] = event_time(event)
        if revision_reason is not None:
            changes["revision_reason"] = revision_reason
        settled = rows.update(FACTS, key, **changes)
        assert settled is not None  # it was just read
        _count(rows, settled, +1)


def _count(rows: Rows, fact: Mapping[str, Any], delta: int) -> None:
    """Move one proposal in or out of its day's roll-up for its current outcome."""
    key = (fact["proposed_day"], fact["organization_id"], fact["operation"], fact["outcome"])
    current = rows.get(DAILY, key)
    amount = delta * (fact["amount_cents"] or 0)
    if current is None:
        proposals, amount_cents = delta, amount
    else:
        proposals, amount_cents = current["proposals"] + delta, current["amount_cents"] + amount
    if proposals == 0:
        rows.delete(DAILY, key)
    elif current is None:
        rows.put(
            DAILY,
            {
                "day": key[0],
                "organization_id": key[1],
                "operation": key[2],
                "outcome": key[3],
                "proposals": proposals,
                "amount_cents": amount_cents,
            },
        )
    else:
        rows.update(DAILY, key, proposals=proposals, amount_cents=amount_cents)
