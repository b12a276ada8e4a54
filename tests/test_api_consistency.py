"""What an integrator's second walk found, each kept fixed here: every surface reports a
proposal past its expiry as expired before the sweeper records it, the passkey challenge of
a decided proposal is refused as approving it is, the pages' 503 for a stopped read model
says when to try again, and a blank assistant message is refused before any model call."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError
from fastapi.testclient import TestClient

from tests.conftest import AVA, count_events
from tests.test_passkeys import register, require_passkey, signed
from tests.test_web_pages import Web, web_for


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def test_the_pages_503_for_a_stopped_read_model_says_when_to_try_again(web, monkeypatch):
    """The API's 503 unavailable carries Retry-After: 60; the page's said no wait at all."""
    ava = web.browser(AVA)

    def stopped(names: Any = None) -> None:
        raise ProjectionStoppedError("projection 'browser_view' stopped at notification 7", 7)

    monkeypatch.setattr(web.cs, "catch_up", stopped)
    page = ava.get("/")
    assert page.status_code == 503, page.text
    assert page.headers["retry-after"] == "60"
    assert "notification 7" not in page.text


def test_a_stopped_read_model_is_logged_once_a_while_not_once_a_request(web, monkeypatch, caplog):
    """The inbox (the page and the API's) logged "projection stopped" at ERROR on every
    request until an operator acted: a hundred visitors a minute buried the log in one
    line. The other pages' stopped projections were said once a while; the inbox's too."""
    ava = web.browser(AVA)
    api = TestClient(web.app, raise_server_exceptions=False)
    auth = _approver(web.cs)

    def stopped(names: Any = None) -> None:
        raise ProjectionStoppedError("projection 'browser_view' stopped at notification 7", 7)

    monkeypatch.setattr(web.cs, "catch_up", stopped)
    with caplog.at_level("ERROR"):
        for _ in range(4):
            assert ava.get("/").status_code == 503
            assert api.get("/api/v1/inbox", headers=auth).status_code == 503

    said = [r for r in caplog.records if r.getMessage().startswith("projection stopped")]
    assert [(r.name, r.levelname) for r in said] == [
        ("countersign.web", "ERROR"),
        ("countersign.http", "ERROR"),
    ]
    assert all(r.getMessage().endswith("stopped at notification 7") for r in said)
    web.cs.outages.every = 0  # the next one said tells how many went unsaid since
    with caplog.at_level("ERROR"):
        assert ava.get("/").status_code == 503
    said = [r for r in caplog.records if r.getMessage().startswith("projection stopped")]
    unsaid = "(and 3 more like it since the last time this was logged)"
    assert said[-1].getMessage().endswith(f"stopped at notification 7 {unsaid}")


def _approver(cs: Countersign) -> dict[str, str]:
    token = issue_token(cs, "granite", "billing", ["orders.refund"], issued_by=AVA, kind="approver")
    return {"Authorization": f"Bearer {token.token}"}


def test_every_surface_reports_a_proposal_past_its_expiry_as_expired(web, clock):
    """Until the sweeper recorded Expired (never, with only ``serve`` running on PostgreSQL),
    the API's card and status, and so MCP's proposal_status and the command line's show,
    said ``pending`` of a proposal nobody could approve, which the pages showed expired.
    Reading it records nothing."""
    cs = web.cs
    proposal_id = web.propose()
    versions = len(cs.audit.history(proposal_id, None)["events"])
    clock.advance(days=2)
    api = TestClient(web.app, raise_server_exceptions=False)
    auth = _approver(cs)
    path = f"/api/v1/proposals/{proposal_id}"
    card = api.get(path, headers=auth)
    assert card.status_code == 200, card.text
    assert card.json()["status"] == "expired"
    assert card.json()["withdraws"] == []
    status = api.get(f"{path}/status", headers=auth)
    assert status.status_code == 200, status.text
    assert status.json()["status"] == "expired"
    # What MCP's proposal_status and the command line's show and status read.
    assert cs.access.status(proposal_id, AVA).status == "expired"
    assert cs.access.card(proposal_id, AVA).status == "expired"
    assert "Expired" in web.browser(AVA).get(f"/proposals/{proposal_id}").text
    # Nothing was written by reading it; the sweeper still records it.
    assert len(cs.audit.history(proposal_id, None)["events"]) == versions
    assert web.proposal(proposal_id).status == "pending"
    approved = api.post(f"{path}/approve", headers=auth).json()
    assert (approved["result"], approved["reason"], approved["status"]) == (
        "not_approvable",
        "expired",
        "expired",
    )
    assert api.get(f"{path}/status", headers=auth).json()["status"] == "expired"


def test_the_passkey_challenge_of_a_decided_proposal_is_refused_as_approving_it_is(web, clock):
    """The approval challenge answered a fresh challenge for a proposal already decided,
    so a person signed with their passkey for nothing; it now answers 409 not-approvable with
    the reason and the message approving it gives, and writes nothing."""
    cs = web.cs
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    api = TestClient(web.app, raise_server_exceptions=False)
    auth = _approver(cs)
    declined = web.propose("refund-stale")
    assert api.post(f"/api/v1/proposals/{declined}/decline", headers=auth).status_code == 200
    replaced = web.propose("refund-two-approvers")
    web.propose("refund-two-approvers")  # a newer one for the same thing replaces it
    succeeded = web.propose("account-credit")
    done = cs.access.approve(succeeded, AVA, signed(cs, succeeded, AVA, key))
    assert done.result == "executed"
    expired = web.propose("refund-ok")
    clock.advance(days=2)
    before = count_events(cs)
    for proposal_id, reason, status in (
        (declined, "not_pending", "declined"),
        (replaced, "superseded", "superseded"),
        (succeeded, "not_pending", "succeeded"),
        (expired, "expired", "expired"),
    ):
        path = f"/api/v1/proposals/{proposal_id}"
        refused = api.get(f"{path}/approval-challenge", headers=auth)
        assert refused.status_code == 409, (reason, refused.text)
        problem = refused.json()
        assert problem["type"] == "urn:countersign:problem:not-approvable"
        assert (problem["reason"], problem["proposal_status"]) == (reason, status)
        assert "nonce" not in problem
        assert count_events(cs) == before  # refusing it records nothing, Expired included
        approved = api.post(f"{path}/approve", headers=auth).json()
        if approved["result"] == "not_approvable":  # a succeeded one is already_completed
            assert approved["reason"] == reason
            assert problem["detail"] == approved["message"]
            assert problem["superseded_by"] == approved.get("superseded_by")
    # A pending one still gets its challenge.
    fresh = web.propose("refund-declined")
    challenge = api.get(f"/api/v1/proposals/{fresh}/approval-challenge", headers=auth)
    assert challenge.status_code == 200, challenge.text
    assert challenge.json()["passkeys"] == 1


def test_the_review_page_asks_no_passkey_for_a_proposal_past_its_expiry(web, clock):
    """The pages' equivalent of the challenge: the review page of a proposal no approval can
    decide offers no passkey to sign with, before the sweeper records its expiry too."""
    require_passkey(web.cs)
    register(web.cs, AVA, "Ava's laptop")
    proposal_id = web.propose()
    ava = web.browser(AVA)
    assert "Approve with my passkey" in ava.get(f"/proposals/{proposal_id}").text
    clock.advance(days=2)
    page = web.browser(AVA).get(f"/proposals/{proposal_id}")  # signed in again: days later
    assert page.status_code == 200
    assert "Approve with my passkey" not in page.text
    assert "passkey.js" not in page.text
