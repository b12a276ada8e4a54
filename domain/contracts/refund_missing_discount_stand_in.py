"""The refund_missing_discount contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.stand_in_words import language_of, wants_account_credit

_NOTHING_OWED = Localized(
    "Nothing is owed on this order: every eligible discount was applied or refunded.",
    "Rien n'est dû sur cette commande : chaque remise admissible a été appliquée ou remboursée.",
)


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """The first missed discount, to account credit when the manager mentions credit."""
    order = reads.get("get_order_investigation") or {}
    for discount in order.get("discounts", []):
        if discount.get("applied_at_checkout") or discount.get("already_refunded"):
            continue
        payments = [p for p in order.get("payments", []) if p.get("refundable_cents", 0) > 0]
        if not payments:
            break
        return {
            "payment": payments[0]["ref"],
            "line_item": discount["line_item"],
            "discount": discount["ref"],
            "destination": "account_credit"
            if wants_account_credit(words)
            else "original_payment_method",
        }
    return _NOTHING_OWED.text(language_of(words))
