"""Analytics: one fact row per proposal, one row per approval, and daily roll-ups. Documented
in docs/analytics.md (tests/test_analytics_docs.py keeps every column documented)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from operator import itemgetter
from typing import Any

from countersign.domain.approval_policy import ApprovalPolicy
from countersign.domain.outcomes import is_already_so
from countersign.projections.base import (
    Column,
    Projection,
    Rows,
    Table,
    aggregate_id,
    aggregate_text,
    approvals_required,
    event_time,
    handles,
    id_text,
    uuid_text,
    values_putter,
)

ORGANIZATIONS = "analytics_organizations"
FACTS = "proposal_facts"
APPROVALS = "proposal_approvals"
DAILY = "daily_outcomes"


class Analytics(Projection):
    """Tables for analysts: facts per proposal, roll-ups per day, organization and outcome.

    The daily roll-ups are written once a batch, at its end (``end_batch``): a lifecycle moves
    its proposal from roll-up row to roll-up row at every step (proposed, then executing, then
    succeeded, the same day), and those moves chain, so the batch remembers only the row each
    proposal it changes was in before (none for one it proposed) and moves it from there to
    the row it ends in. The rows written are those the moves one by one would leave."""

    name = "analytics"
    # supersession, quorum approvals, revisions, policies; lapsed approvals; why superseded;
    # 5: a revision required because what it asked for already holds (``already_so``)
    version = 5
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
                Column("already_so", "bool"),
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

    @handles("Organization.Registered")
    def registered(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            ORGANIZATIONS,
            {"organization_id": aggregate_id(event), "slug": event.slug, "name": event.name},
        )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        at = event.timestamp
        if at.tzinfo is not UTC:
            at = at.astimezone(UTC)
        preview = event.preview
        amount = preview.get("amount_cents")
        policy = getattr(event, "policy", None)  # None in events stored before policies
        revision_of = getattr(event, "revision_of", None)
        # A copy of the blank fact (every column in the table's order, those a new proposal
        # starts with set) with its own values set: a third cheaper than a 25-key literal,
        # as the cards are made (``browser_view``).
        uuid = event.originator_id
        fact = _NEW_FACT.copy()
        fact["proposal_id"] = aggregate_text(uuid)
        fact["organization_id"] = id_text(event.organization_id)
        fact["operation"] = event.kind
        fact["section"] = event.section
        fact["requested_by"] = event.requested_by
        fact["proposed_at"] = at
        fact["proposed_day"] = _day_text(at.date())
        fact["amount_cents"] = amount if isinstance(amount, int) else None
        fact["currency"] = preview.get("currency")
        fact["approvals_required"] = 1 if not policy else approvals_required(policy)
        fact["policy_applied"] = False if policy is None else policy_applied(policy)
        fact["revision_of"] = None if revision_of is None else uuid_text(revision_of)
        number = uuid.int
        batch = rows.batch.get(self) or self._batch_of(rows)
        batch.facts[number] = fact  # put at the batch's end (``end_batch``)
        batch.changed[number] = None  # in no roll-up row before

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        """Every approval is a row of ``proposal_approvals``; the one that completes the
        quorum is the proposal's decision (an earlier one leaves it pending)."""
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        fact = batch.facts.get(uuid.int) or batch.fact(uuid)
        if fact is None:
            return
        at = event.timestamp
        if at.tzinfo is not UTC:
            at = at.astimezone(UTC)
        ordinal = fact["approvals_count"] + 1
        approved_by = event.approved_by
        proposal_id = fact["proposal_id"]
        previous = rows.get(APPROVALS, (proposal_id, ordinal - 1)) if ordinal > 1 else None
        since_proposed = _seconds(fact["proposed_at"], at)
        # As its values in column order (``put_values``): an approval's row is put once and
        # seldom read back, so no dict is made of it (about 1,500 instructions a row less,
        # callgrind: analytics alone 62,667 -> about 62,400 an event).
        batch.put_values(
            APPROVALS,
            (
                proposal_id,
                ordinal,
                fact["organization_id"],
                fact["operation"],
                approved_by,  # approver
                at,  # approved_at
                since_proposed,  # seconds_since_proposed
                None if previous is None else _seconds(previous["approved_at"], at),
            ),
        )
        fact["approvals_count"] = ordinal
        if ordinal - (fact["approvals_lapsed"] or 0) >= fact["approvals_required"]:
            # the approval that completes the quorum: the proposal's decision
            fact["decided_at"] = at
            fact["decided_by"] = approved_by
            fact["decision"] = "approved"
            fact["seconds_to_decision"] = since_proposed

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        """An earlier approval stopped counting: its row stays; the quorum needs one more."""
        fact = (rows.batch.get(self) or self._batch_of(rows)).fact(event.originator_id)
        if fact is not None:
            fact["approvals_lapsed"] = (fact["approvals_lapsed"] or 0) + 1

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(
            event.originator_id,
            rows,
            "superseded",
            "superseded",
            superseded_by=uuid_text(event.by),
            superseded_at=event_time(event),
            superseded_reason=event.reason,  # None: recorded before reasons were
        )

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        self._decide(event, rows, "declined", event.declined_by)
        self._settle(event.originator_id, rows, "declined", "declined")

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        self._decide(event, rows, "expired", None)
        self._settle(event.originator_id, rows, "expired", "expired")

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event.originator_id, rows, "executing", "executing")

    @handles("Proposal.Succeeded")
    def succeeded(self, event: Any, position: int, rows: Rows) -> None:
        at = event.timestamp
        executed_at = at if at.tzinfo is UTC else at.astimezone(UTC)
        self._settle(event.originator_id, rows, "succeeded", "succeeded", executed_at=executed_at)

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event.originator_id, rows, "reconciling", "needs_reconciliation")

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        self._settle(event.originator_id, rows, "failed", "terminal_failure")

    @handles("Proposal.RevisionRequired")
    def revision_required(self, event: Any, position: int, rows: Rows) -> None:
        fact = (rows.batch.get(self) or self._batch_of(rows)).fact(event.originator_id)
        if fact is None:
            return
        code = event.outcome["reason"]["code"]
        if fact["status"] == "declined":
            fact["revision_reason"] = code
            return
        self._settle(
            event.originator_id,
            rows,
            "revision_required",
            "revision_required",
            revision_reason=code,
            already_so=is_already_so(event.outcome),
        )

    def _decide(self, event: Any, rows: Rows, decision: str, by: str | None) -> None:
        fact = (rows.batch.get(self) or self._batch_of(rows)).fact(event.originator_id)
        if fact is not None:
            at = event_time(event)
            fact["decided_at"] = at
            fact["decided_by"] = by
            fact["decision"] = decision
            fact["seconds_to_decision"] = _seconds(fact["proposed_at"], at)

    def _settle(self, uuid: Any, rows: Rows, status: str, outcome: str, **changes: Any) -> None:
        """Move the proposal ``uuid`` (the event's ``originator_id``, read at the handler's
        line: see ``base.aggregate_text``) to a new status and outcome (and so to another
        roll-up row), with ``changes`` to other columns."""
        batch = rows.batch.get(self) or self._batch_of(rows)
        number = uuid.int
        fact = batch.facts.get(number) or batch.fact(uuid)
        if fact is None:
            return
        changed = batch.changed
        if number not in changed:  # its first change in this batch: remember its roll-up row
            changed[number] = _roll_up_key(fact)
        fact["status"] = status
        fact["outcome"] = outcome
        if changes:
            fact.update(changes)

    def _batch_of(self, rows: Rows) -> _Batch:
        """What the batch of ``rows`` has changed so far (in ``rows.batch``)."""
        try:
            batch: _Batch = rows.batch[self]
        except KeyError:
            batch = rows.batch[self] = _Batch(rows)
        return batch

    def end_batch(self, rows: Rows) -> None:
        """Move each proposal the batch changed out of the roll-up row it was in before the
        batch and into the one it is in now, summed per roll-up row, and write those rows."""
        batch = rows.batch.pop(self, None)
        if batch is None:
            return
        put = batch.put_values
        for fact in batch.facts.values():
            if fact is not None:  # every fact the batch read it changed
                # As its values: a fact's keys are in column order (``proposed`` builds it
                # so, ``_Batch.fact`` reads it so, and handlers only set columns it has);
                # one with a key the table lacks makes 26 values, which are refused.
                put(FACTS, tuple(fact.values()))
        moves: dict[tuple[str, ...], list[int]] = {}
        facts = batch.facts
        for number, before in batch.changed.items():
            fact = facts[number]
            assert fact is not None  # a changed proposal's facts were read or put
            after = _roll_up_key(fact)
            if after == before:
                continue
            amount = fact["amount_cents"] or 0
            if before is not None:
                _move(moves, before, -1, -amount)
            _move(moves, after, +1, amount)
        for roll_up, (delta, amount) in moves.items():
            if delta or amount:
                _roll_up(rows, batch, roll_up, delta, amount)


