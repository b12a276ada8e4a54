"""An agent token replaced what its person, or another of their agents, had asked for.

Proposing again for the same thing supersedes the pending proposal. An agent token (or an
assistant) may do it only where its member requested the pending one and nobody approved it
(``freezing.hold_for_people``): "an assistant refining its own request". But the rule asked
only *who* requested it, not *through what*: an attack run gave Ava's agent token a
customer's e-mail saying the refund should go to account credit. Ava had already proposed the
refund to the card herself, on the pages; the agent proposed account credit and her request
was superseded ("Replaced by a newer proposal"), the agent's version the only one left for
Noah to approve. Another agent token of hers could do the same to the first agent's request.
An edit is a decision that an agent token is refused (``require_decider``); superseding did
the same edit under another name.

Now an agent token replaces only what it requested itself (the proposal's
``requested_through`` is this token's): anything its person asked for in person, or through
another token, is held for people like another member's (409 ``held-for-people``, the MCP
tool ``held_for_people``), nothing is written, and the pending proposal stays approvable. A
token refining its own request, and a person replacing an agent's, supersede as before.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from countersign.application.authorization import Caller
from countersign.application.errors import HeldForPeopleError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import authenticate, issue_token
from fastapi.testclient import TestClient

from tests.attacks.conftest import assert_no_leak
from tests.conftest import AVA, REFUND, TO_CARD

HELD = "urn:countersign:problem:held-for-people"
TO_CREDIT = {**TO_CARD, "destination": "account_credit"}


def _token(cs: Countersign, name: str) -> str:
    return issue_token(cs, "granite", name, ["orders.refund"], issued_by=AVA, kind="agent").token


def _agent(cs: Countersign, name: str) -> Caller:
    found = authenticate(cs, _token(cs, name))
    assert found is not None
    return found.caller


def _propose(cs: Countersign, caller: Caller, order: str, request: dict[str, str]) -> str:
    made = cs.access.propose(caller, operation=REFUND, resource_id=order, request=request)
    return made.proposal_id


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def _stored(cs: Countersign) -> int:
    return len(cs.app.recorder.select_notifications(1, 100_000))


def test_an_agent_token_cannot_replace_what_its_person_asked_for_in_person(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    avas = _propose(cs, Caller(AVA, "granite"), order, TO_CARD)
    before = _stored(cs)

    with pytest.raises(HeldForPeopleError) as held:
        _propose(cs, _agent(cs, "inbox-bot"), order, TO_CREDIT)

    assert held.value.reason == HeldForPeopleError.REQUESTED_ELSEWHERE
    assert "not through this agent token" in str(held.value)
    assert _stored(cs) == before  # nothing was written
    assert _events(cs, avas) == ["Proposed"]
    report = cs.access.approve(avas, Caller("noah@granite.example", "granite"))
    assert (report.result, report.status) == ("executed", "succeeded")


def test_an_agent_token_cannot_replace_another_of_its_persons_agents(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    first = _propose(cs, _agent(cs, "inbox-bot"), order, TO_CARD)

    with pytest.raises(HeldForPeopleError) as held:
        _propose(cs, _agent(cs, "other-bot"), order, TO_CREDIT)

    assert held.value.reason == HeldForPeopleError.REQUESTED_ELSEWHERE
    assert _events(cs, first) == ["Proposed"]


def test_a_token_still_refines_its_own_request_and_a_person_replaces_an_agents(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    agent = _agent(cs, "inbox-bot")
    first = _propose(cs, agent, order, TO_CARD)
    again = cs.access.propose(agent, operation=REFUND, resource_id=order, request=TO_CREDIT)
    assert again.supersedes == [first]

    avas = cs.access.propose(
        Caller(AVA, "granite"), operation=REFUND, resource_id=order, request=TO_CARD
    )
    assert avas.supersedes == [again.proposal_id]


def test_the_api_answers_409_held_for_people(cs, seeded):
    order = seeded["orders"]["refund-ok"]
    avas = _propose(cs, Caller(AVA, "granite"), order, TO_CARD)
    bearer = {"Authorization": f"Bearer {_token(cs, 'inbox-bot')}"}
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        answer = client.post(
            "/api/v1/proposals",
            headers=bearer,
            json={"operation": REFUND, "resource_id": order, "request": TO_CREDIT},
        )
    assert answer.status_code == 409, answer.text
    assert answer.json()["type"] == HELD
    assert "nothing was proposed" in answer.json()["detail"]
    assert avas not in answer.text
    assert_no_leak(answer.text)
    assert _events(cs, avas) == ["Proposed"]


def test_the_words_for_people_say_why_in_english_and_french():
    from countersign.application.assistant.closing_texts import closing_text

    held = [HeldForPeopleError.REQUESTED_ELSEWHERE]
    english = closing_text("held_for_people", [], "en", [], held=held)
    french = closing_text("held_for_people", [], "fr", [], held=held)
    assert english is not None
    assert "asked for directly or through another agent" in english
    assert french is not None
    assert "demandée directement ou par un autre agent" in french
