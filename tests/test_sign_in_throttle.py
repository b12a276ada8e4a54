"""Throttling of failed browser sign-ins, on every backend.

Five failures per account (known email or not) and fifty per client address in a sliding
window of fifteen minutes; over a limit the answer is 429 with Retry-After and a localized
wait, with no password check at all. A success clears the account's failures, a second
process over the same database counts with the first, and parallel attempts cannot slip in
under a limit.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages, signing_in
from countersign.infrastructure.entrypoints.web.throttle import (
    ACCOUNT_LIMIT,
    ADDRESS_LIMIT,
    WINDOW,
    Attempt,
    SignInThrottle,
    account_key,
)
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN
from tests.test_web_pages import CSRF, Web

NOBODY = "nobody@granite.example"
WRONG = "not-the-password-at-all"
WAIT_15 = "Too many failed sign-in attempts. Wait about 15 minutes, then try again."


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    return Web(cs=cs, seeded=seeded, passwords=seed_passwords(cs), app=app)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every password check the sign-in page makes (the real Argon2 one), by email."""
    calls: list[str] = []
    real = signing_in.verify_password

    def counting(cs: Countersign, email: str, password: str) -> bool:
        calls.append(email)
        return real(cs, email, password)

    monkeypatch.setattr(signing_in, "verify_password", counting)
    return calls


