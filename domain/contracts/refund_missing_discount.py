"""order.refund_missing_discount: refund a discount the participant was eligible for but missed.

The model names the payment, line item, discount and a destination phrase. The application
computes the amount, resolves the concrete destination, and freezes both with the preview.
A refund to the card goes through the payment provider; account credit is local.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from countersign.domain.club.orders import Discount, Order, Payment
from countersign.domain.club.permissions import Permission
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
from countersign.domain.contracts.order_facts import OrderFacts
from countersign.domain.contracts.refund_missing_discount_texts import (
    ACCOUNT_CREDIT,
    RefundMissingDiscountTexts,
)
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
    order_total_cents: int | None = None
    """The order's total when the refund was frozen, which the preview shows before and after
    it: approval refuses to run on another total (``check_same_total``). None in a refund
    frozen before it was kept, which is not compared."""


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


class RefundMissingDiscount(
    RefundMissingDiscountTexts,
    OperationContract[RefundRequest, RefundArguments, RefundPreview, RefundResult, RefundFacts],
):
    """Refund a missed discount to the card or to account credit."""

    kind = "order.refund_missing_discount"
    #: 2: the arguments keep the order's total (``order_total_cents``); a version 1 refund
    #: decodes with None there, and its total is not compared.
    contract_version = 2
    section = Section("orders")
    permission = Permission.REFUND_ORDERS
    provider = "payments"

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
            order_total_cents=order.total_cents,
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
        # Last: a change the rules above name more precisely (the payment refunded, too
        # little left) is told as that.
        check_same_total(order, arguments.order_total_cents)
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
    sentence when proposing. Either way nothing of the discount is owed any more, which is
    what the refund asks for: at approval, nothing is left to do (``already_so``)."""
    if discount.applied:
        raise RuleBrokenError(
            Finding(
                "discount_already_refunded",
                "discount",
                f"discount {discount.ref} was applied at checkout; nothing is owed",
                problem="discount_applied",
                already_so=True,
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
                already_so=True,
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


def check_same_total(order: Order, approved_cents: int | None) -> None:
    """The preview's "order total before" (and so its "after") still holds: another refund of
    the order, a manual one included, changed what the approver was shown."""
    if approved_cents is not None and order.total_cents != approved_cents:
        raise RuleBrokenError(
            Finding(
                "order_total_changed",
                approved_cents=approved_cents,
                current_cents=order.total_cents,
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


#: What each reference of the request names, in a problem's words.
_SAID = {"payment": "payment", "line_item": "line item", "discount": "discount"}


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
            # Its reference is not echoed (a problem never carries the input): the field says
            # which, and the order's investigation lists the ones it has.
            problems.append(
                Finding(
                    f"unknown_{field}", field, f"this order has no {_SAID[field]} of that reference"
                )
            )
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
        label=ACCOUNT_CREDIT.text("en", holder=account.holder_name),
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
