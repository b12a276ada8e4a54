"""What an outside agent reads: tool results, their output schemas, and the review card.

Every text here is the application's own: the preview rows and outcome messages come from the
contracts, in the language the server was started with. A refused call carries exactly what
the assistants' model loop gets (``refusal``); an unknown or foreign id answers "not found";
nothing unexpected reaches the agent but a correlation id.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from countersign.application.assistant.schemas import strict_schema
from countersign.application.assistant.service import refusal
from countersign.application.reports import ProposalCard, ProposalCreated, ProposalStatusReport
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.messages import (
    operation_title,
    origin_line,
    preview_rows_of,
    proposal_headline,
)
from countersign.domain.times import local_time
from countersign.domain.visible_text import one_value, shown
from countersign.infrastructure.entrypoints.status_path import with_status_path
from pydantic import BaseModel, Field

#: The longest text result an agent gets (a read tool's answer is bounded already).
MAX_RESULT = 16_000

FROZEN = Localized(
    "countersign froze this proposal for review. A person with the permission approves or "
    "declines it by id in countersign; nothing changes until then, and no tool here can "
    "approve or execute it. Check on it with proposal_status.",
    "countersign a figé cette proposition pour examen. Une personne autorisée l'approuve ou la "
    "refuse par son identifiant dans countersign ; rien ne change d'ici là, et aucun outil ici "
    "ne peut l'approuver ni l'exécuter. Suivez-la avec proposal_status.",
)


def review_path(proposal_id: str) -> str:
    """Where a person reviews it on countersign's pages."""
    return f"/proposals/{proposal_id}"


class PreviewRowOut(BaseModel):
    """One preview value, as the review card labels it."""

    label: str
    value: str


class ProposedOut(BaseModel):
    """The proposal a propose tool froze."""

    proposal_id: str
    status: str
    operation: str
    headline: str = Field(description="What approving it would do, in one line.")
    preview: list[PreviewRowOut] = Field(description="The review card's rows, in its order.")
    expires_at: str = Field(description="When it can no longer be approved (ISO 8601).")
    supersedes: list[str] = Field(description="Pending proposals this one replaced.")
    approvals_required: int
    review_path: str = Field(description="The review page, on countersign's own site.")
    message: str


class StatusOut(BaseModel):
    """Where one of the caller's proposals stands."""

    proposal_id: str
    status: str
    outcome_kind: str | None = Field(
        description="succeeded, needs_reconciliation, revision_required or terminal_failure; "
        "null while nothing ran."
    )
    reconciliation_pending: bool
    message: str | None = Field(description="countersign's own words about the outcome.")
    waiting_since: str | None = Field(
        description="While executing or reconciling: when it was claimed (ISO 8601); else null."
    )
    settling: str | None = Field(
        description="While executing or reconciling: waiting, provider_silent (the provider "
        "has not answered yet) or unattended (nothing asks it: an operator must start the "
        "worker); else null. Never do the work another way meanwhile."
    )
    policy_changed: bool = Field(
        description="Pending, and the club's approval policy now asks more of it than the "
        "one it was frozen under (more approvals, a passkey): approving it executes nothing "
        "but sends it back, to be proposed again under today's policy (revision_required, "
        "policy_raised). Said of the person the token acts for: false to a requester the "
        "policy bars, whose own approval is refused instead."
    )
    requester_barred: str | None = Field(
        description="Pending, and the person the token acts for requested it and its "
        "policy, frozen or the club's set since, does not let them approve it: the sentence "
        "saying so, in the server's language (their approval is refused, "
        "requester_may_not_approve; they may still decline it). Null otherwise."
    )
    review_path: str


PROPOSED_SCHEMA = strict_schema(ProposedOut)
STATUS_SCHEMA = strict_schema(StatusOut)


