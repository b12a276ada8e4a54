"""Issue 27: the API's routes without FastAPI's glue they do not need, answering the same.

Two things take work off an API request in the server (``http/app.py``'s ``add_routes``,
``http/lean.py``): the API's routes are the application's own, not behind an included
router's layer, and a request without a body is answered by a ``GatedRoute``'s short way,
which validates its parameters with FastAPI's own functions and calls the handler, instead
of FastAPI's whole request handler. These tests send the same requests to that app and to
one as FastAPI serves it (routers included, FastAPI's handler for every request), and
compare every answer, the stored outcomes and the service-action records; they count that
the short way is taken where it should be, and that the OpenAPI document is the same.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import fastapi.routing
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import app as api_app
from countersign.infrastructure.entrypoints.http import create_app, lean
from countersign.infrastructure.identity.tokens import issue_token, service_actions
from fastapi import APIRouter, Depends, FastAPI
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA
from tests.test_api_one_hop import ALL, Twins, _auth, _filled, _gated_routes, answer


def as_fastapi_serves_it(cs: Countersign, monkeypatch: pytest.MonkeyPatch) -> FastAPI:
    """``create_app(cs)`` with its routers included by FastAPI and FastAPI's request handler
    for every request (the routes' handlers, made when a request first comes, are made while
    the short way is off)."""
    monkeypatch.setattr(lean, "_INCLUDED", None)
    monkeypatch.setattr(api_app, "add_routes", lambda app, router: app.include_router(router))
    return create_app(cs)


@pytest.fixture
def twins(
    cs: Countersign, seeded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Twins]:
    tokens = {
        "approver": issue_token(
            cs, "granite", "billing", ALL, issued_by=AVA, kind="approver"
        ).token,
        "agent": issue_token(cs, "granite", "ava-agent", ALL, issued_by=AVA, kind="agent").token,
        "reader": issue_token(
            cs, "granite", "reader", ["audit.read"], issued_by=AVA, kind="approver"
        ).token,
        "foreign": issue_token(cs, "maple", "maple-bot", ALL, issued_by=MIA, kind="approver").token,
        "garbage": "not-a-token",
    }
    lean_app = create_app(cs)
    own = as_fastapi_serves_it(cs, monkeypatch)
    with (
        TestClient(lean_app, raise_server_exceptions=False) as one,
        TestClient(own, raise_server_exceptions=False) as two,
    ):
        yield Twins(cs=cs, seeded=seeded, one=one, two=two, tokens=tokens)


@pytest.fixture
def solved(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths FastAPI's own request handler solved parameters for (``solve_dependencies``)."""
    paths: list[str] = []
    solve = fastapi.routing.solve_dependencies

    async def counted(*, request: Any, **kwargs: Any) -> Any:
        paths.append(request.url.path)
        return await solve(request=request, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    return paths


def test_every_route_answers_as_fastapi_serves_it(twins):
    """Every route and method without a body, with every kind of token; then the same with
    parameters out of bounds: the same answers, and the same service actions, in pairs."""
    proposal_id = twins.proposal()
    before = len(service_actions(twins.cs, "granite"))
    requests = [
        (method, _filled(template, proposal_id), kind)
        for method, template in _gated_routes()
        for kind in ("approver", "agent", "reader", "foreign", "garbage")
        # (the approver's approve and decline would decide: the next test's)
        if kind != "approver" or not template.endswith(("/approve", "/decline"))
    ]
    requests += [
        (method, path, kind)
        for method, path in [
            ("GET", f"/api/v1/proposals/{'x' * 65}"),
            ("POST", f"/api/v1/proposals/{'x' * 65}/approve"),
            ("GET", f"/api/v1/proposals/{proposal_id}?language=xx"),
            ("GET", f"/api/v1/proposals/{proposal_id}?language=fr"),
            ("GET", f"/api/v1/proposals/{proposal_id}/history?as_of={'9' * 41}"),
            ("GET", "/api/v1/inbox?page_size=1000&page=0"),
            ("GET", "/api/v1/inbox?section=nowhere"),
            ("GET", "/api/v1/inbox?page=2&page_size=5"),
            ("GET", "/api/v1/webhooks/deliveries?limit=0"),
            ("GET", "/api/v1/webhooks/deliveries?dead=maybe"),
            ("POST", f"/api/v1/proposals/{uuid.uuid4()}/approve"),
            ("DELETE", f"/api/v1/proposals/{proposal_id}"),
            ("GET", "/api/v1/nothing-here"),
        ]
        for kind in ("approver", "garbage")
    ]
    for method, path, kind in requests:
        one = twins.one.request(method, path, headers=_auth(twins.tokens[kind]))
        two = twins.two.request(method, path, headers=_auth(twins.tokens[kind]))
        assert _unrandom(answer(one)) == _unrandom(answer(two)), (method, path, kind, one.text)
    actions = service_actions(twins.cs, "granite")[before:]
    pairs = [(a["service"], a["action"], a["target"], a["result"]) for a in actions]
    # Each of these answers changed nothing, and only what changed something is recorded (the
    # next test's decisions are): neither app recorded any of them.
    assert pairs == []


def _unrandom(answer: tuple[int, dict[str, str], str]) -> tuple[int, dict[str, str], str]:
    """An answer less what is drawn at random for each request (an approval challenge's)."""
    status, headers, text = answer
    if '"nonce"' in text:
        document = json.loads(text)
        document["nonce"] = document["options"]["challenge"] = "<random>"
        text = json.dumps(document)
    return status, headers, text


def test_approving_and_declining_with_and_without_a_body_answers_the_same(twins, solved):
    """The executions, the stored outcomes, and bodies (empty, valid, malformed, of another
    type) that FastAPI's handler parses: the same answers and records; FastAPI solves the
    parameters of a request with a body only, on the lean app."""
    runs: dict[str, list[Any]] = {}
    for name, client in (("one", twins.one), ("two", twins.two)):
        proposal_id = twins.proposal()
        declined = twins.proposal()
        headers = _auth(twins.tokens["approver"])
        path = f"/api/v1/proposals/{proposal_id}"
        before = len(service_actions(twins.cs, "granite"))
        solved.clear()
        answers = [
            client.post(f"{path}/approve", headers=headers),
            client.post(f"{path}/approve", headers=headers),
            client.post(f"{path}/approve", headers=headers, json={}),
            client.post(f"{path}/approve", headers=headers, json={"passkey_assertion": 3}),
            client.post(
                f"{path}/approve",
                headers={**headers, "Content-Type": "application/json"},
                content=b"{not json",
            ),
            client.post(
                f"{path}/approve",
                headers={**headers, "Content-Type": "text/plain"},
                content=b"{}",
            ),
            client.post(f"{path}/approve", headers=_auth(twins.tokens["agent"])),
            client.post(f"/api/v1/proposals/{declined}/decline", headers=headers, json={"note": 7}),
            client.post(f"/api/v1/proposals/{declined}/decline", headers=headers),
            client.post(f"/api/v1/proposals/{declined}/decline", headers=headers),
        ]
        records = service_actions(twins.cs, "granite")[before:]
        same = (*twins.same(proposal_id), *twins.same(declined))
        runs[name] = [answer(a, *same) for a in answers]
        runs[name].append([(r["service"], r["action"], r["result"]) for r in records])
        runs[name].append(solved.copy())
    one, two = runs["one"], runs["two"]
    assert one[:-1] == two[:-1]
    assert [status for status, _, _ in one[:4]] == [200, 200, 200, 422]
    assert [json.loads(text)["result"] for _, _, text in one[:3]] == [
        "executed",
        "already_completed",
        "already_completed",
    ]
    assert one[4][0] == 400
    assert one[6][0] == 403
    # FastAPI's handler solved the parameters of every request but the malformed one; on the
    # lean app, only those of the requests with a body that it parsed (2, 3, 5 and 7).
    assert len(two[-1]) == 9
    assert len(one[-1]) == 4


def test_a_body_that_cannot_be_read_gets_fastapis_answer(twins):
    """A request that says it has no body, whose client is gone when the body is read: FastAPI's
    handler meets the same error through the short way, and answers it as its own."""
    proposal_id = twins.proposal()
    path = f"/api/v1/proposals/{proposal_id}/approve"
    token = twins.tokens["approver"]
    sent = [_gone(client.app, path, token) for client in (twins.one, twins.two)]
    assert sent[0] == sent[1]
    status, problem = sent[0]
    assert (status, problem["type"]) == (400, "urn:countersign:problem:malformed-request")


def _gone(app: Any, path: str, token: str) -> tuple[int, dict[str, Any]]:
    """POST ``path`` with ``Content-Length: 0`` to the ASGI ``app``, whose client has
    disconnected: the status and the problem (less its correlation id)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", b"0"),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
        "state": {},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    problem = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    problem.pop("correlation_id")
    return sent[0]["status"], problem


def test_the_openapi_document_is_the_one_fastapi_makes(cs, monkeypatch):
    lean_document = create_app(cs).openapi()
    own = as_fastapi_serves_it(cs, monkeypatch)
    own.title = lean_document["info"]["title"]
    assert own.openapi() == lean_document


def test_a_router_that_takes_something_from_its_inclusion_is_refused():
    app = FastAPI()
    taking = APIRouter(dependencies=[Depends(lambda: None)])
    taking.add_api_route("/x", lambda: None)
    mixed = APIRouter()
    mixed.add_route("/y", lambda request: None)
    for router in (taking, mixed):
        with pytest.raises(ValueError, match="include it"):
            api_app.add_routes(app, router)
    plain = APIRouter()
    plain.add_api_route("/z", lambda: None)
    api_app.add_routes(app, plain)
    assert app.routes[-1] is plain.routes[0]
