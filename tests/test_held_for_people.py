"""A model's proposal never replaces what people decide on.

Proposing again for the same thing supersedes the pending proposal: an assistant refining its
own request relies on it. But a proposal made by a model (an agent token on the API, the MCP
server, an agent framework's tool, a section assistant's turn) that replaced a pending
proposal another member requested, or one that someone approved, would decide for people:
withdraw another person's request, set approvals aside, or make a four-eyes rule's requester
somebody else. Such a proposal is refused (``HeldForPeopleError``; the API's 409
``held-for-people``), nothing is written, and the pending proposal stays approvable. People
(the command line, the pages' edits, an approver token) supersede as before.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any
from uuid import UUID

import anyio
import pytest
from countersign.application.authorization import Caller, Credential
from countersign.application.errors import AgentCannotDecideError, HeldForPeopleError
from countersign.infrastructure.adapters.agent_frameworks.proposing import Proposer, Refused
from countersign.infrastructure.adapters.scripted_model import Call, Say, Script
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import authenticate, issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD
from tests.test_assistant import PROPOSE_REFUND, wire  # noqa: F401

if TYPE_CHECKING:
    from mcp import ClientSession

NOAH = "noah@granite.example"
HELD = "urn:countersign:problem:held-for-people"
#: Ella Novak's order: its refund ($128.00) is above $100, which the seed's policy gives two
#: approvers.
TWO_APPROVERS = "refund-two-approvers"
LEAKS = ("Traceback", "SELECT", ".py", "sqlite", "/srv")


def _agent_caller(cs: Countersign, who: str = AVA, name: str = "assistant") -> Caller:
    return authenticate(cs, _agent_token(cs, who, name)).caller


def _agent_token(cs: Countersign, who: str = AVA, name: str = "assistant") -> str:
    return issue_token(cs, "granite", name, ["orders.refund"], issued_by=who, kind="agent").token


def _propose(cs: Countersign, caller: Caller, order: str) -> str:
    return cs.access.propose(
        caller, operation=REFUND, resource_id=order, request=TO_CARD
    ).proposal_id


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def _proposed(cs: Countersign) -> int:
    return sum(
        1 for n in cs.app.recorder.select_notifications(1, 10_000) if n.topic.endswith("Proposed")
    )


# -- the rule, in the application ----------------------------------------------------------------


def test_an_agent_cannot_replace_another_members_pending_proposal(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    noahs = _propose(cs, Caller(NOAH, "granite"), order)
    before = _proposed(cs)

    with pytest.raises(HeldForPeopleError) as held:
        _propose(cs, _agent_caller(cs), order)

    assert held.value.reason == HeldForPeopleError.REQUESTED_BY_ANOTHER
    assert "another member requested it" in str(held.value)
    assert isinstance(held.value, AgentCannotDecideError)  # any entry point fails closed
    assert _proposed(cs) == before  # nothing was written
    assert _events(cs, noahs) == ["Proposed"]
    # Noah's request stands, and a person approves it as it was frozen.
    report = cs.access.approve(noahs, Caller(AVA, "granite"))
    assert (report.result, report.status) == ("executed", "succeeded")


def test_an_agent_cannot_set_approvals_aside_even_on_its_own_members_proposal(cs, seeded):
    order = seeded["orders"][TWO_APPROVERS]
    request = cs.access.propose(
        _agent_caller(cs), operation=REFUND, resource_id=order, request=TO_CARD
    )
    assert request.approvals_required == 2
    first = cs.access.approve(request.proposal_id, Caller(NOAH, "granite"))
    assert first.result == "awaiting_approvals"

    with pytest.raises(HeldForPeopleError) as held:
        cs.access.propose(
            _agent_caller(cs, name="second"),
            operation=REFUND,
            resource_id=order,
            request=TO_CARD,
        )

    assert held.value.reason == HeldForPeopleError.APPROVED
    assert _events(cs, request.proposal_id) == ["Proposed", "Approved"]
    done = cs.access.approve(request.proposal_id, Caller(AVA, "granite"))
    assert (done.result, done.status) == ("executed", "succeeded")


def test_an_agent_still_replaces_its_own_proposal_nobody_approved(cs, seeded):
    # (Another token of the same member is held: tests/attacks/test_agent_supersession.py.)
    order = seeded["orders"]["refund-ok"]
    agent = _agent_caller(cs)
    first = _propose(cs, agent, order)
    again = cs.access.propose(agent, operation=REFUND, resource_id=order, request=TO_CARD)
    assert again.supersedes == [first]
    assert _events(cs, first) == ["Proposed", "Superseded"]


def test_a_person_still_replaces_another_members_proposal(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    noahs = _propose(cs, Caller(NOAH, "granite"), order)
    avas = cs.access.propose(
        Caller(AVA, "granite"), operation=REFUND, resource_id=order, request=TO_CARD
    )
    assert avas.supersedes == [noahs]


def test_a_four_eyes_rule_cannot_be_passed_by_another_members_agent(cs, seeded):
    """Ava may not approve her own refund; Noah's assistant re-proposing it must not make Noah
    its requester so that Ava's approval alone executes it."""
    ava = Caller(AVA, "granite")
    cs.policies.set("granite", REFUND, 1, above_cents=None, requester_may_approve=False, by=ava)
    order = seeded["orders"]["refund-ok"]
    avas = _propose(cs, ava, order)
    assert cs.access.approve(avas, ava).reason == "requester_may_not_approve"

    with pytest.raises(HeldForPeopleError):
        _propose(cs, _agent_caller(cs, NOAH, "noahs-assistant"), order)

    assert cs.access.approve(avas, ava).reason == "requester_may_not_approve"
    assert cs.sandbox.refunds() == []


