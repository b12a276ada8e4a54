"""The assistant hand-back: app-authored follow-ups per interaction, and revision context.

Every outcome becomes a message in the conversation that asked for the proposal, written by
the application (never a model paraphrase). A declined or revision-required proposal leaves
bounded, safe revision context for the manager's next message in that conversation.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.handback import reason_text
from countersign.domain.messages import outcome_messages
from countersign.domain.outcomes import RevisionReason
from countersign.projections.base import Column, Projection, Rows, Table, event_time, handles

MESSAGES = "handback_messages"
CONTEXT = "revision_context"
PROPOSALS = "handback_proposals"

#: The revision context handed to the next model turn is bounded, whatever the reason says.
MAX_CONTEXT_CHARS = 600


class Handback(Projection):
    """What the application says back into the conversation."""

    name = "handback"
    tables = (
        Table(
            PROPOSALS,
            (
                Column("proposal_id"),
                Column("interaction_id"),
                Column("organization_id"),
                Column("operation"),
                Column("preview", "json"),
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

    @handles("Proposal.Proposed")
    def proposed(self, event: Any, position: int, rows: Rows) -> None:
        rows.put(
            PROPOSALS,
            {
                "proposal_id": str(event.originator_id),
                "interaction_id": event.interaction_id,
                "organization_id": str(event.organization_id),
                "operation": event.kind,
                "preview": event.preview,
            },
        )
        # A new proposal in the conversation supersedes the earlier revision context.
        rows.delete(CONTEXT, (event.interaction_id,))

    @handles(
        "Proposal.Succeeded",
        "Proposal.Reconciling",
        "Proposal.Failed",
        "Proposal.RevisionRequired",
    )
    def outcome(self, event: Any, position: int, rows: Rows) -> None:
        proposal = rows.get(PROPOSALS, (str(event.originator_id),))
        if proposal is None:
            return
        outcome = event.outcome
        operation = proposal["operation"]
        text_en, text_fr = outcome_messages(operation, proposal["preview"], outcome)
        at = event_time(event)
        rows.put(
            MESSAGES,
            {
                "interaction_id": proposal["interaction_id"],
                "position": position,
                "proposal_id": proposal["proposal_id"],
                "organization_id": proposal["organization_id"],
                "kind": "outcome",
                "outcome_kind": outcome["kind"],
                "text_en": text_en,
                "text_fr": text_fr,
                "created_at": at,
            },
        )
        if outcome["kind"] == "revision_required":
            reason = RevisionReason.model_validate(outcome["reason"])
            rows.put(
                CONTEXT,
                {
                    "interaction_id": proposal["interaction_id"],
                    "proposal_id": proposal["proposal_id"],
                    "organization_id": proposal["organization_id"],
                    "operation": operation,
                    "reason_code": reason.code,
                    "reason_params": reason.params,
                    "context_en": _context(operation, reason, "en"),
                    "context_fr": _context(operation, reason, "fr"),
                    "created_at": at,
                },
            )


def _context(operation: str, reason: RevisionReason, language: str) -> str:
    lead = {
        "en": f"The last {operation} proposal in this conversation was not executed: ",
        "fr": f"La dernière proposition {operation} de cette conversation n'a pas été exécutée : ",
    }[language]
    return (lead + reason_text(reason, language))[:MAX_CONTEXT_CHARS]
