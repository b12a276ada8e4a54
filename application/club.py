"""The ordinary interface's club operations: order investigations, manual refunds, roster."""

from __future__ import annotations

from typing import Any

from countersign.application.authorization import member_of, organization_by_slug, require
from countersign.application.errors import parse_id
from countersign.application.ports import AggregateStore
from countersign.domain.club.orders import Order
from countersign.domain.club.organization import Permission
from countersign.domain.club.roster import Roster
from countersign.domain.errors import NotFoundError


class ClubService:
    """What a club's staff do outside any assistant."""

    def __init__(self, store: AggregateStore) -> None:
        self.store = store

    def order(self, organization: str, order_id: str) -> Order:
        """An order of this organization; NotFoundError for unknown and foreign ids alike."""
        org = organization_by_slug(self.store, organization)
        order = self.store.get(parse_id(order_id, "order"), Order)
        if order.organization_id != org.id:
            raise NotFoundError("order")
        return order

    def investigate(self, organization: str, order_id: str) -> dict[str, Any]:
        """The order investigation, with the references a request uses."""
        order = self.order(organization, order_id)
        return investigation(order)

    def refund_manually(
        self, organization: str, order_id: str, actor: str, payment: str, amount_cents: int
    ) -> dict[str, Any]:
        order = self.order(organization, order_id)
        require(member_of(self.store, order.organization_id, actor), Permission.REFUND_ORDERS)
        order.refund_manually(payment, amount_cents, recorded_by=actor.strip().lower())
        self.store.save(order)
        return investigation(order)

    def leagues(self, organization: str) -> list[dict[str, Any]]:
        roster = self._roster(organization)
        return [
            {"name": name, "active_members": len(roster.members_of(name))}
            for name in roster.league_names()
        ]

    def join(self, organization: str, league: str, name: str, email: str) -> dict[str, Any]:
        roster = self._roster(organization)
        roster.join(league, name, email)
        self.store.save(roster)
        return {"league": league, "active_members": len(roster.members_of(league))}

    def _roster(self, organization: str) -> Roster:
        org = organization_by_slug(self.store, organization)
        return self.store.get(Roster.create_id(org.id), Roster)


def investigation(order: Order) -> dict[str, Any]:
    """What staff (and, later, the order assistant) may see of an order: no provider ids."""
    return {
        "order_id": str(order.id),
        "participant": order.participant_name,
        "currency": order.currency,
        "total_cents": order.total_cents,
        "note": order.note,
        "line_items": [
            {
                "ref": item.ref,
                "product": item.product,
                "amount_cents": item.amount_cents,
                "configuration": item.configuration,
            }
            for item in order.line_items
        ],
        "discounts": [
            {
                "ref": discount.ref,
                "name": discount.name,
                "line_item": discount.line_item,
                "applied": discount.applied,
                "eligibility": discount.eligibility,
                "value_cents": order.discount_value_cents(discount.ref),
            }
            for discount in order.discounts
        ],
        "payments": [
            {
                "ref": payment.ref,
                "method": payment.method,
                "label": payment.label,
                "amount_cents": payment.amount_cents,
                "refundable_cents": order.refundable_cents(payment.ref),
            }
            for payment in order.payments
        ],
        "refunds": [
            {
                "ref": refund.ref,
                "payment": refund.payment,
                "amount_cents": refund.amount_cents,
                "destination": refund.destination,
                "discount": refund.discount,
            }
            for refund in order.refunds
        ],
        "unresolved_refund_attempts": len(order.unresolved_attempts()),
    }
