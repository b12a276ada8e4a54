"""order.cancel_registration: cancel a participant's registration, refund what is left of what
they paid, and release their spot in the league.

The model only says where the money goes. The application computes the refundable balance
(what was paid, less earlier refunds) and the league spot the registration holds, and freezes
both with the preview. To the card, the refund goes through the payment provider and the order
is cancelled and the spot released only once the provider has answered, in the commit that
records the outcome; to account credit, the refund, the credit, the cancellation and the
released spot are one local commit.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from countersign.domain.club.orders import Order, Payment
from countersign.domain.club.roster import Roster
from countersign.domain.contracts.base import (
    ALL_SIBLINGS,
    ContractRequest,
    Effect,
    Frozen,
    OperationContract,
    Prepared,
    RevisionNeededError,
    Siblings,
)
from countersign.domain.contracts.cancel_registration_texts import CancelRegistrationTexts
from countersign.domain.contracts.card_refund import (
    card_refund,
    record_card_refund,
    start_card_refund,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.order_facts import OrderFacts
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
from pydantic import Field

# -- Request: what the model supplies ------------------------------------------------------------


class CancelRegistrationRequest(ContractRequest):
    """Propose cancelling the participant's registration: the application refunds what is left
    of what they paid and releases their spot in the league. Say only where the money goes;
    the application computes the amount and the spot, never supply them."""

    destination: Literal["original_payment_method", "account_credit"] = Field(
        description=(
            "Where the refund goes: back to the original payment method (the card), or as "
            "credit on the participant's club account."
        ),
    )


# -- Arguments: what execution needs, frozen ------------------------------------------------------


class CancellationRefundDestination(Frozen):
    """The concrete destination of the refund, resolved before the manager sees anything."""

    type: Literal["card", "account_credit"]
    payment: str | None
    """The card payment refunded (``card`` only)."""
    account_id: UUID | None
    """The participant's club account (``account_credit`` only)."""
    label: str
    """The card's label, or the account holder's name: the same in every language."""


class CancelRegistrationArguments(Frozen):
    """The exact cancellation to execute."""

    order_id: UUID
    amount_cents: int = Field(gt=0)
    currency: str
    destination: CancellationRefundDestination
    league: str
    member_email: str


# -- Preview: what the manager needs to understand the consequences ------------------------------


class CancelRegistrationPreview(Frozen):
    """The fixed review presentation of one cancellation."""

    participant_name: str
    amount_cents: int
    currency: str
    paid_cents: int
    refunded_before_cents: int
    to_account_credit: bool
    refund_destination: str
    league_spot_released: str


# -- Result ---------------------------------------------------------------------------------------


class CancelRegistrationResult(Frozen):
    """What the cancellation did."""

    refund_refs: list[str]
    amount_cents: int
    currency: str
    to_account_credit: bool
    destination: str
    league: str
    spot_released: bool
    """False only when the member had already left the league before the card refund settled."""


# -- the facts it reads and changes ---------------------------------------------------------------


class CancellationFacts(OrderFacts):
    """The order, the club's roster, and the participant's club account, loaded only when a
    refund to account credit needs it."""

    def __init__(self, order: Order, roster: Roster, store: Repository) -> None:
        super().__init__(order, store)
        self.roster = roster

    def aggregates(self) -> list[Aggregate]:
        order, *account = super().aggregates()
        return [order, self.roster, *account]


# -- the contract ---------------------------------------------------------------------------------


