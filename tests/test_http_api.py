"""The JSON API (``/api/v1``) through its ASGI app, on every backend.

Tokens, tenant isolation (a foreign id answers exactly like an unknown one on every route),
permissions, the problem format, the approve / decline documents, the inbox, the audit
replay, the reconciliation status path, the assistant route, and a schemathesis run against
the app's own OpenAPI document.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from countersign.application.errors import CorruptRecordError, ForbiddenError
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError, DuplicateError, NotFoundError
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import Call, Say, Script, ScriptedEndpoint
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.cli import render
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.http.problems import PROBLEM_MEDIA_TYPE
from countersign.infrastructure.identity import passwords
from countersign.infrastructure.identity.passwords import set_password, verify_password
from countersign.infrastructure.identity.tokens import (
    issue_token,
    list_tokens,
    revoke_token,
    service_actions,
)
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from tests.conftest import AVA, BEN, DRAFT, MIA, REFUND, TO_CARD, count_events
from tests.support.passwords import PRODUCT_HASHER, TEST_HASHER

ALL = [str(p) for p in Permission]
PROBLEM_KEYS = {"type", "title", "status", "detail", "correlation_id"}
REPORT_KEYS = {
    "result",
    "proposal_id",
    "status",
    "outcome",
    "reason",
    "message",
    "approvals",
    "required",
    "superseded_by",
}
A_DRAFT = {
    "filters": {"leagues": ["Monday Night Open"]},
    "subject": "Ice schedule",
    "body": "See you on Monday.",
}


@dataclass
class Api:
    """A seeded countersign behind its HTTP app, with a full-permission token per club."""

    cs: Countersign
    seeded: dict[str, Any]
    client: TestClient
    granite: str
    maple: str

    def token(self, org: str, name: str, permissions: list[str], issued_by: str = AVA) -> str:
        return issue_token(
            self.cs, org, name, permissions, issued_by=issued_by, kind="approver"
        ).token

    def get(self, path: str, token: str | None, **params: Any) -> Any:
        return self.client.get(path, headers=_auth(token), params=params)

    def post(self, path: str, token: str | None, body: Any = None) -> Any:
        if body is None:
            return self.client.post(path, headers=_auth(token))
        return self.client.post(path, headers=_auth(token), json=body)

    def propose(self, token: str | None = None, order: str = "refund-ok", **extra: Any) -> Any:
        body = {
            "operation": REFUND,
            "resource_id": self.seeded["orders"][order],
            "request": TO_CARD,
            **extra,
        }
        return self.post("/api/v1/proposals", token or self.granite, body)

    def message(self, token: str, resource_id: str, body: Any, section: str = "orders") -> Any:
        path = f"/api/v1/assistants/{section}/resources/{resource_id}/messages"
        return self.post(path, token, body)

    def proposal(self, order: str = "refund-ok") -> str:
        response = self.propose(order=order)
        assert response.status_code == 201, response.text
        return str(response.json()["proposal_id"])


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def problem(response: Any) -> tuple[int, dict[str, Any]]:
    """A problem's status and body without its correlation id, after checking the format."""
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = response.json()
    # Extension members only where their kind declares them (ProblemDocument).
    extensions = (
        {"proposal_status", "superseded_by"} if body["type"].endswith("revisable") else set()
    )
    assert PROBLEM_KEYS <= set(body) <= PROBLEM_KEYS | {"problems"} | extensions
    assert body["status"] == response.status_code
    assert body["correlation_id"] == response.headers["x-correlation-id"]
    assert body["correlation_id"].startswith("cs-")
    text = response.text
    for leak in ("Traceback", "SELECT", "INSERT", ".py", "/work", "sqlite", "psycopg"):
        assert leak not in text
    body.pop("correlation_id")
    return response.status_code, body