@pytest.fixture
def fast_checks(web: Web, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A stand-in for Argon2 (a test that makes fifty failures), counting the checks."""
    calls: list[str] = []

    def fast(cs: Countersign, email: str, password: str) -> bool:
        calls.append(email)
        return web.passwords.get(email) == password

    monkeypatch.setattr(signing_in, "verify_password", fast)
    return calls


def client(app: Any, address: str = "198.51.100.7", **headers: str) -> TestClient:
    return TestClient(app, follow_redirects=False, client=(address, 50000), headers=headers)


def attempt(browser: TestClient, email: str, password: str) -> Any:
    page = browser.get("/sign-in")
    found = CSRF.search(page.text)
    assert found, page.text[:500]
    data = {"email": email, "password": password, "csrf_token": found.group(1)}
    return browser.post("/sign-in", data=data)


def fail(browser: TestClient, email: str, times: int = ACCOUNT_LIMIT) -> None:
    for _ in range(times):
        answer = attempt(browser, email, WRONG)
        assert answer.status_code == 200, answer.text[:500]
        assert "That email and password do not match." in answer.text


def alert(page: Any) -> str:
    found = re.search(r'<p class="alert[^"]*" role="alert">(.*?)</p>', page.text, re.S)
    assert found, page.text[:800]
    return found.group(1).strip()


def rows(cs: Countersign) -> int:
    with cs.sql.transaction() as cursor:
        found = cursor.execute("SELECT COUNT(*) FROM sign_in_failures").fetchone()
    return int(found[0]) if found else 0


# -- per account -----------------------------------------------------------------------------


def test_after_five_failures_even_the_right_password_is_refused_unchecked(
    web: Web, checks: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="countersign.web")
    browser = client(web.app)
    fail(browser, AVA)
    assert len(checks) == ACCOUNT_LIMIT

    refused = attempt(browser, AVA, web.passwords[AVA])
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == str(int(WINDOW.total_seconds()))
    assert alert(refused) == WAIT_15
    assert refused.headers["content-security-policy"].startswith("default-src 'self'")
    assert 'type="password"' in refused.text  # the form stays, for later
    assert len(checks) == ACCOUNT_LIMIT  # no Argon2 work for a refused attempt
    assert browser.get("/").status_code == 303  # still signed out

    reference = refused.headers["x-correlation-id"]
    throttled = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(throttled) == 1
    assert reference in throttled[0]
    assert "account" in throttled[0]
    assert sum("failed sign-in" in r.getMessage() for r in caplog.records) == ACCOUNT_LIMIT
    for secret in (WRONG, web.passwords[AVA], AVA):
        assert secret not in caplog.text


def test_a_known_and_an_unknown_email_are_throttled_byte_for_byte(
    web: Web, checks: list[str]
) -> None:
    browser = client(web.app)
    fail(browser, AVA)
    fail(browser, NOBODY)
    known = attempt(browser, AVA, web.passwords[AVA])
    unknown = attempt(browser, NOBODY, web.passwords[AVA])
    assert known.status_code == unknown.status_code == 429
    assert known.headers["retry-after"] == unknown.headers["retry-after"]
    assert known.content == unknown.content
    assert AVA not in known.text
    assert len(checks) == 2 * ACCOUNT_LIMIT
    # The same account however the email is typed.
    assert attempt(browser, "  Ava@Granite.EXAMPLE ", web.passwords[AVA]).status_code == 429
    assert len(checks) == 2 * ACCOUNT_LIMIT


def test_the_wait_is_in_french_for_a_french_browser(web: Web) -> None:
    browser = client(web.app, **{"accept-language": "fr-CA,fr;q=0.9"})
    fail_fr = [attempt(browser, BEN, WRONG) for _ in range(ACCOUNT_LIMIT)]
    assert all(page.status_code == 200 for page in fail_fr)
    refused = attempt(browser, BEN, web.passwords[BEN])
    assert refused.status_code == 429
    assert alert(refused) == (
        "Trop de tentatives de connexion ont échoué. Patientez environ 15 minutes, puis réessayez."
    )


def test_the_window_slides_and_refused_attempts_do_not_extend_it(
    web: Web, clock: FakeClock, checks: list[str]
) -> None:
    browser = client(web.app)
    for _ in range(ACCOUNT_LIMIT):  # one failure a minute: at 0, 1, 2, 3 and 4 minutes
        fail(browser, AVA, times=1)
        clock.advance(minutes=1)
    clock.advance(minutes=4)  # 9 minutes after the first failure
    refused = attempt(browser, AVA, web.passwords[AVA])
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == str(6 * 60)
    assert "Wait about 6 minutes" in alert(refused)

    # Knocking on and on while refused changes nothing.
    for _ in range(20):
        assert attempt(browser, AVA, WRONG).status_code == 429
    clock.advance(minutes=5, seconds=59)
    still = attempt(browser, AVA, web.passwords[AVA])
    assert still.status_code == 429
    assert still.headers["retry-after"] == "1"
    assert alert(still) == (
        "Too many failed sign-in attempts. Wait about a minute, then try again."
    )
    assert len(checks) == ACCOUNT_LIMIT

    # 15 minutes after the first failure it has left the window: one more try, and a wrong
    # one locks again until the second failure (at minute 1) leaves too.
    clock.advance(seconds=1)
    fail(browser, AVA, times=1)
    again = attempt(browser, AVA, web.passwords[AVA])
    assert again.status_code == 429
    assert again.headers["retry-after"] == "60"

    clock.advance(minutes=1)
    signed = attempt(browser, AVA, web.passwords[AVA])
    assert signed.status_code == 303, signed.text[:500]
    assert browser.get("/").status_code == 200
    assert len(checks) == ACCOUNT_LIMIT + 2


def test_the_right_password_works_once_the_window_has_passed_and_old_rows_go(
    web: Web, clock: FakeClock
) -> None:
    browser = client(web.app)
    fail(browser, AVA)
    fail(browser, NOBODY, times=2)
    assert attempt(browser, AVA, web.passwords[AVA]).status_code == 429
    assert rows(web.cs) == 2 * (ACCOUNT_LIMIT + 2)  # account and address rows per failure

    clock.advance(seconds=WINDOW.total_seconds())
    signed = attempt(browser, AVA, web.passwords[AVA])
    assert signed.status_code == 303
    assert rows(web.cs) == 0  # the expired failures were pruned, the success left nothing


def test_a_success_clears_the_accounts_failures(web: Web, checks: list[str]) -> None:
    browser = client(web.app)
    fail(browser, AVA, times=ACCOUNT_LIMIT - 1)
    assert attempt(browser, AVA, web.passwords[AVA]).status_code == 303

    other = client(web.app)
    fail(other, AVA, times=ACCOUNT_LIMIT - 1)  # would be over the limit without the reset
    assert attempt(other, AVA, web.passwords[AVA]).status_code == 303
    assert len(checks) == 2 * ACCOUNT_LIMIT

    # The address keeps its other failures: a success only forgets its own attempt.
    with web.cs.sql.transaction() as cursor:
        counted = cursor.execute(
            "SELECT scope, COUNT(*) FROM sign_in_failures GROUP BY scope ORDER BY scope"
        ).fetchall()
    assert counted == [("address", 2 * (ACCOUNT_LIMIT - 1))]


def test_the_table_holds_digests_not_addresses(web: Web) -> None:
    browser = client(web.app, address="203.0.113.99")
    fail(browser, AVA, times=1)
    with web.cs.sql.transaction() as cursor:
        stored = " ".join(
            str(value)
            for row in cursor.execute("SELECT * FROM sign_in_failures").fetchall()
            for value in row
        )
    assert "@" not in stored
    assert "203.0.113.99" not in stored
    assert account_key(AVA) in stored


# -- across processes and addresses -----------------------------------------------------------


@pytest.fixture
def second(database_url: str, clock: FakeClock, web: Web) -> Iterator[Any]:
    """A second server process's app: its own wiring and connection, the same database."""
    other = bootstrap(Settings(database_url=database_url), clock=clock)
    app = create_app(other)
    mount_pages(app, other, secure_cookies=False)
    yield app
    other.close()


def test_a_second_process_sees_the_same_counts(web: Web, second: Any, checks: list[str]) -> None:
    first = client(web.app, address="198.51.100.1")
    other = client(second, address="198.51.100.2")
    fail(first, AVA, times=3)
    fail(other, AVA, times=ACCOUNT_LIMIT - 3)
    for browser in (first, other):
        refused = attempt(browser, AVA, web.passwords[AVA])
        assert refused.status_code == 429
        assert alert(refused) == WAIT_15
    assert len(checks) == ACCOUNT_LIMIT

    # And a success in one process clears the account for both.
    fresh = client(second, address="198.51.100.3")
    fail(fresh, BEN, times=ACCOUNT_LIMIT - 1)
    assert attempt(client(web.app), BEN, web.passwords[BEN]).status_code == 303
    fail(fresh, BEN, times=ACCOUNT_LIMIT - 1)
    assert attempt(fresh, BEN, web.passwords[BEN]).status_code == 303


def test_one_address_trying_many_accounts_is_refused(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fast stand-in for Argon2: this test is about counting, and makes fifty failures.
    calls: list[str] = []

    def fast(cs: Countersign, email: str, password: str) -> bool:
        calls.append(email)
        return web.passwords.get(email) == password

    monkeypatch.setattr(signing_in, "verify_password", fast)
    guesser = client(web.app, address="192.0.2.66")
    for number in range(ADDRESS_LIMIT):  # one guess each: no account comes near its limit
        fail(guesser, f"member{number}@granite.example", times=1)
    refused = attempt(guesser, AVA, web.passwords[AVA])
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == str(int(WINDOW.total_seconds()))
    assert alert(refused) == WAIT_15
    assert len(calls) == ADDRESS_LIMIT

    # Everyone else still signs in, Ava included; the guesser's address stays refused.
    assert attempt(client(web.app, address="192.0.2.67"), AVA, web.passwords[AVA]).status_code == (
        303
    )
    assert attempt(guesser, BEN, web.passwords[BEN]).status_code == 429


def test_parallel_attempts_cannot_slip_under_the_limit(cs: Countersign, clock: FakeClock) -> None:
    # Each handle is a connection of its own, like a process; all knock at once, many rounds.
    handles = [SqlDatabase(cs.database) for _ in range(2 * ACCOUNT_LIMIT)]
    for sql in handles:
        SignInThrottle(sql, clock).admit("warm-up@example.org", "192.0.2.1")  # connect now
    rounds = 10
    start = threading.Barrier(len(handles))
    admitted: dict[str, int] = {}
    guard = threading.Lock()

    def knock(number: int, sql: SqlDatabase) -> None:
        for round_ in range(rounds):
            email = f"target{round_}@granite.example"
            start.wait(timeout=60)
            answer = SignInThrottle(sql, clock).admit(email, f"198.51.100.{number}")
            if isinstance(answer, Attempt):
                with guard:
                    admitted[email] = admitted.get(email, 0) + 1

    threads = [
        threading.Thread(target=knock, args=(number, sql)) for number, sql in enumerate(handles)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        for sql in handles:
            sql.close()
    assert admitted == {f"target{r}@granite.example": ACCOUNT_LIMIT for r in range(rounds)}
