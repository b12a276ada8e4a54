"""The browser view: one card per proposal, and the approval inbox built from the cards.

A card shows the quorum its proposal was frozen under (``policy``, ``approvals_required``) and
who has approved so far and still counts (``approvals``, with what each presented in
``approval_credentials``; an approval a later recheck found no longer counts moves to
``no_longer_counting``): a first approval of several leaves it pending. A
superseded card names the proposal that replaced it (``superseded_by``) and why
(``superseded_reason``: revised, replaced, withdrawn), a revision the one it replaces
(``revision_of``). Events stored before these existed read as one approval needed. Its
``amount_cents`` is the money it moves (its frozen policy's, or for one frozen under none, its
arguments' read as the approve path reads them), so the inbox can say, with no read, that a
threshold set since covers it.
"""

from __future__ import annotations

from datetime import UTC
from operator import itemgetter
from typing import Any

from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.base import UndecodableContractError, names_an_amount
from countersign.projections.base import (
    Column,
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

CARDS = "proposal_cards"

_OUTCOME_STATUS = {
    "Succeeded": "succeeded",
    "Reconciling": "reconciling",
    "Failed": "failed",
    "RevisionRequired": "revision_required",
}


class BrowserView(Projection):
    """What a manager sees: the frozen preview, status, approver and the localized outcome."""

    name = "browser_view"
    # superseded cards, approvals; approvals that no longer count; why superseded; 5: what a
    # card replaced (``replaces``); 6: the amount it moves (``amount_cents``)
    version = 6
    tables = (
        Table(
            CARDS,
            (
                Column("proposal_id"),
                Column("organization_id"),
                Column("section"),
                Column("resource_id"),
                Column("operation"),
                Column("requested_by"),
                Column("interaction_id"),
                Column("status"),
                Column("preview", "json"),
                Column("proposed_at", "time"),
                Column("expires_at", "time"),
                Column("approved_by"),
                Column("approved_at", "time"),
                Column("declined_by"),
                Column("decline_note"),
                Column("outcome", "json"),
                Column("outcome_kind"),
                Column("message_en"),
                Column("message_fr"),
                Column("updated_at", "time"),
                Column("version", "int"),
                Column("approvals", "json"),
                Column("approvals_required", "int"),
                Column("revision_of"),
                Column("superseded_by"),
                Column("superseded_reason"),
                Column("policy", "json"),
                Column("approval_credentials", "json"),
                Column("no_longer_counting", "json"),
                Column("replaces", "json"),
                Column("amount_cents", "int"),
            ),
            key=("proposal_id",),
            indexes=(("organization_id", "status", "proposed_at"),),
        ),
    )

    def _batch(self, rows: Rows) -> _Batch:
        """The cards this batch of ``rows`` has built so far (in ``rows.batch``)."""
        try:
            batch: _Batch = rows.batch[self]
        except KeyError:
            batch = rows.batch[self] = _Batch(rows)
        return batch

    def _card(self, uuid: Any, rows: Rows) -> dict[str, Any] | None:
        """The card of the proposal ``uuid`` (the event's ``originator_id``, read by the
        handler: at its line the read is specialised for its event class, here it would see
        every class) as this batch has built it, read into the batch first if an earlier
        batch wrote it; None if there is no such card."""
        try:
            batch: _Batch = rows.batch[self]
        except KeyError:
            batch = rows.batch.get(self) or self._batch(rows)
        # By the aggregate's UUID's number, not its text: hashing it costs less than
        # ``aggregate_id`` (about 2,000 instructions an event, callgrind), which only a miss
        # needs; and less than the UUID itself, whose hash is a Python call (``UUID.__hash__``).
        number = uuid.int
        card = batch.cards.get(number)
        if card is None:
            stored = rows.get(CARDS, (aggregate_text(uuid),))
            if stored is None:
                return None
            # A copy (the stored row is read-only), in column order: see ``_Batch.put_all``.
            card = batch.cards[number] = dict(zip(_COLUMNS, _VALUES(stored)))  # noqa: B905
        return card

    def end_batch(self, rows: Rows) -> None:
        """The batch's cards are put, each once, in the order the batch first wrote them."""
        batch = rows.batch.pop(self, None)
        if batch is not None:
            batch.put_all()

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        at = event.timestamp
        if at.tzinfo is not UTC:
            at = at.astimezone(UTC)
        policy = getattr(event, "policy", None)
        revision_of = getattr(event, "revision_of", None)
        key = aggregate_text(event.originator_id)
        card = _NEW_CARD.copy()
        card["proposal_id"] = key
        card["organization_id"] = id_text(event.organization_id)
        card["section"] = event.section
        card["resource_id"] = id_text(event.resource_id)
        card["operation"] = event.kind
        card["requested_by"] = event.requested_by
        card["interaction_id"] = event.interaction_id
        card["status"] = "pending"
        card["preview"] = event.preview
        card["proposed_at"] = at
        card["expires_at"] = event.expires_at
        card["updated_at"] = at
        card["version"] = event.originator_version
        card["approvals"] = []
        card["approvals_required"] = 1 if not policy else approvals_required(policy)
        card["revision_of"] = None if revision_of is None else uuid_text(revision_of)
        card["policy"] = policy
        card["amount_cents"] = policy.get("amount_cents") if policy else _amount(event)
        card["approval_credentials"] = []
        card["no_longer_counting"] = []
        (rows.batch.get(self) or self._batch(rows)).cards[event.originator_id.int] = card

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        """One approval: the last one a quorum needs comes with ``Claimed`` (executing), an
        earlier one leaves the card pending with one more approver."""
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        # New lists, never changed in place: a card read from an earlier batch shares them
        # with that batch's rows, which may still be on their way to the database.
        approved_by = event.approved_by
        card["approved_by"] = approved_by
        card["approved_at"] = event.approved_at
        card["approvals"] = [*(card["approvals"] or ()), approved_by]
        card["approval_credentials"] = [
            *(card["approval_credentials"] or ()),
            getattr(event, "credential", "unknown"),
        ]
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        """An earlier approval stopped counting: it leaves ``approvals`` (and the count) and
        is listed, with why, in ``no_longer_counting``."""
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        approvals = list(card["approvals"] or [])
        credentials = list(card["approval_credentials"] or [])
        if event.approved_by in approvals:
            index = approvals.index(event.approved_by)
            del approvals[index]
            if index < len(credentials):
                del credentials[index]
        lapsed = {"approved_by": event.approved_by, "reason": event.reason}
        card["approvals"] = approvals
        card["approval_credentials"] = credentials
        card["no_longer_counting"] = [*(card["no_longer_counting"] or ()), lapsed]
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        card["status"] = "superseded"
        card["superseded_by"] = uuid_text(event.by)
        card["superseded_reason"] = event.reason  # None: recorded before reasons were
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version
        # The proposal that took its place when it was made (an edit, or the same thing
        # proposed again; committed with it, after its ``Proposed``) names it, so that its
        # reviewer reads that approving it is not in addition to this one; one that withdrew
        # it by being carried out does not. A new list, as in ``approved``.
        newer = None if event.reason == "withdrawn" else self._card(event.by, rows)
        if newer is not None:
            replaced = {"proposal_id": card["proposal_id"], "reason": event.reason}
            newer["replaces"] = [*(newer["replaces"] or ()), replaced]

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        card["status"] = "executing"
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version

    @handles("Proposal.Revalidated")
    def revalidated(self, event: Any, position: int, rows: Rows) -> None:
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version

    @handles(
        "Proposal.Succeeded",
        "Proposal.Reconciling",
        "Proposal.Failed",
        "Proposal.RevisionRequired",
    )
    def outcome(self, event: Any, position: int, rows: Rows) -> None:
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        status = _OUTCOME_STATUS[type(event).__name__]
        if card["status"] == "declined":
            status = "declined"  # a decline's RevisionRequired keeps the card declined
        outcome = event.outcome
        card["message_en"], card["message_fr"] = outcome_texts(
            card["operation"], card["preview"], outcome
        )
        card["status"] = status
        card["outcome"] = outcome
        card["outcome_kind"] = outcome["kind"]
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        card["status"] = "declined"
        card["declined_by"] = event.declined_by
        card["decline_note"] = event.note
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        card = self._card(event.originator_id, rows)
        if card is None:
            return
        card["status"] = "expired"
        at = event.timestamp
        card["updated_at"] = at if at.tzinfo is UTC else at.astimezone(UTC)
        card["version"] = event.originator_version


class _Batch:
    """The cards one batch of ``rows`` has built (by the number of the proposal's UUID, in the
    order it first wrote them), put into ``rows`` at the batch's end (``BrowserView.end_batch``).

    Why: a card changes with nearly every event of its proposal, and most proposals live
    their whole lifecycle within one batch. A ``rows.get`` and a ``rows.update`` an event
    (Python calls that check the columns and hand out a read-only view) cost more than the
    change itself: an ``Approved`` took 23,800 instructions, a ``Claimed`` 11,500; with the
    card in the batch's own dict, 8,700 and 4,700 (callgrind), and each card is put once
    (2,900). A card read from an earlier batch is a copy, changed only here."""

    __slots__ = ("cards", "rows")

    def __init__(self, rows: Rows) -> None:
        self.rows = rows
        self.cards: dict[Any, dict[str, Any]] = {}

    def put_all(self) -> None:
        """Each card put as its values (``Rows.put_values``), which are in column order: a
        card is a copy of ``_NEW_CARD`` or of a stored card taken in column order
        (``BrowserView._card``), and handlers only set columns it has (a key it lacks would
        make 32 values, which ``put_values`` refuses). Why: packing a card by its 31 names
        (``itemgetter``) and ``put``'s checks cost more than taking its values in order."""
        put = values_putter(self.rows, BrowserView.tables)
        for card in self.cards.values():
            put(CARDS, tuple(card.values()))


def _amount(event: Any) -> int | None:
    """The money a proposal frozen under no policy moves (its record keeps none), as the
    approve path's policy recheck reads it (``policy_recheck._amount``), so the inbox can say
    that a threshold set since covers it: None for an operation that names no amount, or
    arguments that no longer decode."""
    contract = REGISTRY.get(event.kind)
    if contract is None or not names_an_amount(contract):
        return None
    try:
        return contract.amount_cents(contract.decode_arguments(event.arguments))
    except UndecodableContractError:
        return None


#: A new card: every column in the table's order, None until ``proposed`` sets it. Copying it
#: and setting a new card's 20 values costs a third less than writing out a dict of 31 keys
#: (which grows its table three times on the way).
_NEW_CARD: dict[str, Any] = dict.fromkeys(column.name for column in BrowserView.tables[0].columns)
_COLUMNS = tuple(_NEW_CARD)
#: A stored card's values in column order (a ``KeyError`` for a column it lacks).
_VALUES = itemgetter(*_COLUMNS)
