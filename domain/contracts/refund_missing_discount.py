"""order.refund_missing_discount: refund a discount the participant was eligible for but missed.

The model names the payment, line item, discount and a destination phrase. The application
computes the amount, resolves the concrete destination, and freezes both with the preview.
A refund to the card goes through the payment provider; account credit is local.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal
from uuid import UUID

from countersign.domain.club.orders import Discount, Order, Payment
from countersign.domain.club.organization import Permission
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
from countersign.domain.contracts.presentation import Localized, PreviewField, RequestField, Shown
from countersign.domain.errors import NotFoundError
from countersign.domain.money import format_money
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.scope import Scope, Section
from pydantic import Field

# -- Request: what the model supplies ------------------------------------------------------------


class RefundRequest(ContractRequest):
    """Propose refunding a discount that the participant was eligible for but did not receive
    at checkout. Name the payment, line item and discount by the references the order
    investigation gave you. The application computes the amount; never supply one."""

    payment: str = Field(
        description="Reference of the payment to refund against, for example P1.",
        pattern=r"^P[0-9]{1,3}$",
    )
    line_item: str = Field(
        description="Reference of the line item the discount belongs to, for example L1.",
        pattern=r"^L[0-9]{1,3}$",
    )
    discount: str = Field(
        description="Reference of the missed discount, for example D1.",
        pattern=r"^D[0-9]{1,3}$",
    )
    destination: Literal["original_payment_method", "account_credit"] = Field(
        description=(
            "Where the money goes: back to the original payment method, "
            "or as credit on the participant's club account."
        ),
    )


# -- Arguments: what execution needs, frozen ------------------------------------------------------


class RefundDestination(Frozen):
    """The concrete destination, resolved before the manager sees anything."""

    type: Literal["card", "account_credit"]
    payment: str
    account_id: UUID | None
    label: str


class RefundArguments(Frozen):
    """The exact refund to execute."""

    order_id: UUID
    payment: str
    line_item: str
    discount: str
    amount_cents: int = Field(gt=0)
    currency: str
    destination: RefundDestination


# -- Preview: what the manager needs to understand the consequences ------------------------------


class RefundPreview(Frozen):
    """The fixed review presentation of one refund."""

    participant_name: str
    product_name: str
    discount_name: str
    payment_method: str
    amount_cents: int
    currency: str
    current_order_total_cents: int
    resulting_order_total_cents: int
    refund_destination: str
    product_configuration_unchanged: bool


# -- Result ---------------------------------------------------------------------------------------


class RefundResult(Frozen):
    """What the refund did."""

    refund_ref: str
    amount_cents: int
    currency: str
    destination: str
    resulting_order_total_cents: int


# -- the facts it reads and changes ---------------------------------------------------------------


class RefundFacts(OrderFacts):
    """The order, and the participant's club account, loaded only when a refund needs it."""


# -- the contract ---------------------------------------------------------------------------------

#: What people read about a refund request ``prepare`` refuses (``request_problems``).
_PROBLEMS = {
    "unknown_payment": Localized(
        "This order has no such payment.",
        "Cette commande n'a pas ce paiement.",
    ),
    "unknown_line_item": Localized(
        "This order has no such item.",
        "Cette commande n'a pas cet article.",
    ),
    "unknown_discount": Localized(
        "This order has no such discount.",
        "Cette commande n'a pas cette remise.",
    ),
    "discount_elsewhere": Localized(
        "“{discount}” belongs to another item of this order.",
        "« {discount} » porte sur un autre article de cette commande.",
    ),
    "discount_applied": Localized(
        "“{discount}” was applied at checkout, so nothing is owed.",
        "« {discount} » a été appliquée au paiement : rien n'est dû.",
    ),
    "discount_refunded": Localized(
        "“{discount}” has already been refunded.",
        "« {discount} » a déjà été remboursée.",
    ),
    "refund_in_progress": Localized(
        "Another refund on this order is still settling; try again once it has settled.",
        "Un autre remboursement de cette commande est en cours de règlement ; réessayez une "
        "fois qu'il sera réglé.",
    ),
    "payment_short": Localized(
        "This payment has only {refundable_cents} left to refund, less than the missed discount.",
        "Il ne reste que {refundable_cents} à rembourser sur ce paiement, moins que la remise "
        "manquée.",
    ),
    "not_by_card": Localized(
        "This payment was not made by card, so it can only go back as club account credit.",
        "Ce paiement n'a pas été fait par carte : il ne peut être rendu qu'en crédit au compte "
        "du club.",
    ),
    "no_account": Localized(
        "The participant has no club account, so the money can only go back the way it was paid.",
        "Le ou la participant(e) n'a pas de compte au club : l'argent ne peut revenir que par "
        "le moyen de paiement d'origine.",
    ),
}


