"""A requester barred since a proposal was frozen, as the inbox, the API, MCP and the command
line tell it (test_policy_barred.py tells the approve path and the review page).

The inbox's approval count leaves out the requester's earlier approval, given under the
frozen rule, before the next approval records it as lapsed, as the card and the review page
already do, reading the club once for the page, not once per card. The card (API, ``show``)
and MCP's ``proposal_status`` tell the requester, in their language, that they may not
approve it, as the review page does. Granite's seed: discount refunds above $100 need two
managers (Ava, who proposes, and Noah).
"""

from __future__ import annotations

import html
from typing import Any
from uuid import UUID

import anyio
import pytest
from countersign.application.authorization import Caller
from countersign.domain.club.organization import Organization
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND
from tests.test_governance_cli import _propose, cli, orders, row, run  # noqa: F401 (fixtures)
from tests.test_web_pages import Web, web_for

NOAH = "noah@granite.example"

BARRED = {
    "en": (
        "You requested this proposal, and the club's policy asks another manager to approve "
        "it. You may still decline it."
    ),
    "fr": (
        "Vous avez demandé cette proposition, et la règle du club demande qu'un autre "
        "gestionnaire l'approuve. Vous pouvez encore la refuser."
    ),
}
COUNT = {
    "en": ("1 of 2 approvals", "0 of 2 approvals"),
    "fr": ("Approbations : 1 sur 2", "Approbations : 0 sur 2"),
}


def _bar_the_requester(cs: Countersign) -> None:
    """Refunds above $100 still need two approvals, and no longer the requester's."""
    cs.policies.set("granite", REFUND, 2, requester_may_approve=False, by=Caller(NOAH, "granite"))


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def _read(page: Any) -> str:
    return html.unescape(page.text).replace("\N{NO-BREAK SPACE}", " ")


def _inbox_card(inbox: str, proposal_id: str) -> str:
    card = inbox[inbox.index(f'href="/proposals/{proposal_id}"') :]
    return card[: card.index("</a>")]


def _bearer(cs: Countersign, email: str) -> dict[str, str]:
    token = issue_token(
        cs, "granite", f"{email[:3]}-app", ["orders.refund"], issued_by=email, kind="approver"
    )
    return {"Authorization": f"Bearer {token.token}"}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


# -- the inbox's approval count -----------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_inbox_counts_the_requesters_earlier_approval_out(web, language):
    """Noah's inbox said 1 of 2 until his own approval recorded Ava's as lapsed; his approval
    will be the first of two that count."""
    cs = web.cs
    proposal_id = web.propose("refund-two-approvers")  # Ava's
    cs.proposals.approve(proposal_id, AVA)
    noah = web.browser(NOAH)
    noah.form("/language", {"lang": language, "next": "/"})
    before, after = COUNT[language]
    assert before in _inbox_card(_read(noah.get("/")), proposal_id)

    _bar_the_requester(cs)

    card = _inbox_card(_read(noah.get("/")), proposal_id)
    assert after in card
    assert before not in card
    assert _events(cs, proposal_id) == ["Proposed", "Approved"]  # reading records nothing


def test_the_api_inbox_counts_it_out_as_the_card_does(web):
    cs = web.cs
    proposal_id = web.propose("refund-two-approvers")
    cs.proposals.approve(proposal_id, AVA)
    api = TestClient(web.app, raise_server_exceptions=False)
    noah = _bearer(cs, NOAH)

    _bar_the_requester(cs)

    answer = api.get("/api/v1/inbox", headers=noah)
    assert answer.status_code == 200, answer.text
    (item,) = [i for i in answer.json()["items"] if i["proposal_id"] == proposal_id]
    card = api.get(f"/api/v1/proposals/{proposal_id}", headers=noah).json()
    assert item["approvals"] == card["approvals"] == []
    assert item["approval_credentials"] == card["approval_credentials"] == []
    assert item["no_longer_counting"] == [{"approved_by": AVA, "reason": "requester_barred"}]
    assert [lapsed["reason"] for lapsed in card["no_longer_counting"]] == ["requester_barred"]
    assert _events(cs, proposal_id) == ["Proposed", "Approved"]


def test_the_inbox_reads_the_club_once_for_the_page_not_once_per_card(web, monkeypatch):
    """Counting them out reads nothing per card: the club is read as often for a page with
    one barred requester's approval as for a page with three."""
    cs = web.cs
    noah = web.browser(NOAH)

    def two_approvals(requester_may_approve: bool) -> None:  # every refund, whatever its amount
        cs.policies.set(
            "granite",
            REFUND,
            2,
            above_cents=None,
            requester_may_approve=requester_may_approve,
            by=Caller(NOAH, "granite"),
        )

    def approved_by_ava(*ids: str) -> None:
        two_approvals(True)
        for order in ids:
            cs.proposals.approve(web.propose(order), AVA)
        two_approvals(False)

    reads: list[Any] = []
    stores = {id(cs.access.store): cs.access.store, id(cs.cards.store): cs.cards.store}
    for store in stores.values():
        original = store.read

        def counting(aggregate_id: Any, cls: Any, *args: Any, _read: Any = original, **kw: Any):
            reads.append(cls)
            return _read(aggregate_id, cls, *args, **kw)

        monkeypatch.setattr(store, "read", counting)

    def club_reads() -> int:
        reads.clear()
        inbox = _read(noah.get("/"))
        assert "1 of 2 approvals" not in inbox
        return sum(1 for cls in reads if cls is Organization)

    approved_by_ava("refund-two-approvers")
    once = club_reads()
    approved_by_ava("refund-ok", "refund-declined")
    assert _read(noah.get("/")).count("0 of 2 approvals") == 3
    assert club_reads() == once