class _Batch:
    """What analytics remembers during one batch of ``rows``: each proposal's facts it put or
    read (by their key; None: no such row), changed in place and put once, at the batch's
    end, in the order it first had them (``Analytics.end_batch``); per proposal it changed
    the roll-up row it was in before the batch (None: proposed in the batch); and how it
    puts rows as values (``values_putter``: asked once a batch, not once a row). Both are
    kept by the number of the proposal's UUID (``uuid.int``, the event's ``originator_id``),
    not by the id's text: a handler finds its facts with one lookup of an integer, where
    ``aggregate_text`` (a call, ``id()`` and a lookup) and a lookup by text cost about
    1,400 instructions more (callgrind); the text is the facts' ``proposal_id``.

    Why the facts are kept here: a lifecycle reads and changes its proposal's facts at
    nearly every event, and a ``rows.get`` and a ``rows.update`` with keywords (Python calls
    that check the columns, merge a dict of changes and hand out a read-only view) cost
    more than the change itself (``browser_view``'s cards are kept the same way). A row
    read from an earlier batch is a copy: the stored one is read-only."""

    __slots__ = ("changed", "facts", "put_values", "rows")

    def __init__(self, rows: Rows) -> None:
        self.rows = rows
        self.facts: dict[int, dict[str, Any] | None] = {}
        self.changed: dict[int, tuple[str, ...] | None] = {}
        self.put_values = values_putter(rows, Analytics.tables)

    def fact(self, uuid: Any) -> dict[str, Any] | None:
        """The facts of the proposal ``uuid`` (the event's ``originator_id``) as this batch
        has them, read first if an earlier batch wrote them; None if there are none.
        Handlers look in ``facts`` first (``facts.get(uuid.int) or fact(uuid)``): no call
        for a proposal the batch already has."""
        number = uuid.int
        found: dict[str, Any] | None = self.facts.get(number, _UNREAD)
        if found is _UNREAD:
            stored = self.rows.get(FACTS, (aggregate_text(uuid),))
            # A copy (the stored row is read-only), in column order: see ``end_batch``.
            found = self.facts[number] = (
                None if stored is None else dict(zip(_FACT_COLUMNS, _FACT_VALUES(stored)))  # noqa: B905
            )
        return found


