"""Attacks on browser sessions, on every backend (issue 10, part 1).

A session cookie copied from a browser (a shared computer, a proxy log, malware) is replayed
after the session should have ended: after signing out, after "sign out everywhere", after a
password change and after the member's removal from the club. Every replay must meet a
signed-out visitor: GET pages redirect to sign in, POST forms answer 303 to sign in (even with
the session's own CSRF token), and nothing is written: the event count, the proposal and the
audit chain are as before.

Also: the cookie says nothing about who is signed in (no email, no CSRF token, whatever
base64 is tried on it), an id planted before sign-in never becomes a signed-in session
(fixation), the idle and absolute limits still end a session, and a broken session store is an
error page without details.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import re
import zlib
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.entrypoints.web.sessions import ABSOLUTE_SECONDS, IDLE_SECONDS
from countersign.infrastructure.identity import session_store
from countersign.infrastructure.identity.passwords import verify_password
from countersign.infrastructure.identity.session_store import id_digest
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN, REFUND, TO_CARD, count_events
from tests.test_web_pages import CSRF, Browser

COOKIE = "countersign_session"
NEW_PASSWORD = "a brand new passphrase for ava"


class Site:
    """The pages over one database, with helpers to act as browsers and attackers."""

    def __init__(self, cs: Countersign, seeded: dict[str, Any]) -> None:
        self.cs = cs
        self.seeded = seeded
        self.passwords = seed_passwords(cs)
        self.app = create_app(cs)
        mount_pages(self.app, cs, secure_cookies=False)

    def browser(self, email: str | None = None) -> Browser:
        browser = Browser(TestClient(self.app, follow_redirects=False))
        if email is not None:
            signed = browser.sign_in(email, self.passwords[email])
            assert signed.status_code == 303, signed.text[:500]
            assert browser.get("/").status_code == 200
        return browser

    def replay(self, cookie: str) -> Browser:
        """A different machine holding nothing but a copy of the cookie."""
        client = TestClient(self.app, follow_redirects=False)
        client.cookies.set(COOKIE, cookie)
        return Browser(client)

    def propose(self) -> str:
        created = self.cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=self.seeded["orders"]["refund-ok"],
            request=TO_CARD,
        )
        return created.proposal_id

    def proposal(self, proposal_id: str) -> Proposal:
        return self.cs.store.get(UUID(proposal_id), Proposal)

    def state(self, proposal_id: str) -> dict[str, Any]:
        """What an attack must not change: every event, the proposal, the audit chain."""
        cs = self.cs
        for runner in cs.projection_runners(["audit_trail"]):
            runner.catch_up()
        report = verify(cs.app, cs.sql).to_json()
        assert report["ok"], report
        proposal = self.proposal(proposal_id)
        return {
            "events": count_events(cs),
            "proposal": (proposal.status, proposal.version),
            "audit": report,
        }

    def row(self, cookie: str) -> session_store.SessionRow | None:
        raw_id = cookie.split(".", 1)[0]
        return session_store.find(self.cs.sql, id_digest(raw_id))


@pytest.fixture
def site(cs: Countersign, seeded: dict[str, Any]) -> Site:
    return Site(cs, seeded)


@pytest.fixture
def proposal_id(site: Site) -> str:
    return site.propose()


def cookie_of(browser: Browser) -> str:
    value = browser.client.cookies.get(COOKIE)
    assert value, "the browser holds no session cookie"
    return value


def stolen(browser: Browser) -> tuple[str, str]:
    """What the attacker copies: the session cookie and a form's CSRF token."""
    return cookie_of(browser), browser.csrf("/")


def assert_signed_out(site: Site, cookie: str, token: str, proposal_id: str) -> None:
    """The replayed cookie (and its own CSRF token) gets a signed-out visitor's answers."""
    before = site.state(proposal_id)
    attacker = site.replay(cookie)
    inbox = attacker.get("/")
    assert inbox.status_code == 303
    assert inbox.headers["location"] == "/sign-in"
    card = attacker.get(f"/proposals/{proposal_id}")
    assert card.status_code == 303
    assert card.headers["location"].startswith("/sign-in?next=")
    for action, data in (("decline", {"note": "replayed"}), ("approve", {})):
        answer = attacker.post(f"/proposals/{proposal_id}/{action}", {**data, "csrf_token": token})
        assert answer.status_code == 303, (action, answer.text[:300])
        # To sign in, and then back to the proposal's page (never to a decision).
        assert answer.headers["location"] == f"/sign-in?next=%2Fproposals%2F{proposal_id}"
    everywhere = attacker.post("/sign-out/everywhere", {"csrf_token": token})
    assert everywhere.status_code == 303
    assert everywhere.headers["location"] == "/sign-in"
    # Her name and address, which no random token can hold (a space, an @): a bare "Ava" was
    # found once inside the page's random CSRF token (about 1 in 6,000 pages).
    signed_out_page = attacker.get("/sign-in").text
    assert "Ava Lindqvist" not in signed_out_page
    assert AVA not in signed_out_page
    assert site.state(proposal_id) == before  # nothing written, the chain intact
    assert site.proposal(proposal_id).status == "pending"


