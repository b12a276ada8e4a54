"""Issue 22, part 1: credentials that cannot cross the line.

An agent token (the default of ``countersign tokens issue``) reads, proposes and follows its
proposals, and never decides: every route of the JSON API is walked with one, and none of
them approves, declines, edits or changes the club's rules. An approver token (``--approver``)
may decide through the API, and what it did is recorded as such; the MCP server and the agent
framework adapters refuse it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

import httpx2
import pytest
from countersign.application.authorization import Caller
from countersign.application.errors import AgentCannotDecideError
from countersign.domain.club.organization import Organization
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.agent_frameworks.proposing import (
    ApproverTokenRefusedError,
    Proposer,
)
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import authenticate, issue_token
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD
from tests.mcp_client import over_http, tool_names
from tests.servers import serving
from tests.support.mcp_requests import initialize
from tests.test_projections import catch_up_all

if TYPE_CHECKING:  # the MCP SDK and countersign's MCP server are imported where they are
    # used: collecting this module imports neither (docs/testing.md)
    from mcp import ClientSession

NOAH = "noah@granite.example"
ALL = [
    "orders.refund",
    "email_broadcasts.prepare",
    "email_broadcasts.send",
    "roster.manage",
    "audit.read",
    "policies.manage",
    "webhooks.manage",
    "members.manage",
]
AGENT_PROBLEM = "urn:countersign:problem:agent-cannot-decide"


@dataclass
class Api:
    cs: Countersign
    seeded: dict[str, Any]
    client: TestClient

    def call(self, method: str, path: str, token: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        if body is None:
            return self.client.request(method, path, headers=headers)
        return self.client.request(method, path, headers=headers, json=body)

    def proposal(self, token: str, order: str = "refund-ok") -> str:
        body = {
            "operation": REFUND,
            "resource_id": self.seeded["orders"][order],
            "request": TO_CARD,
        }
        made = self.call("POST", "/api/v1/proposals", token, body)
        assert made.status_code == 201, made.text
        return str(made.json()["proposal_id"])


@pytest.fixture
def api(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield Api(cs=cs, seeded=seeded, client=client)


def _agent(cs: Countersign, who: str = AVA, name: str = "ava-agent") -> str:
    return issue_token(cs, "granite", name, ALL, issued_by=who, kind="agent").token


def _approver(cs: Countersign, who: str = AVA, name: str = "billing") -> str:
    return issue_token(cs, "granite", name, ALL, issued_by=who, kind="approver").token


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def _run(capsys: pytest.CaptureFixture[str], database_url: str, *args: str) -> Any:
    assert main(["--database", database_url, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# -- issuing and listing ----------------------------------------------------------------------


def test_the_cli_issues_agent_tokens_unless_told_approver_and_lists_each_kind(
    cs, seeded, database_url, capsys
):
    base = ["tokens", "issue", "--org", "granite", "--as", AVA, "--permissions", "orders.refund"]
    agent = _run(capsys, database_url, *base, "--name", "chat-agent")
    approver = _run(capsys, database_url, *base, "--name", "billing", "--approver")
    assert (agent["kind"], approver["kind"]) == ("agent", "approver")
    assert authenticate(cs, agent["token"]).caller.may_decide is False
    assert authenticate(cs, approver["token"]).caller.may_decide is True

    listed = _run(capsys, database_url, "tokens", "list", "--org", "granite")
    assert {t["name"]: t["kind"] for t in listed} == {"chat-agent": "agent", "billing": "approver"}
    assert main(["--database", database_url, "tokens", "list", "--org", "granite"]) == 0
    text = capsys.readouterr().out
    assert any("chat-agent" in line and " agent " in line for line in text.splitlines())
    assert any("billing" in line and " approver " in line for line in text.splitlines())


# -- an agent token never decides -------------------------------------------------------------


def test_an_agent_token_proposes_and_reads_but_approve_decline_and_revise_answer_403(api):
    agent = _agent(api.cs)
    proposal_id = api.proposal(agent)
    assert api.call("GET", f"/api/v1/proposals/{proposal_id}", agent).status_code == 200
    assert api.call("GET", f"/api/v1/proposals/{proposal_id}/status", agent).status_code == 200

    for method, path, body in (
        ("POST", f"/api/v1/proposals/{proposal_id}/approve", None),
        ("POST", f"/api/v1/proposals/{proposal_id}/decline", {"note": "no"}),
        ("POST", f"/api/v1/proposals/{proposal_id}/revisions", {"request": TO_CARD}),
    ):
        answer = api.call(method, path, agent, body)
        assert answer.status_code == 403, (path, answer.text)
        problem = answer.json()
        assert problem["type"] == AGENT_PROBLEM
        assert "An agent token cannot decide" in problem["detail"]
        for leak in ("Traceback", "SELECT", ".py", "sqlite"):
            assert leak not in answer.text
    assert _events(api.cs, proposal_id) == ["Proposed"]
    assert api.cs.sandbox.refunds() == []


def test_an_agent_token_cannot_approve_a_proposal_someone_else_made_either(api):
    noahs = api.proposal(_approver(api.cs, NOAH, "noah-desk"))
    answer = api.call("POST", f"/api/v1/proposals/{noahs}/approve", _agent(api.cs))
    assert (answer.status_code, answer.json()["type"]) == (403, AGENT_PROBLEM)
    assert _events(api.cs, noahs) == ["Proposed"]


def _api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    """Every route of the app, included routers walked into (FastAPI keeps an included
    router as one entry of ``app.routes``)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):
            yield from _api_routes(route.original_router.routes)
        elif hasattr(route, "routes"):
            yield from _api_routes(route.routes)


