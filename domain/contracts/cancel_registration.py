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

import re
from collections.abc import Mapping
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
from countersign.domain.contracts.card_refund import (
    card_refund,
    record_card_refund,
    start_card_refund,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.order_facts import REFUND_DESTINATION, OrderFacts
from countersign.domain.contracts.presentation import Localized, PreviewField, Shown
from countersign.domain.errors import NotFoundError
from countersign.domain.money import format_money
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


#: What people read about a cancellation request ``prepare`` refuses (``request_problems``).
_PROBLEMS = {
    "cancellation_refund_settling": Localized(
        "A refund on this order is still settling; try again once it has settled.",
        "Un remboursement de cette commande est en cours de règlement ; réessayez une fois "
        "qu'il sera réglé.",
    ),
    "nothing_left": Localized(
        "Nothing is left to refund on this order, so its registration cannot be cancelled here.",
        "Il ne reste rien à rembourser sur cette commande : son inscription ne peut pas être "
        "annulée ici.",
    ),
    "registration_no_longer_active": Localized(
        "This registration has already been cancelled.",
        "Cette inscription a déjà été annulée.",
    ),
    "no_registration": Localized(
        "This order holds no league registration to cancel.",
        "Cette commande ne contient aucune inscription à une ligue à annuler.",
    ),
    "league_spot_gone": Localized(
        "The participant no longer plays in {league}, so there is no spot to release.",
        "Le ou la participant(e) ne joue plus dans {league} : il n'y a pas de place à libérer.",
    ),
    "not_one_card": Localized(
        "What is left to refund was not paid by a single card, so it can only go back as club "
        "account credit.",
        "Ce qui reste à rembourser n'a pas été payé par une seule carte : cela ne peut être "
        "rendu qu'en crédit au compte du club.",
    ),
    "no_account": Localized(
        "The participant has no club account, so the money can only go back the way it was paid.",
        "Le ou la participant(e) n'a pas de compte au club : l'argent ne peut revenir que par "
        "le moyen de paiement d'origine.",
    ),
}


class CancelRegistration(
    OperationContract[
        CancelRegistrationRequest,
        CancelRegistrationArguments,
        CancelRegistrationPreview,
        CancelRegistrationResult,
        CancellationFacts,
    ]
):
    """Cancel a registration: refund its balance to the card or to account credit, cancel the
    order and release the league spot."""

    kind = "order.cancel_registration"
    contract_version = 1
    section = Section("orders")
    permission = "orders.refund"
    provider = "payments"

    this_resource = Localized("this order", "cette commande")
    title = Localized("Cancel a registration", "Annuler une inscription")
    request_fields = {
        "destination": REFUND_DESTINATION,
    }
    preview_fields = {
        "participant_name": PreviewField(Localized("Participant", "Participant(e)")),
        "amount_cents": PreviewField(
            Localized("Refund amount", "Montant du remboursement"), Shown.MONEY, emphasis=True
        ),
        "to_account_credit": PreviewField(
            Localized("Refund method", "Mode de remboursement"),
            Shown.FLAG,
            yes=Localized("Club account credit", "Crédit au compte du club"),
            no=Localized("Back to the card", "Retour sur la carte"),
        ),
        "refund_destination": PreviewField(Localized("Refund to", "Remboursé vers")),
        "paid_cents": PreviewField(Localized("Paid", "Payé"), Shown.MONEY),
        "refunded_before_cents": PreviewField(
            Localized("Refunded earlier", "Déjà remboursé"), Shown.MONEY
        ),
        "league_spot_released": PreviewField(
            Localized("League spot released", "Place libérée dans la ligue")
        ),
    }
    preview_hidden = frozenset({"currency"})
    request_problems = _PROBLEMS
    revision_reasons = {
        "registration_no_longer_active": Localized(
            "The registration has already been cancelled.",
            "L'inscription a déjà été annulée.",
        ),
        "refundable_balance_changed": Localized(
            "What is left to refund on the order changed from {approved_cents} to "
            "{current_cents} since it was proposed.",
            "Le montant restant à rembourser sur la commande est passé de {approved_cents} à "
            "{current_cents} depuis la proposition.",
        ),
        "cancellation_refund_settling": Localized(
            "Another refund on this order is still settling.",
            "Un autre remboursement de cette commande est en cours de règlement.",
        ),
        "league_spot_gone": Localized(
            "{participant} no longer holds a spot in {league}.",
            "{participant} n'a plus de place dans la ligue {league}.",
        ),
        "cancellation_destination_unavailable": Localized(
            "The refund destination no longer fits the order's payments.",
            "La destination du remboursement ne convient plus aux paiements de la commande.",
        ),
        "cancellation_refund_declined": Localized(
            "The card provider declined the refund; the registration was not cancelled.",
            "Le fournisseur de paiement a refusé le remboursement ; l'inscription n'a pas été "
            "annulée.",
        ),
    }
    effect_uncertain = Localized(
        "The card provider's answer was lost. countersign is confirming the refund with the "
        "card provider, and cancels the registration once it is confirmed. Do not refund "
        "again or cancel it another way.",
        "La réponse du fournisseur de paiement a été perdue. countersign confirme le "
        "remboursement auprès du fournisseur de paiement, et annule l'inscription une fois "
        "qu'il est confirmé. Ne remboursez pas de nouveau et ne l'annulez pas autrement.",
    )
    effect_unavailable = Localized(
        "The card provider was unavailable and refunded nothing: no money has moved and the "
        "registration is still active. countersign sends this same refund, once, as soon as "
        "the provider answers again, and cancels the registration when it is confirmed. Do "
        "not refund again or cancel it another way.",
        "Le fournisseur de paiement était indisponible et n'a rien remboursé\u00a0: aucun "
        "argent n'a bougé et l'inscription est toujours active. countersign envoie ce même "
        "remboursement, une seule fois, dès que le fournisseur répond de nouveau, et annule "
        "l'inscription une fois confirmé. Ne remboursez pas de nouveau et ne l'annulez pas "
        "autrement.",
    )
    outcome_titles = {
        "succeeded": Localized("Registration cancelled", "Inscription annulée"),
        "needs_reconciliation": Localized(
            "Confirming with the card provider: do not refund again",
            "Confirmation auprès du fournisseur de paiement\u00a0: ne remboursez pas de nouveau",
        ),
        "terminal_failure": Localized("Failed: no money moved", "Échec : aucun argent n'a bougé"),
        "revision_required:cancellation_refund_declined": Localized(
            "Not cancelled: the card was declined", "Non annulée : la carte a été refusée"
        ),
    }
    irreversible = Localized(
        "Cancelling refunds {amount} to {card}, which cannot be undone, and releases {who}'s "
        "spot in {league}. The member usually sees the refund within 5 to 10 business days.",
        "L'annulation rembourse {amount} sur {card}, ce qui est irréversible, et libère la "
        "place de {who} dans {league}. Le membre voit généralement le remboursement d'ici 5 à "
        "10 jours ouvrables.",
    )
    assistant_instructions = (
        "When the manager asks to cancel the participant's registration, propose it with "
        "{tool}: the application refunds what is left of what they paid and releases their "
        "league spot; you only choose where the money goes, as the manager says."
    )
    stand_in_cue = r"\b(cancel|annul)"

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        """The destination the manager's words name: credit or account means account credit,
        anything else the original payment method; nothing once the order investigation says
        the registration is cancelled."""
        order = reads.get("get_order_investigation") or {}
        if (order.get("registration") or {}).get("status") == "cancelled":
            return "This registration is already cancelled; there is nothing left to cancel."
        if re.search(r"\b(credit|account|crédit|compte)", words, re.IGNORECASE):
            return {"destination": "account_credit"}
        return {"destination": "original_payment_method"}

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

    withdrew = Localized(
        "the cancellation of {participant_name}'s registration approved {when} closed this order.",
        "l'annulation de l'inscription de {participant_name} approuvée {when} a clos cette "
        "commande.",
    )

    def recheck(
        self, arguments: CancelRegistrationArguments, facts: CancellationFacts
    ) -> dict[str, Any]:
        order = facts.order
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

    def approve_label(self, preview: CancelRegistrationPreview, language: str = "en") -> str:
        """What the button does with the money: back to the card, or account credit."""
        amount = format_money(preview.amount_cents, preview.currency, language)
        if preview.to_account_credit:
            return Localized(
                "Cancel and credit {amount} to {who}'s club account",
                "Annuler et créditer {amount} au compte de {who}",
            ).text(language, amount=amount, who=preview.participant_name)
        return Localized(
            "Cancel and refund {amount} to {where}", "Annuler et rembourser {amount} sur {where}"
        ).text(language, amount=amount, where=preview.refund_destination)

    def inbox_reason(self, preview: CancelRegistrationPreview, language: str = "en") -> str | None:
        return Localized("Cancellation: {league}", "Annulation : {league}").text(
            language, league=preview.league_spot_released
        )

    def irreversible_note(
        self, preview: CancelRegistrationPreview, language: str = "en"
    ) -> str | None:
        """Money back to a card leaves the club for good; account credit stays in its books."""
        if preview.to_account_credit or self.irreversible is None:
            return None
        return self.irreversible.text(
            language,
            amount=format_money(preview.amount_cents, preview.currency, language),
            card=preview.refund_destination,
            who=preview.participant_name,
            league=preview.league_spot_released,
        )

    def headline(self, preview: CancelRegistrationPreview, language: str = "en") -> str:
        return Localized(
            "Cancel {who}'s registration and refund {amount}",
            "{who} : annuler l'inscription et rembourser {amount}",
        ).text(
            language,
            who=preview.participant_name,
            amount=format_money(preview.amount_cents, preview.currency, language),
        )

    def success_text(
        self,
        preview: CancelRegistrationPreview,
        result: CancelRegistrationResult,
        language: str = "en",
    ) -> str:
        amount = format_money(result.amount_cents, result.currency, language)
        who = preview.participant_name
        if language == "fr":
            where = (
                f"en crédit au compte du club de {result.destination}"
                if result.to_account_credit
                else f"sur la carte {result.destination}"
            )
            spot = (
                f"sa place dans la ligue {result.league} est libérée"
                if result.spot_released
                else f"{who} n'avait déjà plus de place dans la ligue {result.league}"
            )
            return f"Inscription de {who} annulée : {amount} remboursés {where}, et {spot}."
        where = (
            f"as club account credit for {result.destination}"
            if result.to_account_credit
            else f"to {result.destination}"
        )
        spot = (
            f"their spot in {result.league} is released"
            if result.spot_released
            else f"they no longer held a spot in {result.league}"
        )
        return f"Cancelled {who}'s registration: refunded {amount} {where}, and {spot}."


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_active(order: Order) -> None:
    if not order.is_active:
        raise RuleBrokenError(
            Finding(
                "registration_no_longer_active",
                message="this registration has already been cancelled",
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
