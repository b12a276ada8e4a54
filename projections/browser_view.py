"""The browser view: one card per proposal, and the approval inbox built from the cards.

A card shows the quorum its proposal was frozen under (``policy``, ``approvals_required``) and
who has approved so far and still counts (``approvals``, with what each presented in
``approval_credentials``; an approval a later recheck found no longer counts moves to
``no_longer_counting``): a first approval of several leaves it pending. A
superseded card names the proposal that replaced it (``superseded_by``) and why
(``superseded_reason``: revised, replaced, withdrawn), a revision the one it replaces
(``revision_of``). Events stored before these existed read as one approval needed.
"""

from __future__ import annotations

from typing import Any

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
    version = 4  # superseded cards, approvals; approvals that no longer count; why superseded
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
            ),
            key=("proposal_id",),
            indexes=(("organization_id", "status", "proposed_at"),),
        ),
    )

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        at = event_time(event)
        policy = getattr(event, "policy", None)
        revision_of = getattr(event, "revision_of", None)
        card = _NEW_CARD.copy()
        card["proposal_id"] = aggregate_id(event)
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
        card["approvals_required"] = approvals_required(policy)
        card["revision_of"] = None if revision_of is None else str(revision_of)
        card["policy"] = policy
        card["approval_credentials"] = []
        card["no_longer_counting"] = []
        rows.put(CARDS, card)

    @handles("Proposal.Approved")
    def approved(self, event: Any, position: int, rows: Rows) -> None:
        """One approval: the last one a quorum needs comes with ``Claimed`` (executing), an
        earlier one leaves the card pending with one more approver."""
        key = (aggregate_id(event),)
        card = rows.get(CARDS, key)
        if card is None:
            return
        rows.update(
            CARDS,
            key,
            approved_by=event.approved_by,
            approved_at=event.approved_at,
            approvals=[*(card["approvals"] or ()), event.approved_by],
            approval_credentials=[
                *(card["approval_credentials"] or ()),
                getattr(event, "credential", "unknown"),
            ],
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles("Proposal.ApprovalLapsed")
    def approval_lapsed(self, event: Any, position: int, rows: Rows) -> None:
        """An earlier approval stopped counting: it leaves ``approvals`` (and the count) and
        is listed, with why, in ``no_longer_counting``."""
        key = (aggregate_id(event),)
        card = rows.get(CARDS, key)
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
        rows.update(
            CARDS,
            key,
            approvals=approvals,
            approval_credentials=credentials,
            no_longer_counting=[*(card["no_longer_counting"] or ()), lapsed],
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles("Proposal.Superseded")
    def superseded(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(
            CARDS,
            (aggregate_id(event),),
            status="superseded",
            superseded_by=str(event.by),
            superseded_reason=event.reason,  # None: recorded before reasons were
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles("Proposal.Claimed")
    def claimed(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(
            CARDS,
            (aggregate_id(event),),
            status="executing",
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles("Proposal.Revalidated")
    def revalidated(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(
            CARDS,
            (aggregate_id(event),),
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles(
        "Proposal.Succeeded",
        "Proposal.Reconciling",
        "Proposal.Failed",
        "Proposal.RevisionRequired",
    )
    def outcome(self, event: Any, position: int, rows: Rows) -> None:
        key = (aggregate_id(event),)
        card = rows.get(CARDS, key)
        if card is None:
            return
        status = _OUTCOME_STATUS[type(event).__name__]
        if card["status"] == "declined":
            status = "declined"  # a decline's RevisionRequired keeps the card declined
        outcome = event.outcome
        message_en, message_fr = outcome_texts(card["operation"], card["preview"], outcome)
        rows.update(
            CARDS,
            key,
            status=status,
            outcome=outcome,
            outcome_kind=outcome["kind"],
            message_en=message_en,
            message_fr=message_fr,
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles("Proposal.Declined")
    def declined(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(
            CARDS,
            (aggregate_id(event),),
            status="declined",
            declined_by=event.declined_by,
            decline_note=event.note,
            updated_at=event_time(event),
            version=event.originator_version,
        )

    @handles("Proposal.Expired")
    def expired(self, event: Any, position: int, rows: Rows) -> None:
        rows.update(
            CARDS,
            (aggregate_id(event),),
            status="expired",
            updated_at=event_time(event),
            version=event.originator_version,
        )


#: A new card: every column in the table's order, None until ``proposed`` sets it. Copying it
#: and setting a new card's 19 values costs a third less than writing out a dict of 29 keys
#: (which grows its table three times on the way).
_NEW_CARD: dict[str, Any] = dict.fromkeys(column.name for column in BrowserView.tables[0].columns)
