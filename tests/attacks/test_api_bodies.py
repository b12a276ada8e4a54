"""Attack: bodies too large to read, sent before (or without) authenticating.

The red-team run sent ``POST /api/v1/proposals`` a 210 MB body without a token (answered 401
only after reading and parsing all of it) and, with a token, a ``request`` of 700,000 unknown
keys (8-10 s, a 40 MB problem document, a concurrent inbox request took 1.35 s). Now:

* a declared ``Content-Length`` over the limit is refused (413) before a byte is read;
* a body is read only for a valid token: without one, 401 and nothing read;
* the bytes are counted as they arrive, so a lying ``Content-Length`` or a chunked body is
  refused once the count passes the limit, having read no more than one message beyond it;
* a request's problems are capped at 20 plus a count, and the contract's strict-schema path
  stays fast even if an operator raises the limit far beyond the default;
* a real server answers its other clients promptly while it is being sent such bodies.

Every refused request changed nothing: the same events, an intact audit chain, no service
action logged. The time bounds are generous safety limits, not benchmarks.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import pytest
import uvicorn
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.problems import MAX_PROBLEMS
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.http.problems import PROBLEM_MEDIA_TYPE
from countersign.infrastructure.identity.tokens import issue_token, service_actions
from countersign.infrastructure.settings import Settings, SettingsError
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD, count_events
from tests.servers import serving

LIMIT = 64 * 1024
HUGE = 210 * 1024 * 1024
CHUNK = b"x" * LIMIT  # one buffer, yielded again and again: nothing of HUGE is allocated
#: How long a request may take to be answered while the server is under attack: a stalled
#: server fails it; a loaded machine does not (these tests bound work, not time).
ANSWER_TIMEOUT = 10.0
LEAKS = ("Traceback", "SELECT", "INSERT", ".py", "/work", "/tmp", "sqlite", "psycopg", "pydantic")


def chunks(total: int = HUGE, chunk: bytes = CHUNK) -> Iterator[bytes]:
    """``total`` bytes, one ``chunk`` at a time, generated as they are asked for."""
    sent = 0
    while sent < total:
        yield chunk
        sent += len(chunk)


def many_keys(count: int) -> dict[str, int]:
    return {f"k{i}": 0 for i in range(count)}


# -- what must not change -----------------------------------------------------------------


@dataclass
class Unchanged:
    """What the store, the audit chain and the service-action log held before an attack."""

    cs: Countersign
    events: int = 0
    actions: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.events = count_events(self.cs)
        self.actions = service_actions(self.cs, "granite")

    def check(self) -> None:
        assert count_events(self.cs) == self.events
        assert service_actions(self.cs, "granite") == self.actions
        report = verify(self.cs.app, self.cs.sql)
        assert report.ok, report.to_json()


def check_problem(
    status: int, headers: Any, body: bytes, expected_status: int, kind: str
) -> dict[str, Any]:
    """A problem of the project's own format and type, with the API's headers and no leak."""
    assert status == expected_status, body[:300]
    assert headers["content-type"] == PROBLEM_MEDIA_TYPE
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"
    document: dict[str, Any] = json.loads(body)
    assert document["type"] == f"urn:countersign:problem:{kind}"
    assert document["status"] == expected_status
    assert document["correlation_id"] == headers["x-correlation-id"]
    assert document["correlation_id"].startswith("cs-")
    text = body.decode()
    for leak in LEAKS:
        assert leak not in text, leak
    return document


@dataclass
class Api:
    cs: Countersign
    seeded: dict[str, Any]
    client: TestClient
    token: str

    def propose_body(self, request: Any) -> dict[str, Any]:
        return {
            "operation": REFUND,
            "resource_id": self.seeded["orders"]["refund-ok"],
            "request": request,
        }


def _token(cs: Countersign) -> str:
    return issue_token(
        cs, "granite", "attack-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token


@pytest.fixture
def api(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    token = _token(cs)
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield Api(cs=cs, seeded=seeded, client=client, token=token)


# -- the app as an ASGI callable, with a receive we control ---------------------------------


@dataclass
class Exchange:
    """One request driven straight through the ASGI app, counting what the app pulled."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    receive_calls: int = 0
    bytes_pulled: int = 0
    seconds: float = 0.0