def test_a_model_acting_for_a_person_is_an_assistant_that_never_decides():
    person = Caller(AVA, "granite", frozenset({"orders.refund"}))
    assistant = person.as_assistant()
    assert (assistant.email, assistant.organization, assistant.scopes) == (
        AVA,
        "granite",
        frozenset({"orders.refund"}),
    )
    assert assistant.credential == Credential.ASSISTANT
    assert (person.may_decide, assistant.may_decide) == (True, False)
    agent = Caller(AVA, "granite", None, Credential.AGENT_TOKEN, "chat")
    assert agent.as_assistant() is agent  # an agent token stays what it is
    approver = Caller(AVA, "granite", None, Credential.APPROVER_TOKEN, "billing")
    assert approver.as_assistant().may_decide is False


# -- each entry point says so, and writes nothing --------------------------------------------------


def test_the_api_answers_409_held_for_people_and_names_no_one(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    noahs = _propose(cs, Caller(NOAH, "granite"), order)
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        answer = client.post(
            "/api/v1/proposals",
            headers={"Authorization": f"Bearer {_agent_token(cs)}"},
            json={"operation": REFUND, "resource_id": order, "request": TO_CARD},
        )
    assert answer.status_code == 409
    problem = answer.json()
    assert problem["type"] == HELD
    assert "another member requested it" in problem["detail"]
    assert "nothing was proposed" in problem["detail"]
    assert NOAH not in answer.text
    assert noahs not in answer.text
    for leak in LEAKS:
        assert leak not in answer.text
    assert _events(cs, noahs) == ["Proposed"]


def test_an_agent_framework_tool_bound_to_a_person_is_refused_in_words_the_model_can_pass_on(
    cs, seeded
):
    order = seeded["orders"]["refund-ok"]
    noahs = _propose(cs, Caller(NOAH, "granite"), order)
    proposer = Proposer(cs.access, Caller(AVA, "granite"), {"channel": "langgraph"})
    (tool,) = proposer.tools({REFUND: order})

    answer = proposer.propose(tool, TO_CARD)

    assert isinstance(answer, Refused)
    assert "awaits people's decision" in answer.text
    assert _events(cs, noahs) == ["Proposed"]


def test_a_section_assistants_turn_does_not_replace_another_members_proposal(wire):  # noqa: F811
    """The model's call is refused, and the turn ends there with the application's own words
    (the model is not asked again: what it would try next is people's to decide)."""
    w = wire(Script(Call(PROPOSE_REFUND, TO_CARD), Say("Let me try something else.")))
    noahs = _propose(w.cs, Caller(NOAH, "granite"), w.order)

    report = w.turn("orders", w.order, "Refund the missed discount")

    assert report.proposal is None
    assert (report.ended, report.model_calls) == ("held_for_people", 1)
    assert report.messages == [
        {
            "author": "application",
            "text": "A proposal for this is already waiting for a decision (another member "
            "asked for it), so I did not replace it. Nothing was changed: open it from the "
            "inbox to approve, edit or decline it.",
        }
    ]
    assert _events(w.cs, noahs) == ["Proposed"]
    outcomes = [
        e.fields["outcome"]
        for e in w.cs.store.history(UUID(report.interaction_id))
        if e.type == "ToolCalled"
    ]
    assert outcomes == ["refused"]


def test_the_turns_closing_words_say_why_in_the_managers_language(wire):  # noqa: F811
    w = wire(Script(Call(PROPOSE_REFUND, TO_CARD)))
    order = w.seeded["orders"][TWO_APPROVERS]
    own = _propose(w.cs, Caller(AVA, "granite"), order)
    assert w.cs.access.approve(own, Caller(NOAH, "granite")).result == "awaiting_approvals"

    report = w.cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=order,
        message="Rembourse la remise manquée",
        language="fr",
    )

    assert report.ended == "held_for_people"
    assert report.messages[-1]["text"] == (
        "Une proposition pour ceci attend déjà une décision (quelqu'un l'a déjà approuvée) : "
        "je ne l'ai pas remplacée. Rien n'a été modifié ; ouvrez-la depuis « À traiter » pour "
        "l'approuver, la modifier ou la refuser."
    )
    assert _events(w.cs, own) == ["Proposed", "Approved"]


