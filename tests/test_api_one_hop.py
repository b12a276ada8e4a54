"""Issue 27: a JSON API request without a body takes one hop to a worker thread, not two.

The gate (``http/gate.py``) leaves the token's check of a request without a body to the
route's own worker thread (``auth.GatedRoute``), which makes it just before the handler. These
tests hold that to the answers of the gate that checks first: the same requests go to an app
whose gate makes every check itself before the route (``checks_first``), and the status,
headers, problem documents, stored outcomes and service-action records must not differ, for
every route of the API and for missing, malformed, unknown, revoked, agent and foreign
tokens. The hops themselves are counted as submissions to the API's executor and anyio's
thread pool, not timed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import pytest
from countersign.domain.club.organization import Organization
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.seed import _order
from countersign.infrastructure.entrypoints.http import (
    assistants,
    create_app,
    hops,
    members,
    policies,
    proposals,
    webhooks,
)
from countersign.infrastructure.entrypoints.http.auth import GatedRoute
from countersign.infrastructure.entrypoints.http.gate import ApiGate
from countersign.infrastructure.entrypoints.http.problems import (
    install_problem_handlers,
    is_api_path,
)
from countersign.infrastructure.identity.tokens import (
    issue_token,
    revoke_token,
    service_actions,
)
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA, REFUND, TO_CARD

ALL = [
    "orders.refund",
    "email_broadcasts.prepare",
    "email_broadcasts.send",
    "roster.manage",
    "audit.read",
    "policies.manage",
    "webhooks.manage",
    "members.manage",
]
#: What differs between two answers to the same request: its correlation id (and the date).
_PER_REQUEST = {"x-correlation-id", "date"}


def checks_first(app: FastAPI) -> FastAPI:
    """``app`` with a gate that checks every token itself before the route (as before)."""
    app.middleware_stack = app.build_middleware_stack()
    layer: Any = app.middleware_stack
    while not isinstance(layer, ApiGate):
        layer = layer.app
    layer._routes_gated = False
    return app


@dataclass
class Twins:
    """One countersign behind two apps: ``one`` (the route's hop checks a token) and ``two``
    (the gate checks it first, in a hop of its own)."""

    cs: Countersign
    seeded: dict[str, Any]
    one: TestClient
    two: TestClient
    tokens: dict[str, str]
    #: Each proposal's order: its key and id (named generically when answers are compared).
    orders: dict[str, tuple[str, str]] = field(default_factory=dict)

    def proposal(self) -> str:
        """A pending card refund, on an order of its own."""
        org = self.cs.store.get(Organization.create_id("granite"), Organization)
        key = f"one-hop-{uuid.uuid4().hex[:8]}"
        order = _order(self.cs, org, key, "Hop Tester", "hop@example.com", CARD_OK, "")
        made = self.one.post(
            "/api/v1/proposals",
            headers=_auth(self.tokens["approver"]),
            json={"operation": REFUND, "resource_id": str(order.id), "request": TO_CARD},
        )
        assert made.status_code == 201, made.text
        proposal_id = str(made.json()["proposal_id"])
        self.orders[proposal_id] = (key, str(order.id))
        return proposal_id

    def same(self, proposal_id: str) -> tuple[str, ...]:
        """What differs between two proposals made alike: their ids and their orders'."""
        return (proposal_id, *self.orders[proposal_id])


@pytest.fixture
def twins(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Twins]:
    revoked = issue_token(cs, "granite", "revoked", ALL, issued_by=AVA, kind="approver")
    assert revoke_token(cs, revoked.token_id)
    approver = issue_token(cs, "granite", "billing", ALL, issued_by=AVA, kind="approver").token
    tokens = {
        "approver": approver,
        "agent": issue_token(cs, "granite", "ava-agent", ALL, issued_by=AVA, kind="agent").token,
        "reader": issue_token(
            cs, "granite", "reader", ["audit.read"], issued_by=AVA, kind="approver"
        ).token,
        "foreign": issue_token(cs, "maple", "maple-bot", ALL, issued_by=MIA, kind="approver").token,
        "revoked": revoked.token,
        "forged": approver[:-4] + ("BBBB" if approver.endswith("AAAA") else "AAAA"),
        "garbage": "not-a-token",
    }
    with (
        TestClient(create_app(cs), raise_server_exceptions=False) as one,
        TestClient(checks_first(create_app(cs)), raise_server_exceptions=False) as two,
    ):
        yield Twins(cs=cs, seeded=seeded, one=one, two=two, tokens=tokens)


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token is not None else {}


def answer(response: Any, *same: str) -> tuple[int, dict[str, str], Any]:
    """A response as two apps must agree on it: ``same`` (proposal ids) named generically."""
    text = response.text
    for i, value in enumerate(same):
        text = text.replace(value, f"<{i}>")
    headers = {k: v for k, v in response.headers.items() if k not in _PER_REQUEST}
    headers.pop("content-length")  # (the ids named generically may differ in length)
    correlation_id = response.headers["x-correlation-id"]
    assert correlation_id.startswith("cs-")
    return response.status_code, headers, text.replace(correlation_id, "<correlation id>")


def _gated_routes() -> list[tuple[str, str]]:
    """Every (method, path template) of the JSON API."""
    app = FastAPI()  # only to read the routers' routes
    for module in (assistants, proposals, policies, members, webhooks):
        app.include_router(module.router)
    return sorted(
        (method, str(context.path))
        for context in iter_route_contexts(app.routes)
        if isinstance(context.original_route, GatedRoute)
        for method in sorted(context.methods or ())
    )


def _filled(path: str, proposal_id: str) -> str:
    return (
        path.replace("{proposal_id}", proposal_id)
        .replace("{section}", "orders")
        .replace("{resource_id}", str(uuid.uuid4()))
        .replace("{operation}", REFUND)
        .replace("{email}", "ben@granite.example")
        .replace("{endpoint_id}", str(uuid.uuid4()))
        .replace("{delivery_id}", str(uuid.uuid4()))
    )


# -- the same answers -------------------------------------------------------------------------


def test_every_route_answers_a_request_without_a_body_as_when_the_gate_checked_first(twins):
    """Every route and method of the API, without a body, with every kind of token: the one-hop
    app and the check-first app give the same answer, and record the same service actions."""
    proposal_id = twins.proposal()
    routes = _gated_routes()
    assert len(routes) >= 15
    kinds = [None, "garbage", "forged", "revoked", "foreign", "agent", "reader"]
    recorded_before = len(service_actions(twins.cs, "granite"))
    for method, template in routes:
        path = _filled(template, proposal_id)
        for kind in kinds:
            token = twins.tokens[kind] if kind else None
            one = twins.one.request(method, path, headers=_auth(token))
            two = twins.two.request(method, path, headers=_auth(token))
            assert answer(one) == answer(two), (method, template, kind, one.text, two.text)
            if kind in (None, "garbage", "forged", "revoked"):
                assert one.status_code == 401, (method, template, kind)
                assert one.headers["connection"] == "close"
            if kind == "agent" and template.endswith(("/approve", "/decline")):
                assert one.status_code == 403
                assert one.json()["type"] == "urn:countersign:problem:agent-cannot-decide"
    # Nothing was approved or declined, and both apps recorded the same actions (in pairs).
    actions = service_actions(twins.cs, "granite")[recorded_before:]
    pairs = [(a["service"], a["action"], a["target"], a["result"]) for a in actions]
    assert pairs[0::2] == pairs[1::2]
    assert not any(a["action"] in ("approve", "decline") for a in actions)
    status = twins.one.get(
        f"/api/v1/proposals/{proposal_id}", headers=_auth(twins.tokens["approver"])
    )
    assert status.json()["status"] == "pending"


def test_what_the_router_answers_waits_for_the_check(twins):
    """An unknown path, a wrong method, an id or a query parameter out of bounds: a token that
    is not valid gets the gate's 401 first, a valid one the router's problem, on both apps."""
    proposal_id = twins.proposal()
    requests = [
        ("GET", "/api/v1/nothing-here"),
        ("GET", "/api/v1"),
        ("DELETE", f"/api/v1/proposals/{proposal_id}"),
        ("GET", f"/api/v1/proposals/{'x' * 65}"),
        ("GET", f"/api/v1/proposals/{proposal_id}?language=xx"),
        ("GET", "/api/v1/inbox?page_size=1000"),
        ("POST", f"/api/v1/proposals/{uuid.uuid4()}/approve"),
    ]
    for method, path in requests:
        for kind in (None, "garbage", "revoked", "approver", "foreign"):
            token = twins.tokens[kind] if kind else None
            one = twins.one.request(method, path, headers=_auth(token))
            two = twins.two.request(method, path, headers=_auth(token))
            assert answer(one) == answer(two), (method, path, kind)
            assert (one.status_code == 401) == (kind in (None, "garbage", "revoked"))
            assert one.headers["content-type"] == "application/problem+json"


def test_approving_an_expired_proposal_answers_and_records_the_same(twins, clock):
    runs: dict[str, list[Any]] = {}
    fresh = {"one": twins.proposal(), "two": twins.proposal()}
    clock.advance(days=2)
    for name, client in (("one", twins.one), ("two", twins.two)):
        before = len(service_actions(twins.cs, "granite"))
        path = f"/api/v1/proposals/{fresh[name]}/approve"
        answers = [
            client.post(path, headers=_auth(twins.tokens["approver"])),
            client.post(path, headers=_auth(twins.tokens["agent"])),
        ]
        runs[name] = [answer(a, *twins.same(fresh[name])) for a in answers]
        records = service_actions(twins.cs, "granite")[before:]
        # A refusal changed nothing the service did: answered, not recorded, on both apps.
        assert records == []
    assert runs["one"] == runs["two"]
    assert [status for status, _, _ in runs["one"][:2]] == [200, 403]
    assert "expired" in runs["one"][0][2]


def test_a_repeated_approve_returns_the_stored_outcome_on_both_apps(twins):
    runs: dict[str, list[Any]] = {}
    for name, client in (("one", twins.one), ("two", twins.two)):
        proposal_id = twins.proposal()
        headers = _auth(twins.tokens["approver"])
        path = f"/api/v1/proposals/{proposal_id}"
        before = len(service_actions(twins.cs, "granite"))
        answers = [
            client.post(f"{path}/approve", headers=headers),
            client.post(f"{path}/approve", headers=headers),
            client.post(f"{path}/approve", headers=_auth(twins.tokens["agent"])),
            client.post(f"{path}/approve", headers=_auth(twins.tokens["foreign"])),
            client.post(f"{path}/approve", headers=_auth(twins.tokens["garbage"])),
            client.post(f"{path}/decline", headers=headers),
            client.get(f"{path}/status", headers=headers),
        ]
        records = service_actions(twins.cs, "granite")[before:]
        runs[name] = [answer(a, *twins.same(proposal_id)) for a in answers]
        runs[name].append([(r["service"], r["action"], r["result"]) for r in records])
        assert [a.status_code for a in answers] == [200, 200, 403, 404, 401, 200, 200]
        assert answers[0].json()["result"] == "executed"
        assert answers[1].json()["result"] == "already_completed"
        assert answers[1].json()["outcome"] == answers[0].json()["outcome"]
    assert runs["one"] == runs["two"]


# -- one hop ----------------------------------------------------------------------------------


@dataclass
class Hops:
    count: int = 0


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Hops:
    """Every hop to a worker thread: a submission to the API's executor or to anyio's pool
    (which FastAPI's and Starlette's ``run_in_threadpool`` use)."""
    hopped = Hops()
    executor = hops.executor()

    class Counting:
        def submit(self, *args: Any, **kwargs: Any) -> Any:
            hopped.count += 1
            return executor.submit(*args, **kwargs)

    monkeypatch.setattr(hops, "_executor", Counting())
    run_sync = anyio.to_thread.run_sync

    async def counting_run_sync(*args: Any, **kwargs: Any) -> Any:
        hopped.count += 1
        return await run_sync(*args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting_run_sync)
    return hopped


def test_a_request_without_a_body_takes_one_hop_and_one_with_a_body_two(twins, counted):
    proposal_id = twins.proposal()
    headers = _auth(twins.tokens["approver"])
    path = f"/api/v1/proposals/{proposal_id}"

    def hops_of(method: str, url: str, **kwargs: Any) -> tuple[int, int]:
        counted.count = 0
        status = twins.one.request(method, url, **kwargs).status_code
        return status, counted.count

    # The route's hop checks the token and runs the handler (and records the action).
    assert hops_of("POST", f"{path}/approve", headers=headers) == (200, 1)
    assert hops_of("POST", f"{path}/approve", headers=headers) == (200, 1)  # the stored outcome
    for read in (path, f"{path}/status", f"{path}/history", "/api/v1/inbox", "/api/v1/members"):
        assert hops_of("GET", read, headers=headers) == (200, 1), read
    agent = _auth(twins.tokens["agent"])
    assert hops_of("POST", f"{path}/decline", headers=agent) == (403, 1)
    # A token that is not valid: refused in the route's hop, the handler never runs.
    assert hops_of("POST", f"{path}/approve", headers=_auth("not-a-token")) == (401, 1)
    # Nothing but the check to make: the router's 404 waits for it, in a hop of its own.
    assert hops_of("GET", "/api/v1/nothing-here", headers=headers) == (404, 1)
    # A body: the gate checks the token before reading it (one hop), then the route's.
    assert hops_of("POST", f"{path}/decline", headers=headers, json={"note": "no"}) == (200, 2)
    assert hops_of("POST", f"{path}/approve", headers=headers, json={}) == (200, 2)
    # With the check made first (the other app), a request without a body took two.
    counted.count = 0
    assert twins.two.post(f"{path}/approve", headers=headers).status_code == 200
    assert counted.count == 2


def test_every_api_route_is_gated_and_a_route_that_is_not_turns_the_deferral_off(cs, seeded):
    """A route under /api/v1 that is not a GatedRoute would run before a pending check: with
    one in the app, the gate checks every token first, and a bad token never reaches it."""
    app = create_app(cs)
    api_routes = [
        c.original_route for c in iter_route_contexts(app.routes) if is_api_path(str(c.path))
    ]
    assert api_routes
    assert all(isinstance(route, GatedRoute) for route in api_routes)
    ran: list[str] = []

    @app.get("/api/v1/plain")
    def plain() -> dict[str, str]:
        ran.append("plain")
        return {}

    with TestClient(app, raise_server_exceptions=False) as client:
        refused = client.get("/api/v1/plain", headers=_auth("not-a-token"))
        assert refused.status_code == 401
        assert ran == []
        token = issue_token(cs, "granite", "bot", ALL, issued_by=AVA, kind="approver").token
        assert client.get("/api/v1/plain", headers=_auth(token)).status_code == 200
        assert ran == ["plain"]


# -- the gate's parameters --------------------------------------------------------------------


def test_the_routes_give_the_gates_parameters_and_fastapi_resolves_no_dependency(cs):
    """``Service`` and ``Wired`` are handed to the handlers by their GatedRoute: FastAPI has no
    dependency of them to resolve per request, and the OpenAPI document still says every
    operation needs the bearer token."""
    app = create_app(cs)
    gated = [
        c.original_route
        for c in iter_route_contexts(app.routes)
        if isinstance(c.original_route, GatedRoute)
    ]
    assert len(gated) >= 15
    assert all(route.dependant.dependencies == [] for route in gated)
    document = app.openapi()
    assert document["components"]["securitySchemes"] == {
        "ApiToken": {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API token issued to an application service: 'Authorization: Bearer cst_...'."
            ),
        }
    }
    operations = [
        operation
        for path, methods in document["paths"].items()
        if is_api_path(path)
        for operation in methods.values()
    ]
    assert len(operations) == len(gated)
    assert all(operation["security"] == [{"ApiToken": []}] for operation in operations)


def test_without_the_gate_a_gated_route_checks_the_token_itself(cs, seeded):
    """An app assembled without ApiGate: the route's hop checks the token before the handler."""
    app = FastAPI()
    app.state.countersign = cs
    install_problem_handlers(app)
    app.include_router(proposals.router)
    token = issue_token(cs, "granite", "bot", ALL, issued_by=AVA, kind="approver").token
    unknown = f"/api/v1/proposals/{uuid.uuid4()}"
    with TestClient(app, raise_server_exceptions=False) as client:
        refused = client.get(unknown, headers=_auth("not-a-token"))
        assert refused.status_code == 401
        assert refused.json()["type"] == "urn:countersign:problem:unauthenticated"
        assert client.get(unknown, headers=_auth(token)).status_code == 404
