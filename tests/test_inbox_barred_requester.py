"""A requester whose club's policy bars them from approving their own proposal, as their inbox
tells it (test_policy_barred.py tells the approve path and the review page,
test_policy_barred_readers.py the other readers).

It is not theirs to decide: it awaits another manager's decision, in that list, with the
sentence the review page and the API say (``requester_barred``), and the navigation's count
leaves it out. An approval they gave before the bar no longer counts, and their inbox says so
in the review page's words, not "You approved it". A bar frozen with the proposal reads the
same. Granite's seed: Ava proposes, Noah is the other manager.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.application.authorization import Caller
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, REFUND
from tests.test_policy_barred_readers import BARRED
from tests.test_web_pages import Web, _main, web_for

NOAH = "noah@granite.example"

WORDS = {
    "en": {
        "awaiting": "Awaiting your decision",
        "followed": "Awaiting another manager's decision",
        "badge": "{count} awaiting your decision",
        "you_approved": "You approved it",
        "lapsed": (
            "Your approval no longer counts: the club's policy no longer lets the requester "
            "approve it."
        ),
        "count": "0 of 2 approvals",
        "role": "Your role lets you read these, not approve them",
    },
    "fr": {
        "awaiting": "En attente de votre décision",
        "followed": "En attente de la décision d'un autre gestionnaire",
        "badge": "{count} en attente de votre décision",
        "you_approved": "Vous l'avez approuvée",
        "lapsed": (
            "Votre approbation ne compte plus : la règle du club ne permet plus à la personne "
            "qui la demande de l'approuver."
        ),
        "count": "Approbations : 0 sur 2",
        "role": "Votre rôle vous permet de les lire",
    },
}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _bar_the_requester(cs: Countersign, above_cents: int | None = None) -> None:
    """Refunds (above ``above_cents``) need two approvals, and no longer the requester's."""
    cs.policies.set(
        "granite",
        REFUND,
        2,
        above_cents=above_cents,
        requester_may_approve=False,
        by=Caller(NOAH, "granite"),
    )


def _text(markup: str) -> str:
    return html.unescape(markup).replace("\N{NO-BREAK SPACE}", " ")


def _section(inbox: str, list_id: str) -> str:
    found = re.search(rf'<section class="inbox-list" id="{list_id}".*?</section>', inbox, re.S)
    return _text(found.group(0)) if found else ""


def _listed(inbox: str, list_id: str) -> list[str]:
    return re.findall(r'href="/proposals/([0-9a-f-]{36})"', _section(inbox, list_id))


def _card(inbox: str, proposal_id: str) -> str:
    card = inbox[inbox.index(f'href="/proposals/{proposal_id}"') :]
    return _text(card[: card.index("</a>")])


def _inbox(web: Web, email: str, language: str) -> tuple[str, str]:
    """The person's inbox in ``language``: its main part, and the whole page (the menu)."""
    browser = web.browser(email)
    browser.form("/language", {"lang": language, "next": "/"})
    page = browser.get("/")
    return _main(page), _text(page.text)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_requester_barred_since_sees_their_proposal_await_another_manager(web, language):
    words = WORDS[language]
    mine = web.propose("refund-two-approvers")  # Ava's, $128.00
    inbox, _ = _inbox(web, AVA, language)
    assert _listed(inbox, "awaiting") == [mine]  # the frozen rule lets her

    _bar_the_requester(web.cs)

    inbox, page = _inbox(web, AVA, language)
    assert _listed(inbox, "awaiting") == []
    assert f'{words["awaiting"]} <span class="count-badge">0</span>' in _section(inbox, "awaiting")
    followed = _section(inbox, "followed")
    assert words["followed"] in followed
    assert _listed(inbox, "followed") == [mine]
    assert BARRED[language] in _card(inbox, mine)
    assert words["role"] not in followed  # her role lets her approve refunds
    assert words["badge"].format(count=0) in page
    assert words["badge"].format(count=1) not in page

    # Noah may approve it: it awaits his decision, as before, and he is told nothing of a bar.
    inbox, page = _inbox(web, NOAH, language)
    assert _listed(inbox, "awaiting") == [mine]
    assert BARRED[language] not in _card(inbox, mine)
    assert words["badge"].format(count=1) in page


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_barred_requesters_earlier_approval_is_told_as_no_longer_counting(web, language):
    words = WORDS[language]
    mine = web.propose("refund-two-approvers")
    web.cs.proposals.approve(mine, AVA)  # 1 of 2, under the frozen rule
    inbox, _ = _inbox(web, AVA, language)
    assert _listed(inbox, "waiting") == [mine]

    _bar_the_requester(web.cs)

    inbox, page = _inbox(web, AVA, language)
    assert _listed(inbox, "waiting") == []
    assert _listed(inbox, "followed") == [mine]
    card = _card(inbox, mine)
    assert words["lapsed"] in card
    assert words["count"] in card
    assert words["you_approved"] not in card
    assert BARRED[language] in card
    assert words["badge"].format(count=0) in page

    # Once Noah's approval records hers as lapsed (ApprovalLapsed), she reads the same.
    web.cs.proposals.approve(mine, NOAH)
    inbox, _ = _inbox(web, AVA, language)
    assert _listed(inbox, "followed") == [mine]
    card = _card(inbox, mine)
    assert words["lapsed"] in card
    assert words["count"].replace("0", "1", 1) in card
    assert words["you_approved"] not in card


def test_only_what_the_bar_covers_leaves_the_requesters_decisions(web):
    """Above $100 the requester may not approve; her $48.00 refund is still hers to decide."""
    small, large = web.propose("refund-ok"), web.propose("refund-two-approvers")

    _bar_the_requester(web.cs, above_cents=10_000)

    inbox, page = _inbox(web, AVA, "en")
    assert _listed(inbox, "awaiting") == [small]
    assert _listed(inbox, "followed") == [large]
    assert BARRED["en"] not in _card(inbox, small)
    assert "1 awaiting your decision" in page


def test_a_bar_frozen_with_the_proposal_reads_the_same(web):
    _bar_the_requester(web.cs)
    mine = web.propose("refund-two-approvers")

    inbox, page = _inbox(web, AVA, "en")
    assert _listed(inbox, "awaiting") == []
    assert _listed(inbox, "followed") == [mine]
    assert BARRED["en"] in _card(inbox, mine)
    assert "0 awaiting your decision" in page
