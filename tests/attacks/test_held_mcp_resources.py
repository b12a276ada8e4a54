"""Held: one club's MCP traffic never pushes another club's proposals out of its list.

``resources/list`` shows a caller the proposals it made through this server process. They
were remembered in one list for the whole process, capped at RECENT * 20 entries: an agent of
one club proposing within its own limit emptied every other club's list. Each club now has its
own callers, each with their latest RECENT proposals, and at most CALLERS_A_CLUB callers.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from countersign.application.authorization import Caller, Credential
from countersign.domain.club.organization import Organization, Permission
from countersign.infrastructure.entrypoints.mcp import server
from countersign.infrastructure.entrypoints.mcp.server import CountersignTools

from tests.conftest import AVA, MIA

ZOE = "zoe@granite.example"
REFUND_TOOL = "propose_order_refund_missing_discount"
REFUND_ARGS = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}


class _Context:
    """What the MCP handlers read of a request's context: the session's client parameters."""

    class session:
        client_params = None

    def __init__(self, caller: Caller) -> None:
        self.caller = caller


def _agent(email: str, club: str) -> _Context:
    return _Context(Caller(email, club, None, Credential.AGENT_TOKEN, f"{club}-agent"))


def _listed(tools: CountersignTools, ctx: _Context) -> list[str]:
    found = anyio.run(tools.list_resources, ctx, None)
    return [str(resource.uri).rsplit("/", 1)[-1] for resource in found.resources]


def _propose(tools: CountersignTools, ctx: _Context, order: str) -> str:
    made = tools._call(ctx, REFUND_TOOL, {**REFUND_ARGS, "resource_id": order})
    assert not made.is_error, made
    return _listed(tools, ctx)[0]  # the newest first


def test_one_clubs_proposals_leave_another_clubs_list_alone(
    cs: Any, seeded: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "RECENT", 5)  # the process-wide list held 100 then
    tools = CountersignTools(cs, lambda ctx: ctx.caller)
    maple, granite = _agent(MIA, "maple"), _agent(AVA, "granite")
    mias = _propose(tools, maple, seeded["orders"]["maple-refund"])

    made = []
    for i in range(server.RECENT * 20 + 1):
        if i and i % 30 == 0:
            clock.advance(seconds=61)  # within granite's own proposal limit
        made.append(_propose(tools, granite, seeded["orders"]["refund-ok"]))

    assert _listed(tools, maple) == [mias]
    assert _listed(tools, granite) == list(reversed(made[-server.RECENT :]))  # newest first


def test_a_club_keeps_its_most_recently_active_callers(
    cs: Any, seeded: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "CALLERS_A_CLUB", 2)
    tools = CountersignTools(cs, lambda ctx: ctx.caller)
    maple = _agent(MIA, "maple")
    mias = _propose(tools, maple, seeded["orders"]["maple-refund"])
    club = cs.store.get(Organization.create_id("granite"), Organization)
    club.add_member(ZOE, "Zoe", "manager", [Permission.REFUND_ORDERS])
    cs.store.save(club)
    first, second, third = (
        _agent(AVA, "granite"),
        _agent("noah@granite.example", "granite"),
        _agent(ZOE, "granite"),
    )
    # Each on an order of their own: a proposal another member made is held for people.
    orders = seeded["orders"]
    _propose(tools, first, orders["refund-ok"])
    _propose(tools, second, orders["refund-two-approvers"])
    _propose(tools, first, orders["refund-ok"])  # active again: the second is the oldest now
    _propose(tools, third, orders["refund-lost-response"])
    assert len(_listed(tools, first)) == 2
    assert _listed(tools, second) == []
    assert len(_listed(tools, third)) == 1
    assert _listed(tools, maple) == [mias]
