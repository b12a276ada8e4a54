"""Orders: line items, discounts, payments, refunds, refund attempts keyed by proposal id, and
the league spot a registration holds until it is cancelled."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from countersign.domain.club.ids import stable_id
from countersign.domain.errors import NotFoundError, OrderRuleError
from eventsourcing.domain import Aggregate, event


@dataclass(frozen=True)
class LineItem:
    """One product on an order."""

    ref: str
    product: str
    amount_cents: int
    configuration: str


@dataclass(frozen=True)
class Discount:
    """A discount the participant was eligible for, and whether it was applied at checkout."""

    ref: str
    name: str
    line_item: str
    percent: int | None
    amount_cents: int | None
    applied: bool
    eligibility: str


@dataclass(frozen=True)
class Payment:
    """Money received for the order."""

    ref: str
    method: str  # "card" | "cash" | "account"
    label: str
    amount_cents: int
    charge_id: str | None


@dataclass(frozen=True)
class Refund:
    """Money given back, to the payment's card or to the member's account."""

    ref: str
    payment: str
    amount_cents: int
    destination: str  # "card" | "account_credit" | "manual"
    discount: str | None
    proposal_id: str | None
    recorded_by: str


@dataclass(frozen=True)
class RefundAttempt:
    """An external refund that was started for a proposal; unresolved until it settles."""

    proposal_id: str
    payment: str
    discount: str | None  # None: a refund of the order's balance, not of a discount
    amount_cents: int
    idempotency_key: str
    status: str  # "pending" | "succeeded" | "failed"


class OrderStatus(StrEnum):
    """Where an order's registration stands."""

    ACTIVE = "active"
    CANCELLED = "cancelled"


