"""The red-team regression suite (issue 10): shared fixtures and helpers.

An outside attack run against the JSON API and the browser pages, from 127.0.0.1, found the
cases these tests keep. Each test is the attacker's scenario: it asserts the safe answer the
attacker sees AND that nothing changed (``assert_nothing_changed``: the stored events, the
payment sandbox and the API's service log are as before, no table is gone, and ``audit verify``
holds). Like the rest of the suite, every test runs on SQLite and on PostgreSQL (``cs``).

Fixtures:

* ``app``: one seeded countersign behind one ASGI application, the JSON API and the pages,
  with the demo people's passwords (``ava-demo-password`` for ava@granite.example ...).
* ``api``: a TestClient for ``/api/v1`` with a token for every permission, acting as Ava
  (granite) and as Mia (maple): ``api.get(path, as_=MIA)``. Ben is granite staff without any
  permission, so no token can act as him (``issue_token`` refuses).
* ``web``: browsers. ``web.browser()`` is a fresh anonymous one (its own cookie jar and
  client address); ``web.member(AVA)`` is Ava's signed-in browser, kept for the test, with
  its session's CSRF token in ``csrf_token``.
"""

from __future__ import annotations

import itertools
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.passwords import demo_password
from countersign.infrastructure.demo.seed import USERS
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.http.problems import PROBLEM_MEDIA_TYPE
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.identity import passwords
from countersign.infrastructure.identity.passwords import set_password
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.identity.tokens import ensure_token_tables, issue_token
from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx2 import Response

from tests.conftest import AVA, MIA, REFUND, TO_CARD, count_events, events_table

ALL_PERMISSIONS = [str(p) for p in Permission]
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
#: What a problem document or an error page must never show.
LEAKS = (
    "Traceback",
    'File "',
    "SELECT ",
    "INSERT ",
    "UPDATE ",
    "stored_events",
    "countersign_events",
    ".py",
    "/work/",
    "sqlite",
    "psycopg",
    "Exception",
    "Error:",
)
_addresses = itertools.count(1)


# -- nothing changed --------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What an attack must leave as it found it."""

    events: int
    refunds: tuple[tuple[str, int, str], ...]
    service_actions: int
    tables: frozenset[str]


def tables(cs: Countersign) -> frozenset[str]:
    with cs.sql.transaction() as cursor:
        if cs.sql.is_postgres:
            rows = cursor.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchall()
        else:
            rows = cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return frozenset(str(row[0]) for row in rows)


def snapshot(cs: Countersign) -> Snapshot:
    ensure_token_tables(cs)
    with cs.sql.transaction() as cursor:
        found = cursor.execute("SELECT COUNT(*) FROM api_service_actions").fetchone()
    return Snapshot(
        events=count_events(cs),
        refunds=tuple(
            (str(r["idempotency_key"]), int(str(r["requests"])), str(r["status"]))
            for r in cs.sandbox.refunds()
        ),
        service_actions=int(found[0]) if found else 0,
        tables=tables(cs),
    )


def audit_verify(cs: Countersign) -> dict[str, Any]:
    """``countersign audit verify``: the audit trail caught up, then every link checked."""
    for runner in cs.projection_runners(["audit_trail"]):
        runner.catch_up()
    return verify(cs.app, cs.sql).to_json()


def assert_nothing_changed(cs: Countersign, before: Snapshot) -> None:
    """No event stored, no refund requested, no service action logged, no table dropped (reads
    may create projection tables), and every hash-chain link of every proposal holds."""
    after = snapshot(cs)
    assert (after.events, after.refunds, after.service_actions) == (
        before.events,
        before.refunds,
        before.service_actions,
    )
    assert before.tables <= after.tables, sorted(before.tables - after.tables)
    assert events_table(cs) in after.tables
    report = audit_verify(cs)
    assert report["ok"], report


# -- answers ----------------------------------------------------------------------------------


def assert_no_leak(text: str) -> None:
    for leak in LEAKS:
        assert leak not in text, leak


def problem(response: Response) -> tuple[int, dict[str, Any]]:
    """A problem document's status and body without its correlation id, after checking the
    format and that it leaks nothing (no trace, SQL, path or library name)."""
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE, response.text[:300]
    body = response.json()
    assert {"type", "title", "status", "detail", "correlation_id"} <= set(body)
    assert body["status"] == response.status_code
    assert body["correlation_id"] == response.headers["x-correlation-id"]
    assert_no_leak(response.text)
    return response.status_code, {k: v for k, v in body.items() if k != "correlation_id"}