_UNREAD: Any = object()
_FACT_COLUMNS = tuple(Analytics.tables[1].column_names())
#: A stored fact's values in column order (a ``KeyError`` for a column it lacks).
_FACT_VALUES = itemgetter(*_FACT_COLUMNS)
#: A new proposal's facts before ``Analytics.proposed`` sets its own: every column in the
#: table's order, None but for the status, outcome and counts every proposal starts with.
_NEW_FACT: dict[str, Any] = {
    **dict.fromkeys(_FACT_COLUMNS),
    "status": "pending",
    "outcome": "pending",
    "approvals_count": 0,
    "approvals_lapsed": 0,
    "already_so": False,
}


#: date -> its ``isoformat``, the day a proposal counts in (``proposed_day``): most proposals of
#: a log share their day with many others, and ``isoformat`` of a date costs about 3,700
#: instructions against 900 for ``date()`` and a lookup (callgrind). Emptied when full.
_DAYS: dict[date, str] = {}
_DAYS_MAX = 1024


def _day_text(day: date) -> str:
    """``day.isoformat()``, remembered for the days seen lately (``_DAYS``)."""
    text = _DAYS.get(day)
    if text is None:
        if len(_DAYS) >= _DAYS_MAX:
            _DAYS.clear()
        text = _DAYS[day] = day.isoformat()
    return text


