"""Issue 24's page items: what each page says matches what is true, in plain words, in English
and French. Through the ASGI app, on every backend.

The order panel after a refund, the review card's words (amounts only where there are some,
names rather than addresses, the time of a decline, a credit refund's button), the edit
form (an edit that changes nothing is refused; a proposal with nothing to edit offers no
Edit), the roster assistant, and a session ended from another device.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, DRAFT
from tests.support.proposing import SEND, propose
from tests.test_web_pages import Web, web_for

NBSP = "\N{NO-BREAK SPACE}"


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _discount(page: Any, name: str) -> str:
    """The order panel's line of one discount: its name, value and state."""
    found = re.search(
        rf"<strong>{re.escape(name)}</strong>.*?</li>", page.text.replace("\n", " "), re.S
    )
    assert found, page.text[:500]
    return re.sub(r"[ \t\n]+", " ", found.group(0))  # a non-breaking space stays


def test_a_refunded_discount_says_when_it_was_refunded_not_that_it_is_missing(web: Web):
    order = web.seeded["orders"]["refund-ok"]
    browser = web.browser(AVA)
    before = _discount(browser.get(f"/chat/orders/{order}"), "Early-bird 15% discount")
    assert "not applied" in before

    web.cs.proposals.approve(web.propose("refund-ok"), AVA)
    after = _discount(browser.get(f"/chat/orders/{order}"), "Early-bird 15% discount")
    # The day the refund was recorded (the event's own time), in the club's zone.
    assert re.search(r"Refunded \$48\.00 CAD on [A-Z][a-z]{2} \d{1,2}</span>", after), after
    assert "tone-ok" in after
    assert "not applied" not in after
    french = _discount(
        browser.get(f"/chat/orders/{order}", **{"Accept-Language": "fr"}), "Early-bird 15% discount"
    )
    assert re.search(
        rf"48,00{NBSP}\${NBSP}CA remboursés le (1er|\d{{1,2}}){NBSP}[a-zéû]+\.?</span>", french
    ), french
    assert "non appliquée" not in french


def _row(page: Any, label: str) -> str:
    """The value of one row of the review card's preview."""
    found = re.search(rf"<dt>{re.escape(label)}</dt>\s*<dd[^>]*>(.*?)</dd>", page.text, re.S)
    assert found, page.text[:500]
    return found.group(1)


def _send_proposal(web: Web) -> str:
    """A send of the ice-times draft (nine recipients), once the draft is in the form."""
    draft = propose(web.cs, web.seeded, operation=DRAFT)
    web.cs.proposals.approve(draft, AVA)
    return propose(web.cs, web.seeded, operation=SEND)


def test_a_send_lists_its_first_recipients_with_how_many_more_and_its_audience_in_french(
    web: Web,
):
    send = _send_proposal(web)
    browser = web.browser(AVA)
    english = browser.get(f"/proposals/{send}")
    first = _row(english, "First recipients")
    assert first.count("&lt;") == 5
    assert first.endswith("&gt; (+4 more)")
    assert _row(english, "Audience") == "members of Monday Night Open or Thursday Seniors"
    french = browser.get(f"/proposals/{send}", **{"Accept-Language": "fr"})
    assert _row(french, "Premiers destinataires").endswith("&gt; (+4 autres)")
    assert _row(french, "Destinataires") == (
        "membres des ligues Monday Night Open ou Thursday Seniors"
    )
    assert "members of" not in french.text