class RefundMissingDiscount(
    OperationContract[RefundRequest, RefundArguments, RefundPreview, RefundResult, RefundFacts]
):
    """Refund a missed discount to the card or to account credit."""

    kind = "order.refund_missing_discount"
    contract_version = 1
    section = Section("orders")
    permission = Permission.REFUND_ORDERS
    provider = "payments"

    this_resource = Localized("this order", "cette commande")
    title = Localized("Refund a missed discount", "Rembourser une remise manquée")
    request_fields = {
        "payment": RequestField(
            Localized("Payment", "Paiement"),
            Localized(
                "The payment's reference in the order, like P1.",
                "La référence du paiement dans la commande, par exemple P1.",
            ),
        ),
        "line_item": RequestField(
            Localized("Line item", "Article"),
            Localized(
                "The item's reference in the order, like L1.",
                "La référence de l'article dans la commande, par exemple L1.",
            ),
        ),
        "discount": RequestField(
            Localized("Discount", "Remise"),
            Localized(
                "The missed discount's reference in the order, like D1.",
                "La référence de la remise manquée dans la commande, par exemple D1.",
            ),
        ),
        "destination": REFUND_DESTINATION,
    }
    preview_fields = {
        "participant_name": PreviewField(Localized("Participant", "Participant(e)")),
        "product_name": PreviewField(Localized("Product", "Produit")),
        "discount_name": PreviewField(Localized("Missed discount", "Remise manquée")),
        "amount_cents": PreviewField(
            Localized("Refund amount", "Montant du remboursement"), Shown.MONEY, emphasis=True
        ),
        "payment_method": PreviewField(Localized("Payment", "Paiement")),
        "refund_destination": PreviewField(
            Localized("Refund to", "Remboursé vers"),
            words=lambda label, language: _destination(label, language),
        ),
        "current_order_total_cents": PreviewField(
            Localized("Order total before", "Total avant remboursement"), Shown.MONEY
        ),
        "resulting_order_total_cents": PreviewField(
            Localized("Order total after", "Total après remboursement"), Shown.MONEY
        ),
        "product_configuration_unchanged": PreviewField(
            Localized("Product configuration", "Configuration du produit"),
            Shown.FLAG,
            yes=Localized("Unchanged", "Inchangée"),
            no=Localized("CHANGED", "MODIFIÉE"),
            alert_when=False,
        ),
    }
    preview_hidden = frozenset({"currency"})
    request_problems = _PROBLEMS
    revision_reasons = {
        "amount_changed": Localized(
            "The refund amount changed from {approved_cents} to {current_cents} since it was "
            "proposed.",
            "Le montant du remboursement est passé de {approved_cents} à {current_cents} "
            "depuis la proposition.",
        ),
        "payment_already_refunded": Localized(
            "The payment {payment} has already been refunded.",
            "Le paiement {payment} a déjà été remboursé.",
        ),
        "insufficient_refundable": Localized(
            "Only {refundable_cents} of the payment is left to refund.",
            "Il ne reste que {refundable_cents} à rembourser sur ce paiement.",
        ),
        "discount_already_refunded": Localized(
            "The {discount} has already been refunded.",
            "La remise {discount} a déjà été remboursée.",
        ),
        "refund_in_progress": Localized(
            "Another refund on this order is still settling.",
            "Un autre remboursement de cette commande est en cours de règlement.",
        ),
        "evidence_missing": Localized(
            "The order no longer shows the line item or discount.",
            "La commande ne montre plus l'article ou la remise.",
        ),
        "destination_unavailable": Localized(
            "The refund destination no longer fits the payment.",
            "La destination du remboursement ne convient plus au paiement.",
        ),
        "refund_declined_by_provider": Localized(
            "The card provider declined the refund.",
            "Le fournisseur de paiement a refusé le remboursement.",
        ),
    }
    effect_uncertain = Localized(
        "The refund was sent, but the card provider's answer was lost, so it is not yet known "
        "whether the money moved. countersign is confirming it with the card provider, by "
        "asking about that same refund: it never sends a second one. Tell the member their "
        "refund is being processed. Do not refund again, by hand or otherwise.",
        "Le remboursement a été envoyé, mais la réponse du fournisseur de paiement a été "
        "perdue\u00a0: on ne sait pas encore si l'argent a bougé. countersign le confirme "
        "auprès du fournisseur de paiement, en l'interrogeant sur ce même remboursement\u00a0: "
        "il n'en envoie jamais un second. Dites au membre que son remboursement est en cours "
        "de traitement. Ne remboursez pas de nouveau, ni à la main ni autrement.",
    )
    effect_unavailable = Localized(
        "The card provider was unavailable and refunded nothing: no money has moved yet. "
        "countersign sends this same refund, once, as soon as the provider answers again. "
        "Tell the member their refund is on its way. Do not refund again, by hand or "
        "otherwise.",
        "Le fournisseur de paiement était indisponible et n'a rien remboursé\u00a0: aucun "
        "argent n'a encore bougé. countersign envoie ce même remboursement, une seule fois, "
        "dès que le fournisseur répond de nouveau. Dites au membre que son remboursement est "
        "en route. Ne remboursez pas de nouveau, ni à la main ni autrement.",
    )
    outcome_titles = {
        "succeeded": Localized("Refund sent", "Remboursement envoyé"),
        "needs_reconciliation": Localized(
            "Confirming with the card provider: do not refund again",
            "Confirmation auprès du fournisseur de paiement\u00a0: ne remboursez pas de nouveau",
        ),
        "terminal_failure": Localized("Failed: no money moved", "Échec : aucun argent n'a bougé"),
        "revision_required:refund_declined_by_provider": Localized(
            "Not executed: the card was declined", "Non exécutée : la carte a été refusée"
        ),
    }
    irreversible = Localized(
        "A card refund cannot be undone: once you confirm, {amount} goes back to {card} and the "
        "club cannot take it back. The member usually sees it on their statement within 5 to "
        "10 business days.",
        "Un remboursement sur carte est irréversible : dès que vous confirmez, {amount} "
        "retourne sur {card} et le club ne peut pas le reprendre. Le membre le voit "
        "généralement sur son relevé d'ici 5 à 10 jours ouvrables.",
    )
    assistant_instructions = (
        "When a participant missed a discount they were eligible for, propose a refund with {tool}."
    )

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        """The first missed discount, to account credit when the manager mentions credit."""
        order = reads.get("get_order_investigation") or {}
        for discount in order.get("discounts", []):
            if discount.get("applied_at_checkout") or discount.get("already_refunded"):
                continue
            payments = [p for p in order.get("payments", []) if p.get("refundable_cents", 0) > 0]
            if not payments:
                break
            wants_credit = re.search(r"\b(credit|account)\b", words, re.IGNORECASE) is not None
            return {
                "payment": payments[0]["ref"],
                "line_item": discount["line_item"],
                "discount": discount["ref"],
                "destination": "account_credit" if wants_credit else "original_payment_method",
            }
        return "Nothing is owed on this order: every eligible discount was applied or refunded."

    def load(self, scope: Scope, store: Repository) -> RefundFacts:
        order = store.get(scope.resource_id, Order)
        if order.organization_id != scope.organization_id:
            raise NotFoundError("order")
        return RefundFacts(order, store)

    def resolve(
        self, request: RefundRequest, facts: RefundFacts
    ) -> Prepared[RefundArguments, RefundPreview]:
        order = facts.order
        payment, line, discount = _resolve_refs(order, request)
        check_discount_on(discount, line.ref)
        check_discount_owed(order, discount)
        check_nothing_settling(order)
        destination = _resolve_destination(request.destination, payment, facts)
        amount = order.discount_value_cents(discount.ref)
        check_refundable(order, payment, amount)
        arguments = RefundArguments(
            order_id=order.id,
            payment=payment.ref,
            line_item=line.ref,
            discount=discount.ref,
            amount_cents=amount,
            currency=order.currency,
            destination=destination,
        )
        preview = RefundPreview(
            participant_name=order.participant_name,
            product_name=line.product,
            discount_name=discount.name,
            payment_method=payment.label,
            amount_cents=amount,
            currency=order.currency,
            current_order_total_cents=order.total_cents,
            resulting_order_total_cents=order.total_cents - amount,
            refund_destination=destination.label,
            product_configuration_unchanged=True,
        )
        return Prepared(arguments=arguments, preview=preview)

    # -- governance -----------------------------------------------------------------------------

    def subject(self, arguments: RefundArguments) -> str:
        """One order may have several discounts missed: each is its own thing to refund."""
        return f"{arguments.payment}/{arguments.line_item}/{arguments.discount}"

    def amount_cents(self, arguments: RefundArguments) -> int | None:
        return arguments.amount_cents

    def retires(
        self, arguments: RefundArguments, result: RefundResult, facts: RefundFacts
    ) -> frozenset[Siblings]:
        """A refund changes the balance other operations on the order would work from (a
        cancellation's refund); one that exhausts the payment also leaves nothing for the
        order's other pending discount refunds."""
        return _retired_by(facts.order.refundable_cents(arguments.payment))

    def would_retire(self, arguments: RefundArguments, facts: RefundFacts) -> frozenset[Siblings]:
        left = facts.order.refundable_cents(arguments.payment) - arguments.amount_cents
        return _retired_by(left)

    withdrew = Localized(
        "the {amount_cents} refund approved {when} changed this order's balance.",
        "le remboursement de {amount_cents} approuvé {when} a modifié le solde de cette commande.",
    )

    def recheck(self, arguments: RefundArguments, facts: RefundFacts) -> dict[str, Any]:
        order = facts.order
        payment, discount = check_evidence(order, arguments)
        check_discount_owed(order, discount)
        amount = order.discount_value_cents(discount.ref)
        check_same_amount(order, arguments.amount_cents, amount)
        check_nothing_settling(order)
        check_not_exhausted(order, payment)
        check_refundable(order, payment, amount)
        refundable = order.refundable_cents(payment.ref)
        check_destination_fits(arguments, payment, facts)
        return {
            "amount_cents": amount,
            "refundable_cents": refundable,
            "order_total_cents": order.total_cents,
            "discount_applied": False,
            "unresolved_refund_attempts": 0,
            "destination": arguments.destination.type,
        }

    def is_external(self, arguments: RefundArguments) -> bool:
        return arguments.destination.type == "card"

    def execute(
        self, execution: ExecutionContract[RefundArguments], facts: RefundFacts
    ) -> RefundResult:
        arguments = execution.arguments
        account = facts.account
        assert account is not None  # revalidation proved the account exists
        facts.order.credit_discount_to_account(
            execution.proposal_id,
            arguments.payment,
            arguments.discount,
            arguments.amount_cents,
            recorded_by=execution.approved_by,
        )
        account.credit(
            arguments.amount_cents,
            memo=f"Missed discount on order {facts.order.key}",
            proposal_id=execution.proposal_id,
        )
        return _result(facts.order, execution.proposal_id, arguments)

    def describe_external(
        self, execution: ExecutionContract[RefundArguments], facts: RefundFacts
    ) -> Effect:
        arguments = execution.arguments
        return card_refund(self, execution, facts.order, arguments.payment, arguments.amount_cents)

    def start_external(
        self, execution: ExecutionContract[RefundArguments], facts: RefundFacts
    ) -> Effect:
        arguments = execution.arguments
        return start_card_refund(
            self,
            execution,
            facts.order,
            arguments.payment,
            arguments.discount,
            arguments.amount_cents,
        )

    def finish_external(
        self,
        execution: ExecutionContract[RefundArguments],
        facts: RefundFacts,
        response: EffectResponse,
    ) -> RefundResult:
        if not record_card_refund(execution, facts.order, response):
            raise RevisionNeededError("refund_declined_by_provider")
        return _result(facts.order, execution.proposal_id, execution.arguments)

    def headline(self, preview: RefundPreview, language: str = "en") -> str:
        return Localized("{amount} to {who}", "{amount} pour {who}").text(
            language,
            amount=format_money(preview.amount_cents, preview.currency, language),
            who=preview.participant_name,
        )

    def approve_label(self, preview: RefundPreview, language: str = "en") -> str:
        amount = format_money(preview.amount_cents, preview.currency, language)
        if _to_card(preview):
            return Localized("Refund {amount} to {card}", "Rembourser {amount} sur {card}").text(
                language, amount=amount, card=preview.payment_method
            )
        return Localized(
            "Credit {amount} to {who}'s club account", "Créditer {amount} au compte de {who}"
        ).text(language, amount=amount, who=preview.participant_name)

    def inbox_reason(self, preview: RefundPreview, language: str = "en") -> str | None:
        return Localized(
            "Missed discount: {discount} · {product}", "Remise manquée : {discount} · {product}"
        ).text(language, discount=preview.discount_name, product=preview.product_name)

    def irreversible_note(self, preview: RefundPreview, language: str = "en") -> str | None:
        """A card refund leaves the club for good; account credit stays in the club's books."""
        if not _to_card(preview) or self.irreversible is None:
            return None
        return self.irreversible.text(
            language,
            amount=format_money(preview.amount_cents, preview.currency, language),
            card=preview.payment_method,
        )

    def success_text(
        self, preview: RefundPreview, result: RefundResult, language: str = "en"
    ) -> str:
        return _SUCCESS.text(
            language,
            amount=format_money(result.amount_cents, result.currency, language),
            who=preview.participant_name,
            discount=preview.discount_name,
            destination=_destination(result.destination, language),
            total=format_money(result.resulting_order_total_cents, result.currency, language),
        )


