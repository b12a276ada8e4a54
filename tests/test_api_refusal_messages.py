"""The JSON API's approve and decline refusals (``not_approvable``) each say what happened
and what to do next in ``message``: it was null for an expired proposal, one an approval was
carrying out (``in_progress``), a superseded one, the requester's own, and a missing or
rejected passkey, so a service had only the reason's code to show its people. Through the
HTTP app, on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD, count_events
from tests.test_governance_api import TO_ACCOUNT, Api


@pytest.fixture
def api(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield Api(cs, seeded, client)


def _refused(response: Any, reason: str) -> str:
    """The refusal's message, after checking it is the refusal ``reason`` (200, as every
    answer the proposal itself gives)."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["result"], body["reason"]) == ("not_approvable", reason)
    message = body["message"]
    assert isinstance(message, str)
    assert message.strip() == message
    assert "nothing" in message.lower()  # each says that this request changed nothing
    return message


def test_an_expired_proposal_says_it_expired_and_to_propose_it_again(api, clock: FakeClock):
    proposal_id = api.propose()["proposal_id"]
    clock.advance(seconds=86400 + 1)

    approving = _refused(api.approve(proposal_id), "expired")
    assert approving == (
        "This proposal expired before it was approved: nothing was changed, and it can no "
        "longer be approved or declined. If it is still wanted, propose it again."
    )
    declining = api.call("POST", f"/api/v1/proposals/{proposal_id}/decline")
    assert _refused(declining, "expired") == approving
    assert _refused(api.approve(proposal_id), "expired") == approving  # its Expired, stored


def test_an_approval_under_way_says_to_read_its_outcome_and_not_to_do_it_again(api, monkeypatch):
    proposal_id = api.propose()["proposal_id"]
    providers = api.cs.proposals.settlement.providers
    payments = providers["payments"]
    during: list[Any] = []

    class Slow:
        """The payment provider, asked to approve the proposal once more while its refund is
        under way (its claim committed, no outcome yet)."""

        name = payments.name

        def __getattr__(self, name: str) -> Any:
            return getattr(payments, name)

        def perform(self, key: str, request: Any) -> Any:
            during.append(api.approve(proposal_id))
            during.append(api.call("POST", f"/api/v1/proposals/{proposal_id}/decline"))
            return payments.perform(key, request)

    monkeypatch.setattr(api.cs.proposals.settlement, "providers", {**providers, "payments": Slow()})
    executed = api.approve(proposal_id)

    assert executed.json()["result"] == "executed"
    approving, declining = (_refused(answer, "in_progress") for answer in during)
    assert (
        approving
        == declining
        == (
            "An approval is carrying this proposal out right now: this request changed nothing. "
            "Read the proposal again in a moment to see its outcome, and do not do it another "
            "way: it may already have happened."
        )
    )
    assert len(api.cs.sandbox.refunds()) == 1


def test_a_superseded_proposal_names_the_proposal_to_review_instead(api):
    original = api.propose()["proposal_id"]
    newer = api.revise(original, TO_ACCOUNT).json()["proposal_id"]

    message = _refused(api.approve(original), "superseded")
    assert message == (
        f"A newer proposal replaced this one: nothing was changed by it, and it can no longer "
        f"be approved or declined. Review the newer one instead: {newer}."
    )
    declining = api.call("POST", f"/api/v1/proposals/{original}/decline")
    assert _refused(declining, "superseded") == message


def test_the_requester_and_a_missing_or_rejected_passkey_say_who_and_how_may_approve(api):
    api.set_policy(REFUND, {"approvals": 1, "requester_may_approve": False, "above_cents": None})
    own = api.propose()["proposal_id"]
    assert _refused(api.approve(own), "requester_may_not_approve") == (
        "Its approval policy does not let the person who requested it approve it, whichever "
        "token acts for them: nothing changed. Another manager must approve it."
    )

    policy = {
        "approvals": 1,
        "above_cents": None,
        "requester_may_approve": True,
        "require_passkey": True,
    }
    assert api.set_policy(REFUND, policy).status_code == 200
    signed = api.propose("refund-stale")["proposal_id"]
    before = count_events(api.cs)
    assert _refused(api.approve(signed), "passkey_required") == (
        "Its approval policy requires each approval to be signed with the approver's passkey: "
        "nothing changed. Get a challenge from its approval-challenge, have the approver's "
        "passkey sign it, and send the result as passkey_assertion; or approve it on its page "
        "in the browser."
    )
    forged = {"passkey_assertion": {"nonce": "not-a-nonce", "credential": {}}}
    path = f"/api/v1/proposals/{signed}/approve"
    assert _refused(api.call("POST", path, AVA, forged), "passkey_rejected") == (
        "The passkey assertion given does not verify (not one of the approver's passkeys, an "
        "expired or foreign challenge, a bad signature or no user verification): nothing "
        "changed. Get a fresh approval-challenge and have the passkey sign it again."
    )
    assert count_events(api.cs) == before


def test_a_decided_proposal_still_answers_its_stored_outcome(api):
    proposal_id = api.propose(request=TO_CARD)["proposal_id"]
    declined = api.call("POST", f"/api/v1/proposals/{proposal_id}/decline").json()
    assert _refused(api.approve(proposal_id), "not_pending") == declined["message"]
    assert "declined this proposal" in declined["message"]