def header_shape(response: Response) -> list[tuple[str, str]]:
    """The headers, sorted, with what differs per request masked: the correlation id and the
    session cookie's signed value (its name and attributes stay)."""
    shape = []
    for name, value in response.headers.multi_items():
        if name == "x-correlation-id":
            value = re.sub(r"[0-9a-f]", "x", value)
        elif name == "set-cookie":
            cookie, _, attributes = value.partition(";")
            value = cookie.split("=", 1)[0] + "=<signed>;" + attributes
        shape.append((name, value))
    return sorted(shape)


# -- timing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedTiming:
    """Two kinds of request timed in adjacent pairs: ``gap``, the median of each pair's
    difference (first minus second), and ``typical``, the second kind's median."""

    gap: float
    typical: float

    def __str__(self) -> str:
        return f"median gap {self.gap * 1000:+.1f} ms on a typical {self.typical * 1000:.1f} ms"


def paired_timing(
    first: Callable[[int], object], second: Callable[[int], object], rounds: int
) -> PairedTiming:
    """Time ``first(i)`` and ``second(i)`` back to back, alternating which goes first, and
    compare them pair by pair. Other work on the machine slows both halves of a pair alike
    or spikes one of them at random, so the median of the differences stays near zero for
    requests that cost the same, and shows a leak that costs every request of one kind.
    (Comparing each kind's quantile on its own did not hold under load: with several routes
    of different cost in the mix, one spike moved a quantile from one route's times to the
    next, and a PostgreSQL run once read 20.5 ms against 13.1 ms for requests that measured
    the same when paired.)"""
    gaps: list[float] = []
    seconds: list[float] = []
    for i in range(rounds):
        took = [0.0, 0.0]
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            started = time.perf_counter()
            (first, second)[which](i)
            took[which] = time.perf_counter() - started
        gaps.append(took[0] - took[1])
        seconds.append(took[1])
    return PairedTiming(statistics.median(gaps), statistics.median(seconds))


def assert_similar_timing(
    first: Callable[[int], object],
    second: Callable[[int], object],
    rounds: int,
    *,
    share: float = 0.25,
    slack: float = 0.003,
    attempts: int = 3,
) -> None:
    """``first`` and ``second`` (``paired_timing``) differ by less than ``share`` of a typical
    request, or ``slack``, in at least one of ``attempts`` measurements.

    A leak costs every request of its kind, so it shows in every measurement; other work on
    the machine spikes one measurement at random. So one that finds a gap is taken again, and
    only a gap found every time fails. (Seen: sign-ins that measure within 0.3 ms of each other
    on a quiet machine, and within 3.8 ms on a typical 20-24 ms beside three busy loops, once
    measured +4.5 ms on a typical 14.0 ms while four suites shared the two cores. A 4 ms sleep
    on one kind's path still fails all three.)"""
    timings: list[PairedTiming] = []
    for _ in range(attempts):
        timing = paired_timing(first, second, rounds)
        if abs(timing.gap) < max(slack, share * timing.typical):
            return
        timings.append(timing)
    raise AssertionError("; ".join(str(timing) for timing in timings))


# -- the target -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def demo_password_hashes() -> dict[str, str]:
    """The demo people's Argon2id hashes, made once: each costs about a tenth of a second."""
    return {user.email: passwords._hasher.hash(demo_password(user.email)) for user in USERS}


@pytest.fixture
def app(cs: Countersign, seeded: dict[str, Any], demo_password_hashes: dict[str, str]) -> FastAPI:
    """The JSON API and the pages over one seeded countersign (plain-HTTP cookies)."""
    ensure_tables(cs.sql, "user_passwords", passwords._SCHEMA)
    with cs.sql.transaction() as cursor:
        for email, password_hash in demo_password_hashes.items():
            passwords._store_in(cursor, email, password_hash, cs.clock.now().isoformat())
    application = create_app(cs)
    mount_pages(application, cs, secure_cookies=False)
    return application


@dataclass
class Api:
    """The JSON API as an attacker's script sees it: one client, tokens by member."""

    cs: Countersign
    seeded: dict[str, Any]
    client: TestClient
    tokens: dict[str, str]

    def headers(self, as_: str | None) -> dict[str, str]:
        """``as_`` is a member with a token (AVA, MIA), a raw token, or None (no token)."""
        if as_ is None:
            return {}
        return {"Authorization": f"Bearer {self.tokens.get(as_, as_)}"}

    def get(self, path: str, as_: str | None = AVA, **params: Any) -> Response:
        return self.client.get(path, headers=self.headers(as_), params=params or None)

    def post(self, path: str, body: Any = None, as_: str | None = AVA) -> Response:
        if body is None:
            return self.client.post(path, headers=self.headers(as_))
        return self.client.post(path, headers=self.headers(as_), json=body)

    def propose(self, order: str = "refund-ok", as_: str = AVA) -> str:
        """A pending card refund of the order, proposed through the API."""
        body = {
            "operation": REFUND,
            "resource_id": self.seeded["orders"][order],
            "request": TO_CARD,
        }
        created = self.post("/api/v1/proposals", body, as_=as_)
        assert created.status_code == 201, created.text
        return str(created.json()["proposal_id"])