_SUCCESS = Localized(
    "Refunded {amount} for {who}'s missed {discount} to {destination}. The order total is now "
    "{total}.",
    "Remboursement de {amount} pour la remise manquée « {discount} » de {who}, vers "
    "{destination}. Le total de la commande est maintenant de {total}.",
)

_ACCOUNT_CREDIT = Localized(
    "club account credit for {holder}", "crédit au compte du club de {holder}"
)
"""A refund to account credit, by its holder: ``prepare`` freezes the English words in the
destination's label (so every stored proposal holds them); people read them in their own."""
_ACCOUNT_CREDIT_PREFIX = _ACCOUNT_CREDIT.en.removesuffix("{holder}")


def _destination(label: str, language: str) -> str:
    """A frozen destination label in ``language``: a card's label is the card's own name in
    every language; account credit is worded for its holder."""
    if label.startswith(_ACCOUNT_CREDIT_PREFIX):
        return _ACCOUNT_CREDIT.text(language, holder=label.removeprefix(_ACCOUNT_CREDIT_PREFIX))
    return label


def _to_card(preview: RefundPreview) -> bool:
    """Whether the refund goes back to the card: ``prepare`` names a card destination by the
    payment's own label, and account credit otherwise."""
    return preview.refund_destination == preview.payment_method


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_discount_on(discount: Discount, line_item: str) -> None:
    if discount.line_item != line_item:
        raise RuleBrokenError(
            Finding(
                "discount_elsewhere",
                "discount",
                f"discount {discount.ref} belongs to line item {discount.line_item}",
                discount=discount.name,
            )
        )


