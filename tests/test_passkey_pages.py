"""Passkeys on the pages, without a browser (the ASGI app, on both databases): the review page
says who approved with which passkey, in English and in French, and the account page renames a
passkey through its form."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA
from tests.support.proposing import propose
from tests.test_passkeys import register, require_passkey, signed
from tests.test_web_pages import Web, _main, web_for

PAGE = "/account/passkeys"


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _text(page: Any) -> str:
    assert page.status_code == 200, page.text[:300]
    return html.unescape(_main(page))


def _names(page: Any) -> list[str]:
    """The passkeys the account page lists, by name."""
    return re.findall(r'<span class="passkey-name">([^<]*)</span>', _text(page))


def test_the_review_page_names_the_passkey_an_approval_was_signed_with(web: Web) -> None:
    require_passkey(web.cs, approvals=2)
    key = register(web.cs, AVA, "Ava's laptop")
    proposal_id = propose(web.cs, web.seeded)
    web.cs.proposals.approve(proposal_id, AVA, signed(web.cs, proposal_id, AVA, key))
    browser = web.browser(AVA)

    english = _text(browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "en"}))
    french = _text(browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}))

    assert 'Ava Lindqvist — Approved with a passkey ("Ava\'s laptop")' in english
    assert "Ava Lindqvist — Approuvée avec une clé d'accès (« Ava's laptop »)" in french
    assert "Approved with" not in french


def test_a_passkey_is_renamed_through_the_account_page(web: Web) -> None:
    key = register(web.cs, AVA, "Ava's laptop")
    browser = web.browser(AVA)
    assert _names(browser.get(PAGE)) == ["Ava's laptop"]

    renamed = browser.form(
        f"{PAGE}/rename", {"credential_id": key.id, "name": "Ava's work laptop"}, PAGE
    )

    assert (renamed.status_code, renamed.headers["location"]) == (303, PAGE)
    page = browser.get(PAGE)
    # Said once, beside the list (not again at the top of the page).
    assert _text(page).count("The passkey was renamed.") == 1
    assert _names(page) == ["Ava's work laptop"]
    assert [p["name"] for p in web.cs.passkeys.passkeys("granite", AVA)] == ["Ava's work laptop"]

    # A blank name is refused with the page's own sentence; the name stays.
    blank = browser.form(f"{PAGE}/rename", {"credential_id": key.id, "name": "  "}, PAGE)
    assert blank.status_code == 303
    page = _text(browser.get(PAGE))
    assert page.count("The passkey could not be renamed: give it a name.") == 1
    assert [p["name"] for p in web.cs.passkeys.passkeys("granite", AVA)] == ["Ava's work laptop"]
    # Without the session's CSRF token, nothing is renamed.
    forged = browser.post(f"{PAGE}/rename", {"credential_id": key.id, "name": "x"})
    assert forged.status_code == 403
    assert [p["name"] for p in web.cs.passkeys.passkeys("granite", AVA)] == ["Ava's work laptop"]


def _decision_area(page: Any) -> str:
    """The review page's decision area (``#decide``), as text, tags kept."""
    found = re.search(r'<div class="decide[^"]*" id="decide">.*?</details>\s*</div>', _text(page))
    assert found, _text(page)[:2000]
    return found.group(0)


def test_a_manager_without_a_passkey_is_offered_to_add_one_not_an_approval_that_cannot_work(
    web: Web,
) -> None:
    """Before: the page offered "Approve with my passkey" to a manager with no passkey in the
    club, and pressing it could only fail. Now the decision area says approval needs a passkey
    and offers "Add a passkey" (the passkeys page) and Decline, in English and in French; a
    manager with a passkey still gets the button."""
    require_passkey(web.cs)
    proposal_id = web.propose()
    browser = web.browser(AVA)
    review = f"/proposals/{proposal_id}"

    english = browser.get(review, **{"Accept-Language": "en"})
    french = browser.get(review, **{"Accept-Language": "fr"})

    area = _decision_area(english)
    assert "Approve with my passkey" not in _text(english)
    assert 'action="/proposals/' + proposal_id + '/approve"' not in area
    assert "passkey.js" not in english.text  # nothing to sign with
    assert "Approving this proposal needs your passkey, and you have none in this club yet." in area
    assert re.search(
        r'<a class="button primary wide" href="/account/passkeys"[^>]*>Add a passkey</a>', area
    )
    assert f'action="/proposals/{proposal_id}/decline"' in area  # Decline stays
    french_area = _decision_area(french)
    assert "Approuver avec ma clé d'accès" not in _text(french)
    assert (
        "Approuver cette proposition demande votre clé d'accès, et vous n'en avez pas "
        "encore dans ce club." in french_area
    )
    assert re.search(
        r'<a class="button primary wide" href="/account/passkeys"[^>]*>'
        r"Ajouter une clé d'accès</a>",
        french_area,
    )
    assert f'action="/proposals/{proposal_id}/decline"' in french_area

    # With a passkey registered, the same page offers the signed approval, as before.
    register(web.cs, AVA, "Ava's laptop")
    page = browser.get(review, **{"Accept-Language": "en"})
    area = _decision_area(page)
    assert "Approve with my passkey" in area
    assert "Add a passkey" not in area
    assert "passkey.js" in page.text
    # Tried at an address the passkeys do not belong to, it names the one they do.
    address = web.cs.passkeys.ceremonies.origins[0]
    assert (
        html.unescape(area).count(
            f"Passkeys cannot be used at this address: open the site at {address} and try again."
        )
        == 1
    )
