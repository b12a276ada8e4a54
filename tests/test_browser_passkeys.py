"""Passkey-bound approvals in a real headless Chromium, its authenticator Chromium's own
virtual one (CDP ``WebAuthn.addVirtualAuthenticator``): no mock of navigator.credentials.

Pages are served under ``http://localhost:PORT`` (127.0.0.1 is not a valid RP id); the
relying party's origin is configured once the port is known. Ava and Noah each add a passkey
on ``/account/passkeys``, reached by its links (the review page's "Add a passkey", offered
in place of an approval while they have none, and every page's foot); a
$128 refund needs both, each with their own passkey: Ava's approval waits for Noah, Noah's
first prompt fails user verification (nothing changes, the page says so), his second runs the
refund. Then Ava removes her passkey, and the page no longer offers her an approval to sign
(the application refusing a removed passkey is ``tests/test_passkeys.py``'s).

A manager with no passkey, on a phone in French, reaches "Add a passkey" by keyboard alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, REFUND, TO_CARD
from tests.servers import serving
from tests.test_browser_e2e import DESKTOP, PHONE, Served

NOAH = "noah@granite.example"


@contextmanager
def _served(database_url: str) -> Iterator[Served]:
    cs = bootstrap(Settings(database_url=database_url))
    seeded = seed(cs)
    passwords = seed_passwords(cs)
    cs.policies.set("granite", REFUND, 2, above_cents=10_000, require_passkey=True)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    try:
        with serving(app) as running:
            base = f"http://localhost:{running.port}"
            cs.passkeys.ceremonies.origins[:] = [base]  # type: ignore[attr-defined]
            yield Served(base, cs, seeded, passwords)
    finally:
        cs.close()


@pytest.fixture
def served(database_url: str) -> Iterator[Served]:
    """The pages on each database (an empty one of the test's own, seeded here), with the
    real clock: a passkey's nonce and a browser session live in real time."""
    with _served(database_url) as running:
        yield running


def _authenticator(context: Any, page: Any) -> tuple[Any, str]:
    """A virtual authenticator for ``page`` (user verification on): its CDP session and id."""
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    authenticator = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
            }
        },
    )["authenticatorId"]
    return cdp, authenticator


def _person(browser: Any, served: Served, email: str) -> tuple[Any, Any, str]:
    """A signed-in page with its own virtual authenticator (user verification on)."""
    context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    page = context.new_page()
    cdp, authenticator = _authenticator(context, page)
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", email)
    page.fill("#password", served.passwords[email])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(served.base_url + "/")
    return page, cdp, authenticator


def _add_passkey(page: Any, served: Served, name: str, link: str) -> None:
    """Add a passkey on the passkeys page, reached as a manager reaches it: by ``link`` on
    the page they are on (no page linked to it, and the hint sent them to an "Account" menu
    that does not exist)."""
    page.click(link)
    page.wait_for_url(served.base_url + "/account/passkeys")
    name_field = page.locator("#passkey-name")
    # Styled as every other field of the site (it was a bare browser box).
    assert name_field.evaluate("e => getComputedStyle(e).borderRadius") == "8px"
    assert name_field.evaluate("e => e.getBoundingClientRect().height") >= 44
    page.fill("#passkey-name", name)
    page.click("#add-passkey button[type=submit]")
    page.wait_for_selector("#notice")
    assert page.locator("#notice").inner_text() == "The passkey was added."
    assert name in page.locator("#passkey-list").inner_text()


def _refunds(served: Served, proposal_id: str) -> int:
    return sum(
        1 for r in served.cs.sandbox.refunds() if r["metadata"]["proposal_id"] == proposal_id
    )


