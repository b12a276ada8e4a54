"""The inbox's later pages: each shows its proposals, with a way back and forward, and a page
past the end says so.

The two paged lists (awaiting the reader's decision, awaiting another manager's) share one
page number, ten a page. A list that ends before the page read says where it ends instead of
showing its heading alone; a page past the last says there is no such page and links the
last one; the recent outcomes' list does the same. In English and French.
"""

from __future__ import annotations

import html
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

WORDS = {
    "en": {
        "ends": "This list ends on page {last}. Go to page {last}",
        "page": "Page {page} of {pages}",
        "past": "There is no page {page}: the last is page {pages}.",
        "newer": "← Newer",
        "older": "Older →",
        "never_decided": "No proposal has been decided yet.",
    },
    "fr": {
        "ends": "Cette liste s'arrête à la page {last}. Aller à la page {last}",
        "page": "Page {page} sur {pages}",
        "past": "Il n'y a pas de page {page} : la dernière est la page {pages}.",
        "newer": "← Plus récentes",
        "older": "Plus anciennes →",
        "never_decided": "Aucune proposition n'a encore été décidée.",
    },
}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _text(markup: str) -> str:
    plain = html.unescape(re.sub(r"<[^>]+>", " ", markup)).replace("\N{NO-BREAK SPACE}", " ")
    return re.sub(r"\s+", " ", plain)


def _section(inbox: str, list_id: str) -> str:
    found = re.search(rf'<section class="inbox-list" id="{list_id}".*?</section>', inbox, re.S)
    assert found, f"no list {list_id}"
    return found.group(0)


def _listed(inbox: str, list_id: str) -> list[str]:
    return re.findall(r'href="/proposals/([0-9a-f-]{36})"', _section(inbox, list_id))


def _pager(inbox: str) -> str:
    found = re.search(r'<nav class="pager".*?</nav>', inbox, re.S)
    assert found, "no pager"
    return found.group(0)


def _refunds(web: Web, count: int) -> list[str]:
    """``count`` pending refunds, one order each (a second of one order replaces the first)."""
    granite = web.cs.store.get(Organization.create_id("granite"), Organization)
    made = []
    for number in range(count):
        order = _order(
            web.cs, granite, f"o-{number}", f"M {number}", f"m{number}@x.example", CARD_OK, ""
        )
        web.seeded["orders"][f"o-{number}"] = str(order.id)
        made.append(web.propose(f"o-{number}"))
    return made


def _reader(web: Web, email: str, language: str) -> Any:
    browser = web.browser(email)
    browser.form("/language", {"lang": language, "next": "/"})
    return browser


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_later_page_shows_its_proposals_and_where_the_shorter_list_ended(web, language):
    """Ben decides roster moves and reads refunds: one move awaits him, twelve refunds
    another manager. Page 2 showed "Awaiting your decision 1" and nothing under it."""
    words = WORDS[language]
    web.cs.club.set_permissions("granite", BEN, ["audit.read", "roster.manage"])
    refunds = _refunds(web, 12)
    move = propose(web.cs, web.seeded, operation=MOVE)
    ben = _reader(web, BEN, language)

    first = _main(ben.get("/"))
    assert _listed(first, "awaiting") == [move]
    assert len(_listed(first, "followed")) == 10
    pager = _pager(first)
    assert words["page"].format(page=1, pages=2) in _text(pager)
    assert 'href="/?page=2"' in pager
    assert words["newer"] not in _text(pager)

    second = _main(ben.get("/?page=2"))
    awaiting = _section(second, "awaiting")
    assert _listed(second, "awaiting") == []
    assert words["ends"].format(last=1) in _text(awaiting)
    assert 'href="/?page=1"' in awaiting
    assert sorted(_listed(first, "followed") + _listed(second, "followed")) == sorted(refunds)
    pager = _pager(second)
    assert words["page"].format(page=2, pages=2) in _text(pager)
    assert words["newer"] in _text(pager)
    assert 'href="/?page=1"' in pager
    assert words["older"] not in _text(pager)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_page_past_the_end_says_so_and_links_the_last(web, language):
    words = WORDS[language]
    refunds = _refunds(web, 12)
    noah = _reader(web, NOAH, language)
    assert len(_listed(_main(noah.get("/?page=2")), "awaiting")) == 2

    past = _main(noah.get("/?page=7"))
    assert _listed(past, "awaiting") == []
    assert words["ends"].format(last=2) in _text(_section(past, "awaiting"))
    pager = _pager(past)
    assert words["past"].format(page=7, pages=2) in _text(pager)
    assert words["page"].format(page=7, pages=2) not in _text(pager)
    assert 'href="/?page=2"' in pager  # back to the last page, not to page 6
    assert words["older"] not in _text(pager)
    assert set(refunds)  # made


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_recent_outcomes_past_the_end_say_so_not_that_nothing_was_decided(web, language):
    words = WORDS[language]
    declined = web.propose("refund-ok")
    web.cs.proposals.decline(declined, NOAH)
    noah = _reader(web, NOAH, language)
    assert f'href="/proposals/{declined}"' in _main(noah.get("/?view=recent"))

    past = _main(noah.get("/?view=recent&page=3"))
    assert f'href="/proposals/{declined}"' not in past
    assert words["never_decided"] not in _text(past)
    assert words["ends"].format(last=1) in _text(past)
    pager = _pager(past)
    assert words["past"].format(page=3, pages=1) in _text(pager)
    assert 'href="/?page=1&amp;view=recent"' in pager
