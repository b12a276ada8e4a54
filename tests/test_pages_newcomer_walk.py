"""What a newcomer's walk through the pages found, through the ASGI app, on every backend, in
English and in French: a member whose role approves nothing is told whom to ask; the "form
expired" page offers signing in to someone signed out; a declined proposal says once that
nothing changed; an order number no order has stays in its field."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, BEN
from tests.test_web_pages import Web, _main, web_for

NOTHING_CHANGED = {
    "en": re.compile(r"nothing (was )?changed", re.I),
    "fr": re.compile(r"rien n'a (été modifié|changé)", re.I),
}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _read(page: Any) -> str:
    """The page's main part as a person reads it: entities decoded, spaces plain."""
    return html.unescape(_main(page)).replace("\N{NO-BREAK SPACE}", " ")


@pytest.mark.parametrize(
    ("language", "told"),
    [
        (
            "en",
            "Your role does not include approving any kind of proposal. To approve some, ask a "
            "club manager: they can change your permissions on the Members page.",
        ),
        (
            "fr",
            "Votre rôle ne permet d'approuver aucun type de proposition. Pour en approuver, "
            "demandez à un gestionnaire du club : il peut changer vos permissions sur la page "
            "Membres.",
        ),
    ],
)
def test_a_member_whose_role_approves_nothing_is_told_whom_to_ask(
    web: Web, language: str, told: str
) -> None:
    ben = web.browser(BEN)
    assert told in _read(ben.get("/", **{"Accept-Language": language}))


@pytest.mark.parametrize(
    ("language", "sign_in", "inbox"),
    [("en", "Sign in", "Go to the inbox"), ("fr", "Se connecter", "Aller à la liste à traiter")],
)
def test_the_form_expired_page_offers_signing_in_to_someone_signed_out(
    web: Web, language: str, sign_in: str, inbox: str
) -> None:
    stranger = web.browser()
    stranger.get("/sign-in")
    refused = stranger.post(
        "/sign-in", {"email": AVA, "password": "wrong"}, **{"Accept-Language": language}
    )
    assert refused.status_code == 403
    page = _read(refused)
    assert f'<a class="button" href="/sign-in">{sign_in}</a>' in page
    assert inbox not in page
    # Someone signed in is still offered their inbox.
    ava = web.browser(AVA)
    forged = ava.post("/language", {"lang": language, "next": "/"}, **{"Accept-Language": language})
    assert forged.status_code == 403
    assert f'<a class="button" href="/">{inbox}</a>' in _read(forged)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_declined_proposal_says_once_that_nothing_changed(web: Web, language: str) -> None:
    proposal_id = web.propose()
    web.cs.proposals.decline(proposal_id, AVA)
    ava = web.browser(AVA)
    headers = {"Accept-Language": language}
    for path in (f"/proposals/{proposal_id}", f"/proposals/{proposal_id}/status"):
        panel = _read(ava.get(path, **headers))
        panel = panel[panel.index('id="outcome-title"') :]
        panel = panel[: panel.index("</section>")]
        assert len(NOTHING_CHANGED[language].findall(panel)) == 1, (path, panel)
        assert {
            "en": "Declined: nothing changed</h2> <p>The manager declined this proposal. Ask "
            "the assistant for a new proposal if it is still needed.</p>",
            "fr": "Refusée : rien n'a changé</h2> <p>Le gestionnaire a refusé cette "
            "proposition. Demandez à l'assistant une nouvelle proposition si elle est toujours "
            "nécessaire.</p>",
        }[language] in panel


@pytest.mark.parametrize(
    ("language", "notice"),
    [
        ("en", "There is no order with that number in this club."),
        ("fr", "Aucune commande de ce club ne porte ce numéro."),
    ],
)
def test_an_order_number_no_order_has_stays_in_its_field(
    web: Web, language: str, notice: str
) -> None:
    ava = web.browser(AVA)
    typed = 'ORD-20 "9"<b>'
    answer = ava.get("/orders/open?" + f"ref={typed}", **{"Accept-Language": language})
    assert answer.status_code == 303
    inbox = ava.get(answer.headers["location"], **{"Accept-Language": language})
    page = _read(inbox)
    assert notice in page
    assert _typed_in_the_field(inbox) == typed
    # The field of an inbox reached otherwise is empty.
    assert _typed_in_the_field(ava.get("/", **{"Accept-Language": language})) == ""


def _typed_in_the_field(page: Any) -> str:
    field = re.search(r'<input id="ref"[^>]* value="([^"]*)"', page.text)
    assert field is not None
    return html.unescape(field.group(1))
