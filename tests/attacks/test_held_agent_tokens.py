"""The attack issue 22 reports, kept as a regression test: an agent's token crosses the line.

An attack run against 417270c gave an agent the token ``countersign mcp --http`` takes. The
agent proposed a refund through MCP, then called ``POST /api/v1/proposals/{id}/approve`` with
the same token: the answer was ``executed``, and the sandbox refunded $48. The same token also
approved a proposal Noah had made. Now the token is an agent token: the approvals answer 403
``agent-cannot-decide``, and nothing changed. A token that can approve cannot be handed to
MCP at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from countersign.application.authorization import Caller
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http.app import create_app

from tests.attacks.conftest import assert_nothing_changed, snapshot
from tests.conftest import AVA, REFUND, TO_CARD
from tests.mcp_client import over_http, structured
from tests.servers import serving

if TYPE_CHECKING:  # the MCP SDK is imported by the client that runs: collecting this module
    # imports neither it nor countersign's MCP server (docs/testing.md)
    from mcp import ClientSession

NOAH = "noah@granite.example"


@pytest.fixture
def served(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Any]:
    from countersign.infrastructure.entrypoints.mcp import http_app

    with serving(create_app(cs), lifespan="on") as api, serving(http_app(cs), lifespan="on") as mcp:
        yield api.base, mcp.base


def _issue(database_url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """A token as an operator issues it, with the command line's defaults."""
    args = ["--database", database_url, "tokens", "issue", "--org", "granite", "--as", AVA]
    args += ["--permissions", "orders.refund", "--json", *extra]
    assert main(args) == 0
    return str(json.loads(capsys.readouterr().out)["token"])


def test_an_agent_proposes_through_mcp_then_cannot_approve_with_the_same_token(
    cs, seeded, served, database_url, capsys
):
    api, mcp = served
    token = _issue(database_url, capsys, "--name", "refund-agent")  # the default: an agent token
    order = seeded["orders"]["refund-ok"]

    async def proposing(session: ClientSession) -> dict[str, Any]:
        return structured(
            await session.call_tool(
                "propose_order_refund_missing_discount", {"resource_id": order, **TO_CARD}
            )
        )

    own = over_http(mcp, token, proposing)["proposal_id"]
    noahs = cs.access.propose(
        Caller(NOAH, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-declined"],
        request=TO_CARD,
    ).proposal_id
    before = snapshot(cs)

    for proposal_id in (own, noahs):
        answer = httpx2.post(
            f"{api}/api/v1/proposals/{proposal_id}/approve",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert answer.status_code == 403, answer.text
        assert answer.json()["type"] == "urn:countersign:problem:agent-cannot-decide"
    assert_nothing_changed(cs, before)
    assert cs.sandbox.refunds() == []


def test_a_token_that_can_approve_cannot_be_handed_to_mcp(cs, seeded, served, database_url, capsys):
    _, mcp = served
    token = _issue(database_url, capsys, "--name", "billing", "--approver")
    before = snapshot(cs)
    with pytest.raises(Exception) as refused:
        over_http(mcp, token, proposing_nothing)
    assert "Server returned an error response" in repr(refused.value)
    assert_nothing_changed(cs, before)


async def proposing_nothing(session: ClientSession) -> None:
    await session.list_tools()
