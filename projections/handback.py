"""The assistant hand-back: app-authored follow-ups per interaction, and revision context.

Every outcome becomes a message in the conversation that asked for the proposal, written by
the application (never a model paraphrase). So does a proposal's supersession (how it was
replaced, and by which proposal) and a first approval of several ("approved by 1 of 2"). A
declined or revision-required proposal leaves bounded, safe revision context for the manager's
next message in that conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from countersign.domain.handback import reason_text
from countersign.domain.messages import (
    awaiting_approvals_messages,
    superseded_messages,
)
from countersign.domain.outcomes import RevisionReason, is_already_so
from countersign.projections.base import (
    Column,
    KeptRows,
    Projection,
    Rows,
    Table,
    aggregate_text,
    approvals_required,
    handles,
    id_text,
    uuid_text,
    values_putter,
)
from countersign.projections.messages import outcome_texts

MESSAGES = "handback_messages"
CONTEXT = "revision_context"
PROPOSALS = "handback_proposals"

#: The revision context handed to the next model turn is bounded, whatever the reason says.
MAX_CONTEXT_CHARS = 600


class Handback(Projection):
    """What the application says back into the conversation."""

    name = "handback"
    version = 3  # supersession and first approvals are told; lapsed approvals recounted
    tables = (
        Table(
            PROPOSALS,
            (
                Column("proposal_id"),
                Column("interaction_id"),
                Column("organization_id"),
                Column("operation"),
                Column("preview", "json"),
                Column("revision_of"),
                Column("approvals", "int"),
                Column("approvals_required", "int"),
                Column("executed", "bool"),
            ),
            key=("proposal_id",),
        ),
        Table(
            MESSAGES,
            (
                Column("interaction_id"),
                Column("position", "int"),
                Column("proposal_id"),
                Column("organization_id"),
                Column("kind"),
                Column("outcome_kind"),
                Column("text_en"),
                Column("text_fr"),
                Column("created_at", "time"),
            ),
            key=("interaction_id", "position"),
            indexes=(("proposal_id",),),
        ),
        Table(
            CONTEXT,
            (
                Column("interaction_id"),
                Column("proposal_id"),
                Column("organization_id"),
                Column("operation"),
                Column("reason_code"),
                Column("reason_params", "json"),
                Column("context_en"),
                Column("context_fr"),
                Column("created_at", "time"),
            ),
            key=("interaction_id",),
        ),
    )

    def end_batch(self, rows: Rows) -> None:
        """The proposals the batch changed are put, each once, in the order it first
        changed them."""
        _Batch.end(self, rows)

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        revision_of = getattr(event, "revision_of", None)
        policy = getattr(event, "policy", None)
        uuid = event.originator_id
        key = aggregate_text(uuid)
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        batch.texts[uuid.int] = key
        batch.kept[key] = batch.changed[key] = {
            "proposal_id": key,
            "interaction_id": event.interaction_id,
            "organization_id": id_text(event.organization_id),
            "operation": event.kind,
            "preview": event.preview,
            "revision_of": None if revision_of is None else uuid_text(revision_of),
            "approvals": 0,
            "approvals_required": 1 if not policy else approvals_required(policy),
            "executed": False,
        }
        # A new proposal in the conversation supersedes the earlier revision context.
        rows.delete(CONTEXT, (event.interaction_id,))

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        """A first approval of several is told ("approved by 1 of 2"); the last one needs no
        message of its own: the execution it starts ends in an outcome, which is."""
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        uuid = event.originator_id
        key = batch.texts.get(uuid.int) or aggregate_text(uuid)
        proposal = batch.proposal(key)
        if proposal is None:
            return
        proposal["approvals"] += 1
        batch.changed[key] = proposal
        if proposal["approvals"] >= proposal["approvals_required"]:
            return
        texts = awaiting_approvals_messages(proposal["approvals"], proposal["approvals_required"])
        _say(batch, proposal, position, event.timestamp, "awaiting_approvals", texts)

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        """An earlier approval no longer counts: the count goes down; the approval that
        follows it in the same commit tells the conversation the count after the recheck."""
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        uuid = event.originator_id
        key = batch.texts.get(uuid.int) or aggregate_text(uuid)
        proposal = batch.proposal(key)
        if proposal is not None:
            proposal["approvals"] = max(0, proposal["approvals"] - 1)
            batch.changed[key] = proposal

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        uuid = event.originator_id
        proposal = batch.proposal(batch.texts.get(uuid.int) or aggregate_text(uuid))
        if proposal is None:
            return
        by = uuid_text(event.by)
        replacing = batch.proposal(by)
        if replacing is None:  # not in this log: it can only be named by its id
            how, kind, preview = "newer", proposal["operation"], {}
        else:
            how = _HOW.get(event.reason or "") or _how_before_reasons(proposal, replacing)
            kind, preview = replacing["operation"], replacing["preview"]
        _say(
            batch,
            proposal,
            position,
            event.timestamp,
            "superseded",
            superseded_messages(how, kind, preview, by),
        )

    @handles("Proposal.Succeeded")
    def executed(self, event: Any, position: int, rows: Rows) -> None:
        """Remembered so that a proposal this success retires says so; then told."""
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        uuid = event.originator_id
        key = batch.texts.get(uuid.int) or aggregate_text(uuid)
        proposal = batch.proposal(key)
        if proposal is not None:
            proposal["executed"] = True
            batch.changed[key] = proposal
            _tell_outcome(batch, proposal, position, event.outcome, event.timestamp)

    @handles(
        "Proposal.Reconciling",
        "Proposal.Failed",
        "Proposal.RevisionRequired",
    )
    def outcome(self, event: Any, position: int, rows: Rows) -> None:
        batch = rows.batch.get(self) or _Batch.of(self, rows)
        uuid = event.originator_id
        proposal = batch.proposal(batch.texts.get(uuid.int) or aggregate_text(uuid))
        if proposal is not None:
            _tell_outcome(batch, proposal, position, event.outcome, event.timestamp)


class _Batch(KeptRows):
    """What one batch of ``rows`` has read and changed of ``handback_proposals``
    (``KeptRows``: an approval, a success change one), and how it puts rows as values
    (``values_putter``: asked once a batch, not once a row)."""

    __slots__ = ("put_values",)
    table = PROPOSALS
    shape = Handback.tables[0]
    proposal = KeptRows.row

    def __init__(self, rows: Rows) -> None:
        super().__init__(rows)
        self.put_values = values_putter(rows, Handback.tables)


def _tell_outcome(
    batch: _Batch, proposal: Mapping[str, Any], position: int, outcome: Any, at: Any
) -> None:
    """The outcome's message; a revision required also leaves its revision context.
    ``outcome`` and ``at``: the event's ``outcome`` and ``timestamp``, read by the handler
    (``_say`` says why)."""
    operation = proposal["operation"]
    texts = outcome_texts(operation, proposal["preview"], outcome)
    _say(batch, proposal, position, at, "outcome", texts, outcome_kind=outcome["kind"])
    if outcome["kind"] == "revision_required":
        reason = RevisionReason.model_validate(outcome["reason"])
        batch.rows.put(
            CONTEXT,
            {
                "interaction_id": proposal["interaction_id"],
                "proposal_id": proposal["proposal_id"],
                "organization_id": proposal["organization_id"],
                "operation": operation,
                "reason_code": reason.code,
                "reason_params": reason.params,
                "context_en": _context(operation, reason, "en", is_already_so(outcome)),
                "context_fr": _context(operation, reason, "fr", is_already_so(outcome)),
                "created_at": at if at.tzinfo is UTC else at.astimezone(UTC),
            },
        )


#: How a supersession reads in the conversation (``domain.handback.SUPERSEDED``), by its
#: recorded reason.
_HOW = {"revised": "revision", "replaced": "newer", "withdrawn": "executed"}


def _how_before_reasons(proposal: Mapping[str, Any], replacing: Mapping[str, Any]) -> str:
    """How a supersession recorded before its reason was reads: in log order, a proposal that
    took this one's place after it had already run withdrew it; else an edit of this one
    revised it, and any other was a newer proposal for the same thing."""
    if replacing["executed"]:
        return "executed"
    return "revision" if replacing["revision_of"] == proposal["proposal_id"] else "newer"


def _say(
    batch: _Batch,
    proposal: Mapping[str, Any],
    position: int,
    at: Any,
    kind: str,
    texts: tuple[str, ...],
    outcome_kind: str | None = None,
) -> None:
    """One app-authored message, in English and French, in the proposal's conversation:
    put as its values in column order (``put_values``: a message is never read back here).
    ``at``: the event's ``timestamp``, read by the handler (at its line the read is
    specialised for its event class: see ``base.aggregate_text``)."""
    text_en, text_fr = texts
    batch.put_values(
        MESSAGES,
        (
            proposal["interaction_id"],
            position,
            proposal["proposal_id"],
            proposal["organization_id"],
            kind,
            outcome_kind,
            text_en,
            text_fr,
            at if at.tzinfo is UTC else at.astimezone(UTC),  # created_at
        ),
    )


def _context(operation: str, reason: RevisionReason, language: str, already_so: bool) -> str:
    lead = {
        "en": f"The last {operation} proposal in this conversation was not executed: ",
        "fr": f"La dernière proposition {operation} de cette conversation n'a pas été exécutée : ",
    }[language]
    tail = ""
    if already_so:  # what it asked for already holds
        tail = {
            "en": " That is already what it asked for: nothing is left to do.",
            "fr": " C'est déjà ce qu'elle demandait : il ne reste rien à faire.",
        }[language]
    return (lead + reason_text(reason, language) + tail)[:MAX_CONTEXT_CHARS]