# -- the replays ----------------------------------------------------------------------------


def test_a_cookie_replayed_after_sign_out_is_signed_out(site, proposal_id):
    ava = site.browser(AVA)
    cookie, token = stolen(ava)
    # The copy works while the session lives: that is what a stolen cookie is.
    assert "Ava Lindqvist" in site.replay(cookie).get("/").text

    out = ava.post("/sign-out", {"csrf_token": token})
    assert out.status_code == 303
    assert out.headers["location"] == "/sign-in"
    assert "You are signed out." in ava.get("/sign-in").text

    row = site.row(cookie)
    assert row is not None
    assert row.revoked_at is not None
    assert_signed_out(site, cookie, token, proposal_id)
    assert ava.get("/").status_code == 303  # the browser that signed out is signed out too


def test_sign_out_everywhere_ends_every_session_of_the_person(site, proposal_id):
    laptop, phone = site.browser(AVA), site.browser(AVA)
    ben = site.browser(BEN)
    laptop_cookie, laptop_token = stolen(laptop)
    phone_cookie, phone_token = stolen(phone)
    page = laptop.get("/")
    assert 'action="/sign-out/everywhere"' in page.text  # the button is on every page

    # It is a state-changing form like the others: no token, no effect.
    for token in (None, "", "forged", ben.csrf("/")):
        data = {} if token is None else {"csrf_token": token}
        assert laptop.post("/sign-out/everywhere", data).status_code == 403
    assert phone.get("/").status_code == 200

    done = laptop.post("/sign-out/everywhere", {"csrf_token": laptop_token})
    assert done.status_code == 303
    assert done.headers["location"] == "/sign-in"
    assert "You are signed out everywhere" in laptop.get("/sign-in").text

    for cookie, token in ((laptop_cookie, laptop_token), (phone_cookie, phone_token)):
        assert_signed_out(site, cookie, token, proposal_id)
    assert phone.get("/").status_code == 303  # the other device, in its own browser
    assert ben.get("/").status_code == 200  # another person's session is untouched
    # Signing in again works, with a new session.
    again = site.browser(AVA)
    assert cookie_of(again) not in (laptop_cookie, phone_cookie)


def test_a_password_change_ends_the_persons_sessions(
    site, proposal_id, database_url, monkeypatch, capsys
):
    ava, ben = site.browser(AVA), site.browser(BEN)
    cookie, token = stolen(ava)

    # The new password comes from stdin (or a prompt), never from the command line.
    with pytest.raises(SystemExit):
        main(["users", "set-password", "--as", AVA, "--password", NEW_PASSWORD])
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO(NEW_PASSWORD + "\n"))
    code = main(["users", "set-password", "--as", AVA, "--json", "--database", database_url])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0, answer
    assert answer == {"email": AVA, "password_set": True, "sessions_ended": 1}

    assert_signed_out(site, cookie, token, proposal_id)
    assert ava.get("/").status_code == 303
    assert ben.get("/").status_code == 200
    assert not verify_password(site.cs, AVA, site.passwords[AVA])
    fresh = site.browser()
    assert fresh.sign_in(AVA, NEW_PASSWORD).status_code == 303
    assert fresh.get("/").status_code == 200


def test_a_removed_member_is_signed_out_at_the_next_request(site, proposal_id):
    ava = site.browser(AVA)
    cookie, token = stolen(ava)
    granite = site.cs.store.get(Organization.create_id("granite"), Organization)
    granite.remove_member(AVA)
    site.cs.store.save(granite)

    assert_signed_out(site, cookie, token, proposal_id)
    row = site.row(cookie)
    assert row is not None
    assert row.revoked_at is not None


def test_a_member_removed_and_added_again_does_not_get_the_old_session_back(site, proposal_id):
    ava = site.browser(AVA)
    cookie, token = stolen(ava)
    # No request between the removal and the new membership: the pages never saw Ava gone.
    granite = site.cs.store.get(Organization.create_id("granite"), Organization)
    granite.remove_member(AVA)
    granite.add_member(AVA, "Ava Lindqvist", "manager", [Permission.REFUND_ORDERS])
    site.cs.store.save(granite)

    assert_signed_out(site, cookie, token, proposal_id)
    assert ava.get("/").status_code == 303
    # Other changes to the club (a permission change) do not end anyone's session.
    ben = site.browser(BEN)
    granite = site.cs.store.get(Organization.create_id("granite"), Organization)
    granite.change_permissions(BEN, [Permission.READ_AUDIT])
    site.cs.store.save(granite)
    assert ben.get("/").status_code == 200
    assert ben.get("/").status_code == 200
    # And Ava, a member again, signs in afresh.
    assert site.browser(AVA).get("/").status_code == 200


