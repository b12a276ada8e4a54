"""What an approval through the API queries when this process holds nothing of the proposal
(another process made it): the proposal the path names comes with the token's query of the
caller's organization (``EventSourcedStore.read_along``); the claim fetches the order and its
pending slot together, so the settlement after the provider's answer queries nothing; a
repeat, and an approval that cannot claim yet, fetch nothing for a claim they will not make
(application/approve_path.py, ``claim_reads``). A foreign id, an unknown one and a malformed one
cost the same queries as each other and answer alike."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.organization import Organization
from countersign.domain.pending_slot import PendingSlot
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA, TO_CARD
from tests.support.proposing import propose
from tests.support.store_queries import store_queries

GRANITE = Organization.create_id("granite")


def _approver(cs: Countersign) -> dict[str, str]:
    """The headers of a request made with a new approver token of Ava's."""
    token = issue_token(cs, "granite", "bot", ["orders.refund"], issued_by=AVA, kind="approver")
    return {"Authorization": f"Bearer {token.token}"}


def _approve(cs: Countersign, headers: dict[str, str], proposal_id: str) -> dict[str, Any]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        answer = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=headers)
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


def test_an_execution_fetches_the_order_and_its_slot_in_the_claims_one_query(
    cs, other, seeded, monkeypatch
):
    order = UUID(str(seeded["orders"]["refund-ok"]))
    made = propose(other, seeded, "refund-ok", request=TO_CARD)  # in another process
    headers = _approver(cs)
    asked = store_queries(cs, monkeypatch)

    answer = _approve(cs, headers, made)

    assert answer["result"] == "executed", answer
    assert answer["outcome"]["kind"] == "succeeded"
    slot = PendingSlot.create_id(GRANITE, order)
    # The token's organization with the proposal the path names (read_along), then the
    # claim's one query; the settlement (which reads the slot to withdraw what the refund
    # made stale) none.
    assert asked == [[GRANITE, UUID(made)], [order, slot]], asked

    asked.clear()
    again = _approve(cs, headers, made)
    assert again["result"] == "already_completed"
    # The execution's text, written from the result in hand, is the stored outcome's.
    assert answer["message"] == again["message"]
    assert answer["outcome"] == again["outcome"]
    assert asked == [[GRANITE, UUID(made)]], asked  # a repeat fetches nothing for a claim


def test_an_approval_that_cannot_claim_yet_fetches_nothing_for_a_claim(
    cs, other, seeded, monkeypatch
):
    made = propose(other, seeded, "refund-two-approvers", request=TO_CARD)
    headers = _approver(cs)
    asked = store_queries(cs, monkeypatch)

    answer = _approve(cs, headers, made)

    assert answer["result"] == "awaiting_approvals", answer
    assert asked == [[GRANITE, UUID(made)]], asked


def test_unknown_foreign_and_malformed_ids_cost_the_same_query_and_answer_alike(
    cs, other, seeded, monkeypatch
):
    foreign = propose(
        other, seeded, "maple-refund", actor=MIA, organization="maple", request=TO_CARD
    )
    unknown = "5b0c4a0e-0000-4000-8000-000000000000"
    headers = _approver(cs)
    answers = []
    for named in (foreign, unknown):
        asked = store_queries(cs, monkeypatch)
        with TestClient(create_app(cs), raise_server_exceptions=False) as client:
            answer = client.post(f"/api/v1/proposals/{named}/approve", headers=headers)
        assert answer.status_code == 404, answer.text
        answers.append(answer.json()["type"])
        assert asked == [[GRANITE, UUID(named)]], asked  # one query; nothing more
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        malformed = client.post("/api/v1/proposals/not-an-id/approve", headers=headers)
    assert malformed.status_code == 404
    assert answers == [malformed.json()["type"]] * 2