@pytest.fixture
def api(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    granite = issue_token(cs, "granite", "billing-bot", ALL, issued_by=AVA, kind="approver").token
    maple = issue_token(cs, "maple", "maple-bot", ALL, issued_by=MIA, kind="approver").token
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield Api(cs=cs, seeded=seeded, client=client, granite=granite, maple=maple)


# -- authentication ---------------------------------------------------------------------------


def test_a_missing_invalid_or_revoked_token_is_a_401_problem(api):
    card_path = f"/api/v1/proposals/{api.proposal()}"
    revocable = issue_token(
        api.cs, "granite", "short-lived", ["orders.refund"], issued_by=AVA, kind="approver"
    )
    assert api.get(card_path, revocable.token).status_code == 200
    assert revoke_token(api.cs, revocable.token_id) is True
    assert revoke_token(api.cs, revocable.token_id) is False

    missing = api.get(card_path, None)
    basic = api.client.get(card_path, headers={"Authorization": "Basic YXZhOnB3"})
    forged = api.get(card_path, api.granite[:-4] + "AAAA")
    garbage = api.get(card_path, "not-a-token")
    revoked = api.get(card_path, revocable.token)

    for response in (missing, basic, forged, garbage, revoked):
        status, body = problem(response)
        assert status == 401
        assert body["type"] == "urn:countersign:problem:unauthenticated"
        assert response.headers["www-authenticate"].startswith('Bearer realm="countersign"')
    # A forged, a revoked and an unknown token are indistinguishable.
    assert problem(forged) == problem(revoked) == problem(garbage)
    # Every route wants the token, before anything else is looked at.
    for method, path in [
        ("post", "/api/v1/proposals"),
        ("post", f"{card_path}/approve"),
        ("post", f"{card_path}/decline"),
        ("get", f"{card_path}/status"),
        ("get", f"{card_path}/history"),
        ("get", "/api/v1/inbox"),
        ("post", f"/api/v1/assistants/orders/resources/{uuid.uuid4()}/messages"),
        ("post", f"{card_path}/revisions"),
        ("get", "/api/v1/policies"),
        ("put", f"/api/v1/policies/{REFUND}"),
    ]:
        assert getattr(api.client, method)(path).status_code == 401


def test_a_token_stops_working_when_its_issuer_leaves_or_loses_a_permission(api):
    proposal_id = api.proposal()
    org = api.cs.store.get(Organization.create_id("granite"), Organization)
    org.change_permissions(AVA, [Permission.READ_AUDIT])
    api.cs.store.save(org)

    status, body = problem(api.post(f"/api/v1/proposals/{proposal_id}/approve", api.granite))
    assert status == 403
    assert "orders.refund" in body["detail"]

    org = api.cs.store.get(Organization.create_id("granite"), Organization)
    org.remove_member(AVA)
    api.cs.store.save(org)
    assert api.get(f"/api/v1/proposals/{proposal_id}", api.granite).status_code == 401


def test_issuing_checks_the_issuer_the_name_and_the_permissions(api):
    with pytest.raises(ForbiddenError):
        issue_token(api.cs, "granite", "ben-bot", ["orders.refund"], issued_by=BEN, kind="approver")
    with pytest.raises(NotFoundError):
        issue_token(api.cs, "granite", "mia-bot", ["orders.refund"], issued_by=MIA, kind="approver")
    with pytest.raises(NotFoundError):
        issue_token(api.cs, "nowhere", "bot", ["orders.refund"], issued_by=AVA, kind="approver")
    with pytest.raises(InvalidRequestError):
        issue_token(
            api.cs, "granite", "Not A Name!", ["orders.refund"], issued_by=AVA, kind="approver"
        )
    with pytest.raises(InvalidRequestError):
        issue_token(api.cs, "granite", "bot", ["orders.everything"], issued_by=AVA, kind="approver")
    with pytest.raises(InvalidRequestError):
        issue_token(api.cs, "granite", "bot", [], issued_by=AVA, kind="approver")
    with pytest.raises(DuplicateError):
        issue_token(
            api.cs, "granite", "billing-bot", ["orders.refund"], issued_by=AVA, kind="approver"
        )

    listed = list_tokens(api.cs, "granite")
    assert [(t["name"], t["issued_by"], t["revoked_at"]) for t in listed] == [
        ("billing-bot", AVA, None)
    ]
    assert "token" not in json.dumps(listed).replace("token_id", "")
    # Once revoked, the name can be issued again.
    revoke_token(api.cs, listed[0]["token_id"])
    assert issue_token(
        api.cs, "granite", "billing-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token


def test_tokens_are_stored_hashed_the_raw_token_is_nowhere_in_the_database(api):
    issued = issue_token(
        api.cs, "granite", "audit-bot", ["audit.read"], issued_by=AVA, kind="approver"
    )
    assert issued.token.startswith(f"cst_{issued.token_id}_")
    # The secret part is everything after the id: it may itself contain "_".
    secret = issued.token.removeprefix(f"cst_{issued.token_id}_")
    assert api.get("/api/v1/inbox", issued.token).status_code == 200

    dump = _database_text(api.cs)
    assert issued.token_id in dump  # the row is there ...
    for raw in (issued.token, api.granite, api.maple, secret):
        assert raw not in dump  # ... but no token, nor any secret part of one


def _database_text(cs: Countersign) -> str:
    """Every value of every table of the database, as text."""
    with cs.sql.transaction() as cursor:
        if cs.sql.is_postgres:
            tables = cursor.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchall()
        else:
            tables = cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).fetchall()
        assert ("api_tokens",) in tables
        chunks = []
        for (table,) in tables:
            rows = cursor.execute(f'SELECT * FROM "{table}"').fetchall()
            chunks.extend(repr(row) for row in rows)
    return "\n".join(chunks)


# -- tenant isolation -------------------------------------------------------------------------


def test_a_foreign_id_answers_exactly_like_an_unknown_one_on_every_route(api):
    granite_proposal = api.proposal()
    granite_order = api.seeded["orders"]["refund-stale"]
    turn = api.post(
        f"/api/v1/assistants/orders/resources/{granite_order}/messages",
        api.granite,
        {"message": "Hello"},
    ).json()
    maple_order = api.seeded["orders"]["maple-refund"]
    # A maple token that may do nothing about orders must not learn granite ids exist either.
    weak_maple = api.token("maple", "maple-drafts", [str(Permission.PREPARE_BROADCASTS)], MIA)
    before = count_events(api.cs)

    def routes(proposal_id: str, order_id: str, interaction_id: str) -> list[tuple[str, str, Any]]:
        base = f"/api/v1/proposals/{proposal_id}"
        return [
            ("get", base, None),
            ("get", f"{base}/status", None),
            ("get", f"{base}/history", None),
            ("post", f"{base}/approve", None),
            ("post", f"{base}/decline", {"note": "no"}),
            ("post", f"{base}/revisions", {"request": TO_CARD}),
            ("post", "/api/v1/proposals", {"operation": REFUND, "resource_id": order_id,
                                           "request": TO_CARD}),
            ("post", f"/api/v1/assistants/orders/resources/{order_id}/messages",
             {"message": "Refund the discount"}),
            ("post", f"/api/v1/assistants/orders/resources/{maple_order}/messages",
             {"message": "Go on", "interaction_id": interaction_id}),
        ]  # fmt: skip

    def answers(token: str, proposal_id: str, order_id: str, interaction_id: str) -> list[Any]:
        out = []
        for method, path, body in routes(proposal_id, order_id, interaction_id):
            response = api.get(path, token) if method == "get" else api.post(path, token, body)
            out.append((path.replace(proposal_id, "ID").replace(order_id, "ORDER"), response))
        return out

    foreign = answers(api.maple, granite_proposal, granite_order, turn["interaction_id"])
    unknown = answers(api.maple, str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()))
    malformed = answers(api.maple, "not-an-id", "not-an-id", "not-an-id")
    weak = answers(weak_maple, granite_proposal, granite_order, turn["interaction_id"])
    weak_unknown = answers(weak_maple, str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()))

    for (path, f), (_, u), (_, m) in zip(foreign, unknown, malformed, strict=True):
        assert problem(f) == problem(u) == problem(m), path
        assert f.status_code == 404, path
    for (path, w), (_, wu) in zip(weak, weak_unknown, strict=True):
        assert problem(w) == problem(wu), path
        # Routes whose permission depends on what the id names answer 404 first.
        if "/proposals/ID" in path:
            assert w.status_code == 404, path
    # Nothing was written to anyone's stream; the granite proposal is still pending.
    assert count_events(api.cs) == before
    assert api.get(f"/api/v1/proposals/{granite_proposal}", api.granite).json()["status"] == (
        "pending"
    )


