"""A pending proposal's review page says what it replaced (the ASGI app, on both databases).

Before, the withdrawn card said why it would not run and which proposal withdrew it, and the
replaced one named the newer proposal; but the newer one's own page said nothing of the
earlier: its reviewer could take approving it for something in addition to the earlier
proposal. Now its page says, in the reader's language, that it replaces (or revises) an
earlier proposal, which can no longer be approved, and links to it."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, DRAFT
from tests.support.proposing import propose
from tests.test_web_pages import Web, _main, web_for

FR = {"Accept-Language": "fr"}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _replaces(web: Web, proposal_id: str, **headers: str) -> tuple[str, list[str]] | None:
    """What the page says the proposal replaced, as a person reads it, and its links."""
    page = web.browser(AVA).get(f"/proposals/{proposal_id}", **headers)
    assert page.status_code == 200, page.text[:500]
    found = re.search(r'<section[^>]*id="replaces".*?</section>', _main(page))
    if found is None:
        return None
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(0))).split())
    return text, re.findall(r'href="([^"]+)"', found.group(0))


def test_a_proposal_made_again_for_the_same_thing_says_it_replaces_the_earlier(web: Web) -> None:
    first = propose(web.cs, web.seeded, "refund-stale")
    again = propose(web.cs, web.seeded, "refund-stale")

    assert _replaces(web, again) == (
        "It replaces an earlier proposal "
        "It was proposed again for the same thing, so the earlier proposal can no longer be "
        "approved: approving this one carries it out once, not in addition to the earlier one. "
        "Open the earlier proposal",
        [f"/proposals/{first}"],
    )
    assert _replaces(web, again, **FR) == (
        "Elle remplace une proposition antérieure "
        "Elle a été proposée de nouveau pour la même chose : la proposition antérieure ne "
        "peut plus être approuvée, et approuver celle-ci l'exécute une seule fois, pas en "
        "plus de l'autre. "
        "Ouvrir la proposition antérieure",
        [f"/proposals/{first}"],
    )
    assert _replaces(web, first) is None  # the earlier one says it was replaced, as before


def test_an_edit_says_it_revises_the_earlier_version(web: Web) -> None:
    draft = {"filters": {"leagues": ["Monday Night Open"]}, "subject": "Ice", "body": "Hello"}
    edited = propose(web.cs, web.seeded, operation=DRAFT, request=draft)
    edit = web.cs.access.revise(edited, AVA, {**draft, "subject": "Ice times"}).proposal_id

    assert _replaces(web, edit) == (
        "It revises an earlier proposal "
        "It is an edit of an earlier proposal, which can no longer be approved: approving "
        "this one carries out this version only, not both. "
        "Open the earlier proposal",
        [f"/proposals/{edited}"],
    )
    assert _replaces(web, edit, **FR) == (
        "Elle modifie une proposition antérieure "
        "C'est une modification d'une proposition antérieure, qui ne peut plus être "
        "approuvée : approuver celle-ci exécute cette version seulement, pas les deux. "
        "Ouvrir la proposition antérieure",
        [f"/proposals/{edited}"],
    )


def test_a_proposal_that_replaced_nothing_says_nothing_of_it(web: Web) -> None:
    assert _replaces(web, web.propose()) is None


def _links_to(web: Web, proposal_id: str, earlier: str, **headers: str) -> list[str]:
    """Every link of the page's main part to ``earlier``'s page, by the text it reads."""
    page = web.browser(AVA).get(f"/proposals/{proposal_id}", **headers)
    assert page.status_code == 200, page.text[:500]
    found = re.findall(rf'<a[^>]*href="/proposals/{earlier}"[^>]*>(.*?)</a>', _main(page))
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split()) for text in found]


def test_a_pending_edit_links_the_earlier_version_once(web: Web) -> None:
    """The box saying it revises the earlier proposal links it; "What changed" below it does
    not again (it did: two links to the same page, "Open the earlier proposal" and "See the
    earlier version", which read as two earlier proposals). Once the edit is decided, the box
    is gone and "What changed" keeps the link: the page still links it, once."""
    draft = {"filters": {"leagues": ["Monday Night Open"]}, "subject": "Ice", "body": "Hello"}
    edited = propose(web.cs, web.seeded, operation=DRAFT, request=draft)
    edit = web.cs.access.revise(edited, AVA, {**draft, "subject": "Ice times"}).proposal_id

    assert _links_to(web, edit, edited) == ["Open the earlier proposal"]
    assert _links_to(web, edit, edited, **FR) == ["Ouvrir la proposition antérieure"]
    page = _main(web.browser(AVA).get(f"/proposals/{edit}"))
    assert 'id="changes-title">What changed</h2>' in page  # the changes are still shown

    web.cs.access.decline(edit, AVA, "not now")
    assert _replaces(web, edit) is None
    assert _links_to(web, edit, edited) == ["See the earlier version"]
    assert _links_to(web, edit, edited, **FR) == ["Voir la version précédente"]