def _roll_up_key(fact: Mapping[str, Any]) -> tuple[str, ...]:
    """The key of the roll-up row a proposal counts in: its day, organization, operation and
    current outcome."""
    return (fact["proposed_day"], fact["organization_id"], fact["operation"], fact["outcome"])


def _move(
    moves: dict[tuple[str, ...], list[int]], key: tuple[str, ...], delta: int, amount: int
) -> None:
    """Add ``delta`` proposals and ``amount`` cents to the batch's move of one roll-up row."""
    summed = moves.get(key)
    if summed is None:
        moves[key] = [delta, amount]
    else:
        summed[0] += delta
        summed[1] += amount


def _seconds(since: datetime, until: datetime) -> float:
    """``round((until - since).total_seconds(), 3)``, the very same float. Rounding a float to
    decimals converts it to decimal digits and back (half a microsecond, most of this
    function's time); counted in whole microseconds instead, the milliseconds round exactly as
    ``round`` rounds the float they make, unless the rest is half a millisecond (a tie, which
    the float may hold a hair above or below) or the time is beyond some 35 years (where the
    float's own precision nears a microsecond): those go through ``round``.
    ``tests/test_audit_analytics_rows.py`` compares the two."""
    delta = until - since
    micros = delta // _MICROSECOND  # exact: (days * 86,400 + seconds) * 10**6 + microseconds
    millis, rest = divmod(micros, 1_000)
    if rest == 500 or not 0 <= micros < _EXACT_MICROS:
        return round(delta.total_seconds(), 3)
    return (millis + (rest > 500)) / 1_000


#: ``timedelta // _MICROSECOND`` is a duration's whole microseconds, in C: three attribute
#: reads and the arithmetic in Python cost about 1,000 instructions more (callgrind).
_MICROSECOND = timedelta(microseconds=1)

#: Below this many microseconds (about 35 years), a float of seconds is within far less than a
#: microsecond of the exact value, so the float rounds as its exact microseconds do.
_EXACT_MICROS = 2**50


def policy_applied(policy: Mapping[str, Any] | None) -> bool:
    """Whether the policy a proposal was frozen under covers it (its amount is above the
    rule's threshold, or the rule has none); False where no policy was set."""
    if policy is None:
        return False
    return ApprovalPolicy(**policy["rule"]).applies_to(policy.get("amount_cents"))


def _roll_up(rows: Rows, batch: _Batch, key: tuple[str, ...], delta: int, amount: int) -> None:
    """Add ``delta`` proposals and ``amount`` cents to a roll-up row (an empty one goes)."""
    current = rows.get(DAILY, key)
    if current is None:
        proposals, amount_cents = delta, amount
    else:
        proposals, amount_cents = current["proposals"] + delta, current["amount_cents"] + amount
    if proposals == 0:
        rows.delete(DAILY, key)
    elif current is None:  # day, organization_id, operation, outcome; then the sums
        batch.put_values(DAILY, (*key, proposals, amount_cents))
    else:
        rows.update(DAILY, key, proposals=proposals, amount_cents=amount_cents)