def drive(
    app: FastAPI,
    path: str,
    headers: dict[str, str],
    body: Iterator[bytes],
    method: str = "POST",
) -> Exchange:
    exchange = Exchange()
    body_iter = iter(body)
    pending: list[bytes] = []

    async def receive() -> dict[str, Any]:
        exchange.receive_calls += 1
        if not pending:
            pending.append(next(body_iter, b""))
        chunk = pending.pop()
        exchange.bytes_pulled += len(chunk)
        following = next(body_iter, None)
        if following is not None:
            pending.append(following)
        return {"type": "http.request", "body": chunk, "more_body": following is not None}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            exchange.status = message["status"]
            exchange.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            exchange.body += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    started = time.perf_counter()
    asyncio.run(app(scope, receive, send))
    exchange.seconds = time.perf_counter() - started
    return exchange


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


# -- the size limit, enforced while reading -------------------------------------------------


def test_a_declared_oversized_body_is_refused_before_a_byte_is_read(api):
    unchanged = Unchanged(api.cs)
    app = api.client.app

    declared = [(None, str(HUGE)), ("cst_0000000000000000_" + "A" * 43, str(HUGE))]
    declared += [(api.token, length) for length in (str(LIMIT + 1), str(HUGE), "9" * 5000)]
    for token, length in declared:
        headers = {**_auth(token), "Content-Type": "application/json", "Content-Length": length}
        exchange = drive(app, "/api/v1/proposals", headers, chunks())

        document = check_problem(
            exchange.status, exchange.headers, exchange.body, 413, "payload-too-large"
        )
        assert exchange.receive_calls == 0, "the body was read"
        assert exchange.headers["connection"] == "close"
        assert str(LIMIT) in document["detail"]
    unchanged.check()


def test_a_lying_content_length_is_refused_once_the_bytes_read_pass_the_limit(api):
    unchanged = Unchanged(api.cs)
    headers = {**_auth(api.token), "Content-Type": "application/json", "Content-Length": "100"}

    for chunk in (b"[" * 4096, b" " * 1000, CHUNK):
        exchange = drive(api.client.app, "/api/v1/proposals", headers, chunks(HUGE, chunk))

        check_problem(exchange.status, exchange.headers, exchange.body, 413, "payload-too-large")
        # Counted as it arrived: refused with the message that passed the limit.
        assert LIMIT < exchange.bytes_pulled <= LIMIT + len(chunk)
    unchanged.check()


def test_without_a_valid_token_no_byte_of_the_body_is_read_or_parsed(api):
    unchanged = Unchanged(api.cs)
    forged = api.token[:-4] + "AAAA"

    for token in (None, forged, "not-a-token"):
        # Chunked (no Content-Length): the size is unknown until it is read.
        exchange = drive(
            api.client.app,
            "/api/v1/proposals",
            {**_auth(token), "Content-Type": "application/json"},
            chunks(),
        )
        check_problem(exchange.status, exchange.headers, exchange.body, 401, "unauthenticated")
        assert exchange.receive_calls == 0, "the body was read before the token was checked"
        assert exchange.headers["www-authenticate"].startswith('Bearer realm="countersign"')
        # Within the limit and not even JSON: still 401, not 400 (nothing was parsed).
        response = api.client.post(
            "/api/v1/proposals",
            headers={**_auth(token), "Content-Type": "application/json"},
            content=b'{"operation": [[[[' + b"\xff" * 100,
        )
        check_problem(
            response.status_code, response.headers, response.content, 401, "unauthenticated"
        )
    # Every route, known or not, wants the token first.
    for path in ("/api/v1/inbox", "/api/v1/nothing-here", "/api/v1"):
        exchange = drive(api.client.app, path, {}, chunks(3 * LIMIT), method="GET")
        check_problem(exchange.status, exchange.headers, exchange.body, 401, "unauthenticated")
        assert exchange.receive_calls == 0
    unchanged.check()