class Order(Aggregate):
    """A participant's order with the club.

    ``league`` is the roster league whose spot the registration holds (``None`` for an order
    that holds none, and for orders placed before orders recorded it). A cancelled order keeps
    its history and refuses to be cancelled again.
    """

    @staticmethod
    def create_id(organization_id: UUID, key: str) -> UUID:
        return stable_id("order", organization_id, key)

    @event("Placed")
    def __init__(
        self,
        organization_id: UUID,
        key: str,
        participant_name: str,
        participant_email: str,
        currency: str,
        line_items: list[dict[str, Any]],
        discounts: list[dict[str, Any]],
        payments: list[dict[str, Any]],
        note: str,
        placed_at: datetime,
        league: str | None = None,  # a default: orders placed before it was recorded load
    ) -> None:
        self.organization_id = organization_id
        self.key = key
        self.participant_name = participant_name
        self.participant_email = participant_email
        self.currency = currency
        self._line_items = line_items
        self._discounts = discounts
        self._payments = payments
        self.note = note
        self.placed_at = placed_at
        self.league = league
        self.status = OrderStatus.ACTIVE
        self.cancelled_by: str | None = None
        self._refunds: list[dict[str, Any]] = []
        self._attempts: dict[str, dict[str, Any]] = {}

    # -- reading ----------------------------------------------------------------------------

    @property
    def line_items(self) -> list[LineItem]:
        return [LineItem(**item) for item in self._line_items]

    @property
    def discounts(self) -> list[Discount]:
        return [Discount(**item) for item in self._discounts]

    @property
    def payments(self) -> list[Payment]:
        return [Payment(**item) for item in self._payments]

    @property
    def refunds(self) -> list[Refund]:
        return [Refund(**item) for item in self._refunds]

    @property
    def attempts(self) -> list[RefundAttempt]:
        return [RefundAttempt(**item) for item in self._attempts.values()]

    # The finders and sums below read the stored dicts and build only what they return: each
    # approval asks for a payment's refundable value, the order's total and a discount's value
    # several times, and building every line item, discount and refund each time was most of
    # what they cost.

    def line_item(self, ref: str) -> LineItem:
        return LineItem(**_find(self._line_items, ref, "line item"))

    def discount(self, ref: str) -> Discount:
        return Discount(**_find(self._discounts, ref, "discount"))

    def payment(self, ref: str) -> Payment:
        return Payment(**_find(self._payments, ref, "payment"))

    def attempt(self, proposal_id: UUID) -> RefundAttempt | None:
        entry = self._attempts.get(str(proposal_id))
        return RefundAttempt(**entry) if entry else None

    def discount_value_cents(self, discount_ref: str) -> int:
        """What the discount is worth on its line item, never more than the line item."""
        discount = _find(self._discounts, discount_ref, "discount")
        line_cents: int = _find(self._line_items, discount["line_item"], "line item")[
            "amount_cents"
        ]
        value: int
        if discount["percent"] is not None:
            # Round half up in integer cents: no floats near money.
            value = (line_cents * discount["percent"] + 50) // 100
        else:
            value = discount["amount_cents"] or 0
        return min(value, line_cents)

    @property
    def charged_cents(self) -> int:
        """Line items less the discounts applied at checkout."""
        lines: int = sum(item["amount_cents"] for item in self._line_items)
        applied = sum(self.discount_value_cents(d["ref"]) for d in self._discounts if d["applied"])
        return lines - applied

    @property
    def total_cents(self) -> int:
        """The order total now: what was charged less every refund granted."""
        refunded: int = sum(refund["amount_cents"] for refund in self._refunds)
        return self.charged_cents - refunded

    def refunded_cents(self, payment_ref: str) -> int:
        return sum(r["amount_cents"] for r in self._refunds if r["payment"] == payment_ref)

    def held_cents(self, payment_ref: str) -> int:
        """Value held by unresolved refund attempts on the payment."""
        return sum(
            a["amount_cents"]
            for a in self._attempts.values()
            if a["payment"] == payment_ref and a["status"] == "pending"
        )

    def refundable_cents(self, payment_ref: str) -> int:
        paid: int = _find(self._payments, payment_ref, "payment")["amount_cents"]
        return paid - self.refunded_cents(payment_ref) - self.held_cents(payment_ref)

    @property
    def paid_cents(self) -> int:
        """Everything received for the order, across its payments."""
        return sum(payment["amount_cents"] for payment in self._payments)

    @property
    def refundable_balance_cents(self) -> int:
        """What is left to give back across every payment: what was paid, less the refunds
        granted, less what unresolved refund attempts hold."""
        return sum(self.refundable_cents(payment["ref"]) for payment in self._payments)

    @property
    def is_active(self) -> bool:
        """Whether the registration still stands (it has not been cancelled)."""
        return self.status == OrderStatus.ACTIVE

    def discount_refunded(self, discount_ref: str) -> bool:
        return any(r["discount"] == discount_ref for r in self._refunds)

    def unresolved_attempts(self) -> list[RefundAttempt]:
        return [RefundAttempt(**a) for a in self._attempts.values() if a["status"] == "pending"]

    # -- commands ---------------------------------------------------------------------------

    def refund_manually(self, payment_ref: str, amount_cents: int, recorded_by: str) -> None:
        """The ordinary interface's refund, outside any proposal."""
        self.check_refundable(payment_ref, amount_cents)
        self.trigger_event(
            self.RefundRecorded,
            payment=payment_ref,
            amount_cents=amount_cents,
            destination="manual",
            discount=None,
            proposal_id=None,
            recorded_by=recorded_by,
        )

    def credit_discount_to_account(
        self,
        proposal_id: UUID,
        payment_ref: str,
        discount_ref: str,
        amount_cents: int,
        recorded_by: str,
    ) -> None:
        self.check_refundable(payment_ref, amount_cents)
        self.trigger_event(
            self.RefundRecorded,
            payment=payment_ref,
            amount_cents=amount_cents,
            destination="account_credit",
            discount=discount_ref,
            proposal_id=str(proposal_id),
            recorded_by=recorded_by,
        )

    def refund_balance_to_account(
        self, proposal_id: UUID, amount_cents: int, recorded_by: str
    ) -> None:
        """Give the whole refundable balance back as account credit: one refund per payment
        that still holds value. ``amount_cents`` is the balance the caller expects; a balance
        that moved since, or a refund still settling, is refused."""
        if self.unresolved_attempts():
            raise OrderRuleError("another refund attempt is unresolved")
        if amount_cents <= 0:
            raise OrderRuleError("a refund must be a positive amount")
        if amount_cents != self.refundable_balance_cents:
            raise OrderRuleError("the refundable balance is not the amount expected")
        for payment in self.payments:
            value = self.refundable_cents(payment.ref)
            if value > 0:
                self.trigger_event(
                    self.RefundRecorded,
                    payment=payment.ref,
                    amount_cents=value,
                    destination="account_credit",
                    discount=None,
                    proposal_id=str(proposal_id),
                    recorded_by=recorded_by,
                )

    def cancel(self, proposal_id: UUID | None, cancelled_by: str) -> None:
        """Cancel the registration. An order is cancelled once, and not while a refund on it is
        still settling (its answer would land on a closed order)."""
        if not self.is_active:
            raise OrderRuleError("the registration is already cancelled")
        if self.unresolved_attempts():
            raise OrderRuleError("a refund on this order is still settling")
        self.trigger_event(
            self.Cancelled,
            proposal_id=str(proposal_id) if proposal_id else None,
            cancelled_by=cancelled_by,
        )

    def start_refund_attempt(
        self,
        proposal_id: UUID,
        payment_ref: str,
        discount_ref: str | None,
        amount_cents: int,
        idempotency_key: str,
    ) -> None:
        """Hold ``amount_cents`` of the payment for an external refund (for a missed discount,
        or with no discount, for the order's balance) until the provider's answer settles it."""
        if str(proposal_id) in self._attempts:
            raise OrderRuleError("a refund attempt already exists for this proposal")
        if self.unresolved_attempts():
            raise OrderRuleError("another refund attempt is unresolved")
        self.check_refundable(payment_ref, amount_cents)
        self.trigger_event(
            self.RefundAttemptStarted,
            proposal_id=str(proposal_id),
            payment=payment_ref,
            discount=discount_ref,
            amount_cents=amount_cents,
            idempotency_key=idempotency_key,
        )

    def settle_refund_attempt(self, proposal_id: UUID, recorded_by: str) -> None:
        attempt = self.check_attempt_pending(proposal_id)
        self.trigger_event(
            self.RefundAttemptSucceeded,
            proposal_id=attempt.proposal_id,
            recorded_by=recorded_by,
        )

    def release_refund_attempt(self, proposal_id: UUID, reason: str) -> None:
        attempt = self.check_attempt_pending(proposal_id)
        self.trigger_event(self.RefundAttemptFailed, proposal_id=attempt.proposal_id, reason=reason)

    # -- guards -----------------------------------------------------------------------------

    def check_refundable(self, payment_ref: str, amount_cents: int) -> None:
        if amount_cents <= 0:
            raise OrderRuleError("a refund must be a positive amount")
        if amount_cents > self.refundable_cents(payment_ref):
            raise OrderRuleError("the payment has not enough refundable value")

    def check_attempt_pending(self, proposal_id: UUID) -> RefundAttempt:
        attempt = self.attempt(proposal_id)
        if attempt is None or attempt.status != "pending":
            raise OrderRuleError("no unresolved refund attempt for this proposal")
        return attempt

    # -- events (each applies itself: the library's explicit style, see domain/proposal_events.py)

    class RefundRecorded(Aggregate.Event):
        payment: str
        amount_cents: int
        destination: str
        discount: str | None
        proposal_id: str | None
        recorded_by: str

        def apply(self, aggregate: Order) -> None:
            aggregate._refunds.append(
                {
                    "ref": f"R{len(aggregate._refunds) + 1}",
                    "payment": self.payment,
                    "amount_cents": self.amount_cents,
                    "destination": self.destination,
                    "discount": self.discount,
                    "proposal_id": self.proposal_id,
                    "recorded_by": self.recorded_by,
                }
            )

    class RefundAttemptStarted(Aggregate.Event):
        proposal_id: str
        payment: str
        discount: str | None
        amount_cents: int
        idempotency_key: str

        def apply(self, aggregate: Order) -> None:
            aggregate._attempts[self.proposal_id] = {
                "proposal_id": self.proposal_id,
                "payment": self.payment,
                "discount": self.discount,
                "amount_cents": self.amount_cents,
                "idempotency_key": self.idempotency_key,
                "status": "pending",
            }

    class RefundAttemptSucceeded(Aggregate.Event):
        proposal_id: str
        recorded_by: str

        def apply(self, aggregate: Order) -> None:
            attempt = aggregate._attempts[self.proposal_id]
            attempt["status"] = "succeeded"
            aggregate._refunds.append(
                {
                    "ref": f"R{len(aggregate._refunds) + 1}",
                    "payment": attempt["payment"],
                    "amount_cents": attempt["amount_cents"],
                    "destination": "card",
                    "discount": attempt["discount"],
                    "proposal_id": self.proposal_id,
                    "recorded_by": self.recorded_by,
                }
            )

    class RefundAttemptFailed(Aggregate.Event):
        proposal_id: str
        reason: str

        def apply(self, aggregate: Order) -> None:
            aggregate._attempts[self.proposal_id]["status"] = "failed"

    class Cancelled(Aggregate.Event):
        proposal_id: str | None
        cancelled_by: str

        def apply(self, aggregate: Order) -> None:
            aggregate.status = OrderStatus.CANCELLED
            aggregate.cancelled_by = self.cancelled_by


def _find(items: list[dict[str, Any]], ref: str, what: str) -> dict[str, Any]:
    """The stored item whose ``ref`` this is."""
    for item in items:
        if item["ref"] == ref:
            return item
    raise NotFoundError(f"no {what} {ref}")