def check_discount_owed(order: Order, discount: Discount) -> None:
    """Neither applied at checkout nor refunded since: one reason when approving, each its own
    sentence when proposing."""
    if discount.applied:
        raise RuleBrokenError(
            Finding(
                "discount_already_refunded",
                "discount",
                f"discount {discount.ref} was applied at checkout; nothing is owed",
                problem="discount_applied",
                discount=discount.name,
            )
        )
    if order.discount_refunded(discount.ref):
        raise RuleBrokenError(
            Finding(
                "discount_already_refunded",
                "discount",
                f"discount {discount.ref} has already been refunded",
                problem="discount_refunded",
                discount=discount.name,
            )
        )


def check_nothing_settling(order: Order) -> None:
    if order.unresolved_attempts():
        raise RuleBrokenError(
            Finding(
                "refund_in_progress",
                "payment",
                "a refund on this order is still settling; try again once it settles",
            )
        )


def check_refundable(order: Order, payment: Payment, amount_cents: int) -> None:
    refundable = order.refundable_cents(payment.ref)
    if refundable < amount_cents:
        raise RuleBrokenError(
            Finding(
                "insufficient_refundable",
                "payment",
                f"payment {payment.ref} has only {format_money(refundable, order.currency)} "
                "left to refund",
                problem="payment_short",
                refundable_cents=refundable,
                currency=order.currency,
            )
        )