def test_a_body_within_the_limit_still_works_and_the_limit_is_configurable(cs, seeded, monkeypatch):
    token = _token(cs)
    monkeypatch.setenv("COUNTERSIGN_API_MAX_BODY", "1024")
    assert Settings.from_env().api_max_body == 1024
    for wrong in ("0", "-5", "64k", "١٠٢٤"):
        monkeypatch.setenv("COUNTERSIGN_API_MAX_BODY", wrong)
        with pytest.raises(SettingsError, match="COUNTERSIGN_API_MAX_BODY"):
            Settings.from_env()
    assert Settings().api_max_body == LIMIT

    body = {
        "operation": REFUND,
        "resource_id": seeded["orders"]["refund-ok"],
        "request": TO_CARD,
    }
    padded = {**body, "request": {**TO_CARD, "payment": "P1" + " " * 2000}}
    with TestClient(create_app(cs, max_body=1024), raise_server_exceptions=False) as client:
        unchanged = Unchanged(cs)
        refused = client.post("/api/v1/proposals", headers=_auth(token), json=padded)
        document = check_problem(
            refused.status_code, refused.headers, refused.content, 413, "payload-too-large"
        )
        assert "1024 bytes" in document["detail"]
        unchanged.check()
        created = client.post("/api/v1/proposals", headers=_auth(token), json=body)
        assert created.status_code == 201, created.text
        assert created.headers["cache-control"] == "no-store"
    assert count_events(cs, "Proposal.Proposed") == 1


# -- many problems --------------------------------------------------------------------------


def test_a_request_of_many_unknown_keys_answers_twenty_problems_and_a_count(api):
    unchanged = Unchanged(api.cs)
    headers = {**_auth(api.token), "Content-Type": "application/json"}
    fits = 5000  # about 53 KB of '"k1234": 0, ' pairs
    body = json.dumps(api.propose_body(many_keys(fits))).encode()
    assert len(body) < LIMIT

    response = api.client.post("/api/v1/proposals", headers=headers, content=body)

    document = check_problem(
        response.status_code, response.headers, response.content, 422, "invalid-request"
    )
    problems = document["problems"]
    assert len(problems) == 20
    # The four missing fields first, then the unknown keys in the order they were sent.
    assert problems[:4] == [
        {"field": name, "message": "this field is required"}
        for name in ("payment", "line_item", "discount", "destination")
    ]
    assert problems[4:] == [
        {"field": f"k{i}", "message": "unknown field; remove it"} for i in range(16)
    ]
    assert document["more_problems"] == fits + 4 - 20
    assert len(response.content) < 4096

    # The same flood at the top level of the body (FastAPI's own validation): capped too.
    top = json.dumps({**many_keys(fits), **api.propose_body(TO_CARD)}).encode()
    response = api.client.post("/api/v1/proposals", headers=headers, content=top)
    document = check_problem(
        response.status_code, response.headers, response.content, 422, "invalid-request"
    )
    assert len(document["problems"]) == 20
    assert document["more_problems"] == fits - 20

    # The red team's 10 MB of 700,000 keys: refused for its size, unread.
    flood = json.dumps(api.propose_body(many_keys(700_000))).encode()
    response = api.client.post("/api/v1/proposals", headers=headers, content=flood)
    check_problem(
        response.status_code, response.headers, response.content, 413, "payload-too-large"
    )
    unchanged.check()


def test_with_the_limit_raised_700000_unknown_keys_are_still_cheap_to_refuse(
    cs, seeded, monkeypatch
):
    """An operator may raise COUNTERSIGN_API_MAX_BODY: the contract's strict schema is then
    given the red team's request, and still answers 20 problems and a count, having given its
    validator only the keys it reports (not one error built per key: before, 8-10 s and a
    40 MB answer). Cheapness is shown by the work done, not by a clock: on a loaded machine
    parsing the 9.7 MB body alone took 10 s."""
    token = _token(cs)
    flood = json.dumps(
        {
            "operation": REFUND,
            "resource_id": seeded["orders"]["refund-ok"],
            "request": many_keys(700_000),
        }
    ).encode()
    assert len(flood) > 9_000_000
    request_model = REGISTRY[REFUND].Request
    given = validator_inputs(request_model, monkeypatch)
    with TestClient(create_app(cs, max_body=len(flood)), raise_server_exceptions=False) as client:
        unchanged = Unchanged(cs)
        response = client.post(
            "/api/v1/proposals",
            headers={**_auth(token), "Content-Type": "application/json"},
            content=flood,
        )

        document = check_problem(
            response.status_code, response.headers, response.content, 422, "invalid-request"
        )
        assert len(document["problems"]) == 20
        assert document["more_problems"] == 700_004 - 20
        assert len(response.content) < 4096
        # The validator saw the request's own fields and the first MAX_PROBLEMS unknown keys.
        assert given
        assert max(given) <= len(request_model.model_fields) + MAX_PROBLEMS
        unchanged.check()


