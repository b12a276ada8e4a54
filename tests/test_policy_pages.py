"""The approval policies page, without a browser (the ASGI app, on both databases).

Before it, no page showed a club's approval policies: a manager could see which rule a
proposal was frozen under on its own page, never which operations need two approvals, above
which amount, whether a requester may approve their own, or whether a passkey signs each
approval. ``/policies`` shows the rules in force, read-only, in the club's money format, in
English and French; who sees which is the application's (``PolicyService.readable``)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.application.authorization import Caller
from countersign.application.errors import MissingPermissionError
from countersign.domain.errors import NotFoundError
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, REFUND
from tests.support.proposing import MOVE
from tests.test_web_pages import Web, _main, web_for

BEN = "ben@granite.example"  # seeded with no permission
PAGE = "/policies"


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _rows(page: Any) -> dict[str, list[str]]:
    """The policies table: each operation's title and its cells, as text."""
    assert page.status_code == 200, page.text[:300]
    rows = re.findall(r"<tr id=\"policy-[^\"]+\">(.*?)</tr>", _main(page))
    table = {}
    for row in rows:
        cells = [html.unescape(c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        table[cells[0]] = cells[1:]
    return table


def test_a_manager_sees_every_operations_approval_policy_in_english_and_french(web: Web) -> None:
    web.cs.policies.set(
        "granite", REFUND, 2, above_cents=10_000, requester_may_approve=False, require_passkey=True
    )
    web.cs.policies.set("granite", MOVE, 3)
    ava = web.browser(AVA)

    english = _rows(ava.get(PAGE, **{"Accept-Language": "en"}))
    french = _rows(ava.get(PAGE, **{"Accept-Language": "fr"}))

    assert english["Refund a missed discount"] == [
        "Proposals above $100.00 CAD",
        "2 different managers",
        "May not approve it",
        "Each approval signed with a passkey",
    ]
    assert english["Move a member to another league"] == [
        "Every proposal",
        "3 different managers",
        "May approve it",
        "Not required",
    ]
    assert english["Send the broadcast"] == [
        "Every proposal",
        "One manager",
        "May approve it",
        "Not required",
    ]
    assert len(english) == len(web.cs.policies.in_force("granite"))  # every operation
    assert french["Rembourser une remise manquée"] == [
        "Propositions au-delà de 100,00 $ CA",  # (no-break spaces, flattened by _main)
        "2 gestionnaires différents",
        "Ne peut pas l'approuver",
        "Chaque approbation signée avec une clé d'accès",
    ]
    assert french["Changer un membre de ligue"][:2] == [
        "Toute proposition",
        "3 gestionnaires différents",
    ]
    assert "100,00\u00a0$\u00a0CA" in ava.get(PAGE, **{"Accept-Language": "fr"}).text
    page = ava.get(PAGE).text
    assert "<form" not in _main(ava.get(PAGE))  # read-only: nothing to change here
    assert '<a href="/policies" aria-current="page">Approval policies</a>' in page


def test_the_review_pages_approval_policy_section_and_every_pages_foot_link_it(web: Web) -> None:
    web.cs.policies.set("granite", REFUND, 2)
    proposal_id = web.propose()
    ava = web.browser(AVA)

    review = ava.get(f"/proposals/{proposal_id}")

    section = re.search(r"<section class=\"policy\".*?</section>", html.unescape(_main(review)))
    assert section, _main(review)[:2000]
    assert '<a href="/policies">The club\'s approval policies now</a>' in section.group(0)
    assert '<a href="/policies">Approval policies</a>' in review.text  # the foot
    french = ava.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}).text
    assert "Les règles d'approbation du club aujourd'hui</a>" in html.unescape(french)


def test_a_member_sees_the_policies_of_the_proposals_they_may_read_and_no_more(web: Web) -> None:
    """Ben holds no permission: the forbidden page, and no link to it. Given orders.refund,
    he reads refund and cancellation proposals (and their frozen policies), so he sees those
    two operations' policies, not the roster's or the broadcasts'."""
    ben = web.browser(BEN)
    refused = ben.get(PAGE)
    assert refused.status_code == 403
    assert 'href="/policies"' not in refused.text
    assert 'href="/policies"' not in ben.get("/").text
    with pytest.raises(MissingPermissionError):
        web.cs.policies.readable("granite", Caller(BEN, "granite"))

    web.cs.club.set_permissions("granite", BEN, ["orders.refund"])
    shown = _rows(web.browser(BEN).get(PAGE))

    assert sorted(shown) == ["Cancel a registration", "Refund a missed discount"]
    # Another club's rules answer as an unknown club's.
    with pytest.raises(NotFoundError):
        web.cs.policies.readable("granite", Caller(AVA, "maple"))


def test_a_page_still_shows_when_whether_to_link_the_policies_cannot_be_read(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The foot's link is a convenience: when what Ben may read cannot be read (a database
    gone away mid-page), his passkeys page shows, without the link, and without a trace."""
    web.cs.club.set_permissions("granite", BEN, ["orders.refund"])
    ben = web.browser(BEN)
    assert 'href="/policies"' in ben.get("/account/passkeys").text

    def unreadable(*args: Any, **kwargs: Any) -> list[str]:
        raise RuntimeError("server closed the connection unexpectedly")

    monkeypatch.setattr(web.cs.access, "readable_sections", unreadable)
    page = ben.get("/account/passkeys")

    assert page.status_code == 200
    assert 'href="/policies"' not in page.text
    assert "server closed" not in page.text