def check_evidence(order: Order, arguments: RefundArguments) -> tuple[Payment, Discount]:
    """The payment, line item and discount the proposal names, still on the order."""
    try:
        payment = order.payment(arguments.payment)
        order.line_item(arguments.line_item)
        return payment, order.discount(arguments.discount)
    except NotFoundError:
        raise RuleBrokenError(Finding("evidence_missing")) from None


def check_same_amount(order: Order, approved_cents: int, current_cents: int) -> None:
    if current_cents != approved_cents:
        raise RuleBrokenError(
            Finding(
                "amount_changed",
                approved_cents=approved_cents,
                current_cents=current_cents,
                currency=order.currency,
            )
        )


def check_not_exhausted(order: Order, payment: Payment) -> None:
    if order.refundable_cents(payment.ref) <= 0:
        raise RuleBrokenError(Finding("payment_already_refunded", payment=payment.label))


def check_destination_fits(
    arguments: RefundArguments, payment: Payment, facts: RefundFacts
) -> None:
    kind = arguments.destination.type
    if (kind == "card" and payment.method != "card") or (
        kind == "account_credit" and facts.account is None
    ):
        raise RuleBrokenError(Finding("destination_unavailable"))


def _resolve_refs(order: Order, request: RefundRequest) -> tuple[Any, Any, Any]:
    problems = []
    found = []
    for field, finder in (
        ("payment", order.payment),
        ("line_item", order.line_item),
        ("discount", order.discount),
    ):
        ref = getattr(request, field)
        try:
            found.append(finder(ref))
        except NotFoundError:
            problems.append(Finding(f"unknown_{field}", field, f"this order has no {ref}"))
    if problems:
        raise RuleBrokenError(*problems)
    return found[0], found[1], found[2]


