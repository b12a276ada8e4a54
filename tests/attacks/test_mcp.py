"""Attacks on the MCP server (issue 15): an agent, or whoever holds its token, tries to approve,
to break the server with what it sends, to lie about itself, and to reach another club.

Every attack goes through the MCP SDK's own client over streamable HTTP with a real API token
(Ava's, every permission). Each asserts what the agent sees, and that nothing changed: no
event, no refund, no table dropped, the hash chains whole (``assert_nothing_changed``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest
from countersign.application.authorization import Caller
from countersign.application.freezing import ORIGIN_TEXT_LENGTH
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token

from tests.attacks.conftest import assert_no_leak, assert_nothing_changed, snapshot
from tests.conftest import AVA, MIA, REFUND, TO_CARD
from tests.mcp_client import error_of, over_http, structured
from tests.servers import serving

if TYPE_CHECKING:  # the MCP SDK and countersign's MCP server are imported where they are
    # used: collecting this module imports neither (docs/testing.md)
    from mcp import ClientSession

ALL = ["orders.refund", "email_broadcasts.prepare", "email_broadcasts.send", "roster.manage"]
REFUND_TOOL = "propose_order_refund_missing_discount"
DRAFT_TOOL = "propose_email_broadcast_apply_draft"


@pytest.fixture
def agent(cs: Countersign, seeded: dict[str, Any]):
    """The server in a thread, Ava's token, and one pending refund of hers to aim at."""
    from countersign.infrastructure.entrypoints.mcp import http_app

    token = issue_token(cs, "granite", "agent", ALL, issued_by=AVA, kind="agent").token
    pending = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    with serving(http_app(cs), lifespan="on") as running:
        yield running.base, token, pending


