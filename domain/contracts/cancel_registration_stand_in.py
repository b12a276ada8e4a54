"""The cancel_registration contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.stand_in_words import language_of, wants_account_credit

_ALREADY_CANCELLED = Localized(
    "This registration is already cancelled; there is nothing left to cancel.",
    "Cette inscription est déjà annulée ; il n'y a plus rien à annuler.",
)


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """The destination the manager's words name: credit or account means account credit,
    anything else the original payment method; nothing once the order investigation says
    the registration is cancelled."""
    order = reads.get("get_order_investigation") or {}
    if (order.get("registration") or {}).get("status") == "cancelled":
        return _ALREADY_CANCELLED.text(language_of(words))
    if wants_account_credit(words):
        return {"destination": "account_credit"}
    return {"destination": "original_payment_method"}
