"""The audit trail: one row per proposal lifecycle event, with actor, time and a safe summary,
and one row per change of an organization's approval policy or of a member's permissions.

Each approval of a quorum is its own row ("approved (1 of 2)"); a supersession names the
proposal that replaced it. Policy and permission changes are organization events, kept apart
in ``policy_changes`` and ``permission_changes`` with who made them: the trail of proposal
events stays one row per link of their hash chains (``audit verify`` checks them against it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from countersign.domain.handback import reason_text
from countersign.domain.messages import (
    APPROVED_WITH_PASSKEY,
    credential_note,
    lapsed_approval_message,
    origin_source,
    requester_note,
)
from countersign.domain.outcomes import RevisionReason, is_already_so
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

EVENTS = "audit_events"
PROPOSALS = "audit_proposals"
COUNTS = "audit_approval_counts"
POLICY_CHANGES = "policy_changes"
PERMISSION_CHANGES = "permission_changes"
SYSTEM = "countersign"


#: A reconciliation's row, by whether the provider said it applied nothing (an outage: no
#: money moved yet) or its answer was lost (the effect may have happened).
_RECONCILING = (
    "needs reconciliation: the provider's response was lost",
    "needs reconciliation: the provider was unavailable and applied nothing",
)


class AuditTrail(Projection):
    """Who did what to which proposal, when; queryable per proposal, tenant, actor and time."""

    name = "audit_trail"
    # supersessions, quorums, revisions, policy changes; credentials, lapses; 4: an approval
    # with a passkey reads as the card says it; 5: members' permission changes; 6: a provider
    # that applied nothing is not said to have lost its answer, and a policy change says
    # whether it requires passkeys
    version = 6
    tables = (
        Table(
            PROPOSALS,
            (
                Column("proposal_id"),
                Column("organization_id"),
                Column("operation"),
                Column("approvals_required", "int"),
            ),
            key=("proposal_id",),
            append_only=True,
        ),
        Table(
            COUNTS,
            (Column("proposal_id"), Column("approvals", "int")),
            key=("proposal_id",),
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
        Table(
            POLICY_CHANGES,
            (
                Column("position", "int"),
                Column("organization_id"),
                Column("operation"),
                Column("approvals", "int"),
                Column("above_cents", "int"),
                Column("requester_may_approve", "bool"),
                Column("require_passkey", "bool"),
                Column("set_by"),
                Column("at", "time"),
            ),
            key=("position",),
            indexes=(("organization_id", "at"),),
            append_only=True,
        ),
        Table(
            PERMISSION_CHANGES,
            (
                Column("position", "int"),
                Column("organization_id"),
                Column("email"),
                Column("permissions", "json"),
                Column("changed_by"),
                Column("at", "time"),
            ),
            key=("position",),
            indexes=(("organization_id", "at"),),
            append_only=True,
        ),
    )

    @handles("Organization.PermissionsChanged")
    def permissions_changed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            PERMISSION_CHANGES,
            {
                "position": position,
                "organization_id": aggregate_id(event),
                "email": event.email,
                "permissions": list(event.permissions),
                "changed_by": getattr(event, "changed_by", None),  # absent before it was kept
                "at": event_time(event),
            },
        )

    @handles("Organization.ApprovalPolicySet")
    def policy_set(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            POLICY_CHANGES,
            {
                "position": position,
                "organization_id": aggregate_id(event),
                "operation": event.operation,
                "approvals": event.approvals,
                "above_cents": event.above_cents,
                "requester_may_approve": event.requester_may_approve,
                # False for a policy set before passkeys could be required
                "require_passkey": bool(getattr(event, "require_passkey", False)),
                "set_by": event.set_by,
                "at": event_time(event),
            },
        )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        policy = getattr(event, "policy", None)
        required = 1 if not policy else approvals_required(policy)
        uuid = event.originator_id
        proposal_id = aggregate_text(uuid)
        organization_id = id_text(event.organization_id)
        kind = event.kind
        batch = rows.batch.get(self) or self._batch_of(rows)
        batch.put_values(PROPOSALS, (proposal_id, organization_id, kind, required))
        proposal = {
            "proposal_id": proposal_id,
            "organization_id": organization_id,
            "operation": kind,
            "approvals_required": required,
        }
        number = uuid.int
        batch.proposals[number] = proposal
        batch.counts[number] = 0  # none approved it yet: no row to read
        summary = f"proposed {kind}"
        through = getattr(event, "requested_through", None)  # absent before credentials
        if through and through != "person":  # a person's own needs no note: no call
            how = requester_note(through)
            if how:
                summary += f" {how}"
        origin = getattr(event, "origin", None)  # absent before origins
        if origin:  # ``origin_source`` of no origin is None
            source = origin_source(origin)
            if source is not None:
                summary += f" through {source}"
        revision_of = getattr(event, "revision_of", None)
        if revision_of is not None:
            summary += f" as a revision of {revision_of}"
        if policy:  # what its policy asks beyond one approval by anyone permitted, if anything
            asks = [f"needs {required} approvals"] if required > 1 else []
            if not policy.get("requester_may_approve", True):
                asks.append("its requester may not approve")
            if asks:
                summary += "; " + ", ".join(asks)
        at = event.timestamp
        _trail(
            batch,
            position,
            proposal_id,
            proposal,
            event.originator_version,
            type(event).__name__,
            event.requested_by,
            at if at.tzinfo is UTC else at.astimezone(UTC),
            summary,
            event.chain,
        )

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        number = uuid.int
        proposal = batch.proposals.get(number) or batch.proposal_of(uuid)
        if proposal is None:
            proposal_id, required = aggregate_text(uuid), 1
        else:
            proposal_id, required = proposal["proposal_id"], proposal["approvals_required"]
        counted = batch.count(number, proposal_id, +1)
        passkey = getattr(event, "passkey", None)  # absent before version 3
        # Signed with a passkey, it reads as the card says it (the trail is in English).
        summary = APPROVED_WITH_PASSKEY.text("en", name=passkey["name"]) if passkey else "approved"
        credential = getattr(event, "credential", None)
        if credential and credential != "person":  # a person's needs no note: no call
            how = credential_note(credential)
            if how:
                summary += f" {how}"
        if required > 1:
            summary += f" ({counted} of {required})"
        at = event.timestamp
        _trail(
            batch,
            position,
            proposal_id,
            proposal,
            event.originator_version,
            type(event).__name__,
            event.approved_by,
            at if at.tzinfo is UTC else at.astimezone(UTC),
            summary,
            event.chain,
        )

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        proposal = batch.proposal_of(uuid)
        batch.count(uuid.int, aggregate_text(uuid), -1)
        kind = "" if proposal is None else proposal["operation"]
        summary = lapsed_approval_message(kind, event.approved_by, event.reason)
        self._record_event(event, position, rows, SYSTEM, summary, proposal)

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        why = _SUPERSEDED_BECAUSE.get(event.reason or "")  # None before reasons were
        summary = f"superseded by {uuid_text(event.by)}" + (f" ({why})" if why else "")
        self._record_event(event, position, rows, SYSTEM, summary)

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        summary = f"claimed for execution ({uuid_text(event.attempt_id)})"
        at = event.timestamp
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        proposal = batch.proposals.get(uuid.int) or batch.proposal_of(uuid)
        _trail(
            batch,
            position,
            aggregate_text(uuid) if proposal is None else proposal["proposal_id"],
            proposal,
            event.originator_version,
            type(event).__name__,
            SYSTEM,
            at if at.tzinfo is UTC else at.astimezone(UTC),
            summary,
            event.chain,
        )

    @handles("Proposal.Revalidated")
    def revalidated(self, event: Any, position: int, rows: Rows) -> None:
        checked = ", ".join(sorted(event.facts))
        at = event.timestamp
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        proposal = batch.proposals.get(uuid.int) or batch.proposal_of(uuid)
        _trail(
            batch,
            position,
            aggregate_text(uuid) if proposal is None else proposal["proposal_id"],
            proposal,
            event.originator_version,
            type(event).__name__,
            SYSTEM,
            at if at.tzinfo is UTC else at.astimezone(UTC),
            f"revalidated against current state: {checked}",
            event.chain,
        )

    @handles("Proposal.Succeeded")
    def succeeded(self, event: Any, position: int, rows: Rows) -> None:
        at = event.timestamp
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        proposal = batch.proposals.get(uuid.int) or batch.proposal_of(uuid)
        _trail(
            batch,
            position,
            aggregate_text(uuid) if proposal is None else proposal["proposal_id"],
            proposal,
            event.originator_version,
            type(event).__name__,
            SYSTEM,
            at if at.tzinfo is UTC else at.astimezone(UTC),
            "succeeded",
            event.chain,
        )

    @handles("Proposal.RevisionRequired")
    def revision_required(self, event: Any, position: int, rows: Rows) -> None:
        reason = RevisionReason.model_validate(event.outcome["reason"])
        # What it asked for already holds: nothing is left to do (``RevisionRequired``).
        so = ", already so: nothing left to do" if is_already_so(event.outcome) else ""
        summary = f"revision required ({reason.code}{so}): {reason_text(reason)}"
        self._record_event(event, position, rows, SYSTEM, summary)

    @handles("Proposal.Reconciling")
    def reconciling(self, event: Any, position: int, rows: Rows) -> None:
        # Why (``NeedsReconciliation.cause``; an outcome stored before it: a lost answer).
        cause = (event.outcome or {}).get("cause")
        self._record_event(
            event, position, rows, SYSTEM, _RECONCILING[cause == "provider_unavailable"]
        )

    @handles("Proposal.Failed")
    def failed(self, event: Any, position: int, rows: Rows) -> None:
        summary = f"terminal failure {event.outcome['correlation_id']} ({event.error_class})"
        self._record_event(event, position, rows, SYSTEM, summary)

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        how = credential_note(getattr(event, "credential", None))
        summary = f"declined {how}" if how else "declined"
        self._record_event(event, position, rows, event.declined_by, summary)

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        self._record_event(event, position, rows, SYSTEM, "expired before approval")

    def _record_event(
        self,
        event: Any,
        position: int,
        rows: Rows,
        actor: str,
        summary: str,
        proposal: Mapping[str, Any] | None = None,
    ) -> None:
        """The trail's row of ``event``, whose fields are read here: for the handlers of events
        a rebuild seldom meets (this line sees every class, so its reads are not specialised);
        ``proposal``: its proposal's row, if the handler has it already (else it is looked
        up)."""
        batch = rows.batch.get(self) or self._batch_of(rows)
        uuid = event.originator_id
        if proposal is None:
            proposal = batch.proposal_of(uuid)
        _trail(
            batch,
            position,
            aggregate_text(uuid) if proposal is None else proposal["proposal_id"],
            proposal,
            event.originator_version,
            type(event).__name__,
            actor,
            event_time(event),
            summary,
            event.chain,
        )

    def _batch_of(self, rows: Rows) -> _Batch:
        """What the batch of ``rows`` has read and written so far (in ``rows.batch``: the
        next batch reads its rows again, they may differ)."""
        try:
            batch: _Batch = rows.batch[self]
        except KeyError:
            batch = rows.batch[self] = _Batch(rows)
        return batch


def _trail(
    batch: _Batch,
    position: int,
    proposal_id: str,
    proposal: Mapping[str, Any] | None,
    version: int,
    event_type: str,
    actor: str,
    at: Any,
    summary: str,
    chain: Any,
) -> None:
    """The event's row of the trail, from its fields as the handler read them
    (``event.originator_version``, ``type(event).__name__``, ``utc(event.timestamp)``,
    ``event.chain``: read at the handler's line, which sees one event class, the reads are
    specialised; here, every class passes) and its proposal's row (None: there is none) and
    id, which the handler found with ``_Batch.proposal_of``: by the number of the event's
    ``originator_id``, and the id's text from the row (``aggregate_text`` only without one).
    Put as its values in column order (``put_values``: about 4,800 instructions less than a
    dict, and this is a row an event)."""
    batch.put_values(
        EVENTS,
        (
            position,
            proposal_id,
            version,
            None if proposal is None else proposal["organization_id"],
            None if proposal is None else proposal["operation"],
            event_type,
            actor,
            at,
            summary,
            chain,
        ),
    )


class _Batch:
    """What the audit trail remembers during one batch of ``rows``: each proposal's
    ``audit_proposals`` row it read or put (None: no such row; those rows never change once
    put, and every event of a proposal needs its row), each proposal's approvals counted
    so far (``audit_approval_counts``: the batch writes every change of them), and how it
    puts rows as values (``values_putter``: asked once a batch, not once a row).

    Both are kept by the number of the proposal's UUID (``uuid.int``, the event's
    ``originator_id``), not by the id's text: a handler finds its proposal with one lookup
    of an integer, where ``aggregate_text`` (a call, ``id()`` and a lookup) and a lookup by
    text cost about 1,400 instructions more (callgrind); the text is the row's
    ``proposal_id``, made only for a proposal without a row."""

    __slots__ = ("counts", "proposals", "put_values", "rows")

    def __init__(self, rows: Rows) -> None:
        self.rows = rows
        self.put_values = values_putter(rows, AuditTrail.tables)
        self.proposals: dict[int, Mapping[str, Any] | None] = {}
        self.counts: dict[int, int] = {}

    def proposal_of(self, uuid: Any) -> Mapping[str, Any] | None:
        """The ``audit_proposals`` row of the proposal ``uuid`` (the event's
        ``originator_id``; None: none), read at most once a batch. Handlers look in
        ``proposals`` first (``proposals.get(uuid.int) or proposal_of(uuid)``): no call
        for a proposal the batch already has."""
        number = uuid.int
        found: Mapping[str, Any] | None = self.proposals.get(number, _UNREAD)
        if found is _UNREAD:
            found = self.proposals[number] = self.rows.get(PROPOSALS, (aggregate_text(uuid),))
        return found

    def count(self, number: int, proposal_id: str, change: int) -> int:
        """The approvals of the proposal ``number`` (its UUID's, ``proposal_id`` its text)
        that count, after ``change``; its row is read at most once a batch, and not for a
        proposal proposed in the batch."""
        counts = self.counts
        counted = counts.get(number)
        if counted is None:
            row = self.rows.get(COUNTS, (proposal_id,))
            counted = 0 if row is None else int(row["approvals"])
        counted = counts[number] = max(0, counted + change)
        self.put_values(COUNTS, (proposal_id, counted))  # proposal_id, approvals
        return counted


_UNREAD: Any = object()

#: Why a proposal was superseded, as the audit trail's summary says it.
_SUPERSEDED_BECAUSE = {
    "revised": "revised: an edit of it",
    "replaced": "replaced: a newer proposal for the same thing",
    "withdrawn": "withdrawn: that proposal was carried out and changed what this one relied on",
}
