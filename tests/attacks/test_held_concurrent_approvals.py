"""Held: twenty simultaneous approvals of one card refund refund the card once.

The red team fired 20 approvals of one pending card refund at the same moment: through one
server (20 threads) and through two server processes sharing the database (10 each). Exactly
one request reached the payment provider, one outcome was recorded, and every answer agrees
with it: one ``executed``, every other one ``already_completed`` with that same outcome, or
``not_approvable`` because it was ``in_progress`` at that moment. ``audit verify`` holds.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import service_actions
from fastapi.testclient import TestClient

from tests.attacks.conftest import Api, audit_verify
from tests.conftest import AVA, REFUND, count_events

APPROVALS = 20


@pytest.fixture(autouse=True)
def _one_token_may_send_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race needs all of one token's approvals under way at once: past
    COUNTERSIGN_REQUESTS_IN_FLIGHT (4) they are refused 429 before they race
    (test_requests_in_flight.py)."""
    monkeypatch.setenv("COUNTERSIGN_REQUESTS_IN_FLIGHT", str(APPROVALS))


def _race(clients: list[TestClient], path: str, token: str) -> list[tuple[int, Any]]:
    """APPROVALS threads, spread over ``clients``, all released at once."""
    start = threading.Barrier(APPROVALS)
    answers: list[tuple[int, Any]] = []
    spans: list[tuple[float, float]] = []
    guard = threading.Lock()

    def approve(number: int) -> None:
        client = clients[number % len(clients)]
        start.wait(timeout=30)
        began = time.monotonic()
        response = client.post(path, headers={"Authorization": f"Bearer {token}"})
        ended = time.monotonic()
        body = response.json() if response.content else None
        with guard:
            answers.append((response.status_code, body))
            spans.append((began, ended))

    threads = [threading.Thread(target=approve, args=(n,)) for n in range(APPROVALS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    spans.sort()
    assert any(later < first_end for (_, first_end), (later, _) in itertools.pairwise(spans)), (
        "no two approvals were in flight at once: nothing raced"
    )
    return answers


def _assert_refunded_once(api: Api, proposal_id: str, answers: list[tuple[int, Any]]) -> None:
    assert len(answers) == APPROVALS
    assert {status for status, _ in answers} == {200}, answers
    kinds = Counter((body["result"], body["status"], body["reason"]) for _, body in answers)
    executed = [body for _, body in answers if body["result"] == "executed"]
    assert len(executed) == 1, kinds
    outcome = executed[0]["outcome"]
    assert (executed[0]["status"], outcome["kind"]) == ("succeeded", "succeeded")
    assert set(kinds) <= {
        ("executed", "succeeded", None),
        ("already_completed", "succeeded", None),
        ("not_approvable", "executing", "in_progress"),
    }, kinds
    for _, body in answers:
        if body["result"] == "already_completed":
            assert body["outcome"] == outcome
        assert body["proposal_id"] == proposal_id

    # One provider request, one refund, one outcome.
    refunds = api.cs.sandbox.refunds()
    assert [(r["idempotency_key"], r["requests"], r["status"], r["amount_cents"])
            for r in refunds] == [(f"countersign:{REFUND}:{proposal_id}", 1, "succeeded",
                                   4800)]  # fmt: skip
    for event in ("Approved", "Claimed", "Succeeded"):
        assert count_events(api.cs, f"Proposal.{event}") == 1, event
    order = api.cs.club.investigate("granite", api.seeded["orders"]["refund-ok"])
    assert [(r["destination"], r["amount_cents"]) for r in order["refunds"]] == [("card", 4800)]
    # The answer that executed is in the service log; the others changed nothing, and are
    # answered without a row each.
    logged = [a["result"] for a in service_actions(api.cs, "granite") if a["action"] == "approve"]
    assert logged == ["executed"]
    assert api.get(f"/api/v1/proposals/{proposal_id}").json()["status"] == "succeeded"
    report = audit_verify(api.cs)
    assert report["ok"], report


def test_twenty_simultaneous_approvals_through_one_server_refund_once(api: Api):
    proposal_id = api.propose()

    answers = _race([api.client], f"/api/v1/proposals/{proposal_id}/approve", api.tokens[AVA])

    _assert_refunded_once(api, proposal_id, answers)


@pytest.fixture
def second_server(other: Countersign) -> Iterator[TestClient]:
    """A second server process's app: its own wiring and connections, the same database."""
    with TestClient(create_app(other), raise_server_exceptions=False) as client:
        yield client


def test_twenty_simultaneous_approvals_through_two_servers_refund_once(
    api: Api, second_server: TestClient
):
    proposal_id = api.propose()

    answers = _race(
        [api.client, second_server], f"/api/v1/proposals/{proposal_id}/approve", api.tokens[AVA]
    )

    _assert_refunded_once(api, proposal_id, answers)