class CancelRegistration(
    CancelRegistrationTexts,
    OperationContract[
        CancelRegistrationRequest,
        CancelRegistrationArguments,
        CancelRegistrationPreview,
        CancelRegistrationResult,
        CancellationFacts,
    ],
):
    """Cancel a registration: refund its balance to the card or to account credit, cancel the
    order and release the league spot."""

    kind = "order.cancel_registration"
    contract_version = 1
    section = Section("orders")
    permission = "orders.refund"
    provider = "payments"

    def load(self, scope: Scope, store: Repository) -> CancellationFacts:
        order = store.get(scope.resource_id, Order)
        if order.organization_id != scope.organization_id:
            raise NotFoundError("order")
        roster = store.get(Roster.create_id(order.organization_id), Roster)
        return CancellationFacts(order, roster, store)

    def resolve(
        self, request: CancelRegistrationRequest, facts: CancellationFacts
    ) -> Prepared[CancelRegistrationArguments, CancelRegistrationPreview]:
        order = facts.order
        check_active(order)
        league = check_registered(order)
        check_holds_spot(order, facts.roster, league)
        check_nothing_settling(order)
        amount = order.refundable_balance_cents
        check_something_left(amount)
        destination = _resolve_destination(request.destination, order, facts)
        arguments = CancelRegistrationArguments(
            order_id=order.id,
            amount_cents=amount,
            currency=order.currency,
            destination=destination,
            league=league,
            member_email=order.participant_email,
        )
        preview = CancelRegistrationPreview(
            participant_name=order.participant_name,
            amount_cents=amount,
            currency=order.currency,
            paid_cents=order.paid_cents,
            refunded_before_cents=order.paid_cents - amount,
            to_account_credit=destination.type == "account_credit",
            refund_destination=destination.label,
            league_spot_released=league,
        )
        return Prepared(arguments=arguments, preview=preview)

    # -- governance -----------------------------------------------------------------------------

    def amount_cents(self, arguments: CancelRegistrationArguments) -> int | None:
        return arguments.amount_cents

    def retires(
        self,
        arguments: CancelRegistrationArguments,
        result: CancelRegistrationResult,
        facts: CancellationFacts,
    ) -> frozenset[Siblings]:
        """A cancelled order has nothing left for any other pending proposal on it."""
        return ALL_SIBLINGS

    def would_retire(
        self, arguments: CancelRegistrationArguments, facts: CancellationFacts
    ) -> frozenset[Siblings]:
        return ALL_SIBLINGS

    def recheck(
        self, arguments: CancelRegistrationArguments, facts: CancellationFacts
    ) -> dict[str, Any]:
        order = facts.order
        check_not_cancelled_already(order, facts.roster, arguments.league, arguments.member_email)
        check_active(order)
        check_nothing_settling(order)
        balance = order.refundable_balance_cents
        check_same_balance(order, arguments.amount_cents)
        check_holds_spot(order, facts.roster, arguments.league)
        check_destination_fits(arguments, facts)
        return {
            "registration_active": True,
            "refundable_balance_cents": balance,
            "unresolved_refund_attempts": 0,
            "league": arguments.league,
            "holds_league_spot": True,
            "destination": arguments.destination.type,
        }

    def is_external(self, arguments: CancelRegistrationArguments) -> bool:
        return arguments.destination.type == "card"

    def execute(
        self,
        execution: ExecutionContract[CancelRegistrationArguments],
        facts: CancellationFacts,
    ) -> CancelRegistrationResult:
        arguments = execution.arguments
        account = facts.account
        assert account is not None  # revalidation proved the account exists
        facts.order.refund_balance_to_account(
            execution.proposal_id, arguments.amount_cents, recorded_by=execution.approved_by
        )
        account.credit(
            arguments.amount_cents,
            memo=f"Cancelled registration, order {facts.order.key}",
            proposal_id=execution.proposal_id,
        )
        return _cancel(execution, facts)

    def describe_external(
        self, execution: ExecutionContract[CancelRegistrationArguments], facts: CancellationFacts
    ) -> Effect:
        arguments = execution.arguments
        payment = _card_payment(arguments)
        return card_refund(self, execution, facts.order, payment, arguments.amount_cents)

    def start_external(
        self, execution: ExecutionContract[CancelRegistrationArguments], facts: CancellationFacts
    ) -> Effect:
        arguments = execution.arguments
        payment, amount = _card_payment(arguments), arguments.amount_cents
        return start_card_refund(self, execution, facts.order, payment, None, amount)

    def finish_external(
        self,
        execution: ExecutionContract[CancelRegistrationArguments],
        facts: CancellationFacts,
        response: EffectResponse,
    ) -> CancelRegistrationResult:
        if not record_card_refund(execution, facts.order, response):
            raise RevisionNeededError("cancellation_refund_declined")
        return _cancel(execution, facts)


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_active(order: Order) -> None:
    if not order.is_active:
        raise RuleBrokenError(
            Finding(
                "registration_no_longer_active",
                message="this registration has already been cancelled",
            )
        )


def check_not_cancelled_already(order: Order, roster: Roster, league: str, email: str) -> None:
    """At approval: the registration is not already where the cancellation would leave it:
    cancelled, nothing of what was paid still held (every payment given back, no refund
    settling) and the participant out of the league. Then nothing is left to do. One
    cancelled with money still to give back, or whose spot is still held, is not: the
    rules after this one say why (``check_active``)."""
    if (
        not order.is_active
        and order.refundable_balance_cents == 0
        and not order.unresolved_attempts()
        and not roster.plays_in(league, email)
    ):
        raise RuleBrokenError(
            Finding(
                "registration_already_cancelled",
                message="this registration has already been cancelled and fully refunded",
                already_so=True,
                participant=order.participant_name,
                league=league,
            )
        )