# -- the card, show and proposal_status say it to the requester ---------------------------------


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_api_card_tells_the_requester_they_may_not_approve_it(web, language):
    cs = web.cs
    proposal_id = web.propose("refund-two-approvers")
    api = TestClient(web.app, raise_server_exceptions=False)
    path = f"/api/v1/proposals/{proposal_id}?language={language}"
    ava, noah = _bearer(cs, AVA), _bearer(cs, NOAH)
    assert api.get(path, headers=ava).json()["requester_barred"] is None  # the frozen rule

    _bar_the_requester(cs)

    assert api.get(path, headers=ava).json()["requester_barred"] == BARRED[language]
    assert api.get(path, headers=noah).json()["requester_barred"] is None
    status = f"/api/v1/proposals/{proposal_id}/status?language={language}"
    assert api.get(status, headers=ava).json()["requester_barred"] == BARRED[language]
    assert api.get(status, headers=noah).json()["requester_barred"] is None


def test_a_decided_proposal_tells_nobody_they_may_not_approve_it(cs, seeded):
    """A frozen bar says it too while it is pending; once decided there is nothing to
    approve, and nothing more is said."""
    from tests.support.proposing import propose_on

    cs.policies.set(
        "granite",
        REFUND,
        1,
        above_cents=None,
        requester_may_approve=False,
        by=Caller(NOAH, "granite"),
    )
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])
    assert cs.access.card(proposal_id, AVA, "fr").requester_barred == BARRED["fr"]
    assert cs.access.status(proposal_id, AVA).requester_barred == BARRED["en"]

    assert cs.proposals.approve(proposal_id, NOAH).status == "succeeded"

    assert cs.access.card(proposal_id, AVA).requester_barred is None
    assert cs.access.status(proposal_id, AVA).requester_barred is None


def _over_mcp(cs: Countersign, caller: Caller, proposal_id: str, language: str) -> Any:
    """MCP's proposal_status and the card resource's text, over in-memory streams, from a
    server started in ``language``."""
    from countersign.infrastructure.entrypoints.mcp.server import CountersignTools
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from tests.mcp_client import structured

    server = CountersignTools(cs, lambda ctx: caller, language=language).server()
    seen: list[Any] = []

    async def main() -> None:
        async with (
            create_client_server_memory_streams() as (client, served),
            anyio.create_task_group() as group,
        ):
            group.start_soon(
                lambda: server.run(served[0], served[1], server.create_initialization_options())
            )
            async with ClientSession(client[0], client[1]) as session:
                await session.initialize()
                result = await session.call_tool("proposal_status", {"proposal_id": proposal_id})
                uri = f"countersign://proposals/{proposal_id}"
                card = (await session.read_resource(uri)).contents[0]
                seen.append((structured(result), getattr(card, "text", "")))
            group.cancel_scope.cancel()

    anyio.run(main)
    return seen[0]


@pytest.mark.parametrize("language", ["en", "fr"])
def test_mcp_tells_the_requester_they_may_not_approve_it(cs, seeded, language):
    """MCP answers its caller about their own proposals only: the requester, here."""
    from tests.support.proposing import propose_on

    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    ava = Caller(AVA, "granite")
    status, card = _over_mcp(cs, ava, proposal_id, language)
    assert status["requester_barred"] is None  # the frozen rule lets her
    assert BARRED[language] not in card

    _bar_the_requester(cs)

    status, card = _over_mcp(cs, ava, proposal_id, language)
    assert status["requester_barred"] == BARRED[language]
    assert status["policy_changed"] is False
    assert BARRED[language] in card


@pytest.mark.parametrize("language", ["en", "fr"])
def test_show_tells_the_requester_they_may_not_approve_it(cli, run, orders, language):  # noqa: F811
    cli("policy", "set", "--org", "granite", "--operation", REFUND, "--approvals", "2",
        "--above-cents", "10000")  # fmt: skip
    proposal_id = _propose(cli, orders["refund-two-approvers"])["proposal_id"]
    label = {"en": "Your approval", "fr": "Votre approbation"}[language]
    shown = run("show", proposal_id, "--as", AVA, "--language", language)[1]
    assert f"│ {label} " not in shown  # the frozen rule lets her

    cli("policy", "set", "--org", "granite", "--operation", REFUND, "--approvals", "2",
        "--above-cents", "10000", "--requester-may-approve", "false")  # fmt: skip

    assert (
        row(run("show", proposal_id, "--as", AVA, "--language", language)[1], label)
        == (BARRED[language])
    )
    assert f"│ {label} " not in run("show", proposal_id, "--as", NOAH, "--language", language)[1]
    card = cli("show", proposal_id, "--as", AVA, "--language", language)
    assert card["requester_barred"] == BARRED[language]
