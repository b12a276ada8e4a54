"""An attack run (hC): nothing bounded how many requests one bearer token had under way. One
agent's token, sending slow reads many at a time, filled the server's worker threads and
held back every other club's requests (measured by ``scripts/measure_in_flight.py``:
another club's read went from about 2 ms to over a second on ``serve``, and to half a second
over ``mcp --http``). Now each token may have ``COUNTERSIGN_REQUESTS_IN_FLIGHT`` (4) under
way at once; the next is answered at once, 429 with Retry-After and what to do, and nothing
of it is done; other tokens, a person's decision among them, are served as before.

The token's requests are held inside the server (at the token's check, which every request
makes first) until the test lets them go: no timing is raced.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import auth, create_app
from countersign.infrastructure.entrypoints.mcp import http_app, transports
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.in_flight import IN_FLIGHT_ENV, in_flight_from_env
from countersign.infrastructure.settings import SettingsError

from tests.conftest import AVA, MIA, REFUND, TO_CARD
from tests.servers import serving

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"},
    },
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


class Held:
    """Holds every check of one token's requests inside the server until ``release``."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.inside = threading.Semaphore(0)
        self.gate = threading.Event()

    def wrap(self, check: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any) -> Any:
            if any(self.token in str(arg) for arg in args):
                self.inside.release()
                self.gate.wait(timeout=60)
            return check(*args)

        return held

    def wait_inside(self, count: int) -> None:
        for _ in range(count):
            assert self.inside.acquire(timeout=30), "a request did not reach the server"


@contextmanager
def flooding(send: Callable[[], httpx.Response], held: Held, count: int) -> Iterator[list[Any]]:
    """``count`` of ``send`` under way at once, held in the server; their answers after."""
    pool = ThreadPoolExecutor(count)
    futures: list[Future[httpx.Response]] = [pool.submit(send) for _ in range(count)]
    try:
        held.wait_inside(count)
        yield futures
    finally:
        held.gate.set()
        pool.shutdown(wait=True)


@pytest.fixture
def tokens(cs: Countersign, seeded: dict[str, Any]) -> dict[str, str]:
    def issued(org: str, name: str, by: str, kind: str) -> str:
        return issue_token(cs, org, name, ["orders.refund"], issued_by=by, kind=kind).token

    return {
        "agent": issued("granite", "flood-bot", AVA, "agent"),
        "person": issued("granite", "ava-desk", AVA, "approver"),
        "maple": issued("maple", "maple-bot", MIA, "agent"),
    }


def test_a_tokens_fifth_request_at_once_is_refused_and_others_are_served(
    cs: Countersign, seeded: dict[str, Any], tokens: dict[str, str], monkeypatch
) -> None:
    monkeypatch.delenv(IN_FLIGHT_ENV, raising=False)
    pending = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    held = Held(tokens["agent"])
    monkeypatch.setattr(auth, "identify", held.wrap(auth.identify))
    agent = {"Authorization": f"Bearer {tokens['agent']}"}
    with serving(create_app(cs)) as running, httpx.Client(base_url=running.base) as client:

        def inbox(headers: dict[str, str] = agent) -> httpx.Response:
            return client.get("/api/v1/inbox", params={"page_size": 100}, headers=headers)

        with flooding(inbox, held, 4) as under_way:
            refused = inbox()  # answered at once: before the fix it waited with the others
            maple = inbox({"Authorization": f"Bearer {tokens['maple']}"})
            decided = client.post(
                f"/api/v1/proposals/{pending}/approve",
                headers={"Authorization": f"Bearer {tokens['person']}"},
            )
        answers = [future.result() for future in under_way]
        after = inbox()

    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    body = refused.json()
    assert body["type"] == "urn:countersign:problem:too-many-requests"
    assert "4 requests under way" in body["detail"]
    assert "wait for an answer, then send this again" in body["detail"]
    assert "Traceback" not in refused.text
    assert maple.status_code == 200  # another club's token: served meanwhile
    assert decided.status_code == 200, decided.text  # a person's decision: never held back
    assert decided.json()["status"] == "succeeded"
    assert [answer.status_code for answer in answers] == [200] * 4
    assert after.status_code == 200  # its requests answered, the token is served again