def test_the_inbox_pages_newest_first_and_shows_only_the_tokens_organization(api, clock):
    granite_ids = []
    for order in ("refund-ok", "refund-stale", "refund-declined"):
        granite_ids.append(api.proposal(order))
        clock.advance(seconds=1)
    maple_id = api.propose(api.maple, order="maple-refund").json()["proposal_id"]

    first = api.get("/api/v1/inbox", api.granite, page=1, page_size=2).json()
    second = api.get("/api/v1/inbox", api.granite, page=2, page_size=2).json()
    maple = api.get("/api/v1/inbox", api.maple).json()

    assert (first["total"], first["page"], first["page_size"]) == (3, 1, 2)
    assert [i["proposal_id"] for i in first["items"] + second["items"]] == granite_ids[::-1]
    assert [i["proposal_id"] for i in maple["items"]] == [maple_id]
    # Each preview's fields in its card's order, on either backend (they came sorted from
    # SQLite's JSON and by length from PostgreSQL's jsonb).
    for item in first["items"] + second["items"]:
        card = api.get(f"/api/v1/proposals/{item['proposal_id']}", api.granite).json()
        assert list(item["preview"]) == list(card["preview"])
        assert list(item["preview"]) != sorted(item["preview"])
    # Every key an item holds is declared in the OpenAPI document (items were untyped).
    schemas = api.client.get("/openapi.json").json()["components"]["schemas"]
    assert set(first["items"][0]) == set(schemas["InboxItemOut"]["properties"])
    assert api.get("/api/v1/inbox", api.granite, section="email_broadcasts").json()["total"] == 0
    assert api.get("/api/v1/inbox", api.granite, section="orders").json()["total"] == 3
    status, body = problem(api.get("/api/v1/inbox", api.granite, page_size=1000))
    assert status == 422
    assert body["problems"] == [{"field": "page_size", "message": "too large"}]
    status, body = problem(api.get("/api/v1/inbox", api.granite, section="payroll"))
    assert status == 422
    # A token that reads only orders gets the orders section; one that reads nothing, 403.
    orders_only = api.token("granite", "orders-bot", ["orders.refund"])
    assert api.get("/api/v1/inbox", orders_only).json()["total"] == 3
    drafts_only = api.token("granite", "drafts-bot", ["email_broadcasts.prepare"])
    assert api.get("/api/v1/inbox", drafts_only).json()["total"] == 0
    assert problem(api.get("/api/v1/inbox", drafts_only, section="orders"))[0] == 403


# -- permissions ------------------------------------------------------------------------------


