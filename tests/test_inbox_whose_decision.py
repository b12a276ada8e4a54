"""The inbox says whose decision each pending proposal awaits, for the person reading it.

A member may read proposals they may not decide (``audit.read`` reads every kind; deciding
needs the kind's own permission). What awaits their own decision is listed, and counted in
the navigation, apart from what they may only follow, under its own heading: never a
refund they may not approve under "Awaiting your decision". In English and French, the
empty states too.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from countersign.domain.club.organization import Organization
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.seed import _order

from tests.conftest import BEN
from tests.support.proposing import MOVE, propose
from tests.test_web_pages import Web, _main, web_for

NOAH = "noah@granite.example"
FR = {"Accept-Language": "fr"}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _listed(inbox: str, list_id: str) -> list[str]:
    found = re.search(rf'<section class="inbox-list" id="{list_id}".*?</section>', inbox, re.S)
    return re.findall(r'href="/proposals/([0-9a-f-]{36})"', found.group(0)) if found else []


def _section(inbox: str, list_id: str) -> str:
    found = re.search(rf'<section class="inbox-list" id="{list_id}".*?</section>', inbox, re.S)
    assert found, f"no list {list_id}"
    return found.group(0)


def test_refunds_a_reader_may_not_approve_await_another_manager_not_him(web: Web) -> None:
    """The walk's Ben: audit.read and roster.manage, two refunds pending."""
    web.cs.club.set_permissions("granite", BEN, ["audit.read", "roster.manage"])
    one, two = web.propose("refund-ok"), web.propose("refund-two-approvers")
    ben = web.browser(BEN)

    page = ben.get("/")
    inbox = _main(page)
    assert _listed(inbox, "awaiting") == []
    assert 'Awaiting your decision <span class="count-badge">0</span>' in inbox
    assert "Nothing awaits your decision: the proposals below await another manager" in inbox
    assert sorted(_listed(inbox, "followed")) == sorted([one, two])
    followed = _section(inbox, "followed")
    assert "Awaiting another manager&#39;s decision" in followed
    assert '<span class="count-badge">2</span>' in followed
    assert "Your role lets you read these, not approve them" in followed
    assert "0 awaiting your decision" in page.text  # the navigation's count
    assert "2 awaiting your decision" not in page.text

    french_page = ben.get("/", **FR)
    french = _main(french_page)
    assert 'En attente de votre décision <span class="count-badge">0</span>' in french
    assert "Rien n&#39;attend votre décision : les propositions plus bas" in french
    assert "En attente de la décision d&#39;un autre gestionnaire" in french
    assert sorted(_listed(french, "followed")) == sorted([one, two])
    assert "0 en attente de votre décision" in french_page.text

    # A roster move is his to decide: it awaits him, and the menu counts it alone.
    move = propose(web.cs, web.seeded, operation=MOVE)
    page = ben.get("/")
    inbox = _main(page)
    assert _listed(inbox, "awaiting") == [move]
    assert 'Awaiting your decision <span class="count-badge">1</span>' in inbox
    assert sorted(_listed(inbox, "followed")) == sorted([one, two])
    assert "1 awaiting your decision" in page.text


def test_a_reader_who_may_decide_nothing_is_told_so_where_his_decisions_would_be(
    web: Web,
) -> None:
    web.cs.club.set_permissions("granite", BEN, ["audit.read"])
    refund = web.propose("refund-ok")
    ben = web.browser(BEN)
    inbox = _main(ben.get("/"))
    awaiting = _section(inbox, "awaiting")
    assert "Your role does not allow approving any kind of proposal" in awaiting
    assert _listed(inbox, "followed") == [refund]
    french = _section(_main(ben.get("/", **FR)), "awaiting")
    assert "Votre rôle ne permet d&#39;approuver aucun type de proposition" in french


def test_a_manager_who_may_decide_everything_has_nothing_to_follow(web: Web) -> None:
    refund = web.propose("refund-ok")
    page = web.browser(NOAH).get("/")
    inbox = _main(page)
    assert _listed(inbox, "awaiting") == [refund]
    assert 'id="followed"' not in inbox
    assert "1 awaiting your decision" in page.text
    # Nothing pending at all: the empty state of an empty inbox, as before.
    web.cs.proposals.decline(refund, NOAH)
    empty = _main(web.browser(NOAH).get("/"))
    assert "Nothing awaits approval. Proposals from the assistants appear here." in empty
    assert 'id="followed"' not in empty


def test_what_a_reader_follows_is_paged_like_what_awaits_him(web: Web) -> None:
    """An auditor who decides nothing still reaches every pending proposal, ten a page."""
    web.cs.club.set_permissions("granite", BEN, ["audit.read"])
    granite = web.cs.store.get(Organization.create_id("granite"), Organization)
    made = []
    for number in range(12):  # one order each: a second refund of one order replaces the first
        order = _order(
            web.cs, granite, f"o-{number}", f"M {number}", f"m{number}@x.example", CARD_OK, ""
        )
        web.seeded["orders"][f"o-{number}"] = str(order.id)
        made.append(web.propose(f"o-{number}"))
    ben = web.browser(BEN)
    first = _main(ben.get("/"))
    followed = _section(first, "followed")
    assert '<span class="count-badge">12</span>' in followed
    assert "Page 1 of 2" in followed
    second = _main(ben.get("/?page=2"))
    shown = _listed(first, "followed") + _listed(second, "followed")
    assert sorted(shown) == sorted(made)
    assert "Page 2 of 2" in _section(second, "followed")
