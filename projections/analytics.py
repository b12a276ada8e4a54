"""Analytics: one fact row per proposal, one row per approval, and daily roll-ups. Documented
in docs/analytics.md (tests/test_analytics_docs.py keeps every column documented)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from countersign.domain.approval_policy import ApprovalPolicy
from countersign.projections.base import (
    Column,
    Projection,
    Rows,
    Table,
    aggregate_id,
    approvals_required,
    event_time,
    handles,
    id_text,
)

ORGANIZATIONS = "analytics_organizations"
FACTS = "proposal_facts"
APPROVALS = "proposal_approvals"
DAILY = "daily_outcomes"


class Analytics(Projection):
    """Tables for analysts: facts per proposal, roll-ups per day, organization and outcome.

    A batch's moves in and out of the daily roll-ups are summed per roll-up row as its events
    are handled and written once, at the batch's end (``end_batch``): a lifecycle moves its
    proposal from roll-up to roll-up at every step, and most of those moves cancel out within
    a batch (proposed, then executing, then succeeded, the same day). The rows written are
    those the moves one by one would leave."""

    name = "analytics"
    # supersession, quorum approvals, revisions, policies; lapsed approvals; why superseded
    version = 4
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
                Column("approvals_count", "int"),
                Column("approvals_lapsed", "int"),
                Column("approvals_required", "int"),
                Column("policy_applied", "bool"),
                Column("revision_of"),
                Column("superseded_by"),
                Column("superseded_at", "time"),
                Column("superseded_reason"),
            ),
            key=("proposal_id",),
            indexes=(("organization_id", "proposed_day"), ("operation", "outcome")),
        ),
        Table(
            APPROVALS,
            (
                Column("proposal_id"),
                Column("ordinal", "int"),
                Column("organization_id"),
                Column("operation"),
                Column("approver"),
                Column("approved_at", "time"),
                Column("seconds_since_proposed", "real"),
                Column("seconds_since_previous", "real"),
            ),
            key=("proposal_id", "ordinal"),
            indexes=(("organization_id", "approved_at"), ("approver",)),
            append_only=True,
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

    #: The batch (its rows) whose roll-up moves are being summed, and per roll-up row the
    #: proposals and cents moved in (negative: out) so far.
    _moves: tuple[Rows, dict[tuple[str, ...], list[int]]] | None = None

    @handles("Organization.Registered")
    def registered(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            ORGANIZATIONS,
            {"organization_id": aggregate_id(event), "slug": event.slug, "name": event.name},
        )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        at = event_time(event)
        amount = event.preview.get("amount_cents")
        policy = getattr(event, "policy", None)  # None in events stored before policies
        revision_of = getattr(event, "revision_of", None)
        fact = {
            "proposal_id": aggregate_id(event),
            "organization_id": id_text(event.organization_id),
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
            "approvals_count": 0,
            "approvals_lapsed": 0,
            "approvals_required": approvals_required(policy),
            "policy_applied": policy_applied(policy),
            "revision_of": None if revision_of is None else str(revision_of),
            "superseded_by": None,
            "superseded_at": None,
            "superseded_reason": None,
        }
        rows.put(FACTS, fact)
        self._count(rows, fact, +1)

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        """Every approval is a row of ``proposal_approvals``; the one that completes the
        quorum is the proposal's decision (an earlier one leaves it pending)."""
        key = (aggregate_id(event),)
        fact = rows.get(FACTS, key)
        if fact is None:
            return
        at = event_time(event)
        ordinal = fact["approvals_count"] + 1
        previous = rows.get(APPROVALS, (*key, ordinal - 1)) if ordinal > 1 else None
        rows.put(
            APPROVALS,
            {
                "proposal_id": key[0],
                "ordinal": ordinal,
                "organization_id": fact["organization_id"],
                "operation": fact["operation"],
                "approver": event.approved_by,
                "approved_at": at,
                "seconds_since_proposed": _seconds(fact["proposed_at"], at),
                "seconds_since_previous": (
                    None if previous is None else _seconds(previous["approved_at"], at)
                ),
            },
        )
        rows.update(FACTS, key, approvals_count=ordinal)
        if ordinal - (fact["approvals_lapsed"] or 0) >= fact["approvals_required"]:
            self._decide(event, rows, "approved", event.approved_by)

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        """An earlier approval stopped counting: its row stays; the quorum needs one more."""
        key = (aggregate_id(event),)
        fact = rows.get(FACTS, key)
        if fact is not None:
            rows.update(FACTS, key, approvals_lapsed=(fact["approvals_lapsed"] or 0) + 1)

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        key = (aggregate_id(event),)
        rows.update(
            FACTS,
            key,
            superseded_by=str(event.by),
            superseded_at=event_time(event),
            superseded_reason=event.reason,  # None: recorded before reasons were
        )
        self._settle(event, rows, status="superseded", outcome="superseded")

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
        key = (aggregate_id(event),)
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
        key = (aggregate_id(event),)
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
            seconds_to_decision=_seconds(fact["proposed_at"], at),
        )

    def _settle(
        self,
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
            key = (aggregate_id(event),)
            fact = rows.get(FACTS, key)
        if fact is None:
            return
        self._count(rows, fact, -1)
        changes: dict[str, Any] = {"status": status, "outcome": outcome}
        if executed:
            changes["executed_at"] = event_time(event)
        if revision_reason is not None:
            changes["revision_reason"] = revision_reason
        settled = rows.update(FACTS, key, **changes)
        assert settled is not None  # it was just read
        self._count(rows, settled, +1)

    def _count(self, rows: Rows, fact: Mapping[str, Any], delta: int) -> None:
        """Move one proposal in or out of its day's roll-up for its current outcome: summed
        for the batch of ``rows``, written by ``end_batch``."""
        moves = self._moves
        if moves is None or moves[0] is not rows:  # a new batch (or one that failed)
            moves = self._moves = (rows, {})
        key = (fact["proposed_day"], fact["organization_id"], fact["operation"], fact["outcome"])
        amount = delta * (fact["amount_cents"] or 0)
        summed = moves[1].get(key)
        if summed is None:
            moves[1][key] = [delta, amount]
        else:
            summed[0] += delta
            summed[1] += amount

    def end_batch(self, rows: Rows) -> None:
        moves, self._moves = self._moves, None
        if moves is None or moves[0] is not rows:
            return
        for key, (delta, amount) in moves[1].items():
            if delta or amount:
                _roll_up(rows, key, delta, amount)


def _seconds(since: datetime, until: datetime) -> float:
    return round((until - since).total_seconds(), 3)


def policy_applied(policy: Mapping[str, Any] | None) -> bool:
    """Whether the policy a proposal was frozen under covers it (its amount is above the
    rule's threshold, or the rule has none); False where no policy was set."""
    if policy is None:
        return False
    return ApprovalPolicy(**policy["rule"]).applies_to(policy.get("amount_cents"))


def _roll_up(rows: Rows, key: tuple[str, ...], delta: int, amount: int) -> None:
    """Add ``delta`` proposals and ``amount`` cents to a roll-up row (an empty one goes)."""
    current = rows.get(DAILY, key)
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