def test_a_token_without_the_permission_is_a_403_problem_and_nothing_runs(api):
    proposal_id = api.proposal()
    auditor = api.token("granite", "auditor", ["audit.read"])
    drafter = api.token("granite", "drafter", ["email_broadcasts.prepare"])
    refunder = api.token("granite", "refunder", ["orders.refund"])
    order = api.seeded["orders"]["refund-stale"]
    before = count_events(api.cs)

    forbidden = [
        api.post(f"/api/v1/proposals/{proposal_id}/approve", auditor),
        api.post(f"/api/v1/proposals/{proposal_id}/decline", drafter),
        api.propose(auditor, order="refund-stale"),
        api.message(drafter, order, {"message": "x"}),
        api.get(f"/api/v1/proposals/{proposal_id}", drafter),
        api.get(f"/api/v1/proposals/{proposal_id}/status", drafter),
        api.get(f"/api/v1/proposals/{proposal_id}/history", refunder),
    ]

    for response in forbidden:
        status, body = problem(response)
        assert status == 403
        assert body["type"] == "urn:countersign:problem:forbidden"
    assert count_events(api.cs) == before
    # The auditor reads cards; the refunder reads its own section's cards.
    assert api.get(f"/api/v1/proposals/{proposal_id}", auditor).status_code == 200
    assert api.get(f"/api/v1/proposals/{proposal_id}/status", refunder).status_code == 200


def test_history_needs_the_auditor_permission_and_replays_as_of_a_version(api):
    proposal_id = api.proposal()
    api.post(f"/api/v1/proposals/{proposal_id}/approve", api.granite)
    auditor = api.token("granite", "auditor", ["audit.read"])

    full = api.get(f"/api/v1/proposals/{proposal_id}/history", auditor)
    then = api.get(f"/api/v1/proposals/{proposal_id}/history", auditor, as_of="1")

    assert full.status_code == 200
    assert [e["type"] for e in full.json()["events"]] == [
        "Proposed",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
    ]
    # Each event's stable name, which names no module of countersign's: what a client keys by.
    assert [e["event"] for e in full.json()["events"]] == [
        "proposal.proposed",
        "proposal.approved",
        "proposal.claimed",
        "proposal.revalidated",
        "proposal.succeeded",
    ]
    # The CLI's history document, exactly, with what its seals say (no keys here: nothing).
    stored = json.loads(render.to_json(api.cs.audit.history(proposal_id)))
    assert full.json() == {**stored, "unverified": None}
    assert [e["type"] for e in then.json()["events"]] == ["Proposed"]
    assert then.json()["as_of"]["status"] == "pending"
    # Outside the history, as_of is the request's problem, saying what it may be (it was a
    # 404, the answer of an unknown id: a client concluded the proposal did not exist).
    made = full.json()["events"][0]["at"]
    for outside, says in (
        ("99", "a version from 1 to 5 (its events)"),
        ("0", "a version from 1 to 5 (its events)"),
        ("2001-01-01T00:00Z", f"a time at or after the proposal was made ({made})"),
    ):
        status, body = problem(
            api.get(f"/api/v1/proposals/{proposal_id}/history", auditor, as_of=outside)
        )
        assert (status, body["problems"]) == (422, [{"field": "as_of", "message": says}])
    status, body = problem(
        api.get(f"/api/v1/proposals/{proposal_id}/history", auditor, as_of="yesterday")
    )
    assert (status, body["problems"][0]["field"]) == (422, "as_of")


def test_history_as_of_a_time_whose_plus_offset_the_url_turned_into_a_space(api):
    # An integrator's `?as_of=2026-12-06T14:00:00+01:00`, sent unencoded: the query decodes
    # the `+` to a space. It reads as the `+` it was (it answered 422), not as a time zone
    # dropped: the same history as the offset sent encoded.
    proposal_id = api.proposal()
    api.post(f"/api/v1/proposals/{proposal_id}/approve", api.granite)
    auditor = api.token("granite", "auditor", ["audit.read"])
    made = api.get(f"/api/v1/proposals/{proposal_id}/history", auditor).json()["events"][0]["at"]
    later = datetime.fromisoformat(made).astimezone(timezone(timedelta(hours=1)))
    path = f"/api/v1/proposals/{proposal_id}/history"
    unencoded = api.client.get(f"{path}?as_of={later.isoformat()}", headers=_auth(auditor))
    encoded = api.get(path, auditor, as_of=later.isoformat())

    assert "+01:00" in later.isoformat()
    assert unencoded.status_code == 200, unencoded.text
    assert unencoded.json() == encoded.json()
    assert [e["type"] for e in unencoded.json()["events"]] == ["Proposed"]


# -- propose, approve, decline ----------------------------------------------------------------


