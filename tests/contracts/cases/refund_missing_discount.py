"""order.refund_missing_discount: a card refund (an external effect) on the seeded orders."""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register
from countersign.infrastructure.testing.deployment import AVA


def _order(key: str) -> Any:
    def resource(seeded: Seeded) -> str:
        return str(seeded["orders"][key])

    return resource


def _investigation(cs: Countersign, order_id: str) -> Any:
    # Its refunds, refundable balances, total and unresolved attempts: a refund shows.
    return cs.club.investigate("granite", order_id)


def _refund_in_another_tab(cs: Countersign, order_id: str) -> None:
    cs.club.refund_manually("granite", order_id, AVA, "P1", 34500)


CASE = register(
    ConformanceCase(
        kind="order.refund_missing_discount",
        request={
            "payment": "P1",
            "line_item": "L1",
            "discount": "D1",
            "destination": "original_payment_method",
        },
        resource=_order("refund-ok"),  # paid with the sandbox's card that refunds
        observe=_investigation,
        make_stale=_refund_in_another_tab,
        stale_reason="payment_already_refunded",
        lost_response_resource=_order("refund-lost-response"),  # the lost-response card
    )
)
