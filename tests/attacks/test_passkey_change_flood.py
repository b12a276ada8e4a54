"""Nothing limited how often a member could change their passkeys.

An attack run renamed one passkey in a loop: every rename is a ``PasskeyRenamed`` event on
the member's ring, stored for ever, so one member could grow the events table (and their
ring's history) without bound. Now adding, naming and removing passkeys count against one
budget per member and club (``COUNTERSIGN_PASSKEY_CHANGE_LIMIT``, 20 an hour by default),
checked and counted in one step in the database. Past it the account page is shown again with
429 and ``Retry-After``, saying in the member's language that too many changes were made and
when to try again, and nothing is written; once the window has passed, changes go through
again. A change that writes nothing (a refused name, the name it has) counts nothing.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.application.passkey_limit import TooManyPasskeyChangesError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.settings import Settings, SettingsError

from tests.conftest import AVA, BEN, count_events
from tests.passkey_authenticator import Authenticator
from tests.test_passkeys import register
from tests.test_web_pages import Web, _main, web_for

PAGE = "/account/passkeys"
#: The documented default (README, "Configuration"): 20 changes an hour per member and club.
LIMIT, WINDOW = 20, 3600


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _names(cs: Countersign, email: str = AVA) -> list[str]:
    return [p["name"] for p in cs.passkeys.passkeys("granite", email)]


def _text(page: Any) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", _main(page))).split())


def test_twenty_an_hour_by_default_and_a_bad_limit_is_refused(monkeypatch) -> None:
    assert Settings().passkey_change_limit == f"{LIMIT}/hour"
    assert Settings.from_env().passkey_change_limit == f"{LIMIT}/hour"
    monkeypatch.setenv("COUNTERSIGN_PASSKEY_CHANGE_LIMIT", "5/day")
    assert Settings.from_env().passkey_change_limit == "5/day"
    monkeypatch.setenv("COUNTERSIGN_PASSKEY_CHANGE_LIMIT", "often")
    with pytest.raises(
        SettingsError, match="COUNTERSIGN_PASSKEY_CHANGE_LIMIT: 'often' is not a limit"
    ):
        Settings.from_env()


def test_renames_past_the_budget_are_refused_on_the_page_and_nothing_is_written(
    web: Web, clock: Any
) -> None:
    key = register(web.cs, AVA, "laptop")  # the first change of the hour
    browser = web.browser(AVA)
    for n in range(LIMIT - 1):
        renamed = browser.form(f"{PAGE}/rename", {"credential_id": key.id, "name": f"n{n}"}, PAGE)
        assert (renamed.status_code, renamed.headers["location"]) == (303, PAGE)
    events = count_events(web.cs)
    clock.advance(seconds=600)  # ten minutes on: the first change leaves the window in 50

    refused = browser.form(f"{PAGE}/rename", {"credential_id": key.id, "name": "again"}, PAGE)

    assert refused.status_code == 429
    assert refused.headers["retry-after"] == str(WINDOW - 600)
    assert (
        "Too many changes were made to your passkeys in a short time: nothing was changed. "
        "Try again in 50 min."
    ) in _text(refused)
    assert "The passkey was renamed." not in _text(refused)
    french = browser.post(
        f"{PAGE}/rename",
        {"credential_id": key.id, "name": "encore", "csrf_token": browser.csrf(PAGE)},
        **{"Accept-Language": "fr"},
    )
    assert french.status_code == 429
    assert (
        "Trop de modifications ont été faites à vos clés d'accès en peu de temps : rien n'a "
        "été modifié. Réessayez dans 50 min."
    ) in _text(french)
    # Removing is refused alike; the passkey, its name and the event log are as they were.
    removed = browser.form(f"{PAGE}/remove", {"credential_id": key.id}, PAGE)
    assert removed.status_code == 429
    assert count_events(web.cs) == events
    assert _names(web.cs) == [f"n{LIMIT - 2}"]
    # Another member's passkeys are not held back.
    register(web.cs, BEN, "Ben's phone")
    assert _names(web.cs, BEN) == ["Ben's phone"]

    clock.advance(seconds=WINDOW - 600)  # the first change has left the window
    again = browser.form(f"{PAGE}/rename", {"credential_id": key.id, "name": "again"}, PAGE)
    assert (again.status_code, again.headers["location"]) == (303, PAGE)
    assert _names(web.cs) == ["again"]
    assert "The passkey was renamed." in _text(browser.get(PAGE))


def test_adding_a_passkey_past_the_budget_writes_nothing(
    cs: Countersign, seeded: dict[str, Any], clock: Any
) -> None:
    key = register(cs, AVA, "laptop")
    for n in range(LIMIT - 1):
        cs.passkeys.rename("granite", AVA, key.id, f"n{n}")
    events = count_events(cs)
    phone = Authenticator()
    begun = cs.passkeys.begin_registration("granite", AVA)
    credential = phone.register(begun["options"])

    with pytest.raises(TooManyPasskeyChangesError) as refused:
        cs.passkeys.finish_registration("granite", AVA, "phone", begun["nonce"], credential)
    assert refused.value.retry_after == WINDOW
    with pytest.raises(TooManyPasskeyChangesError):
        cs.passkeys.remove("granite", AVA, key.id)
    assert count_events(cs) == events
    assert _names(cs) == [f"n{LIMIT - 2}"]

    clock.advance(seconds=WINDOW + 1)  # the request has expired by now: the member asks again
    register(cs, AVA, "phone", phone)
    assert sorted(_names(cs)) == [f"n{LIMIT - 2}", "phone"]


def test_changes_that_write_nothing_count_nothing(cs: Countersign, seeded: dict[str, Any]) -> None:
    key = register(cs, AVA, "laptop")
    for _ in range(2 * LIMIT):
        cs.passkeys.rename("granite", AVA, key.id, "laptop")  # the name it has: no event
        with pytest.raises(Exception, match="give the passkey a name"):
            cs.passkeys.rename("granite", AVA, key.id, "   ")
    events = count_events(cs)
    for n in range(LIMIT - 1):  # the registration was one change; nothing else counted
        cs.passkeys.rename("granite", AVA, key.id, f"n{n}")
    assert count_events(cs) == events + LIMIT - 1
    with pytest.raises(TooManyPasskeyChangesError):
        cs.passkeys.rename("granite", AVA, key.id, "one too many")