def test_propose_answers_the_contracts_problems(api):
    bad = {**TO_CARD, "payment": "P9", "amount": 5000}
    response = api.propose(request=bad)
    with pytest.raises(InvalidRequestError) as raised:
        api.cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=api.seeded["orders"]["refund-ok"],
            request=bad,
        )

    status, body = problem(response)
    assert status == 422
    assert body["type"] == "urn:countersign:problem:invalid-request"
    assert body["problems"] == [p.model_dump() for p in raised.value.problems]
    assert "5000" not in json.dumps({**body, "correlation_id": None})  # random hex aside

    status, body = problem(api.propose(operation="order.refund_everything"))
    assert (status, body["problems"]) == (
        422,
        [{"field": "operation", "message": "no such operation"}],
    )
    status, body = problem(
        api.post("/api/v1/proposals", api.granite, {"operation": 7, "request": "x", "extra": 1})
    )
    assert status == 422
    assert {(p["field"], p["message"]) for p in body["problems"]} == {
        ("operation", "must be a string"),
        ("resource_id", "this field is required"),
        ("request", "must be a JSON object"),
        ("extra", "unknown field; remove it"),
    }
    malformed = api.client.post(
        "/api/v1/proposals",
        headers={**_auth(api.granite), "Content-Type": "application/json"},
        content=b'{"operation": "order.refund_missing',
    )
    status, body = problem(malformed)
    assert (status, body["type"]) == (400, "urn:countersign:problem:malformed-request")
    assert "refund_missing" not in malformed.text
    # A draft through the same route: another section, another contract.
    form = api.seeded["broadcast_forms"]["granite"]
    created = api.post(
        "/api/v1/proposals",
        api.granite,
        {"operation": DRAFT, "resource_id": form, "request": A_DRAFT},
    )
    assert created.status_code == 201
    assert created.headers["location"] == f"/api/v1/proposals/{created.json()['proposal_id']}"


def test_approving_twice_returns_the_same_stored_outcome_as_the_cli_document(api):
    proposal_id = api.proposal()
    path = f"/api/v1/proposals/{proposal_id}/approve"

    first = api.post(path, api.granite)
    second = api.post(path, api.granite)

    assert first.status_code == second.status_code == 200
    assert set(first.json()) == REPORT_KEYS
    assert first.json()["result"] == "executed"
    assert first.json()["outcome"]["kind"] == "succeeded"
    assert second.json()["result"] == "already_completed"
    assert {k: v for k, v in second.json().items() if k != "result"} == {
        k: v for k, v in first.json().items() if k != "result"
    }
    # The same document the Python API (and so the CLI's approve --json) gives.
    assert api.cs.proposals.approve(proposal_id, AVA).to_json() == second.json()
    card = api.get(f"/api/v1/proposals/{proposal_id}", api.granite).json()
    assert card["approved_by"] == AVA
    assert card == api.cs.cards.card(proposal_id, AVA).to_json()
    # The service is recorded under its token's name.
    actions = service_actions(api.cs, "granite")
    assert [(a["service"], a["acting_member"], a["action"], a["result"]) for a in actions] == [
        ("service:billing-bot", AVA, "propose", "pending"),
        ("service:billing-bot", AVA, "approve", "executed"),
    ]  # (the repeat, which changed nothing, is not recorded)


def test_decline_with_and_without_a_note_and_what_approving_then_says(api):
    declined_id = api.proposal()
    other_id = api.proposal("refund-stale")

    declined = api.post(f"/api/v1/proposals/{declined_id}/decline", api.granite, {"note": "no"})
    bare = api.post(f"/api/v1/proposals/{other_id}/decline", api.granite)
    approve_after = api.post(f"/api/v1/proposals/{declined_id}/approve", api.granite)
    again = api.post(f"/api/v1/proposals/{declined_id}/decline", api.granite)

    assert declined.status_code == bare.status_code == 200
    assert set(declined.json()) == REPORT_KEYS
    assert (declined.json()["result"], declined.json()["status"]) == ("declined", "declined")
    assert declined.json()["outcome"]["reason"]["code"] == "declined_by_manager"
    assert bare.json()["result"] == "declined"
    assert approve_after.status_code == 200
    assert (approve_after.json()["result"], approve_after.json()["reason"]) == (
        "not_approvable",
        "not_pending",
    )
    assert again.json()["result"] == "not_approvable"
    # A service retrying its decline (a timeout) reads the outcome its first one stored; so
    # does an approval that came too late. Both were null.
    for repeat in (approve_after, again):
        assert repeat.json()["outcome"] == declined.json()["outcome"]
        assert repeat.json()["message"] == declined.json()["message"]
        assert "declined this proposal" in repeat.json()["message"]
    history = api.cs.audit.history(declined_id)
    declined_event = next(e for e in history["events"] if e["type"] == "Declined")
    assert (declined_event["declined_by"], declined_event["note"]) == (AVA, "no")
    # The card says it too (the note was in the history and on the page only), and when it
    # was proposed; every key the card answers is one its schema declares.
    card = api.get(f"/api/v1/proposals/{declined_id}", api.granite).json()
    assert card["decline_note"] == "no"
    assert card["proposed_at"] == history["events"][0]["at"]
    schema = api.client.get("/openapi.json").json()["components"]["schemas"]
    assert set(card) <= set(schema["ProposalCardOut"]["properties"])
    status, body = problem(
        api.post(f"/api/v1/proposals/{other_id}/decline", api.granite, {"note": "x" * 501})
    )
    assert (status, body["problems"]) == (422, [{"field": "note", "message": "text is too long"}])


