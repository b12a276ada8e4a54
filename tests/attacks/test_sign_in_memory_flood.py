"""Held: a burst of sign-ins cannot take every club's pages, or the server's memory.

An attack run (hD) sent 45 sign-ins at once from one client address, each at a made-up e-mail
with a wrong password. The throttle admits an address's first fifty failures, and each
admitted attempt checks its password with Argon2id (64 MiB and about a CPU-second each on the
shared 2-core machine), on the thread pool every page of every club runs on. All 45 checks
ran at once: the server grew from 74 MiB to 2,244 MiB, and Mia, signed in at the maple club
and asking for her inbox meanwhile, waited 8.8 s for it (13 ms before). From another address
(or IPv6 network) the attacker could start again at once.

Now a process checks at most ``PASSWORD_CHECKS`` passwords at a time, at most
``CHECKS_PER_ADDRESS`` for one client address and ``CHECKS_PER_ACCOUNT`` for one account; a
sign-in that finds no check free for it is answered at once, 503 with Retry-After, in the
visitor's language, keeping what they typed: no password checked, no failure counted, no
session started. Every other page goes on, and so do other people's sign-ins: capped without
the per-address and per-account shares, four loops of Ava's own right password (which the
throttle never refuses) left Mia 503 on 9 of her 10 sign-ins.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.entrypoints.web import signing_in
from countersign.infrastructure.identity import passwords
from fastapi.testclient import TestClient

from tests.attacks.conftest import Browser, Web, assert_no_leak
from tests.conftest import AVA, MIA

#: Beyond the checks one process makes at once.
EXTRA = 3
ATTACK = "not-the-password-at-all"


class _Checks:
    """The attacker's Argon2 checks, held open until released: how many started, and how
    many ran at once. Anyone else's check runs as it would."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.started = 0
        self.release = threading.Event()

    def enter(self) -> None:
        with self.lock:
            self.inside += 1
            self.started += 1
            self.most = max(self.most, self.inside)
        self.release.wait(60)  # released by the test; never a hang if it fails first
        with self.lock:
            self.inside -= 1


@pytest.fixture
def held_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Checks]:
    checks = _Checks()
    real = passwords._verify

    def held(stored: str, password: str) -> bool:
        if password == ATTACK:
            checks.enter()
        return real(stored, password)

    monkeypatch.setattr(passwords, "_verify", held)
    yield checks
    checks.release.set()


def _until(condition: Any) -> None:
    """Wait for what the requests' threads do (an observation, not a timing: the bound is
    only there so that a broken test fails instead of hanging)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the requests never got there"
        time.sleep(0.01)


def _burst(
    browsers: list[Browser], emails: list[str], checks: _Checks
) -> tuple[list[Any], list[Any], threading.Event]:
    """Every browser signs in at once with the attacker's password; returns the answers
    given while the checks are held (once every request has started its check or been
    answered), the list every answer lands in, and the event that ends the burst."""
    tokens = [browser.page_token() for browser in browsers]
    answers: list[Any] = []

    def sign_in(i: int) -> None:
        data = {"email": emails[i], "password": ATTACK, "csrf_token": tokens[i]}
        answers.append(browsers[i].post("/sign-in", data))

    threads = [threading.Thread(target=sign_in, args=(i,)) for i in range(len(browsers))]
    for thread in threads:
        thread.start()
    _until(lambda: checks.started + len(answers) >= len(browsers))
    done = threading.Event()

    def ending() -> None:
        done.wait(60)
        checks.release.set()
        for thread in threads:
            thread.join()

    threading.Thread(target=ending).start()
    return list(answers), answers, done


def test_a_burst_of_sign_ins_checks_a_few_passwords_at_once_and_refuses_the_rest_at_once(
    web: Web, held_checks: _Checks
) -> None:
    mia = web.member(MIA)  # signed in before the burst
    burst = signing_in.PASSWORD_CHECKS + EXTRA
    browsers = [web.browser(**{"Accept-Language": "fr"}) for _ in range(burst)]  # each its address
    emails = [f"nobody{i}@example.com" for i in range(burst)]

    answered, answers, done = _burst(browsers, emails, held_checks)
    inbox_while_held = mia.get("/")
    done.set()
    _until(lambda: len(answers) == burst)

    assert held_checks.most == signing_in.PASSWORD_CHECKS
    assert held_checks.started == signing_in.PASSWORD_CHECKS
    assert [answer.status_code for answer in answered] == [503] * EXTRA
    busy = answered[0]
    assert busy.headers["retry-after"] == "2"
    assert "Beaucoup de connexions sont en cours" in busy.text
    assert "nobody" in busy.text  # what they typed is kept
    assert_no_leak(busy.text)
    assert inbox_while_held.status_code == 200
    assert (
        sorted(answer.status_code for answer in answers) == [200] * (burst - EXTRA) + [503] * EXTRA
    )


def test_one_address_or_one_account_holds_a_few_checks_and_others_sign_in_meanwhile(
    web: Web, held_checks: _Checks
) -> None:
    # The guesser's five browsers share one address; three more elsewhere try Ava's account.
    one_address = [
        Browser(
            TestClient(
                web.app,
                follow_redirects=False,
                raise_server_exceptions=False,
                client=("203.0.113.9", 50000),
            )
        )
        for _ in range(5)
    ]
    browsers = [*one_address, *(web.browser() for _ in range(3))]
    emails = [f"guess{i}@example.com" for i in range(5)] + [AVA] * 3

    answered, answers, done = _burst(browsers, emails, held_checks)
    mia = web.browser().sign_in(MIA, web.passwords[MIA])
    done.set()
    _until(lambda: len(answers) == len(browsers))

    per_address, per_account = signing_in.CHECKS_PER_ADDRESS, signing_in.CHECKS_PER_ACCOUNT
    assert held_checks.most == per_address + per_account < signing_in.PASSWORD_CHECKS
    assert len(answered) == len(browsers) - per_address - per_account
    assert {answer.status_code for answer in answered} == {503}
    assert mia.status_code == 303  # Mia's own check was free


def test_the_checks_are_given_back_so_the_next_sign_in_goes_through(web: Web) -> None:
    browser = web.browser()
    for i in range(signing_in.PASSWORD_CHECKS + EXTRA):
        wrong = browser.sign_in(f"nobody{i}@example.com", ATTACK)
        assert wrong.status_code == 200
    assert browser.sign_in(MIA, web.passwords[MIA]).status_code == 303
