"""A guesser at a shared address locked everyone there out, even of the browsers they use.

Fifty failed sign-ins from one client address refuse every sign-in from it for 15 minutes
(``throttle.ADDRESS_LIMIT``: one address trying many accounts is stopped). An attack run sat
at the address a club's people share (a campus, an office behind one NAT, a carrier's
CGNAT, a VPN exit; every visitor, where the reverse proxy is not in
``COUNTERSIGN_TRUSTED_PROXIES``) and failed fifty times on made-up e-mails, again each
quarter of an hour: nobody there could sign in, not even on the browser they had signed in
on for months, with the right password. The known browser, which keeps a guesser elsewhere
from locking its person out, did nothing against one at the same address.

Now a known browser is refused on its own count only (five failures for that browser and
account): the address's count still refuses every browser that never signed in to the
account, the guesser's among them, and a known browser's failures still count towards it.
The guesser gains nothing: its browser is known for no one else's account.
"""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.entrypoints.web.throttle import ACCOUNT_LIMIT, ADDRESS_LIMIT

from tests.conftest import AVA, BEN
from tests.test_sign_in_throttle import WRONG, attempt, client, fail, fast_checks, web  # noqa: F401

SHARED = "192.0.2.80"


def test_a_guesser_at_the_same_address_does_not_lock_a_known_browser_out(
    web: Any,  # noqa: F811
    fast_checks: list[str],  # noqa: F811
) -> None:
    avas = client(web.app, address=SHARED)
    assert attempt(avas, AVA, web.passwords[AVA]).status_code == 303  # a browser she uses
    avas.post("/sign-out", data={"csrf_token": _token(avas)})

    guesser = client(web.app, address=SHARED)
    for number in range(ADDRESS_LIMIT):
        fail(guesser, f"made-up-{number}@granite.example", times=1)
    assert attempt(guesser, BEN, web.passwords[BEN]).status_code == 429  # the address: locked
    newcomer = client(web.app, address=SHARED)  # a browser that never signed in to Ava's
    assert attempt(newcomer, AVA, web.passwords[AVA]).status_code == 429
    checked = len(fast_checks)

    assert attempt(avas, AVA, web.passwords[AVA]).status_code == 303  # hers: signed in
    assert len(fast_checks) == checked + 1
    # Her browser's own mistakes still lock it after five, and the guesser is still refused.
    avas.post("/sign-out", data={"csrf_token": _token(avas)})
    answers = [attempt(avas, AVA, WRONG).status_code for _ in range(ACCOUNT_LIMIT + 1)]
    assert answers == [200] * ACCOUNT_LIMIT + [429]
    assert attempt(guesser, "another@granite.example", WRONG).status_code == 429


def _token(browser: Any) -> str:
    from tests.test_web_pages import CSRF

    found = CSRF.search(browser.get("/").text)
    assert found
    return found.group(1)