def test_the_status_path_of_a_lost_card_refund_shows_reconciliation_then_success(api):
    proposal_id = api.proposal("refund-lost-response")

    approved = api.post(f"/api/v1/proposals/{proposal_id}/approve", api.granite).json()

    status_path = approved["outcome"]["status_path"]
    assert approved["outcome"]["kind"] == "needs_reconciliation"
    assert status_path == f"/api/v1/proposals/{proposal_id}/status"
    uncertain = api.get(status_path, api.granite)
    assert uncertain.status_code == 200
    assert uncertain.json() == {
        "proposal_id": proposal_id,
        "status": "reconciling",
        "outcome_kind": "needs_reconciliation",
        "reconciliation_pending": True,
        "message": api.cs.cards.card(proposal_id, AVA).message,
        "waiting_since": api.cs.clock.now().isoformat(),
        "settling": "waiting",
        "policy_changed": False,
        "requester_barred": None,
    }
    assert uncertain.json()["message"]

    api.cs.sweepers.reconcile()

    settled = api.get(status_path, api.granite).json()
    assert (settled["status"], settled["outcome_kind"], settled["reconciliation_pending"]) == (
        "succeeded",
        "succeeded",
        False,
    )
    assert settled["message"].startswith("Refunded")
    assert (settled["settling"], settled["waiting_since"]) == (None, None)
    # The maple token sees this status path exactly as it sees an unknown one.
    assert problem(api.get(status_path, api.maple)) == problem(
        api.get(f"/api/v1/proposals/{uuid.uuid4()}/status", api.maple)
    )


# -- the assistant route ----------------------------------------------------------------------


def test_the_assistant_route_runs_a_turn_with_the_scripted_stand_in_model(api):
    order = api.seeded["orders"]["refund-ok"]
    path = f"/api/v1/assistants/orders/resources/{order}/messages"

    first = api.message(api.granite, order, {"message": "Please refund the early-bird discount."})

    assert first.status_code == 200, first.text
    turn = first.json()
    assert turn["ended"] == "proposal"
    assert turn["proposal"]["preview"]["amount_cents"] == 4800
    assert turn["messages"][-1]["author"] == "application"
    approved = api.post(
        f"/api/v1/proposals/{turn['proposal']['proposal_id']}/approve", api.granite
    ).json()
    assert approved["result"] == "executed"
    # The same conversation continues by its id; another section's resource is not found.
    again = api.post(
        path, api.granite, {"message": "Thanks", "interaction_id": turn["interaction_id"]}
    )
    assert again.status_code == 200
    assert again.json()["interaction_id"] == turn["interaction_id"]
    form = api.seeded["broadcast_forms"]["granite"]
    hello = {"message": "x"}
    assert problem(api.message(api.granite, form, hello))[0] == 404
    # An unknown section is an unknown resource.
    unknown_section = api.message(api.granite, order, hello, section="payroll")
    unknown_order = api.message(api.granite, str(uuid.uuid4()), hello)
    assert problem(unknown_section) == problem(unknown_order)
    status, body = problem(api.message(api.granite, order, {"message": ""}))
    assert status == 422
    assert body["problems"] == [{"field": "message", "message": "text is too short"}]


def test_the_assistant_route_feeds_problems_back_to_a_scripted_model(seeded_database, clock):
    """The model behind the route is the production adapter over a scripted endpoint: a
    rejected request goes back to it, a corrected one becomes the turn's proposal."""
    endpoint = ScriptedEndpoint(
        Script(
            Call("get_order_investigation"),
            Call("propose_refund_missing_discount", {**TO_CARD, "amount_cents": 99999}),
            Call("propose_refund_missing_discount", TO_CARD),
            Say("never asked"),
        )
    )
    model = OpenAIChatModel(endpoint.client(), "scripted", attempts=2, total_seconds=5.0)
    cs = bootstrap(Settings(database_url=seeded_database.url), clock=clock, model=model)
    seeded = seeded_database.seeded
    try:
        token = issue_token(
            cs, "granite", "chat-bot", ["orders.refund"], issued_by=AVA, kind="approver"
        ).token
        with TestClient(create_app(cs)) as client:
            order = seeded["orders"]["refund-ok"]
            response = client.post(
                f"/api/v1/assistants/orders/resources/{order}/messages",
                headers=_auth(token),
                json={"message": "Refund the missed discount to the card."},
            )
    finally:
        model.client.close()
        cs.close()

    assert response.status_code == 200, response.text
    turn = response.json()
    assert (turn["ended"], turn["model_calls"]) == ("proposal", 3)
    assert turn["proposal"]["preview"]["amount_cents"] == 4800
    rejected = json.loads(endpoint.requests[2]["messages"][-1]["content"])
    assert rejected["problems"][0]["field"] == "amount_cents"
    assert len(endpoint.requests) == 3


# -- the problem format -----------------------------------------------------------------------