def _resolve_destination(phrase: str, payment: Any, facts: RefundFacts) -> RefundDestination:
    if phrase == "original_payment_method" and payment.method == "card":
        return RefundDestination(
            type="card", payment=payment.ref, account_id=None, label=payment.label
        )
    if phrase == "original_payment_method" and payment.method != "account":
        raise RuleBrokenError(
            Finding(
                "not_by_card",
                "destination",
                f"payment {payment.ref} was {payment.method}; it cannot be refunded to its "
                "original method here, use account_credit",
            )
        )
    # account_credit, or an original payment that was itself account credit
    account = facts.account
    if account is None:
        raise RuleBrokenError(
            Finding(
                "no_account",
                "destination",
                "the participant has no club account; use original_payment_method",
            )
        )
    return RefundDestination(
        type="account_credit",
        payment=payment.ref,
        account_id=account.id,
        label=_ACCOUNT_CREDIT.text("en", holder=account.holder_name),
    )


def _result(order: Order, proposal_id: UUID, arguments: RefundArguments) -> RefundResult:
    refund = next(r for r in order.refunds if r.proposal_id == str(proposal_id))
    return RefundResult(
        refund_ref=refund.ref,
        amount_cents=arguments.amount_cents,
        currency=arguments.currency,
        destination=arguments.destination.label,
        resulting_order_total_cents=order.total_cents,
    )


def _retired_by(refundable_after_cents: int) -> frozenset[Siblings]:
    """What a refund that leaves this much of its payment refundable retires: the other
    operations' proposals on the order, and, once the payment is exhausted, its other
    discount refunds too."""
    if refundable_after_cents <= 0:
        return ALL_SIBLINGS
    return frozenset({Siblings.OTHER_OPERATIONS})