def proposed(created: ProposalCreated, language: str) -> types.CallToolResult:
    shown = ProposedOut(
        proposal_id=created.proposal_id,
        status=created.status,
        operation=created.operation,
        headline=proposal_headline(created.operation, created.preview, language),
        preview=[
            PreviewRowOut(label=row.label, value=row.value)
            for row in preview_rows_of(created.operation, created.preview, language)
        ],
        expires_at=created.expires_at.isoformat(),
        supersedes=list(created.supersedes),
        approvals_required=created.approvals_required,
        review_path=review_path(created.proposal_id),
        message=FROZEN.text(language),
    )
    return answer(shown.model_dump())


def status(report: ProposalStatusReport) -> types.CallToolResult:
    shown = StatusOut(
        proposal_id=report.proposal_id,
        status=report.status,
        outcome_kind=report.outcome_kind,
        reconciliation_pending=report.reconciliation_pending,
        message=report.message,
        waiting_since=report.waiting_since,
        settling=report.settling,
        policy_changed=report.policy_changed,
        requester_barred=report.requester_barred,
        review_path=review_path(report.proposal_id),
    )
    return answer(shown.model_dump())


def answer(document: dict[str, Any]) -> types.CallToolResult:
    """A tool's result: structured, and the same JSON as text for clients that show text."""
    text = json.dumps(document, ensure_ascii=False)[:MAX_RESULT]
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=document, is_error=False
    )


def refused(document: dict[str, Any]) -> types.CallToolResult:
    """A tool error the agent can read and act on (isError: the call changed nothing)."""
    text = json.dumps(document, ensure_ascii=False)[:MAX_RESULT]
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def invalid(error: InvalidRequestError, language: str) -> types.CallToolResult:
    """The safe problems the assistants' model loop gets, as a tool error."""
    return refused(
        {"error": "invalid_request", **refusal(error.problems, error.more_problems, language)}
    )


_CARD = {
    "proposal": Localized("Proposal", "Proposition"),
    "status": Localized("Status", "Statut"),
    "requested_by": Localized("Requested by", "Demandée par"),
    "approvals": Localized("Approvals", "Approbations"),
    "expires": Localized("Expires", "Expire le"),
    "outcome": Localized("Outcome", "Résultat"),
    "review": Localized("Review page", "Page d'examen"),
}
"""The card's own labels; the preview's rows are labelled by the operation's contract."""


def card_text(card: ProposalCard, language: str) -> str:
    """The review card as plain text: the headline, then one labelled line per fact."""

    def label(key: str) -> str:
        return _CARD[key].text(language)

    title = operation_title(card.operation, language)
    lines = [f"{title}: {shown(proposal_headline(card.operation, card.preview, language))}"]
    lines.append(f"{label('proposal')}: {card.proposal_id}")
    lines.append(f"{label('status')}: {card.status.replace('_', ' ')}")
    lines.append(f"{label('requested_by')}: {card.requested_by}")
    origin = origin_line(card.origin, language, card.requested_through)
    if origin:
        lines.append(origin)
    lines.append(f"{label('approvals')}: {len(card.approvals)}/{card.approvals_required}")
    lines.append(f"{label('expires')}: {local_time(card.expires_at, card.time_zone, language)}")
    lines += [
        f"{row.label}: {one_value(row.value)}"
        for row in preview_rows_of(card.operation, card.preview, language)
    ]
    if card.requester_barred:
        lines.append(card.requester_barred)
    if card.message:
        lines.append(f"{label('outcome')}: {card.message}")
    lines.append(f"{label('review')}: {review_path(card.proposal_id)}")
    return "\n".join(lines)


def card_json(card: ProposalCard, language: str) -> str:
    """The card's document (as the JSON API gives it), with its rows as people read them."""
    document = with_status_path(card.to_json())
    document["preview_rows"] = [
        {"label": row.label, "value": row.value}
        for row in preview_rows_of(card.operation, card.preview, language)
    ]
    document["origin_line"] = origin_line(card.origin, language, card.requested_through)
    document["review_path"] = review_path(card.proposal_id)
    return json.dumps(document, ensure_ascii=False)