def test_unexpected_errors_are_500_problems_whose_correlation_id_is_logged(api, caplog):
    proposal_id = api.proposal()

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom at /work/secret.py: SELECT * FROM api_tokens")

    api.cs.cards.card = explode  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="countersign.http"):
        response = api.get(f"/api/v1/proposals/{proposal_id}", api.granite)

    status, body = problem(response)
    assert (status, body["type"]) == (500, "urn:countersign:problem:internal-error")
    assert "boom" not in response.text
    correlation_id = response.json()["correlation_id"]
    logged = [r for r in caplog.records if correlation_id in r.getMessage()]
    assert logged
    assert logged[0].exc_info is not None


def test_busy_and_unreadable_records_are_problems_too(api, caplog, monkeypatch):
    proposal_id = api.proposal()

    def busy(*args: Any, **kwargs: Any) -> Any:
        raise ConcurrencyConflictError("the facts keep changing")

    read = api.cs.store.read

    def unreadable(aggregate_id: Any, as_type: Any) -> Any:
        if as_type is Proposal:  # a damaged record that still says it is Granite's
            raise CorruptRecordError(
                "cs-0000000000000bad", {aggregate_id: Organization.create_id("granite")}
            )
        return read(aggregate_id, as_type)

    monkeypatch.setattr(api.cs.proposals, "approve", busy)
    response = api.post(f"/api/v1/proposals/{proposal_id}/approve", api.granite)
    assert problem(response)[0] == 503
    assert response.headers["retry-after"] == "1"

    monkeypatch.setattr(api.cs.store, "read", unreadable)
    with caplog.at_level(logging.ERROR, logger="countersign.http"):
        response = api.get(f"/api/v1/proposals/{proposal_id}", api.granite)
    assert problem(response)[0] == 500
    correlation_id = response.json()["correlation_id"]
    assert any(
        correlation_id in r.getMessage() and "cs-0000000000000bad" in r.getMessage()
        for r in caplog.records
    )


def test_unknown_routes_and_methods_answer_problems_too(api):
    status, body = problem(api.get("/api/v1/nothing-here", api.granite))
    assert (status, body["type"]) == (404, "urn:countersign:problem:not-found")
    # An id of something that is not a proposal (an order) is just as unknown.
    order = api.seeded["orders"]["refund-ok"]
    assert problem(api.get(f"/api/v1/proposals/{order}", api.granite)) == (status, body)
    response = api.client.delete(f"/api/v1/proposals/{uuid.uuid4()}", headers=_auth(api.granite))
    assert problem(response)[0] == 405
    assert "GET" in response.headers["allow"]


# -- passwords --------------------------------------------------------------------------------


def test_the_product_hashes_with_the_rfc_9106_profile(cs, monkeypatch):
    """The suite hashes at test strength (tests/support/passwords.py); the product does not."""
    monkeypatch.setattr(passwords, "_hasher", PRODUCT_HASHER)
    monkeypatch.setattr(passwords, "_dummy_hash", [])
    set_password(cs, AVA, "correct horse battery staple")
    with cs.sql.transaction() as cursor:
        (stored,) = cursor.execute(
            "SELECT password_hash FROM user_passwords WHERE email = ?", (AVA,)
        ).fetchone()
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert verify_password(cs, AVA, "correct horse battery staple") is True
    # A hash made at test strength is upgraded to the product's profile at its next check.
    monkeypatch.setattr(passwords, "_hasher", TEST_HASHER)
    set_password(cs, AVA, "correct horse battery staple")
    monkeypatch.setattr(passwords, "_hasher", PRODUCT_HASHER)
    assert verify_password(cs, AVA, "correct horse battery staple") is True
    with cs.sql.transaction() as cursor:
        (upgraded,) = cursor.execute(
            "SELECT password_hash FROM user_passwords WHERE email = ?", (AVA,)
        ).fetchone()
    assert upgraded.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


def test_passwords_are_argon2id_hashes_that_verify_and_reject(cs):
    set_password(cs, " Ava@Granite.example ", "correct horse battery staple")

    assert verify_password(cs, AVA, "correct horse battery staple") is True
    assert verify_password(cs, AVA, "correct horse battery stapler") is False
    assert verify_password(cs, "nobody@granite.example", "correct horse battery staple") is False
    assert verify_password(cs, AVA, "x" * 5000) is False
    with cs.sql.transaction() as cursor:
        (stored,) = cursor.execute(
            "SELECT password_hash FROM user_passwords WHERE email = ?", (AVA,)
        ).fetchone()
    assert stored.startswith("$argon2id$")
    assert "horse" not in stored
    set_password(cs, AVA, "another long passphrase")
    assert verify_password(cs, AVA, "correct horse battery staple") is False
    assert verify_password(cs, AVA, "another long passphrase") is True
    with pytest.raises(InvalidRequestError):
        set_password(cs, AVA, "short")
    with pytest.raises(InvalidRequestError):
        set_password(cs, "not-an-email", "long enough password")


# -- schemathesis -----------------------------------------------------------------------------

#: Cases per operation and generation mode on each database. The two databases are given
#: different seeds, so together they see twice as many distinct cases (deterministic either
#: way); ``COUNTERSIGN_SOAK=full`` runs ten times as many.
EXAMPLES = 150 if os.environ.get("COUNTERSIGN_SOAK", "").strip().lower() == "full" else 15
SEEDS = {"sqlite": 20261201, "postgres": 20261202}