@pytest.fixture
def api(app: FastAPI, cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    tokens = {
        AVA: issue_token(
            cs, "granite", "ava-bot", ALL_PERMISSIONS, issued_by=AVA, kind="approver"
        ).token,
        MIA: issue_token(
            cs, "maple", "mia-bot", ALL_PERMISSIONS, issued_by=MIA, kind="approver"
        ).token,
    }
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Api(cs=cs, seeded=seeded, client=client, tokens=tokens)


@dataclass
class Browser:
    """One browser: a cookie jar, a client address, and its session's CSRF token."""

    client: TestClient
    email: str | None = None
    csrf_token: str = ""

    @property
    def cookie(self) -> str | None:
        return self.client.cookies.get("countersign_session")

    def get(self, path: str, **kwargs: Any) -> Response:
        return self.client.get(path, **kwargs)

    def post(self, path: str, data: dict[str, str] | None = None, **kwargs: Any) -> Response:
        return self.client.post(path, data=data or {}, **kwargs)

    def page_token(self, path: str = "/sign-in") -> str:
        """The CSRF token the page's forms carry (and remember it)."""
        page = self.get(path)
        found = CSRF_FIELD.search(page.text)
        assert found, f"no CSRF token on {path} ({page.status_code})"
        self.csrf_token = found.group(1)
        return self.csrf_token

    def submit(self, path: str, data: dict[str, str]) -> Response:
        """Post a form the way the page would: with the session's token."""
        return self.post(path, {**data, "csrf_token": self.csrf_token})

    def sign_in(self, email: str, password: str, next_path: str | None = None) -> Response:
        data = {"email": email, "password": password, "csrf_token": self.page_token()}
        if next_path is not None:
            data["next"] = next_path
        answer = self.post("/sign-in", data)
        if answer.status_code == 303:
            self.email = email
        return answer


@dataclass
class Web:
    cs: Countersign
    seeded: dict[str, Any]
    app: FastAPI
    passwords: dict[str, str]
    members: dict[str, Browser] = field(default_factory=dict)

    def browser(self, **headers: str) -> Browser:
        """A new anonymous browser with an address of its own (sign-in throttling counts per
        address)."""
        address = f"198.51.100.{next(_addresses) % 250 + 1}"
        client = TestClient(
            self.app,
            follow_redirects=False,
            raise_server_exceptions=False,
            client=(address, 50000),
            headers=headers,
        )
        return Browser(client)

    def sign_in(self, email: str) -> Browser:
        """A new browser, signed in as ``email``, holding its session's CSRF token."""
        browser = self.browser()
        answer = browser.sign_in(email, self.passwords[email])
        assert answer.status_code == 303, answer.text[:500]
        browser.page_token("/")
        return browser

    def member(self, email: str) -> Browser:
        """``email``'s signed-in browser for this test (signed in on first use)."""
        if email not in self.members:
            self.members[email] = self.sign_in(email)
        return self.members[email]

    def propose(self, order: str = "refund-ok", actor: str = AVA, org: str = "granite") -> str:
        """A pending refund, proposed through the application (as the assistant would)."""
        destination = "account_credit" if order == "account-credit" else TO_CARD["destination"]
        return self.cs.proposals.propose(
            organization=org,
            actor=actor,
            operation=REFUND,
            resource_id=self.seeded["orders"][order],
            request={**TO_CARD, "destination": destination},
        ).proposal_id

    def add_member(
        self, email: str, name: str, permissions: list[Permission], clubs: tuple[str, ...]
    ) -> str:
        """A new person in ``clubs`` with a password of their own (one Argon2id hash)."""
        for slug in clubs:
            club = self.cs.store.get(Organization.create_id(slug), Organization)
            club.add_member(email, name, "manager", permissions)
            self.cs.store.save(club)
        password = f"{email.split('@', 1)[0]}-long-enough-password"
        set_password(self.cs, email, password)
        self.passwords[email] = password
        return password

    def status(self, proposal_id: str) -> str:
        return str(self.cs.store.get(UUID(proposal_id), Proposal).status)


@pytest.fixture
def web(app: FastAPI, cs: Countersign, seeded: dict[str, Any]) -> Web:
    return Web(
        cs=cs,
        seeded=seeded,
        app=app,
        passwords={user.email: demo_password(user.email) for user in USERS},
    )


@pytest.fixture
def slow_model(cs: Countersign) -> Iterator[Any]:
    """The assistants' model, scripted behind the real openai client: a message holding FLOOD
    waits until ``release`` is set (``tests/support/slow_model.py``)."""
    from tests.support.slow_model import answering

    with answering(cs.assistant) as endpoint:
        yield endpoint
