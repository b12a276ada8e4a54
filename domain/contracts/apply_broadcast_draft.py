"""email_broadcast.apply_draft: copy a frozen audience, subject and body into the editable form.

Approval never creates or sends a broadcast. The application validates the filters against the
roster and counts the audience; approval recounts it, and a different count fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.permissions import Permission
from countersign.domain.club.roster import Roster
from countersign.domain.contracts.apply_broadcast_draft_texts import ApplyBroadcastDraftTexts
from countersign.domain.contracts.base import (
    ContractRequest,
    Facts,
    Frozen,
    OperationContract,
    Prepared,
    Siblings,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.model_calls import dumped, validated
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
from pydantic import Field

MAX_SUBJECT = 150
MAX_BODY = 5000

# -- Request ----------------------------------------------------------------------------------


class AudienceFilters(ContractRequest):
    """Who receives the broadcast."""

    leagues: list[str] = Field(
        description=(
            "Names of the leagues whose members receive the email, exactly as the league "
            "list shows them; between 1 and 20 names."
        ),
        min_length=1,
        max_length=20,
    )


class BroadcastDraftRequest(ContractRequest):
    """Propose a draft for the club's email broadcast form: the audience filters, a subject and
    a body. Approval only fills in the editable form; nothing is sent."""

    multiline_fields = frozenset({"body"})

    filters: AudienceFilters = Field(description="Audience filters.")
    subject: str = Field(
        description=f"The email subject line, at most {MAX_SUBJECT} characters.",
        min_length=1,
        max_length=MAX_SUBJECT,
    )
    body: str = Field(
        description=f"The plain-text email body, at most {MAX_BODY} characters.",
        min_length=1,
        max_length=MAX_BODY,
    )


# -- Arguments --------------------------------------------------------------------------------


class DraftFilters(Frozen):
    """Resolved, normalised audience filters. A tuple, so the arguments are immutable all
    through: the models frozen are then handed to the approval as they are
    (``frozen_models``; a list would be copied with its models, which costs about what
    validating the stored arguments again does). Dumped and stored as a JSON array, as
    before: the digest and the stored events are unchanged."""

    leagues: tuple[str, ...]


class BroadcastDraftArguments(Frozen):
    """The exact draft to copy into the form."""

    form_id: UUID
    filters: DraftFilters
    subject: str
    body: str
    audience_count: int


# -- Preview ----------------------------------------------------------------------------------


class BroadcastDraftPreview(Frozen):
    """The fixed review presentation of one draft."""

    filters_in_words: str
    audience_count: int
    subject: str
    body: str
    sends_email: bool


# -- Result -----------------------------------------------------------------------------------


class BroadcastDraftResult(Frozen):
    """What applying the draft did."""

    form_id: UUID
    audience_count: int
    subject: str


@dataclass
class DraftFacts(Facts):
    """The roster to count against and the form to fill in."""

    roster: Roster
    form: BroadcastForm

    def aggregates(self) -> list[Aggregate]:
        return [self.form]


# -- the rules ------------------------------------------------------------------------------------


def check_leagues_exist(roster: Roster, named: list[str]) -> None:
    known = roster.leagues  # by name (``league_names`` sorts them; only membership counts)
    for name in named:  # most requests name only leagues that exist: no finding to build
        if name.strip() not in known:
            break
    else:
        return
    unknown = [
        Finding(
            "unknown_league",
            f"filters.leagues.{i}",
            "there is no league of that name in this club; list the leagues",
            name=name.strip()[:60],
        )
        for i, name in enumerate(named)
        if name.strip() not in known
    ]
    if unknown:
        raise RuleBrokenError(*unknown)


def check_audience(count: int) -> None:
    if count == 0:
        raise RuleBrokenError(Finding("nobody", "filters", "these leagues have no members"))


def check_same_audience(roster: Roster, leagues: list[str], approved: int, current: int) -> None:
    """The leagues all still exist, and hold as many members as the preview counted."""
    if any(name not in roster.leagues for name in leagues) or current != approved:
        raise RuleBrokenError(
            Finding("audience_changed", approved_count=approved, current_count=current)
        )


#: What an applied draft retires, made once: looking an enum member up on its class costs
#: about 900 instructions in Python 3.11 (its metaclass has a __getattr__), and a set more.
_OTHER_OPERATIONS = frozenset({Siblings.OTHER_OPERATIONS})


def describe_filters(leagues: list[str]) -> str:
    """The audience in the words the preview stores ("members of A, B or C")."""
    if len(leagues) == 1:
        return f"members of {leagues[0]}"
    return "members of " + ", ".join(leagues[:-1]) + f" or {leagues[-1]}"


class ApplyBroadcastDraft(
    ApplyBroadcastDraftTexts,
    OperationContract[
        BroadcastDraftRequest,
        BroadcastDraftArguments,
        BroadcastDraftPreview,
        BroadcastDraftResult,
        DraftFacts,
    ],
):
    """Apply a drafted audience, subject and body to the editable broadcast form."""

    kind = "email_broadcast.apply_draft"
    contract_version = 1
    section = Section("email_broadcasts")
    permission = Permission.PREPARE_BROADCASTS
    # A draft is counted from the roster; the form is only where it will be applied, and
    # other drafts applied to it meanwhile change nothing in this one.
    targets = frozenset({BroadcastForm})

    def load(self, scope: Scope, store: Repository) -> DraftFacts:
        if scope.resource_id != BroadcastForm.create_id(scope.organization_id):
            raise NotFoundError("broadcast form")
        form = store.get(scope.resource_id, BroadcastForm)
        roster = store.read(Roster.create_id(scope.organization_id), Roster)
        return DraftFacts(roster, form)  # by position: a class called with keywords builds a dict

    def resolve(
        self, request: BroadcastDraftRequest, facts: DraftFacts
    ) -> Prepared[BroadcastDraftArguments, BroadcastDraftPreview]:
        leagues = sorted({name.strip() for name in request.filters.leagues})
        check_leagues_exist(facts.roster, request.filters.leagues)
        audience = len(facts.roster.audience(leagues))
        check_audience(audience)
        # Validated from one dict, the filters' among it: ``DraftFilters(...)`` inside
        # ``BroadcastDraftArguments(...)`` is a validation and a Python ``__init__`` more.
        arguments = validated(
            BroadcastDraftArguments,
            {
                "form_id": facts.form.id,
                "filters": {"leagues": leagues},
                "subject": request.subject,
                "body": request.body,
                "audience_count": audience,
            },
        )
        preview = BroadcastDraftPreview(
            filters_in_words=describe_filters(leagues),
            audience_count=audience,
            subject=request.subject,
            body=request.body,
            sends_email=False,
        )
        return Prepared(arguments, preview)

    # -- governance -----------------------------------------------------------------------------

    def retires(
        self, arguments: BroadcastDraftArguments, result: BroadcastDraftResult, facts: DraftFacts
    ) -> frozenset[Siblings]:
        """Another operation's pending proposal on the form (a send) froze the draft this one
        replaces."""
        return _OTHER_OPERATIONS

    def would_retire(
        self, arguments: BroadcastDraftArguments, facts: DraftFacts
    ) -> frozenset[Siblings]:
        return _OTHER_OPERATIONS

    def recheck(self, arguments: BroadcastDraftArguments, facts: DraftFacts) -> dict[str, Any]:
        leagues = list(arguments.filters.leagues)  # the recorded facts' own list
        current = len(facts.roster.audience(leagues))
        check_same_audience(facts.roster, leagues, arguments.audience_count, current)
        return {"audience_count": current, "leagues": leagues}

    def execute(
        self, execution: ExecutionContract[BroadcastDraftArguments], facts: DraftFacts
    ) -> BroadcastDraftResult:
        arguments = execution.arguments
        facts.form.apply_draft(
            filters=dumped(arguments.filters),
            subject=arguments.subject,
            body=arguments.body,
            proposal_id=execution.proposal_id,
        )
        return BroadcastDraftResult(
            form_id=arguments.form_id,
            audience_count=arguments.audience_count,
            subject=arguments.subject,
        )