def test_schemathesis_finds_no_server_error_and_no_response_outside_the_schema(api):
    """Every operation of the app's own OpenAPI document, generated valid and invalid, with
    unknown and real ids alike: never a 5xx, and every answer matches the document."""
    import schemathesis  # here, not at the top: collecting this module imports no schemathesis

    checks = [
        schemathesis.checks.not_a_server_error,
        schemathesis.checks.status_code_conformance,
        schemathesis.checks.content_type_conformance,
        schemathesis.checks.response_schema_conformance,
        schemathesis.checks.response_headers_conformance,
    ]
    endpoint = api.post("/api/v1/webhooks", api.granite, {"url": "https://hooks.example/a"})
    real = {
        "proposal_id": api.proposal(),
        "resource_id": api.seeded["orders"]["refund-stale"],
        "section": "orders",
        "operation": REFUND,
        "endpoint_id": endpoint.json()["endpoint_id"],
        "delivery_id": "dlv_" + "0" * 32,
        "email": "ben@granite.example",  # staff: whatever the run gives Ben, Ava keeps hers
    }
    valid_proposal = {
        "operation": DRAFT,
        "resource_id": api.seeded["broadcast_forms"]["granite"],
        "request": A_DRAFT,
    }
    schema = schemathesis.openapi.from_asgi("/openapi.json", api.client.app)
    headers = _auth(api.granite)
    seen: Counter[int] = Counter()
    positive, negative = schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE
    for result in schema.get_all_operations():
        operation = result.ok()
        names = {p.name for p in operation.path_parameters}
        variants: list[tuple[Any, dict[str, Any], int]] = [
            (mode, {}, EXAMPLES) for mode in (positive, negative)
        ]
        if names:  # the same again on real ids of the token's organization
            fixed = {"path_parameters": {n: real[n] for n in names}}
            variants += [(mode, fixed, EXAMPLES // 3) for mode in (positive, negative)]
        if operation.label == "POST /api/v1/proposals":
            variants.append((positive, {"body": valid_proposal}, 1))
        for mode, fixed, examples in variants:

            @hypothesis_seed(SEEDS[api.cs.database.kind])
            @settings(
                max_examples=examples,
                database=None,
                deadline=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode, **fixed))
            def run(case: Any) -> None:
                # (Negative cases may drop the token on purpose: a documented 401.)
                response = case.call_and_validate(headers=headers, checks=checks)
                seen[response.status_code] += 1

            run()
    # The run reached the handlers, not only the validation in front of them.
    assert {200, 201, 400, 401, 404, 422} <= set(seen), seen


def test_an_assistant_turn_answers_in_the_language_asked_for(api):
    order = api.seeded["orders"]["refund-ok"]
    path = f"/api/v1/assistants/orders/resources/{order}/messages"
    words = "Olivia registered early but never got her early-bird discount."

    french = api.post(path, api.granite, {"message": words, "language": "fr"}).json()
    english = api.post(path, api.granite, {"message": words}).json()

    assert french["proposal"] is not None
    said = [m["text"] for m in french["messages"] if m["author"] == "application"]
    assert any(text.startswith("J'ai préparé une proposition") for text in said), said
    said = [m["text"] for m in english["messages"] if m["author"] == "application"]
    assert any(text.startswith("I prepared a proposal") for text in said), said
    refused = api.post(path, api.granite, {"message": words, "language": "de"})
    assert refused.status_code == 422


def test_a_json_body_sent_without_its_content_type_is_415_saying_so(api):
    """A valid JSON object sent as text/plain, or with no Content-Type, was answered 422 "must
    be a JSON object" (an integrator's walk): a client could not tell what to fix. Any JSON
    type (``application/json``, with a charset, or ``+json``) is read as before."""
    body = json.dumps(
        {"operation": REFUND, "resource_id": api.seeded["orders"]["refund-ok"], "request": {}}
    ).encode()
    before = count_events(api.cs)
    for kind in ("text/plain", None, "application/x-www-form-urlencoded"):
        headers = {**_auth(api.granite), **({"Content-Type": kind} if kind else {})}
        status, problem_document = problem(
            api.client.post("/api/v1/proposals", content=body, headers=headers)
        )
        assert status == 415, kind
        assert problem_document["type"].endswith(":unsupported-media-type")
        assert "Content-Type: application/json" in problem_document["detail"]
    for kind in ("application/json; charset=utf-8", "application/merge-patch+json"):
        read = api.client.post(
            "/api/v1/proposals", content=body, headers={**_auth(api.granite), "Content-Type": kind}
        )
        assert read.status_code == 422, kind  # read as JSON: the request's own problems
        assert read.json()["problems"][0]["field"] == "payment"  # the empty request's
    assert count_events(api.cs) == before
    paths = api.client.get("/openapi.json").json()["paths"]
    assert "415" in paths["/api/v1/proposals"]["post"]["responses"]
