"""Issue 23, part 3: one token could exhaust the MCP server's sessions, and bindings leaked.

The attack run's maple token opened 10,000 sessions (the server grew to about 490 MB) and
granite's ``initialize`` then got ``503 Too many open sessions``; after 10,050 open-and-DELETE
cycles the oldest binding was evicted and maple used a granite session. Now each token and
each club holds a few sessions at most, idle sessions expire, and a binding lives exactly as
long as its session.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from countersign.infrastructure.identity.tokens import issue_token

from tests.conftest import AVA, MIA
from tests.servers import RunningServer, serving
from tests.support.mcp_requests import initialize

if TYPE_CHECKING:  # countersign's MCP server imports the MCP SDK: the fixture imports it, so
    # collecting this module imports neither (docs/testing.md)
    from countersign.infrastructure.entrypoints.mcp.sessions import SessionLimits

HELLO = initialize("flood")


@cache
def limits() -> SessionLimits:
    """The small limits the server under attack runs with (one object, built on first use)."""
    from countersign.infrastructure.entrypoints.mcp.sessions import SessionLimits

    # Idle for a minute: the SDK's own session manager counts it in real time, and a slow
    # run must not see a session end that the test still uses; the gate's book counts it on
    # the test's clock (``Ticking``), which only the expiry test moves.
    return SessionLimits(per_token=5, per_club=8, idle_seconds=60)


class Ticking:
    """The session book's clock in these tests: it moves only when a test moves it, so a
    session never expires because the machine was slow (it did once, under load, with a
    real one-second idle limit)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Mcp:
    def __init__(self, running: RunningServer, gate: Any, cs: Any) -> None:
        self.base = running.base
        self.gate = gate
        self.clock = Ticking()
        gate.sessions.clock = self.clock
        self.client = httpx2.Client(timeout=10)
        self.cs = cs

    def token(self, org: str, who: str, name: str) -> str:
        return issue_token(self.cs, org, name, ["orders.refund"], issued_by=who, kind="agent").token

    def open(self, token: str) -> httpx2.Response:
        return self.client.post(
            f"{self.base}/mcp",
            json=HELLO,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
            },
        )

    def close(self, token: str, session: str) -> httpx2.Response:
        return self.client.delete(
            f"{self.base}/mcp",
            headers={
                "Authorization": f"Bearer {token}",
                "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-06-18",
            },
        )

    def ping(self, token: str, session: str) -> httpx2.Response:
        return self.client.post(
            f"{self.base}/mcp",
            json={"jsonrpc": "2.0", "id": 7, "method": "ping"},
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-06-18",
            },
        )


@pytest.fixture
def mcp(cs, seeded) -> Iterator[Mcp]:
    from countersign.infrastructure.entrypoints.mcp import http_app

    gate = http_app(cs, limits=limits())
    with serving(gate, lifespan="on") as running:
        served = Mcp(running, gate, cs)
        yield served
        served.client.close()


def test_one_tokens_flood_leaves_another_clubs_initialize_answering(mcp: Mcp) -> None:
    maple = mcp.token("maple", MIA, "maple-agent")
    granite = mcp.token("granite", AVA, "granite-agent")
    answers = [mcp.open(maple) for _ in range(12)]
    statuses = [a.status_code for a in answers]
    assert statuses == [200] * limits().per_token + [429] * (12 - limits().per_token)
    refused = answers[-1]
    assert refused.json()["error"] == "too_many_sessions"
    assert int(refused.headers["retry-after"]) >= 1
    opened = mcp.open(granite)
    assert opened.status_code == 200, opened.text
    assert opened.headers["mcp-session-id"]


def test_a_club_is_limited_across_its_tokens(mcp: Mcp) -> None:
    tokens = [mcp.token("maple", MIA, f"maple-{n}") for n in range(3)]
    opened = sum(mcp.open(t).status_code == 200 for t in tokens for _ in range(5))
    assert opened == limits().per_club
    assert mcp.open(mcp.token("granite", AVA, "granite-agent")).status_code == 200


def test_a_closed_sessions_binding_goes_and_frees_its_place(mcp: Mcp) -> None:
    maple = mcp.token("maple", MIA, "maple-agent")
    granite = mcp.token("granite", AVA, "granite-agent")
    theirs = mcp.open(granite).headers["mcp-session-id"]
    for _ in range(3 * limits().per_token):  # far more cycles than the token may hold at once
        session = mcp.open(maple).headers["mcp-session-id"]
        assert mcp.close(maple, session).status_code == 200
        assert mcp.ping(maple, session).status_code == 404
    assert mcp.gate.sessions.counts() == {_token_id(mcp, granite): 1}
    # Granite's session is still bound to granite, and only to granite.
    assert mcp.ping(maple, theirs).status_code == 404
    assert mcp.close(maple, theirs).status_code == 404
    assert mcp.ping(granite, theirs).status_code == 200


def test_an_idle_session_expires_and_its_binding_with_it(mcp: Mcp) -> None:
    maple = mcp.token("maple", MIA, "maple-agent")
    sessions = [mcp.open(maple).headers["mcp-session-id"] for _ in range(limits().per_token)]
    assert mcp.open(maple).status_code == 429
    kept = sessions[0]
    for _ in range(3):  # one session in use, the others idle past the limit and its margin
        mcp.clock.now += (limits().idle_seconds + 1.5) / 2
        assert mcp.ping(maple, kept).status_code == 200
    for session in sessions[1:]:
        assert mcp.ping(maple, session).status_code == 404
    assert mcp.ping(maple, kept).status_code == 200
    assert len(mcp.gate.sessions) == 1
    assert mcp.open(maple).status_code == 200  # the expired ones freed their places


def _token_id(mcp: Mcp, token: str) -> str:
    return token.split("_")[1]