def test_two_managers_approve_with_their_passkeys_and_a_removed_one_no_longer_works(
    served: Served, browser: Any
) -> None:
    large = served.cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=served.seeded["orders"]["refund-two-approvers"],
        request=TO_CARD,
    ).proposal_id
    review = f"{served.base_url}/proposals/{large}"
    ava, ava_cdp, ava_key = _person(browser, served, AVA)
    ava.goto(review)
    # Without a passkey: no approval that cannot work, the way to add one in its place.
    assert "you have none in this club yet" in ava.locator("#passkey-hint").inner_text()
    assert ava.locator("#approve-passkey").count() == 0
    assert ava.locator("#decide summary.decline").is_visible()
    _add_passkey(ava, served, "Ava's laptop", "#passkey-needed a")
    ava.goto(review)
    assert "asks for your passkey" in ava.locator("#passkey-hint").inner_text()
    # The page is already at the review address, so waiting for that address would
    # return at once: wait for the navigation the signed approval makes.
    with ava.expect_navigation(url=review):
        ava.click("#approve-passkey button[type=submit]")
    assert ava.locator("#quorum-title").inner_text() == (
        'Approvals: 1 of 2 — Ava Lindqvist — Approved with a passkey ("Ava\'s laptop")'
    )
    assert _refunds(served, large) == 0

    noah, noah_cdp, noah_key = _person(browser, served, NOAH)
    _add_passkey(noah, served, "Noah's phone", "footer a[href='/account/passkeys']")
    noah.goto(review)
    # The message box shows only once it has something to say.
    assert not noah.locator("[data-passkey-error]").is_visible()
    # A prompt that fails user verification: nothing is sent, nothing changes.
    noah_cdp.send(
        "WebAuthn.setUserVerified", {"authenticatorId": noah_key, "isUserVerified": False}
    )
    noah.click("#approve-passkey button[type=submit]")
    error = noah.locator("[data-passkey-error]")
    error.wait_for(state="visible")
    noah.wait_for_function(
        "() => document.querySelector('[data-passkey-error]').textContent.length > 0"
    )
    assert "The passkey was not used" in error.inner_text()
    assert noah.url == review
    assert _refunds(served, large) == 0
    noah_cdp.send("WebAuthn.setUserVerified", {"authenticatorId": noah_key, "isUserVerified": True})
    with noah.expect_navigation(url=review):
        noah.click("#approve-passkey button[type=submit]")
    assert noah.locator("#status").inner_text() == "Succeeded"
    approvals = noah.locator(".meta-list").inner_text()
    assert 'Ava Lindqvist — Approved with a passkey ("Ava\'s laptop")' in approvals
    assert 'Noah Bergeron — Approved with a passkey ("Noah\'s phone")' in approvals
    assert _refunds(served, large) == 1
    stored = [
        e["passkey"]["name"]
        for e in served.cs.audit.history(large)["events"]
        if e["type"] == "Approved"
    ]
    assert stored == ["Ava's laptop", "Noah's phone"]

    # Ava removes her passkey: approving with it no longer works.
    served.cs.policies.set("granite", REFUND, 1, above_cents=None, require_passkey=True)
    small = served.cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=served.seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    ava.goto(served.base_url + "/account/passkeys")
    ava.click("button >> text=Remove Ava's laptop")
    ava.wait_for_selector("#notice")
    assert "it approves nothing any more" in ava.locator("#notice").inner_text()
    ava.goto(f"{served.base_url}/proposals/{small}")
    # The club no longer counts it: the page offers to add a passkey, no approval to sign.
    assert "you have none in this club yet" in ava.locator("#passkey-hint").inner_text()
    assert ava.locator("#approve-passkey").count() == 0
    assert ava.locator("#status").inner_text() == "Awaiting approval"
    assert _refunds(served, small) == 0
    assert ava_cdp.send("WebAuthn.getCredentials", {"authenticatorId": ava_key})[
        "credentials"
    ]  # still on her device, no longer accepted by the club


def test_a_manager_without_a_passkey_reaches_add_a_passkey_by_keyboard_on_a_phone(
    served: Served, browser: Any
) -> None:
    """Before, the review page offered "Approuver avec ma clé d'accès" to a manager with no
    passkey, and pressing it could only fail. Now, in French at phone size, the decision bar
    says approving needs a passkey and offers "Ajouter une clé d'accès" and "Refuser…": the
    keyboard reaches the first, and Enter opens the passkeys page."""
    served.cs.policies.set("granite", REFUND, 1, above_cents=None, require_passkey=True)
    proposal_id = served.cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=served.seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    context = browser.new_context(viewport=PHONE, locale="fr-CA")
    page = context.new_page()
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", NOAH)
    page.fill("#password", served.passwords[NOAH])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(served.base_url + "/")
    page.goto(f"{served.base_url}/proposals/{proposal_id}")
    decide = page.locator("#decide")
    assert "Approuver avec ma clé d'accès" not in page.locator("main").inner_text()
    assert decide.locator("#passkey-hint").inner_text() == (
        "Approuver cette proposition demande votre clé d'accès, et vous n'en avez pas "
        "encore dans ce club."
    )
    add = decide.locator("a[href='/account/passkeys']")
    assert add.inner_text() == "Ajouter une clé d'accès"
    assert decide.locator("summary").inner_text() == "Refuser…"
    box = add.bounding_box()
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= PHONE["width"]
    assert box["height"] >= 44
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('href')") == "/account/passkeys":
            break
    assert page.evaluate("document.activeElement.closest('#decide') !== null")
    with page.expect_navigation(url=served.base_url + "/account/passkeys"):
        page.keyboard.press("Enter")
    assert page.locator("h1").inner_text() == "Vos clés d'accès"
    context.close()


@pytest.mark.parametrize(
    ("locale", "said"),
    [
        (
            "en-CA",
            "Passkeys cannot be used at this address: open the site at {address} and try again.",
        ),
        (
            "fr-CA",
            "Les clés d'accès ne fonctionnent pas à cette adresse\N{NO-BREAK SPACE}: ouvrez "
            "le site à {address} et réessayez.",
        ),
    ],
)
def test_a_passkey_tried_at_another_address_says_which_address_works(
    served: Served, browser: Any, locale: str, said: str
) -> None:
    """The site opened at http://127.0.0.1:PORT (the address serve and demo --serve print)
    while its passkeys belong to localhost: the browser refuses every passkey there, and the
    page said "You can try again", which could never work. It names the address that does."""
    elsewhere = served.base_url.replace("//localhost:", "//127.0.0.1:")
    context = browser.new_context(viewport=DESKTOP, locale=locale)
    page = context.new_page()
    _authenticator(context, page)
    page.goto(elsewhere + "/sign-in")
    page.fill("#email", NOAH)
    page.fill("#password", served.passwords[NOAH])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(elsewhere + "/")
    page.goto(elsewhere + "/account/passkeys")
    page.fill("#passkey-name", "Noah's laptop")
    page.click("#add-passkey button[type=submit]")
    error = page.locator("#add-passkey [data-passkey-error]")
    expected = said.format(address=served.base_url)
    page.wait_for_function("e => e.textContent !== ''", arg=error.element_handle(), timeout=10_000)
    assert error.inner_text() == expected
    assert served.cs.passkeys.passkeys("granite", NOAH) == []
    context.close()
