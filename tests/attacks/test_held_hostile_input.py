"""Held: hostile bytes and SQL get a 4xx problem, never a 500, a trace or a changed record.

The red team sent JSON nested 10,000 deep, bodies that are not UTF-8 (stray bytes, overlong
and truncated sequences, an escaped lone surrogate), ids and query values that are not UTF-8,
and SQL (``'; DROP TABLE ...--`` and friends) in every path id, query value and string field
of every route, to the API and to the pages. Every answer is a 4xx: on the API a problem
document (``application/problem+json``) that shows no stack trace, SQL, file path or the input
itself; on the pages the usual pages. Nothing changed: no event, no refund, no table dropped,
and ``audit verify`` holds. Free text (a decline note, a message to the assistant) is data:
stored and shown back verbatim, and the tables are still all there.

(Which problem ``type`` each gets is another test's business; here: status, media type and
what the body must not show.)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import markupsafe
from httpx2 import Response

from tests.attacks.conftest import Api, Web, assert_nothing_changed, problem, snapshot, tables
from tests.conftest import AVA, REFUND, TO_CARD, events_table

DEEP_ARRAY = ("[" * 10_000 + "]" * 10_000).encode()
NOT_UTF8 = {
    "stray bytes": b'{"note": "\xff\xfe"}',
    "overlong slash": b'{"note": "\xc0\xaf"}',
    "truncated sequence": b'{"note": "\xe2\x82"}',
    "lone surrogate": b'{"note": "\\ud800"}',
}
SQL = [
    "'; DROP TABLE stored_events;--",
    "'; DROP TABLE countersign_events;--",
    '" OR 1=1 --',
    "1; DELETE FROM api_tokens",
    "' UNION SELECT token_sha256 FROM api_tokens --",
    "x') OR ('1'='1",
]


def _deep_object(depth: int = 10_000) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _send(api: Api, path: str, body: bytes) -> Response:
    headers = {**api.headers(AVA), "content-type": "application/json"}
    return api.client.post(path, content=body, headers=headers)


def _refused(answer: Response, where: str) -> tuple[int, dict[str, Any]]:
    assert 400 <= answer.status_code < 500, (where, answer.status_code, answer.text[:300])
    status, body = problem(answer)  # problem+json, nothing leaked
    for sql in ("DROP", "DELETE", "UNION", "1=1", "\\ud800", "\ufffd"):
        assert sql not in answer.text, (where, sql)
    return status, body


def test_deep_and_non_utf8_bodies_and_ids_are_4xx_problems_and_change_nothing(api: Api, web: Web):
    proposal_id = api.propose()
    order = api.seeded["orders"]["refund-ok"]
    body_routes = {
        "propose": "/api/v1/proposals",
        "decline": f"/api/v1/proposals/{proposal_id}/decline",
        "assistant": f"/api/v1/assistants/orders/resources/{order}/messages",
    }
    before = snapshot(api.cs)

    for name, path in body_routes.items():
        bodies = {
            "10,000 nested arrays": DEEP_ARRAY,
            "10,000 nested objects in a field": (
                f'{{"operation": "{REFUND}", "resource_id": "{order}", "note": "x", '
                f'"message": "x", "request": {_deep_object()}}}'
            ).encode(),
            **NOT_UTF8,
        }
        for kind, body in bodies.items():
            _refused(_send(api, path, body), f"{name}: {kind}")
    for target in (
        "/api/v1/proposals/%FF",
        "/api/v1/proposals/%C0%AF/approve",
        f"/api/v1/proposals/{proposal_id}/history?as_of=%FF",
        "/api/v1/inbox?section=%FF%FE",
        f"/api/v1/assistants/%FF/resources/{order}/messages",
    ):
        answer = (api.post if "approve" in target or "messages" in target else api.get)(target)
        _refused(answer, target)
    # The pages: a sign-in whose email is not UTF-8 fails like any other; ids as well.
    anonymous = web.browser()
    token = anonymous.page_token("/sign-in")
    signed = anonymous.client.post(
        "/sign-in",
        content=b"email=%FF%FE%C0%AF&password=x&csrf_token=" + token.encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert signed.status_code == 200
    assert "That email and password do not match." in signed.text
    ava = web.member(AVA)
    assert ava.get("/proposals/%FF%FE").status_code == 404
    assert ava.submit("/proposals/%C0%AF/approve", {}).status_code == 404

    assert_nothing_changed(api.cs, before)
    assert web.status(proposal_id) == "pending"


def test_sql_in_every_id_query_and_field_is_data_never_sql(api: Api, web: Web):
    proposal_id = api.propose()
    order = api.seeded["orders"]["refund-stale"]
    unknown = str(uuid.uuid4())
    ava = web.member(AVA)
    before = snapshot(api.cs)
    before_tables = tables(api.cs)

    def by_id(some_id: str) -> dict[str, Callable[[], Response]]:
        base = f"/api/v1/proposals/{quote(some_id, safe='')}"
        chat = f"/api/v1/assistants/orders/resources/{quote(some_id, safe='')}/messages"
        return {
            "card": lambda: api.get(base),
            "approve": lambda: api.post(f"{base}/approve"),
            "decline": lambda: api.post(f"{base}/decline", {"note": SQL[0]}),
            "history": lambda: api.get(f"{base}/history"),
            "status": lambda: api.get(f"{base}/status"),
            "assistant resource": lambda: api.post(chat, {"message": "hello"}),
        }

    for sql in SQL:
        # In a path id: the very answer an unknown id gets.
        expected = {name: problem(send()) for name, send in by_id(unknown).items()}
        for name, send in by_id(sql).items():
            assert _refused(send(), f"{name} {sql}") == expected[name], (name, sql)
        # In every string field of the request bodies.
        refund = {"operation": REFUND, "resource_id": order, "request": dict(TO_CARD)}
        fields: dict[str, Any] = {
            "operation": {**refund, "operation": sql},
            "resource_id": {**refund, "resource_id": sql},
            **{f"request.{key}": {**refund, "request": {**TO_CARD, key: sql}} for key in TO_CARD},
        }
        for field, body in fields.items():
            status, _ = _refused(api.post("/api/v1/proposals", body), f"{field} {sql}")
            assert status in (404, 422), (field, sql)
        chat = f"/api/v1/assistants/orders/resources/{order}/messages"
        _refused(api.post(chat, {"message": "hello", "interaction_id": sql[:64]}), sql)
        _refused(api.post(f"/api/v1/assistants/{quote(sql, safe='')}/resources/{order}/messages",
                          {"message": "hello"}), sql)  # fmt: skip
        # In every query value.
        _refused(api.get(f"/api/v1/proposals/{proposal_id}/history", as_of=sql), sql)
        for name in ("section", "page", "page_size"):
            _refused(api.get("/api/v1/inbox", **{name: sql}), f"inbox {name}")
        # As the bearer token.
        assert _refused(api.get(f"/api/v1/proposals/{proposal_id}", as_=sql), sql)[0] == 401
        # On the pages.
        quoted = quote(sql, safe="")
        assert ava.get(f"/proposals/{quoted}").status_code == 404
        assert ava.submit(f"/proposals/{quoted}/decline", {"note": sql}).status_code == 404
        assert ava.get(f"/chat/orders/{quoted}").status_code == 404
        assert ava.get(f"/chat/orders/{order}", params={"interaction": sql}).status_code == 404
        opened = ava.get("/orders/open", params={"ref": sql})
        # No order has it: back to the inbox with it in the order field, as data.
        assert opened.status_code == 303
        assert opened.headers["location"] == "/?" + urlencode({"ref": sql[:100]})
        inbox = ava.get(opened.headers["location"])
        assert inbox.status_code == 200
        assert f'value="{markupsafe.escape(sql[:100])}"' in inbox.text  # escaped, in the field
        assert ava.get("/", params={"section": sql, "page": sql}).status_code == 200
    failed = web.browser().sign_in(SQL[0], SQL[2])
    assert failed.status_code == 200
    assert "That email and password do not match." in failed.text

    assert_nothing_changed(api.cs, before)
    assert web.status(proposal_id) == "pending"

    # Where free text is the point, SQL is stored and shown back as text.
    declined = api.post(f"/api/v1/proposals/{proposal_id}/decline", {"note": SQL[0]})
    assert declined.status_code == 200
    assert declined.json()["result"] == "declined"
    said = api.post(f"/api/v1/assistants/orders/resources/{order}/messages", {"message": SQL[1]})
    assert said.status_code == 200
    history = api.get(f"/api/v1/proposals/{proposal_id}/history").json()
    assert [e["note"] for e in history["events"] if e["type"] == "Declined"] == [SQL[0]]
    turn = api.cs.store.history(uuid.UUID(said.json()["interaction_id"]))
    assert [e.fields["text"] for e in turn if e.type == "ManagerMessaged"] == [SQL[1]]
    assert before_tables <= tables(api.cs)
    assert events_table(api.cs) in tables(api.cs)
    assert snapshot(api.cs).events > before.events
