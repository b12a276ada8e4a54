"""What proposed it: the requester's credential is recorded on ``Proposed`` and shown.

An approval records what the approver presented (a person's sign-in, an approver token); a
proposal now records what its requester presented: ``person`` for their own sign-in,
``assistant`` for a model's tool call made for them (a section assistant's turn, the MCP
server over stdio, an agent framework's tool), ``agent_token:<name>`` or
``approver_token:<name>``. A reviewer reads it beneath the requester ("Proposed by an
assistant"), the audit trail says it, and the API's card carries it. Proposals stored before
it was recorded read as not known, and show no line.
"""

from __future__ import annotations

from uuid import UUID

from countersign.application.authorization import Caller
from countersign.domain.messages import origin_line
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.agent_frameworks.proposing import Proposed, Proposer
from countersign.infrastructure.adapters.scripted_model import Call, Script
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD
from tests.test_assistant import PROPOSE_REFUND, wire  # noqa: F401
from tests.test_web_pages import Browser

REFUND_PERMISSION = "orders.refund"


def _token(cs: Countersign, name: str, kind: str = "agent") -> str:
    return issue_token(cs, "granite", name, [REFUND_PERMISSION], issued_by=AVA, kind=kind).token


def _summary(cs: Countersign, proposal_id: str) -> str:
    for runner in cs.projection_runners(["audit_trail"]):
        runner.catch_up()
    with cs.sql.transaction() as cursor:
        row = cursor.execute(
            "SELECT summary FROM audit_events WHERE proposal_id = ? AND event_type = 'Proposed'",
            (proposal_id,),
        ).fetchone()
    return str(row[0])


def _review_page(cs: Countersign, proposal_id: str, language: str = "en") -> str:
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    browser = Browser(TestClient(app, follow_redirects=False))
    assert browser.sign_in(AVA, seed_passwords(cs)[AVA]).status_code == 303
    headers = {"Accept-Language": language} if language != "en" else {}
    return browser.get(f"/proposals/{proposal_id}", **headers).text


def test_a_persons_own_proposal_says_person_and_shows_no_line(cs, seeded):
    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    card = cs.access.card(created.proposal_id, Caller(AVA, "granite"))
    assert card.requested_through == "person"
    assert cs.audit.history(created.proposal_id)["events"][0]["requested_through"] == "person"
    assert _summary(cs, created.proposal_id) == f"proposed {REFUND}"
    page = _review_page(cs, created.proposal_id)
    assert "Proposed by" not in page


def test_an_agent_tokens_proposal_names_the_token_everywhere(cs, seeded):
    with TestClient(create_app(cs)) as client:
        answer = client.post(
            "/api/v1/proposals",
            headers={"Authorization": f"Bearer {_token(cs, 'ops-bot')}"},
            json={
                "operation": REFUND,
                "resource_id": seeded["orders"]["refund-ok"],
                "request": TO_CARD,
            },
        )
        assert answer.status_code == 201, answer.text
        proposal_id = answer.json()["proposal_id"]
        card = client.get(
            f"/api/v1/proposals/{proposal_id}",
            headers={"Authorization": f"Bearer {_token(cs, 'reader')}"},
        )
    assert card.status_code == 200, card.text
    assert card.json()["requested_by"] == AVA
    assert card.json()["requested_through"] == "agent_token:ops-bot"

    assert _summary(cs, proposal_id) == (f"proposed {REFUND} by the agent “ops-bot” (agent token)")
    assert "Proposed by the agent “ops-bot” (agent token)" in _review_page(cs, proposal_id)
    assert "Proposée par l&#39;agent « ops-bot » (jeton d&#39;agent)" in _review_page(
        cs, proposal_id, "fr"
    )


def test_a_section_assistants_proposal_says_an_assistant_made_it(wire):  # noqa: F811
    w = wire(Script(Call(PROPOSE_REFUND, TO_CARD)))
    report = w.turn("orders", w.order, "Refund the missed discount")
    assert report.proposal is not None
    proposal_id = report.proposal["proposal_id"]

    proposal = w.cs.store.get(UUID(proposal_id), Proposal)
    assert (proposal.requested_by, proposal.requested_through) == (AVA, "assistant")
    assert _summary(w.cs, proposal_id) == f"proposed {REFUND} by an assistant"
    assert "Proposed by an assistant" in _review_page(w.cs, proposal_id)
    assert "Proposée par un assistant" in _review_page(w.cs, proposal_id, "fr")


def test_an_agent_frameworks_tool_is_an_assistant_with_its_origin(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    proposer = Proposer(cs.access, Caller(AVA, "granite"), {"channel": "langgraph"})
    (tool,) = proposer.tools({REFUND: order})
    proposed = proposer.propose(tool, TO_CARD)
    assert isinstance(proposed, Proposed), proposed
    proposal_id = proposed.proposal_id
    assert _summary(cs, proposal_id) == f"proposed {REFUND} by an assistant through langgraph"
    card = cs.access.card(proposal_id, Caller(AVA, "granite"))
    assert origin_line(card.origin, "en", card.requested_through) == (
        "Proposed by an assistant, through langgraph"
    )


def test_a_proposal_stored_before_it_was_recorded_reads_as_not_known():
    """``Proposed`` events written before the field decode without it: no line, no note."""
    assert origin_line(None, "en", None) is None
    assert origin_line({"channel": "mcp"}, "en", None) == "Proposed through MCP"
    assert origin_line(None, "en", "person") is None
    assert origin_line(None, "fr", "approver_token:billing") == (
        "Proposée par le service « billing » (jeton d'approbateur)"
    )
