"""Held: an order number tells a member who may not use the order assistant nothing.

The attack run found that any member could learn whether an order number exists in their club:
``/orders/open?ref=`` sent an existing one to its conversation and an unknown one back to the
inbox, and the conversation's page answered 403 for an order that exists and 404 for one that
does not (an order's id is made from its number). The order assistant is for members who may
propose one of its operations (docs/design.md); anyone else now gets one answer for both,
and its members still open their orders as before.
"""

from __future__ import annotations

import html

from countersign.domain.club.orders import Order
from countersign.domain.club.organization import Organization

from tests.attacks.conftest import Browser, Web
from tests.conftest import AVA, BEN

THERE, NOT_THERE = "refund-ok", "no-such-order"


def _answer(browser: Browser, reference: str) -> tuple[int, str, bool]:
    """What opening ``reference`` answers, the reference itself left out, and whether the
    inbox then says that no order has it."""
    answer = browser.get(f"/orders/open?ref={reference}")
    location = answer.headers.get("location", "").replace(reference, "REF")
    inbox = html.unescape(browser.get("/").text)
    return answer.status_code, location, _NOT_YOURS in inbox


_NOT_YOURS = "Your role does not include the order assistant, so no order opens here."


def test_a_member_without_the_order_assistant_cannot_tell_which_orders_exist(web: Web) -> None:
    ben = web.member(BEN)  # granite staff, without any permission
    assert _answer(ben, THERE) == _answer(ben, NOT_THERE)
    # Told why, the same for every number, and pointed at nothing his pages lack (the order
    # assistant's "Start a conversation", which he has not).
    assert _answer(ben, THERE) == (303, "/?ref=REF", True)

    granite = Organization.create_id("granite")
    pages = [
        ben.get(f"/chat/orders/{Order.create_id(granite, number)}") for number in (THERE, NOT_THERE)
    ]
    assert [page.status_code for page in pages] == [403, 403]
    assert pages[0].text == pages[1].text


def test_a_member_who_may_refund_still_opens_an_order_by_its_number(web: Web) -> None:
    ava = web.member(AVA)
    opened = ava.get(f"/orders/open?ref={THERE}")
    assert opened.headers["location"] == f"/chat/orders/{web.seeded['orders'][THERE]}"
    assert ava.get(opened.headers["location"]).status_code == 200
    missing = ava.get(f"/orders/open?ref={NOT_THERE}")
    assert missing.headers["location"] == f"/?ref={NOT_THERE}"
    granite = Organization.create_id("granite")
    assert ava.get(f"/chat/orders/{Order.create_id(granite, NOT_THERE)}").status_code == 404
