"""The inbox's order-number field, which opens the order assistant: an order number no order
of the club has comes back to the inbox with the number still in the field, to correct rather
than type again (on a phone the field is at the foot of the page, far below the notice)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from countersign.domain.club.organization import Permission
from countersign.infrastructure.entrypoints.web.visits import Visit

#: As long as the field takes (its ``maxlength``).
LONGEST = 100


def order_field(visit: Visit) -> dict[str, Any] | None:
    """The field, with what was typed in it (``?ref=``), for those who may refund orders."""
    if not visit.signed_in.may(Permission.REFUND_ORDERS):
        return None
    return {"typed": visit.query("ref", LONGEST)}


def back_to_the_field(reference: str) -> str:
    """The inbox, with ``reference`` in the order-number field."""
    return "/?" + urlencode({"ref": reference[:LONGEST]}) if reference else "/"
