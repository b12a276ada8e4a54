"""order.cancel_registration: a card refund of the order's balance (an external effect), the
order cancelled and the league spot released, on the seeded orders."""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register
from countersign.infrastructure.testing.deployment import AVA


def _order(key: str) -> Any:
    def resource(seeded: Seeded) -> str:
        return str(seeded["orders"][key])

    return resource


def _order_and_leagues(cs: Countersign, order_id: str) -> Any:
    # The order's refunds, balances and status, and how many play in each league: a refund, a
    # cancellation or a released spot shows.
    return {
        "order": cs.club.investigate("granite", order_id),
        "leagues": cs.club.leagues("granite"),
        "order_version": cs.club.order("granite", order_id).version,
    }


def _partial_refund_in_another_tab(cs: Countersign, order_id: str) -> None:
    cs.club.refund_manually("granite", order_id, AVA, "P1", 5000)


CASE = register(
    ConformanceCase(
        kind="order.cancel_registration",
        request={"destination": "original_payment_method"},
        resource=_order("refund-ok"),  # paid with the sandbox's card that refunds
        observe=_order_and_leagues,
        make_stale=_partial_refund_in_another_tab,
        stale_reason="refundable_balance_changed",
        lost_response_resource=_order("refund-lost-response"),  # the lost-response card
    )
)