#: A body each deciding route accepts, so that the route itself is reached.
_BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/api/v1/proposals"): None,  # filled in by the test: a real proposal
    ("POST", "/api/v1/proposals/{proposal_id}/revisions"): {"request": TO_CARD},
    ("POST", "/api/v1/proposals/{proposal_id}/decline"): {"note": "no"},
    ("PUT", "/api/v1/policies/{operation}"): {
        "approvals": 1,
        "above_cents": None,
        "requester_may_approve": True,
    },
    ("POST", "/api/v1/webhooks"): {"url": "https://hooks.example/countersign"},
    ("PUT", "/api/v1/members/{email}/permissions"): {"permissions": ["members.manage"]},
    ("POST", "/api/v1/assistants/{section}/resources/{resource_id}/messages"): {
        "message": "Refund the missed discount to the card"
    },
}
#: What an agent token may do that writes: propose, and talk to an assistant that proposes.
_AGENT_WRITES = {
    ("POST", "/api/v1/proposals"),
    ("POST", "/api/v1/assistants/{section}/resources/{resource_id}/messages"),
}


def test_every_route_of_the_api_walked_with_an_agent_token_decides_nothing(api):
    cs = api.cs
    agent = _agent(cs)
    # On another order than the one the agent proposes for (which would supersede it).
    noahs = api.proposal(_approver(cs, NOAH, "noah-desk"), order="refund-declined")
    endpoint = cs.notifications.add_endpoint(None, "granite", "https://hooks.example/a")
    org_before = cs.store.read(Organization.create_id("granite"), Organization)
    policies_before = json.dumps(org_before.policies, sort_keys=True, default=str)
    members_before = json.dumps(org_before.members, sort_keys=True, default=str)
    values = {
        "proposal_id": noahs,
        "operation": REFUND,
        "section": "orders",
        "resource_id": api.seeded["orders"]["refund-ok"],
        "endpoint_id": endpoint.endpoint_id,
        "delivery_id": "00000000000000000000000000000000",
        "email": "ben@granite.example",
    }
    walked = []
    app = create_app(cs)
    for route in _api_routes(app.routes):
        if not route.path.startswith("/api/v1"):
            continue
        # The route as the OpenAPI document names it: a parameter's converter
        # (``{resource_id:path}``) left out.
        template = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        for method in sorted(route.methods - {"HEAD"}):
            path = template.format(**values)
            body = _BODIES.get((method, template))
            if (method, template) == ("POST", "/api/v1/proposals"):
                body = {
                    "operation": REFUND,
                    "resource_id": api.seeded["orders"]["refund-ok"],
                    "request": TO_CARD,
                }
            answer = api.call(method, path, agent, body)
            walked.append((method, template))
            assert answer.status_code < 500, (method, path, answer.text)
            if (method, template) in _AGENT_WRITES:
                assert answer.status_code in (200, 201), (method, path, answer.text)
            elif method != "GET":  # reads change nothing (the club's webhooks: not even read)
                assert answer.status_code == 403, (method, path, answer.text)
                assert answer.json()["type"] == AGENT_PROBLEM, (method, path)

    deciding = {
        ("POST", "/api/v1/proposals/{proposal_id}/approve"),
        ("POST", "/api/v1/proposals/{proposal_id}/decline"),
        ("POST", "/api/v1/proposals/{proposal_id}/revisions"),
        ("PUT", "/api/v1/policies/{operation}"),
        ("PUT", "/api/v1/members/{email}/permissions"),
    }
    assert deciding <= set(walked)
    # Nothing was missed: the walk covers every operation the OpenAPI document declares.
    declared = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert declared == set(walked)
    # Noah's proposal is exactly as it was: nobody approved, declined or replaced it.
    assert _events(cs, noahs) == ["Proposed"]
    assert cs.store.read(UUID(noahs), Proposal).status == "pending"
    org_after = cs.store.read(Organization.create_id("granite"), Organization)
    assert json.dumps(org_after.policies, sort_keys=True, default=str) == policies_before
    assert [e.endpoint_id for e in org_after.webhook_endpoints()] == [endpoint.endpoint_id]
    assert json.dumps(org_after.members, sort_keys=True, default=str) == members_before
    assert cs.sandbox.refunds() == []