def test_a_section_assistants_turn_still_refines_the_members_own_proposal(wire):  # noqa: F811
    w = wire(Script(Call(PROPOSE_REFUND, TO_CARD)))
    first = w.turn("orders", w.order, "Refund the missed discount")
    w.endpoint.policy = Script(Call(PROPOSE_REFUND, {**TO_CARD, "destination": "account_credit"}))

    second = w.turn("orders", w.order, "As a credit instead", interaction_id=first.interaction_id)

    assert second.proposal is not None
    assert second.proposal["supersedes"] == [first.proposal["proposal_id"]]


def test_the_mcp_server_refuses_the_proposal_with_held_for_people(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    noahs = _propose(cs, Caller(NOAH, "granite"), order)

    async def proposing(session: ClientSession) -> Any:
        from tests.mcp_client import error_of

        return error_of(
            await session.call_tool(
                "propose_order_refund_missing_discount", {"resource_id": order, **TO_CARD}
            )
        )

    # A stdio session's caller is the member the command names: a person's sign-in, which
    # the server's propose tool uses as an assistant.
    refused = _in_memory(cs, Caller(AVA, "granite"), proposing)
    assert refused["error"] == "held_for_people"
    assert "awaits people's decision" in refused["message"]
    assert _events(cs, noahs) == ["Proposed"]


# -- unexpected errors outside a tool call reach an agent as a reference only -------------------


@pytest.mark.parametrize("method", ["read", "list"])
def test_an_mcp_card_read_or_tool_listing_that_fails_answers_a_reference_only(cs, seeded, method):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError(
            "disk I/O error: SELECT originator_id FROM stored_events (/srv/cs/db.sqlite)"
        )

    if method == "read":
        cs.toolbox.card = broken  # type: ignore[method-assign]
    else:
        cs.toolbox.catalogue = broken  # type: ignore[method-assign]

    async def asking(session: ClientSession) -> str:
        try:
            if method == "read":
                await session.read_resource("countersign://proposals/" + "0" * 32)
            else:
                await session.list_tools()
        except Exception as error:  # the SDK raises the server's JSON-RPC error
            return str(error)
        return "no error"

    said = _in_memory(cs, Caller(AVA, "granite"), asking)
    assert said.startswith("internal error (reference cs-")
    for leak in (*LEAKS, "disk I/O"):
        assert leak not in said


def _in_memory(cs: Countersign, caller: Caller, scenario: Any) -> Any:
    """Run ``scenario(session)`` against countersign's MCP server over in-memory streams, the
    caller as a stdio session's."""
    from countersign.infrastructure.entrypoints.mcp.server import CountersignTools
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    server = CountersignTools(cs, lambda ctx: caller).server()
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
                seen.append(await scenario(session))
            group.cancel_scope.cancel()

    anyio.run(main)
    return seen[0]