def check_registered(order: Order) -> str:
    """The league whose spot the registration holds."""
    if order.league is None:
        raise RuleBrokenError(
            Finding("no_registration", message="this order holds no league registration to cancel")
        )
    return order.league


def check_holds_spot(order: Order, roster: Roster, league: str) -> None:
    if not roster.plays_in(league, order.participant_email):
        raise RuleBrokenError(
            Finding(
                "league_spot_gone",
                message=f"the participant no longer plays in {league}; there is no spot to release",
                participant=order.participant_name,
                league=league,
            )
        )


def check_nothing_settling(order: Order) -> None:
    if order.unresolved_attempts():
        raise RuleBrokenError(
            Finding(
                "cancellation_refund_settling",
                message="a refund on this order is still settling; try again once it settles",
            )
        )


def check_something_left(amount_cents: int) -> None:
    if amount_cents <= 0:
        raise RuleBrokenError(
            Finding(
                "nothing_left",
                message="nothing is left to refund on this order; it cannot be cancelled here",
            )
        )


def check_same_balance(order: Order, approved_cents: int) -> None:
    balance = order.refundable_balance_cents
    if balance != approved_cents:
        raise RuleBrokenError(
            Finding(
                "refundable_balance_changed",
                approved_cents=approved_cents,
                current_cents=balance,
                currency=order.currency,
            )
        )


def check_destination_fits(
    arguments: CancelRegistrationArguments, facts: CancellationFacts
) -> None:
    if not _destination_still_fits(arguments, facts):
        raise RuleBrokenError(Finding("cancellation_destination_unavailable"))


def _card_payment(arguments: CancelRegistrationArguments) -> str:
    payment = arguments.destination.payment
    assert payment is not None  # a card destination names its payment
    return payment


def _holding_payments(order: Order) -> list[Payment]:
    """The payments that still hold refundable value."""
    return [p for p in order.payments if order.refundable_cents(p.ref) > 0]


def _refundable_by_card(payment: Payment) -> bool:
    """A card payment with the provider's charge to refund."""
    return payment.method == "card" and payment.charge_id is not None


def _resolve_destination(
    phrase: str, order: Order, facts: CancellationFacts
) -> CancellationRefundDestination:
    holding = _holding_payments(order)
    if phrase == "original_payment_method" and not all(p.method == "account" for p in holding):
        if len(holding) != 1 or not _refundable_by_card(holding[0]):
            raise RuleBrokenError(
                Finding(
                    "not_one_card",
                    "destination",
                    "what is left to refund was not paid by one card; it cannot go back to its "
                    "original method here, use account_credit",
                )
            )
        return CancellationRefundDestination(
            type="card", payment=holding[0].ref, account_id=None, label=holding[0].label
        )
    # account_credit, or a balance that was itself paid with account credit
    account = facts.account
    if account is None:
        raise RuleBrokenError(
            Finding(
                "no_account",
                "destination",
                "the participant has no club account; use original_payment_method",
            )
        )
    return CancellationRefundDestination(
        type="account_credit",
        payment=None,
        account_id=account.id,
        label=account.holder_name,
    )


def _destination_still_fits(
    arguments: CancelRegistrationArguments, facts: CancellationFacts
) -> bool:
    destination = arguments.destination
    if destination.type == "account_credit":
        return facts.account is not None and facts.account.id == destination.account_id
    holding = _holding_payments(facts.order)
    return [p.ref for p in holding] == [destination.payment] and _refundable_by_card(holding[0])


def _cancel(
    execution: ExecutionContract[CancelRegistrationArguments], facts: CancellationFacts
) -> CancelRegistrationResult:
    """Once the refund is recorded: cancel the order and release the spot if it is still held."""
    arguments = execution.arguments
    facts.order.cancel(execution.proposal_id, cancelled_by=execution.approved_by)
    released = facts.roster.plays_in(arguments.league, arguments.member_email)
    if released:
        facts.roster.leave(arguments.league, arguments.member_email)
    refunds = [r for r in facts.order.refunds if r.proposal_id == str(execution.proposal_id)]
    return CancelRegistrationResult(
        refund_refs=[r.ref for r in refunds],
        amount_cents=sum(r.amount_cents for r in refunds),
        currency=arguments.currency,
        to_account_credit=arguments.destination.type == "account_credit",
        destination=arguments.destination.label,
        league=arguments.league,
        spot_released=released,
    )