def test_the_bound_is_a_setting_and_a_wrong_value_is_refused(monkeypatch) -> None:
    monkeypatch.setenv(IN_FLIGHT_ENV, "2")
    assert in_flight_from_env() == 2
    for wrong in ("0", "-1", "many"):
        monkeypatch.setenv(IN_FLIGHT_ENV, wrong)
        with pytest.raises(SettingsError, match="positive whole number"):
            in_flight_from_env()


def _session(client: httpx.Client, token: str) -> dict[str, str]:
    headers = {**MCP_ACCEPT, "Authorization": f"Bearer {token}"}
    opened = client.post("/mcp", json=HELLO, headers=headers)
    assert opened.status_code == 200, opened.text
    return {
        **headers,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "Mcp-Protocol-Version": "2025-06-18",
    }


def test_over_mcp_a_tokens_fifth_call_at_once_is_refused_and_others_are_served(
    cs: Countersign, tokens: dict[str, str], monkeypatch
) -> None:
    monkeypatch.delenv(IN_FLIGHT_ENV, raising=False)
    app = http_app(cs)
    with (
        serving(app, lifespan="on") as running,
        httpx.Client(base_url=running.base, timeout=30) as client,
    ):
        theirs, mine = _session(client, tokens["agent"]), _session(client, tokens["maple"])
        held = Held(tokens["agent"])
        monkeypatch.setattr(
            transports.BearerGate, "_identify", held.wrap(transports.BearerGate._identify)
        )
        numbers = iter(range(10, 100))

        def call(headers: dict[str, str] = theirs) -> httpx.Response:
            document = {"jsonrpc": "2.0", "id": next(numbers), "method": "tools/list"}
            return client.post("/mcp", json=document, headers=headers)

        with flooding(call, held, 4) as under_way:
            refused = call()
            maple = call(mine)
        answers = [future.result() for future in under_way]
        after = call()

    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"] == "too_many_requests"
    assert "4 requests under way" in refused.json()["message"]
    assert maple.status_code == 200
    assert [answer.status_code for answer in answers] == [200] * 4
    assert after.status_code == 200


class HeldFirst(Held):
    """Holds the first ``count`` session reads of one browser inside the server; the next
    ones (the refusal's page reads the session too) go through."""

    def __init__(self, token: str, count: int) -> None:
        super().__init__(token)
        self.left = count
        self.lock = threading.Lock()

    def wrap(self, check: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any) -> Any:
            if any(self.token == str(arg) for arg in args):
                with self.lock:
                    hold, self.left = self.left > 0, self.left - 1
                if hold:
                    self.inside.release()
                    self.gate.wait(timeout=60)
            return check(*args)

        return held


@pytest.mark.parametrize(
    ("language", "title", "text"),
    [
        ("en", "Too many pages at once", "Nothing was done; wait for them to open"),
        ("fr", "Trop de pages à la fois", "Rien n&#39;a été fait ; attendez qu&#39;elles"),
    ],
)
def test_a_persons_fifth_page_at_once_is_refused_in_their_language(
    web: Any, monkeypatch, language: str, title: str, text: str
) -> None:
    from countersign.infrastructure.entrypoints.web.sessions import Sessions

    ava, mia = web.member(AVA), web.member(MIA)
    held = HeldFirst(str(ava.cookie), 4)
    monkeypatch.setattr(Sessions, "load", held.wrap(Sessions.load))
    speaks = {"Accept-Language": language}

    with flooding(lambda: ava.get("/", headers=speaks), held, 4) as under_way:
        refused = ava.get("/", headers=speaks)
        other = mia.get("/", headers=speaks)
    answers = [future.result() for future in under_way]
    after = ava.get("/", headers=speaks)

    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    page = " ".join(refused.text.split())
    assert title in page
    assert text in page
    assert "Traceback" not in refused.text
    assert other.status_code == 200  # another person's pages: served meanwhile
    assert [answer.status_code for answer in answers] == [200] * 4
    assert after.status_code == 200