def test_tool_names_and_arguments_crafted_to_approve_reach_nothing(cs, seeded, agent):
    base, token, pending = agent
    order = seeded["orders"]["refund-ok"]
    names = [
        "approve",
        "APPROVE",
        "approve_proposal",
        "decline",
        "execute",
        "revise",
        "cs.access.approve",
        "proposals/approve",
        f"{REFUND_TOOL}/approve",
        f"{REFUND_TOOL}\napprove",
        "proposal_status\x00approve",
        " proposal_status",
        "propose_",
        "orders_" + "a" * 5000,
    ]
    before = snapshot(cs)

    async def attacking(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for name in names:
            seen[name] = error_of(await session.call_tool(name, {"proposal_id": pending}))
        seen["extra"] = error_of(
            await session.call_tool(
                "proposal_status", {"proposal_id": pending, "action": "approve"}
            )
        )
        seen["smuggled"] = error_of(
            await session.call_tool(
                REFUND_TOOL,
                {"resource_id": order, **TO_CARD, "approve": True, "proposal_id": pending},
            )
        )
        seen["status"] = structured(
            await session.call_tool("proposal_status", {"proposal_id": pending})
        )
        return seen

    seen = over_http(base, token, attacking)

    for name in names:
        assert seen[name]["error"] == "unknown_tool", name
        assert len(seen[name]["message"]) < 100
    assert seen["extra"]["error"] == "invalid_request"
    assert {p["field"] for p in seen["smuggled"]["problems"]} == {"approve", "proposal_id"}
    assert seen["status"]["status"] == "pending"
    assert cs.access.record(pending, AVA)["status"] == "pending"
    assert_nothing_changed(cs, before)


def test_oversize_and_garbage_arguments_are_refused_safely(cs, seeded, agent):
    base, token, _ = agent
    order = seeded["orders"]["refund-ok"]
    deep: dict[str, Any] = {"leagues": ["Monday Night Open"]}
    for _ in range(60):
        deep = {"leagues": deep}
    garbage = {
        "many_keys": {"resource_id": order, **{f"k{i}": i for i in range(3000)}},
        "long_subject": {
            "filters": {"leagues": ["Monday Night Open"]},
            "subject": "S" * 30_000,
            "body": "b",
        },
        "wrong_types": {"filters": {"leagues": "Monday Night Open"}, "subject": 5, "body": None},
        "deep": {"filters": deep, "subject": "s", "body": "b"},
        "null_resource": {"resource_id": None, **TO_CARD},
        "list_resource": {"resource_id": [order], **TO_CARD},
        "control": {"filters": {"leagues": ["Monday\x00Night"]}, "subject": "\x1b[2J", "body": "b"},
    }
    before = snapshot(cs)

    async def attacking(session: ClientSession) -> dict[str, Any]:
        seen = {}
        for label, arguments in garbage.items():
            tool = REFUND_TOOL if "resource_id" in arguments else DRAFT_TOOL
            seen[label] = await session.call_tool(tool, arguments)
        return seen

    seen = over_http(base, token, attacking)

    for label, result in seen.items():
        document = error_of(result)
        assert document["error"] == "invalid_request", (label, document)
        assert len(document["problems"]) <= 20
        assert_no_leak(result.content[0].text)
        assert "S" * 200 not in result.content[0].text
    assert error_of(seen["many_keys"])["more_problems"] > 2900
    assert error_of(seen["null_resource"])["problems"][0]["field"] == "resource_id"

    # A body over the API's limit is refused by the transport before anything parses it.
    async def flooding(session: ClientSession) -> Any:
        return await session.call_tool(DRAFT_TOOL, {"subject": "s", "body": "B" * 200_000})

    with pytest.raises(Exception) as refused:
        over_http(base, token, flooding)
    assert "B" * 100 not in repr(refused.value)
    assert_nothing_changed(cs, before)


def test_a_client_that_names_itself_with_control_characters_is_recorded_cleaned(cs, agent):
    from mcp_types import Implementation

    base, token, _ = agent
    liar = Implementation(
        name="evil\x1b[31m\nclient\u202e\x00" + "A" * 5000,
        version="1.0\r\nX-Injected: yes",
    )

    async def proposing(session: ClientSession) -> str:
        created = structured(
            await session.call_tool(
                DRAFT_TOOL,
                {"filters": {"leagues": ["Monday Night Open"]}, "subject": "Ice", "body": "Hi"},
            )
        )
        return str(created["proposal_id"])

    pid = over_http(base, token, proposing, client=liar)

    origin = cs.access.record(pid, AVA)["origin"]
    assert origin["channel"] == "mcp"
    # Only a name's plain characters are kept (no escape, bracket, colon or line break), at
    # most ORIGIN_TEXT_LENGTH of them.
    assert origin["client"] == ("evil31mclient" + "A" * 5000)[:ORIGIN_TEXT_LENGTH]
    assert origin["client_version"] == "1.0X-Injected yes"
    assert all(
        value.isprintable() and len(value) <= ORIGIN_TEXT_LENGTH for value in origin.values()
    )


def test_another_clubs_ids_answer_exactly_like_unknown_ones(cs, seeded, agent):
    base, token, _ = agent
    maple_order = seeded["orders"]["maple-refund"]
    maple_proposal = cs.access.propose(
        Caller(MIA, "maple"), operation=REFUND, resource_id=maple_order, request=TO_CARD
    ).proposal_id
    unknown = str(uuid.uuid4())
    before = snapshot(cs)

    async def reaching(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for label, order in (
            ("maple", maple_order),
            ("unknown", unknown),
            ("malformed", "' OR 1=1 --"),
            ("path", "../../etc/passwd"),
        ):
            seen[f"read_{label}"] = error_of(
                await session.call_tool("orders_get_order_investigation", {"resource_id": order})
            )
            seen[f"refund_{label}"] = error_of(
                await session.call_tool(REFUND_TOOL, {"resource_id": order, **TO_CARD})
            )
            seen[f"cancel_{label}"] = error_of(
                await session.call_tool(
                    "propose_order_cancel_registration",
                    {"resource_id": order, "destination": "account_credit"},
                )
            )
        for label, pid in (("maple", maple_proposal), ("unknown", unknown)):
            seen[f"status_{label}"] = error_of(
                await session.call_tool("proposal_status", {"proposal_id": pid})
            )
        return seen

    seen = over_http(base, token, reaching)

    assert set(map(str, seen.values())) == {str({"error": "not_found"})}
    assert_nothing_changed(cs, before)
