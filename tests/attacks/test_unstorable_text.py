"""Held: text no database can take is refused where it enters, on every route, as a class.

A NUL byte (PostgreSQL's text refuses it: psycopg.DataError), a lone surrogate (valid JSON,
``"\\ud800"``, but a string no UTF-8 text can hold: neither database, nor a stored event, takes
it), an integer past 64 bits where a number is read (SQLite's INTEGER and PostgreSQL's bigint
stop there) and text longer than a bounded column or an index entry takes: an attack run found
two 500s from a NUL (a webhook delivery id, a sign-in email) and fixed those two places. Here
each entry point that takes text gets each value in each place it takes text: every API
route's path ids, query values and body fields (the table below is checked against the
application's routes: a new route or parameter fails ``test_the_table_names_every_route``),
and every page's path ids, query values and form fields (checked the same way). The answer
is a 4xx and the usual error (a problem document on the API, the error page in EN or FR on
the pages), never a 500, a trace, SQL or a path, and nothing is stored, on SQLite and on
PostgreSQL. The guards are one a boundary (``domain.storable_text``): the API's ``Body``
model, the API's gate for paths and queries, the pages' ``Site`` for all three.
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import quote

import pytest
from countersign.domain.storable_text import WHY
from countersign.infrastructure.request_deadline import connection_options
from fastapi import FastAPI
from fastapi.routing import APIRoute
from httpx2 import Response
from starlette.routing import Route

from tests.attacks.conftest import (
    LEAKS,
    Api,
    Browser,
    Web,
    assert_nothing_changed,
    problem,
    snapshot,
)
from tests.conftest import AVA, REFUND, TO_CARD
from tests.servers import serving

#: A value as it is written in a JSON body (raw JSON text), and as a string elsewhere.
NUL = "\x00"
LONE = "\ud800"
LONG = "x" * 10_000
HUGE = "1" + "0" * 25  # past 2**64 (1.8e19)
TEXTS = {"nul": NUL, "nul inside": f"a{NUL}b", "long": LONG}
JSON_TEXTS = {**TEXTS, "lone surrogate": LONE, "surrogate inside": f"a{LONE}b"}


def _json_literal(value: str) -> str:
    """``value`` as a JSON string literal, a lone surrogate escaped as ``\\ud800``."""
    return json.dumps(value)  # ensure_ascii: every non-ASCII character escaped


PLACEHOLDER = "@@UNSTORABLE@@"


def _body_with(template: Any, path: tuple[str | int, ...], literal: str) -> bytes:
    """The JSON text of ``template`` with the value at ``path`` replaced by ``literal``
    (raw JSON text: a lone surrogate stays an escape, a huge number stays digits)."""
    document = json.loads(json.dumps(template))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = PLACEHOLDER
    return json.dumps(document).replace(json.dumps(PLACEHOLDER), literal).encode()


# -- the JSON API ------------------------------------------------------------------------------

#: Every API route: its method, path (``{name}`` filled from ``ids``), the query values and body
#: it is sent with, and the places a text or a number is put: ("path", name), ("query", name),
#: ("body", key, ...) for a text, ("number", key, ...) / ("query-number", name) for a number.
ROUTES: list[tuple[str, str, dict[str, str], Any, list[tuple[Any, ...]]]] = [
    (
        "POST",
        "/api/v1/assistants/{section}/resources/{resource_id}/messages",
        {},
        {"message": "hello", "interaction_id": None, "language": "en"},
        [
            ("path", "section"),
            ("path", "resource_id"),
            ("body", "message"),
            ("body", "interaction_id"),
            ("body", "language"),
        ],
    ),
    (
        "GET",
        "/api/v1/inbox",
        {"section": "orders", "page": "1", "page_size": "20"},
        None,
        [("query", "section"), ("query-number", "page"), ("query-number", "page_size")],
    ),
    (
        "POST",
        "/api/v1/proposals",
        {},
        {"operation": REFUND, "resource_id": "{resource_id}", "request": dict(TO_CARD)},
        [
            ("body", "operation"),
            ("body", "resource_id"),
            *[("body", "request", key) for key in TO_CARD],
            ("body", "request", "new key"),
            ("number", "request", "payment"),
        ],
    ),
    (
        "POST",
        "/api/v1/proposals/{proposal_id}/revisions",
        {},
        {"request": dict(TO_CARD)},
        [
            ("path", "proposal_id"),
            *[("body", "request", key) for key in TO_CARD],
            ("number", "request", "payment"),
        ],
    ),
    ("GET", "/api/v1/proposals/{proposal_id}", {"language": "en"}, None, [
        ("path", "proposal_id"), ("query", "language")]),
    (
        "POST",
        "/api/v1/proposals/{proposal_id}/approve",
        {},
        {"passkey_assertion": {"nonce": "n", "credential": {"id": "c"}}, "unverified": False},
        [
            ("path", "proposal_id"),
            ("body", "passkey_assertion", "nonce"),
            ("body", "passkey_assertion", "credential", "id"),
        ],
    ),
    ("GET", "/api/v1/proposals/{proposal_id}/approval-challenge", {}, None, [
        ("path", "proposal_id")]),
    ("POST", "/api/v1/proposals/{proposal_id}/decline", {}, {"note": "no"}, [
        ("path", "proposal_id"), ("body", "note")]),
    ("GET", "/api/v1/proposals/{proposal_id}/status", {"language": "en"}, None, [
        ("path", "proposal_id"), ("query", "language")]),
    ("GET", "/api/v1/proposals/{proposal_id}/history", {"as_of": "1", "language": "en"}, None, [
        ("path", "proposal_id"), ("query", "as_of"), ("query-number", "as_of"),
        ("query", "language")]),
    ("GET", "/api/v1/policies", {}, None, []),
    (
        "PUT",
        "/api/v1/policies/{operation}",
        {},
        {"approvals": 1, "above_cents": 100, "requester_may_approve": False},
        [("path", "operation"), ("number", "approvals"), ("number", "above_cents")],
    ),
    ("GET", "/api/v1/members", {}, None, []),
    ("PUT", "/api/v1/members/{email}/permissions", {}, {"permissions": ["approve"]}, [
        ("path", "email"), ("body", "permissions", 0)]),
    ("GET", "/api/v1/webhooks", {}, None, []),
    ("POST", "/api/v1/webhooks", {}, {"url": "https://hooks.example/x"}, [("body", "url")]),
    ("DELETE", "/api/v1/webhooks/{endpoint_id}", {}, None, [("path", "endpoint_id")]),
    (
        "GET",
        "/api/v1/webhooks/deliveries",
        {"dead": "false", "limit": "10", "before": "dlv_x"},
        None,
        [("query", "dead"), ("query-number", "limit"), ("query", "before")],
    ),
    ("POST", "/api/v1/webhooks/deliveries/{delivery_id}/redeliver", {}, None, [
        ("path", "delivery_id")]),
    ("POST", "/api/v1/webhooks/dead-letters/redeliver", {}, None, []),
]  # fmt: skip


def test_the_table_names_every_route_and_every_parameter(app: FastAPI) -> None:
    """A route or a parameter added to the API without a line here fails: every one is sent
    the values below."""
    served = {}
    for route in app.routes:
        if isinstance(route, APIRoute):
            dependant = route.dependant
            names = {p.name for p in (*dependant.path_params, *dependant.query_params)}
            for method in route.methods:
                served[(method, route.path.replace(":path}", "}"))] = names
    listed = {(method, path): {s[1] for s in slots if s[0] != "body" and s[0] != "number"}
              for method, path, _, _, slots in ROUTES}  # fmt: skip
    assert set(served) == set(listed)
    for key, names in served.items():
        assert names <= listed[key], (key, names - listed[key])


def _ids(api: Api) -> dict[str, str]:
    return {
        "section": "orders",
        "resource_id": api.seeded["orders"]["refund-ok"],
        "proposal_id": api.propose("refund-stale"),
        "operation": REFUND,
        "email": "ben@granite.example",
        "endpoint_id": "we_x",
        "delivery_id": "dlv_x",
    }


def _send(api: Api, method: str, path: str, query: dict[str, str], body: bytes | None) -> Response:
    headers = {**api.headers(AVA)}
    if body is not None:
        headers["content-type"] = "application/json"
    return api.client.request(method, path, params=query, content=body, headers=headers)


def _cases(slot: tuple[Any, ...]) -> dict[str, str]:
    """What is put in ``slot``: raw JSON text in a body, a string elsewhere."""
    kind = slot[0]
    if kind == "number":
        return {"huge number": HUGE, "huge negative": "-" + HUGE}
    if kind == "query-number":
        return {"huge number": HUGE}
    if kind == "body":
        return {name: _json_literal(value) for name, value in JSON_TEXTS.items()}
    return dict(TEXTS)


def _answers(
    api: Api, ids: dict[str, str], route: tuple[str, str, dict[str, str], Any, list[Any]]
) -> list[str]:
    method, template, query, body, slots = route
    wrong: list[str] = []
    for slot in slots:
        for name, value in _cases(slot).items():
            path_ids = dict(ids)
            values = dict(query)
            document = json.loads(json.dumps(body).replace("{resource_id}", ids["resource_id"]))
            raw = None if body is None else json.dumps(document).encode()
            if slot[0] == "path":
                path_ids[slot[1]] = value
            elif slot[0] in ("query", "query-number"):
                values[slot[1]] = value
            else:
                raw = _body_with(document, slot[1:], value)
            path = template.format(**{k: quote(v, safe="") for k, v in path_ids.items()})
            answer = _send(api, method, path, values, raw)
            where = f"{method} {template} {slot} {name}"
            if answer.status_code >= 500 or (name != "long" and answer.status_code < 400):
                wrong.append(f"{where}: {answer.status_code} {answer.text[:120]}")
                continue
            if answer.status_code < 400:
                continue  # a long value read as any other that names nothing
            try:
                _, document = problem(answer)
            except AssertionError as error:
                wrong.append(f"{where}: {answer.status_code} not a clean problem ({error})")
                continue
            said = [p["message"] for p in document.get("problems", [])]
            if slot[0] == "body" and name != "long" and said != [f"holds {WHY}"]:
                wrong.append(f"{where}: {answer.status_code} says {said or document['detail']}")
    return wrong


@pytest.mark.parametrize("route", ROUTES, ids=[f"{r[0]} {r[1]}" for r in ROUTES])
def test_every_api_route_refuses_unstorable_text_with_a_problem(api: Api, route: Any) -> None:
    ids = _ids(api)
    before = snapshot(api.cs)
    wrong = _answers(api, ids, route)
    assert not wrong, "\n".join(wrong)
    assert_nothing_changed(api.cs, before)


def test_nothing_unstorable_is_stored_by_the_api(api: Api) -> None:
    """Beyond the answers: the requests above leave no event, refund or service action."""
    proposal = api.propose("refund-stale")
    before = snapshot(api.cs)
    order = api.seeded["orders"]["refund-ok"]
    for value in JSON_TEXTS.values():
        literal = _json_literal(value)
        chat = f"/api/v1/assistants/orders/resources/{order}/messages"
        _send(api, "POST", chat, {}, f'{{"message": {literal}}}'.encode())
        _send(api, "POST", f"/api/v1/proposals/{proposal}/decline", {},
              f'{{"note": {literal}}}'.encode())  # fmt: skip
        refund = {"operation": REFUND, "resource_id": order, "request": dict(TO_CARD)}
        _send(api, "POST", "/api/v1/proposals", {}, _body_with(refund, ("request", "payment"),
                                                               literal))  # fmt: skip
    assert_nothing_changed(api.cs, before)


# -- the pages ---------------------------------------------------------------------------------

#: Every page that takes text: its method, path (``{name}`` from the ids) and the form fields
#: or query values it reads; each is sent each value in turn.
PAGES: list[tuple[str, str, list[str], list[str]]] = [
    ("GET", "/sign-in", [], ["next"]),
    ("POST", "/sign-in", ["email", "password", "next"], []),
    ("POST", "/sign-in/club", ["club", "next"], []),
    ("POST", "/language", ["lang", "next"], []),
    ("GET", "/", [], ["section", "view", "page", "ref"]),
    ("GET", "/orders/open", [], ["ref"]),
    ("GET", "/chat/{section}/{resource_id}", [], ["interaction", "ref"]),
    ("POST", "/chat/{section}/{resource_id}", ["message", "interaction_id"], []),
    ("GET", "/proposals/{proposal_id}", [], []),
    ("GET", "/proposals/{proposal_id}/approve", [], ["asked"]),
    ("POST", "/proposals/{proposal_id}/approve", ["credential", "nonce", "confirm"], []),
    ("POST", "/proposals/{proposal_id}/decline", ["note"], []),
    ("GET", "/proposals/{proposal_id}/status", [], []),
    ("GET", "/proposals/{proposal_id}/history", [], ["as_of"]),
    ("GET", "/proposals/{proposal_id}/edit", [], []),
    ("POST", "/proposals/{proposal_id}/edit", [*TO_CARD], []),
    ("GET", "/webhooks", [], []),
    ("GET", "/account/passkeys", [], []),
    ("POST", "/account/passkeys", ["name", "credential", "nonce"], []),
    ("POST", "/account/passkeys/rename", ["credential_id", "name"], []),
    ("POST", "/account/passkeys/remove", ["credential_id"], []),
    ("POST", "/webhooks", ["url"], []),
    ("POST", "/webhooks/remove", ["endpoint"], []),
    ("POST", "/webhooks/redeliver", ["delivery"], []),
    ("GET", "/members", [], []),
    ("GET", "/policies", [], []),
    ("POST", "/members/permissions", ["email", "permission.approve"], []),
    ("GET", "/assets/{name}", [], []),
    # Last: they end the session the others use.
    ("POST", "/sign-out", ["next"], []),
    ("POST", "/sign-out/everywhere", ["next"], []),
]

PAGE_TEXTS = {"nul": NUL, "nul inside": f"a{NUL}b"}


def test_the_pages_table_names_every_page(app: FastAPI) -> None:
    served = {
        (method, route.path.replace(":path}", "}"))
        for route in app.routes
        if isinstance(route, Route) and not isinstance(route, APIRoute)
        for method in (route.methods or ())
        if method != "HEAD" and route.path != "/openapi.json"
    }
    assert served == {(method, path) for method, path, _, _ in PAGES}


def _page_ok(answer: Response, where: str, language: str) -> str | None:
    taken = where.endswith(("long", "huge number"))  # text, or a number: either may be taken
    if answer.status_code >= 500 or (answer.status_code < 300 and not taken):
        return f"{where}: {answer.status_code} {answer.text[:200]}"
    if answer.status_code in (301, 302, 303, 307):
        return None  # sent elsewhere (sign in, back to the form): nothing read, nothing kept
    for leak in LEAKS:
        if leak in answer.text:
            return f"{where}: {answer.status_code} shows {leak!r}"
    title = {"en": "This request cannot be read", "fr": "Cette demande est illisible"}[language]
    if answer.status_code == 400 and title not in answer.text:
        return f"{where}: 400 without the error page's title {title!r}"
    return None


def _walk_pages(
    ava: Browser, ids: dict[str, str], texts: dict[str, str], language: str
) -> list[str]:
    """Each text in each place each page takes one; what went wrong (``_page_ok``)."""
    wrong: list[str] = []
    for method, template, fields, queries in PAGES:
        slots = [("path", name) for name in ids if "{" + name + "}" in template]
        slots += [("form", name) for name in fields] + [("query", name) for name in queries]
        for slot in slots:
            for name, value in texts.items():
                path_ids = dict(ids)
                form = dict.fromkeys(fields, "x")
                query: dict[str, str] = {}
                if slot[0] == "path":
                    path_ids[slot[1]] = value
                elif slot[0] == "form":
                    form[slot[1]] = value
                else:
                    query[slot[1]] = value
                path = template.format(**{k: quote(v, safe="") for k, v in path_ids.items()})
                if method == "GET":
                    answer = ava.get(path, params=query)
                else:
                    answer = ava.client.post(
                        path, data={**form, "csrf_token": ava.csrf_token}, params=query
                    )
                failed = _page_ok(answer, f"{method} {template} {slot} {name}", language)
                if failed:
                    wrong.append(failed)
    return wrong


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_page_refuses_unstorable_text_with_its_error_page(web: Web, language: str) -> None:
    """A NUL anywhere: the page that cannot read the request (400, EN/FR), nothing stored.
    3,000 characters anywhere (a form holds at most 32 KiB): never a 500 or a leak (a long
    message or name may be taken: it is text)."""
    ava = web.member(AVA)
    ava.submit("/language", {"lang": language, "next": "/"})
    ids = {
        "section": "orders",
        "resource_id": web.seeded["orders"]["refund-ok"],
        "proposal_id": web.propose("refund-stale"),
        "name": "pages.css",
    }
    before = snapshot(web.cs)
    wrong = _walk_pages(ava, ids, PAGE_TEXTS, language)
    assert not wrong, "\n".join(wrong)
    after = snapshot(web.cs)
    assert (after.events, after.refunds) == (before.events, before.refunds)
    wrong = _walk_pages(ava, ids, {"long": "x" * 3_000, "huge number": HUGE}, language)
    assert not wrong, "\n".join(wrong)


# -- headers -----------------------------------------------------------------------------------


def test_a_header_holding_a_nul_never_reaches_the_application(app: FastAPI) -> None:
    """The headers read as values (the bearer token, the session cookie, Accept-Language):
    the server's HTTP parser answers a NUL in any of them 400 itself, before the application
    sees the request (bytes that are not UTF-8 are read as Latin-1, which every store takes)."""
    headers = {
        "Authorization": b"Bearer a\x00b",
        "Cookie": b"countersign_session=a\x00b",
        "Accept-Language": b"fr\x00",
    }
    with serving(app, **connection_options()) as server:
        for path in ("/api/v1/inbox", "/sign-in"):
            for name, value in headers.items():
                with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                    sock.sendall(
                        f"GET {path} HTTP/1.1\r\nHost: x\r\n{name}: ".encode() + value + b"\r\n\r\n"
                    )
                    status = sock.recv(200).split(b"\r\n", 1)[0]
                assert status == b"HTTP/1.1 400 Bad Request", (path, name, status)
