"""Governance through the JSON API: revisions, policies, and the approve answers of quorum,
separation of duties and supersession; each checked against the application's own document
and the OpenAPI document that describes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token, service_actions
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA, REFUND, TO_CARD, count_events
from tests.test_http_api import ALL, problem

NOAH = "noah@granite.example"
TO_ACCOUNT = {**TO_CARD, "destination": "account_credit"}


class Api:
    """A seeded countersign behind its HTTP app; ``tokens`` by member (all permissions)."""

    def __init__(self, cs: Countersign, seeded: dict[str, Any], client: TestClient) -> None:
        self.cs = cs
        self.seeded = seeded
        self.client = client
        self.tokens = {
            AVA: issue_token(cs, "granite", "ava-bot", ALL, issued_by=AVA, kind="approver").token,
            NOAH: issue_token(
                cs, "granite", "noah-bot", ALL, issued_by=NOAH, kind="approver"
            ).token,
            MIA: issue_token(cs, "maple", "mia-bot", ALL, issued_by=MIA, kind="approver").token,
        }

    def token(self, name: str, permissions: list[str], issued_by: str = AVA) -> str:
        return issue_token(
            self.cs, "granite", name, permissions, issued_by=issued_by, kind="approver"
        ).token

    def call(self, method: str, path: str, as_: str = AVA, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {self.tokens.get(as_, as_)}"}
        if body is None:
            return self.client.request(method, path, headers=headers)
        return self.client.request(method, path, headers=headers, json=body)

    def propose(self, order: str = "refund-ok", as_: str = AVA, request: Any = None) -> Any:
        body = {
            "operation": REFUND,
            "resource_id": self.seeded["orders"][order],
            "request": request or TO_CARD,
        }
        created = self.call("POST", "/api/v1/proposals", as_, body)
        assert created.status_code == 201, created.text
        return created.json()

    def revise(self, proposal_id: str, request: Any, as_: str = AVA) -> Any:
        path = f"/api/v1/proposals/{proposal_id}/revisions"
        return self.call("POST", path, as_, {"request": request})

    def approve(self, proposal_id: str, as_: str = AVA) -> Any:
        return self.call("POST", f"/api/v1/proposals/{proposal_id}/approve", as_)

    def card(self, proposal_id: str, as_: str = AVA) -> Any:
        return self.call("GET", f"/api/v1/proposals/{proposal_id}", as_).json()

    def set_policy(self, operation: str, body: Any, as_: str = AVA) -> Any:
        return self.call("PUT", f"/api/v1/policies/{operation}", as_, body)


@pytest.fixture
def api(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield Api(cs, seeded, client)


def _refunds(cs: Countersign) -> int:
    return sum(int(r["requests"]) for r in cs.sandbox.refunds())  # type: ignore[call-overload]


# -- revisions ----------------------------------------------------------------------------------


def test_a_revision_is_a_new_proposal_that_supersedes_the_old_one(api):
    original = api.propose()["proposal_id"]

    response = api.revise(original, TO_ACCOUNT)

    assert response.status_code == 201, response.text
    created = response.json()
    new = created["proposal_id"]
    assert response.headers["location"] == f"/api/v1/proposals/{new}"
    assert (created["revision_of"], created["supersedes"], created["approvals_required"]) == (
        original,
        [original],
        1,
    )
    assert created["preview"]["amount_cents"] == 4800  # computed again, never sent
    card = api.card(new)
    assert card == api.cs.cards.card(new, AVA).to_json()
    assert card["revision_of"] == original
    assert [(c["field"], c["label"]) for c in card["changes"]] == [
        ("refund_destination", "Refund to")
    ]
    french = api.call("GET", f"/api/v1/proposals/{new}?language=fr").json()["changes"]
    assert french[0]["label"] != "Refund to"
    old = api.card(original)
    assert (old["status"], old["superseded_by"], old["superseded_reason"]) == (
        "superseded",
        new,
        "revised",
    )
    approving_old = api.approve(original)
    assert approving_old.status_code == 200
    assert approving_old.json() | {"status": None} == {
        "result": "not_approvable",
        "proposal_id": original,
        "status": None,
        "outcome": None,
        "reason": "superseded",
        "message": (
            "A newer proposal replaced this one: nothing was changed by it, and it can no "
            f"longer be approved or declined. Review the newer one instead: {new}."
        ),
        "approvals": None,
        "required": None,
        "superseded_by": new,
        "superseded_reason": "revised",
    }
    assert api.approve(new).json()["result"] == "executed"
    assert _refunds(api.cs) == 0  # an account credit: no card refund at all
    actions = [(a["action"], a["result"]) for a in service_actions(api.cs, "granite")]
    assert ("revise", "pending") in actions


def test_an_edit_with_problems_is_a_422_and_changes_nothing(api):
    original = api.propose()["proposal_id"]
    before = count_events(api.cs)

    bad = api.revise(original, {**TO_CARD, "amount_cents": 1})
    no_request = api.call("POST", f"/api/v1/proposals/{original}/revisions", body={"x": 1})

    status, body = problem(bad)
    assert (status, body["type"]) == (422, "urn:countersign:problem:invalid-request")
    assert [p["field"] for p in body["problems"]] == ["amount_cents"]
    status, body = problem(no_request)
    assert status == 422
    assert {(p["field"], p["message"]) for p in body["problems"]} == {
        ("request", "this field is required"),
        ("x", "unknown field; remove it"),
    }
    assert count_events(api.cs) == before
    assert api.card(original)["status"] == "pending"


def test_an_edit_of_what_ran_or_was_superseded_is_a_409_naming_the_newer_one(api):
    ran = api.propose()["proposal_id"]
    api.approve(ran)
    old = api.propose("refund-stale")["proposal_id"]
    newer = api.revise(old, TO_ACCOUNT).json()["proposal_id"]
    before = count_events(api.cs)

    executed = api.revise(ran, TO_ACCOUNT)
    superseded = api.revise(old, TO_ACCOUNT)

    status, body = problem(executed)
    assert (status, body["type"]) == (409, "urn:countersign:problem:not-revisable")
    assert "succeeded" in body["detail"]
    assert (body["proposal_status"], body["superseded_by"]) == ("succeeded", None)
    status, body = problem(superseded)
    assert status == 409
    assert body["detail"].endswith(f"Edit the newer one instead: {newer}.")
    # For a program too (it was in the English detail only), as the CLI's --json has it.
    assert (body["proposal_status"], body["superseded_by"]) == ("superseded", newer)
    assert count_events(api.cs) == before
    schema = api.call("GET", "/openapi.json").json()["components"]["schemas"]["ProblemDocument"]
    assert {"proposal_status", "superseded_by"} <= set(schema["properties"])


def test_an_edit_needs_the_operations_permission_and_the_club(api):
    original = api.propose()["proposal_id"]
    auditor = api.token("auditor", ["audit.read"])
    drafter = api.token("drafter", ["email_broadcasts.prepare"])
    before = count_events(api.cs)

    for token in (auditor, drafter):
        status, body = problem(api.revise(original, TO_ACCOUNT, as_=token))
        assert (status, body["type"]) == (403, "urn:countersign:problem:forbidden")
    foreign = api.revise(original, TO_ACCOUNT, as_=MIA)
    unknown = api.revise("7" * 32, TO_ACCOUNT, as_=MIA)
    assert problem(foreign) == problem(unknown)
    assert foreign.status_code == 404
    assert count_events(api.cs) == before


# -- quorum and separation of duties ------------------------------------------------------------


def test_two_approvers_through_the_api(api):
    created = api.propose("refund-two-approvers")
    proposal_id = created["proposal_id"]
    assert created["approvals_required"] == 2

    first = api.approve(proposal_id, AVA)
    again = api.approve(proposal_id, AVA)

    assert first.status_code == again.status_code == 200
    assert first.json() == {
        "result": "awaiting_approvals",
        "proposal_id": proposal_id,
        "status": "pending",
        "outcome": None,
        "reason": None,
        "message": None,
        "approvals": 1,
        "required": 2,
        "superseded_by": None,
    }
    assert again.json() == {**first.json(), "reason": "already_approved_by_you"}
    card = api.card(proposal_id)
    assert (card["approvals"], card["approvals_required"]) == ([AVA], 2)
    assert card["policy"]["rule"] == {
        "operation": REFUND,
        "approvals": 2,
        "above_cents": 10000,
        "requester_may_approve": True,
    }
    assert _refunds(api.cs) == 0

    last = api.approve(proposal_id, NOAH).json()

    assert (last["result"], last["status"]) == ("executed", "succeeded")
    assert api.card(proposal_id)["approvals"] == [AVA, NOAH]
    assert _refunds(api.cs) == 1
    results = [a["result"] for a in service_actions(api.cs, "granite") if a["action"] == "approve"]
    # Ava's approval given again changed nothing: answered, not recorded.
    assert results == ["awaiting_approvals", "executed"]


def test_no_token_of_the_requester_gets_around_separation_of_duties(api):
    api.set_policy(REFUND, {"approvals": 1, "requester_may_approve": False, "above_cents": None})
    proposal_id = api.propose()["proposal_id"]
    # Another token acting for the same member, with every permission it may carry.
    second_token = api.token("ava-second-bot", ALL)

    for token in (AVA, second_token):
        refused = api.approve(proposal_id, token)
        assert refused.status_code == 200
        assert (refused.json()["result"], refused.json()["reason"]) == (
            "not_approvable",
            "requester_may_not_approve",
        )
    # Nor by editing it: the revision is hers too.
    revised = api.revise(proposal_id, TO_CARD).json()["proposal_id"]
    assert api.approve(revised, second_token).json()["reason"] == "requester_may_not_approve"
    for pid, events in ((proposal_id, ["Proposed", "Superseded"]), (revised, ["Proposed"])):
        assert [e["type"] for e in api.cs.audit.history(pid)["events"]] == events
    assert _refunds(api.cs) == 0

    assert api.approve(revised, NOAH).json()["result"] == "executed"
    assert _refunds(api.cs) == 1


# -- policies -----------------------------------------------------------------------------------


def test_policies_list_and_set_in_the_tokens_club(api):
    listed = api.call("GET", "/api/v1/policies")

    assert listed.status_code == 200
    policies = {p["operation"]: p for p in listed.json()["policies"]}
    assert policies[REFUND] == {
        "operation": REFUND,
        "approvals": 2,
        "above_cents": 10000,
        "requester_may_approve": True,
        "require_passkey": False,
        "set_by": "seed",
    }
    assert policies["roster.move_member"]["set_by"] is None
    assert {
        p["operation"] for p in api.call("GET", "/api/v1/policies", MIA).json()["policies"]
    } == (set(policies))

    changed = api.set_policy(REFUND, {"approvals": 3, "above_cents": 1000}, as_=NOAH)
    same = api.set_policy(REFUND, {"approvals": 3, "above_cents": 1000})

    assert changed.status_code == same.status_code == 200
    assert changed.json() == {
        "operation": REFUND,
        "approvals": 3,
        "above_cents": 1000,
        "requester_may_approve": True,
        "require_passkey": False,
        "changed": True,
    }
    assert same.json()["changed"] is False
    now = {p["operation"]: p for p in api.call("GET", "/api/v1/policies").json()["policies"]}
    assert (now[REFUND]["approvals"], now[REFUND]["set_by"]) == (3, NOAH)
    # Maple's policies are maple's own.
    maple = {p["operation"]: p for p in api.call("GET", "/api/v1/policies", MIA).json()["policies"]}
    assert maple[REFUND]["set_by"] is None
    assert api.propose("refund-stale")["approvals_required"] == 3


def test_a_policy_body_without_require_passkey_keeps_the_one_in_force(api):
    """Omitted (or null), ``require_passkey`` is left as it is, like the command line's option;
    only ``false`` turns it off."""
    on = api.set_policy(REFUND, {"approvals": 2, "require_passkey": True})
    kept = api.set_policy(REFUND, {"approvals": 1})
    null = api.set_policy(REFUND, {"approvals": 1, "require_passkey": None})
    off = api.set_policy(REFUND, {"approvals": 1, "require_passkey": False})

    assert [r.status_code for r in (on, kept, null, off)] == [200] * 4
    assert [(r.json()["approvals"], r.json()["require_passkey"], r.json()["changed"]) for r in (
        on, kept, null, off
    )] == [(2, True, True), (1, True, True), (1, True, False), (1, False, True)]  # fmt: skip
    assert api.set_policy(REFUND, {"approvals": 1, "require_passkey": "yes"}).status_code == 422


def test_a_policy_body_that_leaves_a_setting_out_keeps_the_one_in_force(api):
    """Raising only the quorum reset ``requester_may_approve`` to true and ``above_cents`` to
    null (an integrator's review): a client that sent ``{"approvals": 2}`` let requesters
    approve their own proposals again without a word. Every setting left out is kept now;
    null still means "every proposal" for ``above_cents``."""
    strict = {"approvals": 1, "requester_may_approve": False, "above_cents": 5000}
    assert api.set_policy(REFUND, {**strict, "require_passkey": True}).status_code == 200

    raised = api.set_policy(REFUND, {"approvals": 2})
    every = api.set_policy(REFUND, {"approvals": 2, "above_cents": None})
    allowed = api.set_policy(REFUND, {"approvals": 2, "requester_may_approve": True})

    assert raised.json() == {
        "operation": REFUND,
        "approvals": 2,
        "above_cents": 5000,
        "requester_may_approve": False,
        "require_passkey": True,
        "changed": True,
    }
    assert (every.json()["above_cents"], every.json()["requester_may_approve"]) == (None, False)
    assert (allowed.json()["above_cents"], allowed.json()["requester_may_approve"]) == (None, True)
    schema = api.call("GET", "/openapi.json").json()["components"]["schemas"]["PolicyIn"]
    assert (
        "omitted or null: as the policy in force"
        in schema["properties"]["requester_may_approve"]["description"]
    )


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"approvals": 0}, "approvals", "too small"),
        ({"approvals": 6}, "approvals", "too large"),
        ({"approvals": "2"}, "approvals", "must be an integer"),
        ({"approvals": True}, "approvals", "must be an integer"),
        ({"approvals": 2, "above_cents": -1}, "above_cents", "too small"),
        ({"approvals": 2, "above_cents": 12.5}, "above_cents", "must be an integer"),
        ({"approvals": 2, "requester_may_approve": "no"}, "requester_may_approve", "must be true "
         "or false"),
        ({"approvals": 2, "quorum": 1}, "quorum", "unknown field; remove it"),
        ({}, "approvals", "this field is required"),
    ],
)  # fmt: skip
def test_bad_policy_values_are_422_and_nothing_is_written(api, body, field, message):
    before = count_events(api.cs)

    status, document = problem(api.set_policy(REFUND, body))

    assert status == 422
    assert document["problems"] == [{"field": field, "message": message}]
    assert count_events(api.cs) == before


def test_an_unknown_operation_is_404_and_policies_need_their_permission(api):
    refunder = api.token("refunder", ["orders.refund"])
    before = count_events(api.cs)

    unknown = api.set_policy("order.refund_everything", {"approvals": 2})
    listing = api.call("GET", "/api/v1/policies", refunder)
    setting = api.set_policy(REFUND, {"approvals": 1}, as_=refunder)

    assert problem(unknown)[0] == 404
    for response in (listing, setting):
        status, body = problem(response)
        assert status == 403
        assert "policies.manage" in body["detail"]
    assert count_events(api.cs) == before


def test_the_openapi_document_describes_the_new_routes_and_answers(api):
    document = api.client.get("/openapi.json").json()
    paths, schemas = document["paths"], document["components"]["schemas"]

    assert set(paths["/api/v1/proposals/{proposal_id}/revisions"]["post"]["responses"]) >= {
        "201",
        "403",
        "404",
        "409",
        "422",
    }
    assert set(paths["/api/v1/policies/{operation}"]["put"]["responses"]) >= {"200", "403", "404"}
    assert "get" in paths["/api/v1/policies"]
    report = schemas["ApprovalReportOut"]["properties"]
    assert "awaiting_approvals" in str(report["result"])
    for name in ("approvals", "required", "superseded_by"):
        assert report[name]["description"], name
    for name in ("supersedes", "revision_of", "approvals_required"):
        assert schemas["ProposalCreatedOut"]["properties"][name]["description"], name
    card = schemas["ProposalCardOut"]["properties"]
    for name in ("approvals", "approvals_required", "policy", "revision_of", "superseded_by"):
        assert card[name]["description"], name