def test_the_application_refuses_an_agent_callers_decision_whatever_the_entry_point(cs, seeded):
    made = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    agent = authenticate(cs, _agent(cs)).caller
    for decide in (
        lambda: cs.proposals.approve(made.proposal_id, agent),
        lambda: cs.proposals.decline(made.proposal_id, agent),
        lambda: cs.proposals.revise(made.proposal_id, agent, TO_CARD),
        lambda: cs.policies.set("granite", REFUND, 1, by=agent),
    ):
        with pytest.raises(AgentCannotDecideError):
            decide()
    assert _events(cs, made.proposal_id) == ["Proposed"]


# -- an approver token decides, and says so ---------------------------------------------------


def test_an_approver_token_approves_and_the_card_and_audit_trail_name_its_kind(api):
    cs = api.cs
    proposal_id = api.proposal(_agent(cs))
    billing = _approver(cs)
    answer = api.call("POST", f"/api/v1/proposals/{proposal_id}/approve", billing)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"] == "executed"
    assert len(cs.sandbox.refunds()) == 1

    card = api.call("GET", f"/api/v1/proposals/{proposal_id}", billing).json()
    assert card["approvals"] == [AVA]
    assert card["approval_credentials"] == ["approver_token:billing"]
    history = cs.audit.history(proposal_id)["events"]
    assert history[1]["credential"] == "approver_token:billing"

    catch_up_all(cs)
    with cs.sql.transaction() as cursor:
        summaries = cursor.execute(
            "SELECT event_type, actor, summary FROM audit_events WHERE proposal_id = ?"
            " ORDER BY version",
            (proposal_id,),
        ).fetchall()
    assert (AVA, "approved through the service “billing” (approver token)") in [
        (row[1], row[2]) for row in summaries if row[0] == "Approved"
    ]
    org = api.seeded["organizations"][0]["id"]
    assert cs.read_models.card(org, proposal_id)["approval_credentials"] == [
        "approver_token:billing"
    ]


def test_a_person_approving_records_person(cs, seeded):
    made = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    assert cs.proposals.approve(made.proposal_id, AVA).result == "executed"
    assert cs.store.read(UUID(made.proposal_id), Proposal).approver_credentials == ("person",)


# -- MCP and the agent frameworks refuse a token that can approve ------------------------------


def test_the_agent_framework_adapters_refuse_an_approver_tokens_caller(cs, seeded):
    approver = authenticate(cs, _approver(cs)).caller
    with pytest.raises(ApproverTokenRefusedError, match="issue an agent token instead"):
        Proposer(cs.access, approver, {"channel": "langgraph"})
    agent = authenticate(cs, _agent(cs)).caller
    assert Proposer(cs.access, agent, {"channel": "langgraph"}).caller == agent


@pytest.fixture
def served(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Any]:
    from countersign.infrastructure.entrypoints.mcp import http_app

    with serving(http_app(cs), lifespan="on") as running:
        yield running


_HELLO = initialize("curl")


def test_mcp_refuses_an_approver_token_with_401_and_says_to_issue_an_agent_token(
    cs, seeded, served
):
    answer = httpx2.post(
        f"{served.base}/mcp",
        json=_HELLO,
        headers={
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {_approver(cs)}",
        },
        timeout=10,
    )
    assert answer.status_code == 401
    assert answer.json()["error"] == "approver_token"
    assert "Issue an agent token instead" in answer.json()["message"]
    assert answer.headers["www-authenticate"].startswith('Bearer realm="countersign"')


def test_every_mcp_tool_called_with_an_agent_token_decides_nothing(cs, seeded, served):
    noahs = cs.access.propose(
        Caller(NOAH, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-declined"],
        request=TO_CARD,
    ).proposal_id
    arguments = {"proposal_id": noahs, "resource_id": seeded["orders"]["refund-declined"]}

    async def calling_every_tool(session: ClientSession) -> list[str]:
        names = await tool_names(session)
        for name in names:
            await session.call_tool(name, arguments)
        return names

    names = over_http(served.base, _agent(cs), calling_every_tool)
    assert "proposal_status" in names
    assert any(name.startswith("propose_") for name in names)
    for name in names:
        assert not any(verb in name for verb in ("approve", "decline", "revise", "execute"))
    assert _events(cs, noahs) == ["Proposed"]
    assert cs.sandbox.refunds() == []


def test_an_approver_tokens_decline_is_recorded_with_its_kind(api):
    cs = api.cs
    proposal_id = api.proposal(_agent(cs))
    answer = api.call(
        "POST", f"/api/v1/proposals/{proposal_id}/decline", _approver(cs), {"note": "no"}
    )
    assert (answer.status_code, answer.json()["result"]) == (200, "declined")
    card = api.call("GET", f"/api/v1/proposals/{proposal_id}", _approver(cs, name="desk")).json()
    assert (card["declined_by"], card["declined_credential"]) == (AVA, "approver_token:billing")
    assert cs.audit.history(proposal_id)["events"][1]["credential"] == "approver_token:billing"
    catch_up_all(cs)
    with cs.sql.transaction() as cursor:
        row = cursor.execute(
            "SELECT summary FROM audit_events WHERE proposal_id = ? AND event_type = 'Declined'",
            (proposal_id,),
        ).fetchone()
    assert row[0] == "declined through the service “billing” (approver token)"
