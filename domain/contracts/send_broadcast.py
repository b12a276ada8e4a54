"""email_broadcast.send: send the draft applied to the broadcast form to its audience.

The model chooses nothing: the request is empty, and what is sent is the draft the form holds.
At propose time the application freezes that draft (its number, leagues, subject and body)
with the audience counted from the roster and every recipient's address. Approval proves
that the form still holds that draft, that the audience is the same, and that the draft was
never sent, records the send on the form, and asks the e-mail delivery service to deliver it
under the proposal's idempotency key. An applied draft is sent once, ever.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.roster import Roster
from countersign.domain.contracts.apply_broadcast_draft import describe_filters
from countersign.domain.contracts.base import (
    ContractRequest,
    Effect,
    Facts,
    Frozen,
    OperationContract,
    Prepared,
    RevisionNeededError,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.send_broadcast_texts import FIRST_RECIPIENTS, SendBroadcastTexts
from countersign.domain.errors import EffectAlreadyRecordedError, NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate

# -- Request ----------------------------------------------------------------------------------


class SendBroadcastRequest(ContractRequest):
    """Propose sending the draft that is applied to the club's broadcast form, exactly as it
    stands, to its audience. There is nothing to choose: the application sends the applied
    draft, to the members of its leagues. Propose it only when the manager asks to send it."""


# -- Arguments --------------------------------------------------------------------------------


class SendBroadcastArguments(Frozen):
    """The exact message to deliver, and the facts it was frozen from."""

    form_id: UUID
    draft: int
    leagues: list[str]
    subject: str
    body: str
    audience_count: int
    recipients: list[str]


# -- Preview ----------------------------------------------------------------------------------


class SendBroadcastPreview(Frozen):
    """The fixed review presentation of one send."""

    subject: str
    audience_count: int
    first_recipients: str
    filters_in_words: str
    body: str
    sends_email: bool


# -- Result -----------------------------------------------------------------------------------


class SendBroadcastResult(Frozen):
    """What sending did."""

    form_id: UUID
    delivery_ref: str
    audience_count: int
    subject: str


# -- the provider request ---------------------------------------------------------------------


class EmailDelivery(Frozen):
    """What the e-mail delivery service is asked: this message, to these recipients."""

    subject: str
    body: str
    recipients: list[str]
    metadata: dict[str, str]


@dataclass
class SendFacts(Facts):
    """The form whose draft is sent, and the roster its audience is counted from."""

    form: BroadcastForm
    roster: Roster

    def aggregates(self) -> list[Aggregate]:
        return [self.form]


# -- the rules ------------------------------------------------------------------------------------


def check_has_draft(form: BroadcastForm) -> int:
    """The number of the draft the form holds; a form without one has nothing to send."""
    if form.draft is None:
        raise RuleBrokenError(
            Finding(
                "no_draft",
                message="the broadcast form has no applied draft: propose a draft and have it "
                "approved before sending",
            )
        )
    return form.draft


def check_same_draft(form: BroadcastForm, draft: int) -> None:
    if form.draft != draft:
        raise RuleBrokenError(Finding("broadcast_draft_changed"))


def check_not_sent(form: BroadcastForm, draft: int) -> None:
    if form.draft_sent(draft):
        raise RuleBrokenError(
            Finding(
                "broadcast_already_sent",
                message="the draft in the broadcast form has already been sent",
            )
        )


def check_not_sending(form: BroadcastForm, draft: int) -> None:
    if form.draft_sending(draft):
        raise RuleBrokenError(
            Finding(
                "broadcast_send_in_progress",
                message="a send of the draft in the broadcast form is still settling",
            )
        )


def check_audience(recipients: list[str]) -> None:
    if not recipients:
        raise RuleBrokenError(Finding("nobody", message="the draft's leagues have no members"))


def check_same_recipients(current: list[str], arguments: SendBroadcastArguments) -> None:
    """The same addresses the preview froze: first as many, then the same ones."""
    approved = arguments.audience_count
    if len(current) != approved:
        raise RuleBrokenError(
            Finding(
                "broadcast_audience_count_changed",
                approved_count=approved,
                current_count=len(current),
            )
        )
    if current != arguments.recipients:
        raise RuleBrokenError(Finding("broadcast_recipients_changed", approved_count=approved))


class SendBroadcast(
    SendBroadcastTexts,
    OperationContract[
        SendBroadcastRequest,
        SendBroadcastArguments,
        SendBroadcastPreview,
        SendBroadcastResult,
        SendFacts,
    ],
):
    """Send the draft applied to the broadcast form, once, through the e-mail provider."""

    kind = "email_broadcast.send"
    contract_version = 1
    section = Section("email_broadcasts")
    permission = "email_broadcasts.send"
    provider = "email"

    def load(self, scope: Scope, store: Repository) -> SendFacts:
        if scope.resource_id != BroadcastForm.create_id(scope.organization_id):
            raise NotFoundError("broadcast form")
        form = store.get(scope.resource_id, BroadcastForm)
        roster = store.read(Roster.create_id(scope.organization_id), Roster)
        return SendFacts(form=form, roster=roster)

    def resolve(
        self, request: SendBroadcastRequest, facts: SendFacts
    ) -> Prepared[SendBroadcastArguments, SendBroadcastPreview]:
        form = facts.form
        draft = check_has_draft(form)
        check_not_sent(form, draft)
        check_not_sending(form, draft)
        leagues = sorted(str(name) for name in form.filters.get("leagues", []))
        recipients = sorted(facts.roster.audience(leagues))
        check_audience(recipients)
        names = _names(facts.roster, leagues)
        arguments = SendBroadcastArguments(
            form_id=form.id,
            draft=draft,
            leagues=leagues,
            subject=form.subject,
            body=form.body,
            audience_count=len(recipients),
            recipients=recipients,
        )
        preview = SendBroadcastPreview(
            subject=form.subject,
            audience_count=len(recipients),
            first_recipients=", ".join(
                f"{names.get(address, address)} <{address}>"
                for address in recipients[:FIRST_RECIPIENTS]
            ),
            filters_in_words=describe_filters(leagues),
            body=form.body,
            sends_email=True,
        )
        return Prepared(arguments=arguments, preview=preview)

    def recheck(self, arguments: SendBroadcastArguments, facts: SendFacts) -> dict[str, Any]:
        form = facts.form
        check_same_draft(form, arguments.draft)
        check_not_sent(form, arguments.draft)
        check_not_sending(form, arguments.draft)
        current = sorted(facts.roster.audience(arguments.leagues))
        check_same_recipients(current, arguments)
        return {"draft": arguments.draft, "audience_count": len(current), "sent": False}

    def is_external(self, arguments: SendBroadcastArguments) -> bool:
        return True

    def execute(
        self, execution: ExecutionContract[SendBroadcastArguments], facts: SendFacts
    ) -> SendBroadcastResult:
        raise NotImplementedError("a broadcast is only ever sent through the e-mail provider")

    def describe_external(
        self, execution: ExecutionContract[SendBroadcastArguments], facts: SendFacts
    ) -> Effect:
        arguments = execution.arguments
        # Everything comes from the frozen arguments: the request is always the same.
        return self.effect(
            execution.proposal_id,
            EmailDelivery(
                subject=arguments.subject,
                body=arguments.body,
                recipients=list(arguments.recipients),
                metadata={
                    "proposal_id": str(execution.proposal_id),
                    "form_id": str(arguments.form_id),
                    "draft": str(arguments.draft),
                },
            ),
        )

    def start_external(
        self, execution: ExecutionContract[SendBroadcastArguments], facts: SendFacts
    ) -> Effect:
        effect = self.describe_external(execution, facts)
        facts.form.start_send(
            execution.proposal_id,
            execution.arguments.draft,
            effect.idempotency_key,
            recipients=execution.arguments.audience_count,
        )
        return effect

    def finish_external(
        self,
        execution: ExecutionContract[SendBroadcastArguments],
        facts: SendFacts,
        response: EffectResponse,
    ) -> SendBroadcastResult:
        form = facts.form
        send = form.send(execution.proposal_id)
        if send is None or send.status != "pending":
            raise EffectAlreadyRecordedError(str(execution.proposal_id))
        if response.status != "succeeded":
            form.fail_send(execution.proposal_id, reason=response.reason or "refused")
            raise RevisionNeededError("broadcast_delivery_refused")
        form.settle_send(
            execution.proposal_id, delivery_ref=response.reference, sent_by=execution.approved_by
        )
        arguments = execution.arguments
        return SendBroadcastResult(
            form_id=arguments.form_id,
            delivery_ref=response.reference,
            audience_count=arguments.audience_count,
            subject=arguments.subject,
        )


def _names(roster: Roster, leagues: list[str]) -> dict[str, str]:
    """Each member's name by address, across the leagues."""
    return {
        address: name for league in leagues for address, name in roster.members_of(league).items()
    }
