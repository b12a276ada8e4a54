"""Held: MCP tool arguments holding text no database stores are the caller's mistake, a tool
error, never an internal error, and nothing is stored.

Each tool the server lists is called over streamable HTTP, by hand-made JSON-RPC (so a lone
surrogate goes out as the escape ``"\\ud800"``, as a client written in another language sends
it), with each of its string arguments holding a NUL, a lone surrogate, or either inside
text (``tests/attacks/test_unstorable_text.py`` does the same for the API and the pages). The
SDK's own JSON reader refuses a message holding a lone surrogate (JSON-RPC's parse error,
-32700); a NUL reaches the server, whose one entry for tool calls refuses it as any invalid
argument is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token

from tests.attacks.conftest import LEAKS, assert_nothing_changed, snapshot
from tests.conftest import AVA, TO_CARD
from tests.servers import serving
from tests.support.mcp_requests import PROTOCOL, initialize

ALL = ["orders.refund", "email_broadcasts.prepare", "email_broadcasts.send", "roster.manage"]
VALUES = {"nul": '"\\u0000"', "nul inside": '"a\\u0000b"', "lone surrogate": '"\\ud800"',
          "surrogate inside": '"a\\udc00b"'}  # fmt: skip
PLACEHOLDER = "@@UNSTORABLE@@"


class Agent:
    """One MCP session over streamable HTTP, posted by hand."""

    def __init__(self, base: str, token: str) -> None:
        self.url = f"{base}/mcp"
        self.client = httpx2.Client(timeout=30)
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        opened = self.client.post(self.url, json=initialize("agent"), headers=self.headers)
        assert opened.status_code == 200, opened.text
        self.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        self.headers["Mcp-Protocol-Version"] = PROTOCOL
        self.post('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def post(self, raw: str) -> httpx2.Response:
        return self.client.post(self.url, content=raw.encode(), headers=self.headers)

    def rpc(self, raw: str) -> dict[str, Any]:
        answer = self.post(raw)
        assert answer.status_code in (200, 400), answer.text[:300]
        text = answer.text
        if "text/event-stream" in answer.headers.get("content-type", ""):
            text = next(
                line[len("data:") :] for line in text.splitlines() if line.startswith("data:")
            )
        document: dict[str, Any] = json.loads(text)
        return document


@pytest.fixture
def agent(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Agent]:
    from countersign.infrastructure.entrypoints.mcp import http_app

    token = issue_token(cs, "granite", "agent", ALL, issued_by=AVA, kind="agent").token
    with serving(http_app(cs), lifespan="on") as running:
        session = Agent(running.base, token)
        yield session
        session.client.close()


def _call(name: str, arguments: dict[str, Any], key: str, literal: str) -> str:
    document = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": name, "arguments": {**arguments, key: PLACEHOLDER}}}  # fmt: skip
    return json.dumps(document).replace(json.dumps(PLACEHOLDER), literal)


def _arguments(tool: dict[str, Any], seeded: dict[str, Any], pending: str) -> dict[str, Any]:
    """Arguments a call of ``tool`` would be taken with: every string property given."""
    known = {"resource_id": seeded["orders"]["refund-ok"], "proposal_id": pending, **TO_CARD}
    properties = tool["inputSchema"].get("properties", {})
    return {key: known.get(key, "x") for key in properties}


def test_every_tools_string_arguments_refuse_unstorable_text(
    cs: Countersign, seeded: dict[str, Any], agent: Agent
) -> None:
    pending = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation="order.refund_missing_discount",
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    tools = agent.rpc('{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')["result"]["tools"]
    assert len(tools) > 5
    before = snapshot(cs)
    wrong: list[str] = []
    for tool in tools:
        arguments = _arguments(tool, seeded, pending)
        for key in [*arguments, "unknown"]:
            for label, literal in VALUES.items():
                answer = agent.rpc(_call(tool["name"], arguments, key, literal))
                where = f"{tool['name']} {key} {label}"
                if answer.get("error", {}).get("code") == -32700 and "surrogate" in label:
                    continue  # the SDK's JSON reader refuses the message: a parse error
                result = answer.get("result")
                if result is None or not result.get("isError"):
                    wrong.append(f"{where}: {str(answer)[:200]}")
                    continue
                text = result["content"][0]["text"]
                if "invalid_request" not in text or any(leak in text for leak in LEAKS):
                    wrong.append(f"{where}: {text[:200]}")
    assert not wrong, "\n".join(wrong)
    assert_nothing_changed(cs, before)