def validator_inputs(request_model: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each mapping the contract's strict schema is given, from now on."""
    validate = request_model.model_validate
    given: list[int] = []

    def counted(obj: Any, *args: Any, **kwargs: Any) -> Any:
        given.append(len(obj))
        return validate(obj, *args, **kwargs)

    monkeypatch.setattr(request_model, "model_validate", counted)
    return given


# -- a real server under attack stays responsive --------------------------------------------


@dataclass
class Server:
    base: str
    token: str
    thread: threading.Thread
    server: uvicorn.Server


@pytest.fixture
def server(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Server]:
    token = _token(cs)
    with serving(create_app(cs)) as running:
        yield Server(running.base, token, running.thread, running.server)


#: What a refused attack can get sent: the body limit, and the loopback sockets' buffers.
UNREAD_BOUND = 32 * 1024 * 1024

#: An attack whose connection the server closed before the client could read the refusal.
DROPPED = 0


def _attack(base: str, token: str | None) -> tuple[int, int, dict[str, Any]]:
    """Stream 210 MB at propose (chunked: no Content-Length); the answer and the bytes the
    client got to send before it.

    The server answers at once and closes the connection while the client is still sending;
    the kernel may then reset it before the client has read the answer (TCP discards what
    arrives after an unread close). That is the same refusal, seen as a dropped connection."""
    headers = {**_auth(token), "Content-Type": "application/json"}
    sent = [0]

    def counted() -> Iterator[bytes]:
        for chunk in chunks():
            yield chunk
            sent[0] += len(chunk)

    try:
        with httpx.Client(timeout=ANSWER_TIMEOUT) as client:
            response = client.post(f"{base}/api/v1/proposals", content=counted(), headers=headers)
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
        return DROPPED, sent[0], {}
    check_problem(
        response.status_code,
        response.headers,
        response.content,
        response.status_code,
        "payload-too-large" if response.status_code == 413 else "unauthenticated",
    )
    return response.status_code, sent[0], dict(response.headers)


def test_a_server_sent_210_mb_bodies_refuses_them_at_once_and_keeps_answering(server, cs):
    unchanged = Unchanged(cs)
    attacks: list[tuple[int, int, dict[str, Any]]] = []
    stop = threading.Event()

    def keep_attacking(token: str | None) -> None:
        while not stop.is_set():
            attacks.append(_attack(server.base, token))

    with (
        ThreadPoolExecutor(max_workers=2) as attackers,
        httpx.Client(base_url=server.base, timeout=ANSWER_TIMEOUT) as client,
    ):
        running = [attackers.submit(keep_attacking, t) for t in (server.token, None)]
        try:
            for _ in range(10):
                inbox = client.get("/api/v1/inbox", headers=_auth(server.token))
                assert inbox.status_code == 200, inbox.text
                assert inbox.headers["cache-control"] == "no-store"
                time.sleep(0.05)
        finally:
            stop.set()
            for future in running:
                future.result(timeout=30)

    statuses = {status for status, _, _ in attacks}
    assert {401, 413} <= statuses <= {401, 413, DROPPED}, statuses
    # Refused at once: the client got to send no more than the limit and what the sockets'
    # buffers held before the server stopped reading (of 210 MB each).
    assert all(sent < UNREAD_BOUND for _, sent, _ in attacks), attacks
    answered = [headers for status, _, headers in attacks if status != DROPPED]
    assert all(headers["connection"] == "close" for headers in answered)
    assert server.thread.is_alive()
    unchanged.check()