# -- what the cookie says ---------------------------------------------------------------------


def _decodings(part: str) -> Iterator[bytes]:
    """Every reading of one dot-separated part an attacker would try."""
    yield part.encode()
    for alphabet in (base64.urlsafe_b64decode, base64.b64decode):
        for padding in ("", "=", "=="):
            try:
                decoded = alphabet(part + padding)
            except (binascii.Error, ValueError):
                continue
            yield decoded
            with contextlib.suppress(zlib.error):
                yield zlib.decompress(decoded)


def test_the_cookie_is_an_opaque_id_that_names_nobody(site):
    stranger = site.browser()
    anonymous_token = stranger.csrf("/sign-in")
    anonymous = cookie_of(stranger)
    ava = site.browser(AVA)
    token = ava.csrf("/")
    signed_in = cookie_of(ava)
    ava.post("/language", {"lang": "fr", "next": "/", "csrf_token": token})
    assert '<html lang="fr">' in ava.get("/").text  # the switch still works, signed in
    stranger.post("/language", {"lang": "fr", "next": "/", "csrf_token": anonymous_token})
    assert '<html lang="fr">' in stranger.get("/sign-in").text  # and signed out

    secrets_in_clear = [
        s.encode()
        for s in (AVA, "ava@", "granite", "Ava", token, anonymous_token, '"email"', '"csrf"')
    ]
    for cookie in (anonymous, signed_in):
        parts = cookie.split(".")
        assert len(parts) == 2  # the id and its signature
        for part in parts:
            assert re.fullmatch(r"[A-Za-z0-9_-]{43}", part), part
            for decoded in _decodings(part):
                for secret in secrets_in_clear:
                    assert secret not in decoded, (part, secret)
    # The language cookie holds the language and nothing else; the known browser's (the
    # sign-in throttle's, throttle.py) a random id, the time and the signature: no address,
    # no name, no club.
    cookies = dict(ava.client.cookies.items())
    device = cookies.pop("countersign_device")
    assert cookies == {COOKIE: signed_in, "countersign_lang": "fr"}
    browser, stamp, signature = device.split(".")
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", browser)
    for part in (browser, stamp, signature):
        for decoded in _decodings(part):
            for secret in secrets_in_clear:
                assert secret not in decoded, (part, secret)
    # The database holds a digest of the id, never the id itself.
    raw_id = signed_in.split(".")[0]
    with site.cs.sql.reading() as cursor:
        stored = cursor.execute(f"SELECT * FROM {session_store.TABLE}").fetchall()
    assert stored
    assert not any(raw_id in str(value) for row in stored for value in row)
    assert site.row(signed_in) is not None
    # A signed-out visitor leaves no row at all.
    assert site.row(anonymous) is None


def altered(text: str) -> str:
    """``text`` with its last two characters changed: to "AA", or to "BB" where they were
    "AA" already (a signature ends in "AA" about once in a thousand, and the "altered" cookie
    was then the real one: the test failed once so)."""
    return text[:-2] + ("BB" if text.endswith("AA") else "AA")


def test_a_forged_or_altered_cookie_is_no_session(site, proposal_id):
    ava = site.browser(AVA)
    cookie, token = stolen(ava)
    raw_id, signature = cookie.split(".")
    before = site.state(proposal_id)
    for forged in (
        raw_id,  # no signature
        f"{raw_id}.{altered(signature)}",  # a broken signature
        f"{altered(raw_id)}.{signature}",  # another id under this signature
        id_digest(raw_id),  # the stored digest is no key
        "x" * 5000,
    ):
        attacker = site.replay(forged)
        assert attacker.get("/").status_code == 303
        answer = attacker.post(f"/proposals/{proposal_id}/decline", {"csrf_token": token})
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/sign-in?next=%2Fproposals%2F{proposal_id}"
    assert site.state(proposal_id) == before


# -- fixation ---------------------------------------------------------------------------------


