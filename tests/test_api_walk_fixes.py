"""What an integrator's walk through the JSON API found, each kept fixed here: a decline sent
after a proposal's expiry, the status route's language, the schema of the status route and
of a replay as of a version, the Retry-After of a stopped read model's 503, and the wait a
429 names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from countersign.application.assistant.closing_texts import RATE_LIMITED
from countersign.application.assistant.turn_limits import TooManyTurnsError
from countersign.application.proposal_limit import TooManyProposalsError
from countersign.domain.proposal_status import ProposalStatus
from countersign.domain.times import seconds_wait
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD


@pytest.fixture
def client(cs: Countersign, seeded: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield client


def _approver(cs: Countersign) -> dict[str, str]:
    token = issue_token(cs, "granite", "billing", ["orders.refund"], issued_by=AVA, kind="approver")
    return {"Authorization": f"Bearer {token.token}"}


def _propose(client: TestClient, seeded: dict[str, Any], auth: dict[str, str]) -> str:
    body = {"operation": REFUND, "resource_id": seeded["orders"]["refund-ok"], "request": TO_CARD}
    created = client.post("/api/v1/proposals", json=body, headers=auth)
    assert created.status_code == 201, created.text
    return str(created.json()["proposal_id"])


def test_a_decline_after_the_expiry_records_it_expired_as_an_approve_would(
    cs, seeded, clock, client
):
    """Before the sweeper passed, a decline sent past the expiry recorded a manager's decline
    of a proposal that had lapsed (and an approve of it answered expired): which one the
    record said depended on when the sweeper ran."""
    auth = _approver(cs)
    declined = _propose(client, seeded, auth)
    clock.advance(days=2)
    answer = client.post(f"/api/v1/proposals/{declined}/decline", headers=auth)
    assert answer.status_code == 200, answer.text
    assert (answer.json()["result"], answer.json()["reason"]) == ("not_approvable", "expired")
    assert answer.json()["status"] == "expired"
    card = client.get(f"/api/v1/proposals/{declined}", headers=auth).json()
    assert (card["status"], card["declined_by"]) == ("expired", None)
    # The same answer as an approve sent instead, and a repeat changes nothing.
    approved = client.post(f"/api/v1/proposals/{declined}/approve", headers=auth).json()
    assert (approved["result"], approved["reason"]) == ("not_approvable", "expired")
    again = client.post(f"/api/v1/proposals/{declined}/decline", headers=auth).json()
    assert (again["result"], again["reason"], again["status"]) == (
        "not_approvable",
        "expired",
        "expired",
    )
    history = cs.audit.history(declined, None)
    assert [e["type"] for e in history["events"]][-1] == "Expired"
    assert "Declined" not in [e["type"] for e in history["events"]]


def test_the_status_route_speaks_the_language_the_card_route_does(cs, seeded, client):
    """The card took ``?language=fr``; the status route an outcome's ``status_path`` points to
    answered its message in English whatever was asked (its service speaks both)."""
    auth = _approver(cs)
    proposal_id = _propose(client, seeded, auth)
    approved = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=auth).json()
    assert approved["result"] == "executed"
    path = f"/api/v1/proposals/{proposal_id}"
    card = client.get(path, params={"language": "fr"}, headers=auth).json()
    status = client.get(f"{path}/status", params={"language": "fr"}, headers=auth)
    assert status.status_code == 200, status.text
    assert status.json()["message"] == card["message"]
    assert status.json()["message"].startswith("Remboursement")
    english = client.get(f"{path}/status", headers=auth).json()
    assert english["message"] == approved["message"]
    refused = client.get(f"{path}/status", params={"language": "de"}, headers=auth)
    assert refused.status_code == 422
    assert refused.json()["problems"][0]["field"] == "language"


def test_the_schema_names_every_status_a_proposal_can_answer(cs, client):
    """The status route answers ``superseded`` (a replaced proposal's), which its schema's
    list of statuses left out."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in ("ProposalCardOut", "ProposalStatusOut"):
        described = schemas[model]["properties"]["status"]["description"]
        words = set(described.replace(",", " ").replace(".", " ").split())
        assert {str(s) for s in ProposalStatus} <= words, (model, described)


def test_a_stopped_read_model_answers_503_with_retry_after(cs, seeded, client, monkeypatch):
    """Every other 503 (busy, database-unavailable) says when to try again; the one for a read
    model stopped at an event it cannot process said nothing, so a client or proxy that
    honours Retry-After had no wait to honour."""
    auth = _approver(cs)

    def stopped(names: Any = None) -> None:
        raise ProjectionStoppedError("projection 'browser_view' stopped at notification 7", 7)

    monkeypatch.setattr(cs, "catch_up", stopped)
    answer = client.get("/api/v1/inbox", headers=auth)
    assert answer.status_code == 503, answer.text
    assert answer.json()["type"] == "urn:countersign:problem:unavailable"
    assert int(answer.headers["retry-after"]) > 0
    assert "notification 7" not in answer.text
    assert "browser_view" not in answer.text


def test_a_one_second_wait_reads_one_second_not_one_seconds(cs, seeded, client, monkeypatch):
    """A 30/minute limit often leaves a one-second wait: the API's 429 said "try again in 1
    seconds", the assistant's closing words "1 seconds" ("1 secondes" in French)."""
    auth = _approver(cs)

    def limited(*args: Any, **kwargs: Any) -> None:
        raise TooManyProposalsError(1)

    monkeypatch.setattr(cs.access, "propose", limited)
    body = {"operation": REFUND, "resource_id": seeded["orders"]["refund-ok"], "request": TO_CARD}
    answer = client.post("/api/v1/proposals", json=body, headers=auth)
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["detail"].endswith("try again in 1 second.")
    assert str(TooManyProposalsError(1)).endswith("try again in 1 second")
    assert str(TooManyTurnsError(1)).endswith("try again in 1 second")
    assert str(TooManyTurnsError(60)).endswith("try again in 60 seconds")
    assert RATE_LIMITED.text("en", wait=seconds_wait(1)).endswith("try again in 1 second.")
    assert RATE_LIMITED.text("fr", wait=seconds_wait(1, "fr")).endswith("dans 1 seconde.")
    assert RATE_LIMITED.text("fr", wait=seconds_wait(2, "fr")).endswith("dans 2 secondes.")


def test_the_schema_of_a_replay_as_of_names_every_field_it_answers(cs, seeded, client):
    """``history?as_of=`` answers ``approvals``, ``approvals_required`` and
    ``no_longer_counting`` in its ``as_of`` state, which its schema did not name: a client
    generated from the OpenAPI document dropped them."""
    auth = _approver(cs)
    proposal_id = _propose(client, seeded, auth)
    client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=auth)
    token = issue_token(cs, "granite", "audit", ["audit.read"], issued_by=AVA, kind="approver")
    answer = client.get(
        f"/api/v1/proposals/{proposal_id}/history",
        params={"as_of": 2},
        headers={"Authorization": f"Bearer {token.token}"},
    )
    assert answer.status_code == 200, answer.text
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert set(answer.json()["as_of"]) == set(schemas["HistoryAsOfOut"]["properties"])
