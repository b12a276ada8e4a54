"""Held: governance cannot be edited, lowered or bypassed from outside.

* Mia (maple) holds a granite proposal id and tries to edit it: the unknown-id 404, and
  nothing is written.
* A token without ``policies.manage`` (narrower than its member, or acting for a member who
  lost it) tries to read or change a policy: 403, nothing written.
* A manager lowers the quorum while a large refund waits for its second approver: the open
  proposal keeps the requirement it was frozen with, so one approval still runs nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

from countersign.domain.club.organization import Organization, Permission
from countersign.infrastructure.identity.tokens import issue_token

from tests.attacks.conftest import (
    ALL_PERMISSIONS,
    Api,
    assert_nothing_changed,
    header_shape,
    problem,
    snapshot,
)
from tests.conftest import AVA, MIA, REFUND, TO_CARD

NOAH = "noah@granite.example"
TO_ACCOUNT = {**TO_CARD, "destination": "account_credit"}


def _revise(api: Api, proposal_id: str, request: Any, as_: str) -> Any:
    return api.post(f"/api/v1/proposals/{proposal_id}/revisions", {"request": request}, as_=as_)


def _put_policy(api: Api, body: Any, as_: str, operation: str = REFUND) -> Any:
    return api.client.put(f"/api/v1/policies/{operation}", headers=api.headers(as_), json=body)


def test_mia_cannot_edit_a_granite_proposal(api: Api):
    granite_id = api.propose()
    unknown_id = str(uuid.uuid4())
    before = snapshot(api.cs)

    for request in (TO_ACCOUNT, {**TO_CARD, "amount_cents": 1}, {}):
        theirs = _revise(api, granite_id, request, MIA)
        nothing = _revise(api, unknown_id, request, MIA)
        assert theirs.status_code == 404, theirs.text
        assert problem(theirs) == problem(nothing)
        assert header_shape(theirs) == header_shape(nothing)
        assert granite_id not in theirs.text

    assert_nothing_changed(api.cs, before)
    card = api.get(f"/api/v1/proposals/{granite_id}").json()  # Ava's view
    assert (card["status"], card["superseded_by"]) == ("pending", None)


def test_a_token_without_policies_manage_cannot_read_or_change_a_policy(api: Api):
    narrow = issue_token(
        api.cs, "granite", "refund-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    noah = issue_token(
        api.cs, "granite", "noah-bot", ALL_PERMISSIONS, issued_by=NOAH, kind="approver"
    ).token
    # Noah's token was given policies.manage; then Noah lost it. The token does not keep it.
    club = api.cs.store.get(Organization.create_id("granite"), Organization)
    club.change_permissions(NOAH, [Permission.REFUND_ORDERS])
    api.cs.store.save(club)
    before = snapshot(api.cs)
    lower = {"approvals": 1, "above_cents": None, "requester_may_approve": True}

    for token in (narrow, noah):
        for response in (
            _put_policy(api, lower, token),
            _put_policy(api, {**lower, "approvals": 5}, token),
            api.get("/api/v1/policies", as_=token),
        ):
            status, body = problem(response)
            assert (status, body["type"]) == (403, "urn:countersign:problem:forbidden")
            assert "policies.manage" in body["detail"]

    assert_nothing_changed(api.cs, before)
    policies = api.get("/api/v1/policies").json()["policies"]
    refund = next(p for p in policies if p["operation"] == REFUND)
    assert (refund["approvals"], refund["above_cents"], refund["set_by"]) == (2, 10000, "seed")
    # Mia's full token sets maple's policy only: granite's is untouched by it.
    assert _put_policy(api, {**lower, "approvals": 3}, MIA).json()["changed"] is True
    again = api.get("/api/v1/policies").json()["policies"]
    assert next(p for p in again if p["operation"] == REFUND) == refund


def test_lowering_the_quorum_does_not_lower_a_frozen_proposals_requirement(api: Api):
    noah = issue_token(
        api.cs, "granite", "noah-bot", ALL_PERMISSIONS, issued_by=NOAH, kind="approver"
    ).token
    proposal_id = api.propose("refund-two-approvers")  # $128.00: two approvers
    assert api.post(f"/api/v1/proposals/{proposal_id}/approve").json()["result"] == (
        "awaiting_approvals"
    )

    lowered = _put_policy(api, {"approvals": 1}, AVA)  # Ava, who already approved, lowers it
    repeat = api.post(f"/api/v1/proposals/{proposal_id}/approve")
    other_token = issue_token(
        api.cs, "granite", "ava-again", ALL_PERMISSIONS, issued_by=AVA, kind="approver"
    )
    by_another_token = api.post(f"/api/v1/proposals/{proposal_id}/approve", as_=other_token.token)

    assert lowered.json()["changed"] is True
    for answer in (repeat.json(), by_another_token.json()):
        assert answer == {
            "result": "awaiting_approvals",
            "proposal_id": proposal_id,
            "status": "pending",
            "outcome": None,
            "reason": "already_approved_by_you",
            "message": None,
            "approvals": 1,
            "required": 2,
            "superseded_by": None,
        }
    card = api.get(f"/api/v1/proposals/{proposal_id}").json()
    assert (card["approvals_required"], card["policy"]["rule"]["approvals"]) == (2, 2)
    assert api.cs.sandbox.refunds() == []  # nothing ran on one person's word

    second = api.post(f"/api/v1/proposals/{proposal_id}/approve", as_=noah).json()
    assert (second["result"], second["status"]) == ("executed", "succeeded")
    assert [r["requests"] for r in api.cs.sandbox.refunds()] == [1]