def test_an_id_planted_before_sign_in_never_becomes_a_session(site, proposal_id):
    attacker = site.browser()
    planted_token = attacker.csrf("/sign-in")
    planted = cookie_of(attacker)

    victim = site.browser()
    # e.g. set from a sibling subdomain; the same cookie the server would set
    victim.client.cookies.set(COOKIE, planted, domain="testserver.local")
    signed = victim.post(
        "/sign-in",
        {"email": AVA, "password": site.passwords[AVA], "csrf_token": planted_token},
    )
    assert signed.status_code == 303
    assert victim.get("/").status_code == 200
    assert cookie_of(victim) != planted  # a new id at sign-in
    assert_signed_out(site, planted, planted_token, proposal_id)


def test_choosing_a_club_also_changes_the_id(site, proposal_id):
    maple = site.cs.store.get(Organization.create_id("maple"), Organization)
    maple.add_member(AVA, "Ava Lindqvist", "manager", [Permission.REFUND_ORDERS])
    site.cs.store.save(maple)
    attacker = site.browser()
    planted_token = attacker.csrf("/sign-in")
    planted = cookie_of(attacker)

    victim = site.browser()
    victim.client.cookies.set(COOKIE, planted, domain="testserver.local")
    choose = victim.post(
        "/sign-in",
        {"email": AVA, "password": site.passwords[AVA], "csrf_token": planted_token},
    )
    assert "Choose a club" in choose.text
    choosing = cookie_of(victim)
    assert choosing != planted
    choosing_token = CSRF.search(choose.text).group(1)
    assert choosing_token != planted_token
    # The planted id cannot make the choice...
    hijack = site.replay(planted).post(
        "/sign-in/club", {"club": "granite", "csrf_token": planted_token}
    )
    assert hijack.headers["location"] == "/sign-in"
    # ...the victim can, and gets yet another id.
    chosen = victim.post("/sign-in/club", {"club": "granite", "csrf_token": choosing_token})
    assert chosen.status_code == 303
    assert victim.get("/").status_code == 200
    assert cookie_of(victim) not in (planted, choosing)
    # The half-way id is spent: replaying it cannot choose again.
    replay = site.replay(choosing)
    again = replay.post("/sign-in/club", {"club": "granite", "csrf_token": choosing_token})
    assert again.status_code == 403  # its token died with it: "this form expired"
    assert replay.get("/").status_code == 303
    assert_signed_out(site, planted, planted_token, proposal_id)


# -- limits ---------------------------------------------------------------------------------


def test_the_idle_limit_ends_a_session(site, proposal_id, clock: FakeClock):
    ava = site.browser(AVA)
    cookie, token = stolen(ava)
    clock.advance(seconds=IDLE_SECONDS - 60)
    assert ava.get("/").status_code == 200  # still within the idle limit: it slides
    clock.advance(seconds=IDLE_SECONDS - 60)
    assert ava.get("/").status_code == 200
    clock.advance(seconds=IDLE_SECONDS + 1)
    assert_signed_out(site, cookie, token, proposal_id)
    assert ava.get("/").status_code == 303


def test_the_absolute_limit_ends_a_busy_session(site, proposal_id, clock: FakeClock):
    ava = site.browser(AVA)
    cookie, token = stolen(ava)
    elapsed = 0
    while elapsed + 3600 < ABSOLUTE_SECONDS:
        clock.advance(seconds=3600)
        elapsed += 3600
        assert ava.get("/").status_code == 200, elapsed
    clock.advance(seconds=ABSOLUTE_SECONDS - elapsed + 1)
    assert_signed_out(site, cookie, token, proposal_id)


def test_a_page_request_reads_one_row_and_writes_nothing(site, monkeypatch, clock: FakeClock):
    ava = site.browser(AVA)
    calls: list[str] = []
    real_find, real_write = session_store.find, session_store.write
    monkeypatch.setattr(
        session_store, "find", lambda *a, **k: calls.append("find") or real_find(*a, **k)
    )
    monkeypatch.setattr(
        session_store, "write", lambda *a, **k: calls.append("write") or real_write(*a, **k)
    )
    for _ in range(3):
        assert ava.get("/").status_code == 200
    assert calls == ["find"] * 3
    clock.advance(seconds=61)  # the last-seen time is refreshed at most once a minute
    assert ava.get("/").status_code == 200
    assert calls[3:] == ["find", "write"]


def test_a_broken_session_store_is_an_error_page_without_details(site, monkeypatch):
    ava = site.browser(AVA)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("SELECT id_sha256 FROM web_sessions failed at /srv/countersign.db")

    monkeypatch.setattr(session_store, "find", broken)
    page = ava.get("/")
    assert page.status_code == 500
    assert "Reference" in page.text or "reference" in page.text
    for leak in ("SELECT", "web_sessions", "/srv/", "Traceback", "RuntimeError"):
        assert leak not in page.text
    assert "set-cookie" not in page.headers  # the browser's session is left alone
    monkeypatch.undo()
    assert ava.get("/").status_code == 200
