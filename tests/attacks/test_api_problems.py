"""Attack: bodies the API cannot read, inputs that would make it quote pydantic, and the
headers on its answers.

* Over-deep JSON, invalid UTF-8 and numbers too large to read answered 400 with
  ``"type": "about:blank"``: now the project's own ``malformed-request``, and so is every
  other answer Starlette or FastAPI produce themselves (unknown route, wrong method).
* Problems carried pydantic's wording ("Input should be a valid string, unable to parse raw
  data as a unicode string"): now the project's own short messages, never the input.
* A request's problems are capped at 20, with a count of the rest, in the API and in the
  contract's InvalidRequestError alike.
* Every ``/api/v1`` answer, errors included, carries ``X-Content-Type-Options: nosniff`` and
  ``Cache-Control: no-store``.

Each attack also checks that nothing changed: the same events, an intact audit chain and no
service action logged.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.problems import MAX_PROBLEMS, InvalidRequestError
from countersign.domain.contracts.request_errors import SAFE_MESSAGES, UNSHOWN_NAME
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from fastapi.testclient import TestClient

from tests.attacks.test_api_bodies import (
    Api,
    Unchanged,
    _auth,
    _token,
    check_problem,
    many_keys,
    validator_inputs,
)
from tests.conftest import AVA, REFUND, TO_CARD, count_events

ECHO = "ECHO-ME-7731"  # put in bad values: it must never come back


@pytest.fixture
def api(cs: Countersign, seeded: dict[str, Any]) -> Iterator[Api]:
    token = _token(cs)
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        yield Api(cs=cs, seeded=seeded, client=client, token=token)


def _post_raw(api: Api, path: str, content: bytes) -> Any:
    headers = {**_auth(api.token), "Content-Type": "application/json"}
    return api.client.post(path, headers=headers, content=content)


def _problem(response: Any, status: int, kind: str) -> dict[str, Any]:
    document = check_problem(response.status_code, response.headers, response.content, status, kind)
    assert "about:blank" not in response.text
    assert ECHO not in response.text
    return document


# -- bodies FastAPI cannot read -------------------------------------------------------------


def test_unreadable_bodies_answer_the_projects_own_malformed_request_problem(api):
    unchanged = Unchanged(api.cs)
    order = api.seeded["orders"]["refund-ok"]
    prefix = f'{{"operation": "{REFUND}", "resource_id": "{order}", "request": '.encode()
    deep = b"[" * 5000 + b"]" * 5000
    cases = {
        "nested too deeply": [deep, prefix + deep + b"}", b'{"note": ' + b"[" * 3000 + b"}"],
        "not valid UTF-8": [
            b'{"operation": "\xff\xfe"}',
            prefix + b'{"payment": "P1\xc3\x28"}}',
            b'{"note": "' + ECHO.encode() + b'\x80"}',
        ],
        "a number too large": [
            prefix + b'{"payment": ' + b"9" * 5000 + b"}}",
            b'{"note": ' + b"1" * 4301 + b"}",
        ],
    }
    proposal_id = api.cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order, request=TO_CARD
    ).proposal_id
    unchanged = Unchanged(api.cs)

    for cause, bodies in cases.items():
        for body in bodies:
            path = "/api/v1/proposals"
            if body.startswith(b'{"note"'):
                path = f"/api/v1/proposals/{proposal_id}/decline"
            response = _post_raw(api, path, body)
            document = _problem(response, 400, "malformed-request")
            assert cause.split()[-1] in document["detail"], (cause, document)
    # Plain malformed JSON, as before.
    document = _problem(
        _post_raw(api, "/api/v1/proposals", b'{"operation": '), 400, "malformed-request"
    )
    assert document["detail"] == "The request body is not valid JSON."
    unchanged.check()
    assert api.cs.cards.card(proposal_id, AVA).status == "pending"


def test_starlettes_own_answers_use_the_projects_problem_types_too(api):
    unchanged = Unchanged(api.cs)
    headers = _auth(api.token)

    answers = [
        (api.client.get("/api/v1/nothing-here", headers=headers), 404, "not-found"),
        (api.client.get("/api/v1", headers=headers), 404, "not-found"),
        (api.client.delete(f"/api/v1/proposals/{uuid.uuid4()}", headers=headers), 405,
         "method-not-allowed"),
        (api.client.put("/api/v1/inbox", headers=headers), 405, "method-not-allowed"),
        (api.client.post("/api/v1/proposals", headers={**headers, "Content-Length": "12x"},
                         content=b"{}"), 400, "bad-request"),
    ]  # fmt: skip

    for response, status, kind in answers:
        _problem(response, status, kind)
    unchanged.check()


# -- problems in the project's words --------------------------------------------------------

ALLOWED = set(SAFE_MESSAGES.values()) | {
    "not one of this record's references",
    "no such operation",
    "a version number or an ISO 8601 time",
}


def _messages_are_the_projects(document: dict[str, Any]) -> list[tuple[str, str]]:
    found = [(p["field"], p["message"]) for p in document["problems"]]
    for field, message in found:
        assert message in ALLOWED or message.startswith("must be one of: "), (field, message)
        for pydantic_words in ("Input should", "input", "unicode", "raw data", "Value error"):
            assert pydantic_words not in message, (field, message)
    return found


UNSTORABLE = "holds a NUL character or a lone surrogate, which no database stores"


def test_problems_say_it_in_the_projects_words_never_pydantics_nor_the_input(api):
    unchanged = Unchanged(api.cs)
    order = api.seeded["orders"]["refund-ok"]
    proposal_id = api.cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order, request=TO_CARD
    ).proposal_id
    unchanged = Unchanged(api.cs)
    lone = '"\\ud800' + ECHO + '"'  # valid JSON; a string no UTF-8 text can hold
    request = (
        f'{{"payment": 5, "line_item": ["{ECHO}"], "discount": {{"x": "{ECHO}"}}, '
        f'"destination": "{ECHO}", "amount_cents": 1, "<b>{ECHO}</b>": 2, "{ECHO} x": 3}}'
    )
    # Text no database stores, anywhere in a field, is said of that field before anything
    # else reads it (a lone surrogate in the request's payment: the request).
    unstorable = _problem(
        _post_raw(
            api,
            "/api/v1/proposals",
            f'{{"operation": "{REFUND}", "resource_id": "{order}", '
            f'"request": {{"payment": {lone}}}}}'.encode(),
        ),
        422,
        "invalid-request",
    )

    refund = _problem(
        _post_raw(
            api,
            "/api/v1/proposals",
            f'{{"operation": "{REFUND}", "resource_id": "{order}", "request": {request}}}'.encode(),
        ),
        422,
        "invalid-request",
    )
    top = _problem(
        _post_raw(
            api,
            "/api/v1/proposals",
            f'{{"operation": {lone}, "resource_id": 7, "request": [1], "extra": true, '
            f'"{"x" * 65}": 1}}'.encode(),
        ),
        422,
        "invalid-request",
    )
    note = _problem(
        _post_raw(api, f"/api/v1/proposals/{proposal_id}/decline", f'{{"note": {lone}}}'.encode()),
        422,
        "invalid-request",
    )
    # The same surrogate sent as bytes (json reads them with 'surrogatepass'): the same answer.
    encoded = _problem(
        _post_raw(
            api,
            f"/api/v1/proposals/{proposal_id}/decline",
            b'{"note": "' + ECHO.encode() + b'\xed\xa0\x80"}',
        ),
        422,
        "invalid-request",
    )
    assert encoded["problems"] == note["problems"]
    message = _problem(
        _post_raw(
            api,
            f"/api/v1/assistants/orders/resources/{order}/messages",
            f'{{"message": {lone}, "interaction_id": ["{ECHO}"]}}'.encode(),
        ),
        422,
        "invalid-request",
    )
    page = _problem(
        api.client.get("/api/v1/inbox", headers=_auth(api.token), params={"page": ECHO}),
        422,
        "invalid-request",
    )

    assert _messages_are_the_projects(refund) == [
        ("payment", "must be a string"),
        ("line_item", "must be a string"),
        ("discount", "must be a string"),
        ("destination", "must be one of: 'original_payment_method' or 'account_credit'"),
        ("amount_cents", "unknown field; remove it"),  # a plain name is named, to be removed
        (UNSHOWN_NAME, "unknown field; remove it"),  # anything else is not echoed
        (UNSHOWN_NAME, "unknown field; remove it"),
    ]
    assert _messages_are_the_projects(unstorable) == [("request", UNSTORABLE)]
    assert _messages_are_the_projects(top) == [
        ("operation", UNSTORABLE),
        ("resource_id", "must be a string"),
        ("request", "must be a JSON object"),
        ("extra", "unknown field; remove it"),
        (UNSHOWN_NAME, "unknown field; remove it"),
    ]
    assert _messages_are_the_projects(note) == [("note", UNSTORABLE)]
    assert _messages_are_the_projects(message) == [
        ("message", UNSTORABLE),
        ("interaction_id", "must be a string"),
    ]
    assert _messages_are_the_projects(page) == [("page", "must be an integer")]
    unchanged.check()
    assert api.cs.cards.card(proposal_id, AVA).status == "pending"


# -- capped problems ----------------------------------------------------------------------------


def test_the_contracts_problems_are_capped_at_twenty_and_700000_keys_are_cheap(
    cs, seeded, monkeypatch
):
    """The Python API has no body limit: the contract itself keeps the work and the answer
    small (its strict schema is never handed more than 20 unknown keys)."""
    unchanged = Unchanged(cs)
    request = {**many_keys(700_000), "payment": 7}
    request_model = REGISTRY[REFUND].Request
    given = validator_inputs(request_model, monkeypatch)

    with pytest.raises(InvalidRequestError) as raised:
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"]["refund-ok"],
            request=request,
        )

    # Cheap by the work done, not by a clock: the strict schema saw the request's own fields
    # and the first MAX_PROBLEMS unknown keys, never the 700,000.
    assert given
    assert max(given) <= len(request_model.model_fields) + MAX_PROBLEMS
    problems = [(p.field, p.message) for p in raised.value.problems]
    assert len(problems) == MAX_PROBLEMS
    assert problems[:4] == [
        ("payment", "must be a string"),
        ("line_item", "this field is required"),
        ("discount", "this field is required"),
        ("destination", "this field is required"),
    ]
    assert problems[4:] == [(f"k{i}", "unknown field; remove it") for i in range(16)]
    assert raised.value.more_problems == 700_004 - MAX_PROBLEMS
    assert len(str(raised.value)) < 2000
    assert count_events(cs, "Proposal.Proposed") == 0
    unchanged.check()


def test_a_few_problems_are_all_listed_without_a_count(api):
    unchanged = Unchanged(api.cs)
    response = api.client.post(
        "/api/v1/proposals",
        headers=_auth(api.token),
        json=api.propose_body({**TO_CARD, "amount_cents": 5000}),
    )
    document = _problem(response, 422, "invalid-request")
    assert document["problems"] == [
        {"field": "amount_cents", "message": "unknown field; remove it"}
    ]
    assert "more_problems" not in document
    assert "5000" not in json.dumps({**document, "correlation_id": None})  # random hex aside
    unchanged.check()


# -- the API's headers ----------------------------------------------------------------------


def test_every_api_answer_says_nosniff_and_no_store_errors_included(api, monkeypatch):
    order = api.seeded["orders"]["refund-ok"]
    headers = _auth(api.token)
    created = api.client.post("/api/v1/proposals", headers=headers, json=api.propose_body(TO_CARD))
    proposal_id = created.json()["proposal_id"]
    unchanged = Unchanged(api.cs)
    answers = [
        created,
        api.client.get("/api/v1/inbox", headers=headers),
        api.client.get(f"/api/v1/proposals/{proposal_id}", headers=headers),
        api.client.get("/api/v1/inbox"),  # 401
        api.client.get(f"/api/v1/proposals/{proposal_id}/history", headers=headers),  # 403
        api.client.get(f"/api/v1/proposals/{uuid.uuid4()}", headers=headers),  # 404
        api.client.put("/api/v1/inbox", headers=headers),  # 405
        api.client.post("/api/v1/proposals", headers=headers, content=b"x" * 70_000),  # 413
        api.client.post("/api/v1/proposals", headers=headers, json={"operation": 1}),  # 422
        _post_raw(api, "/api/v1/proposals", b"{"),  # 400
    ]

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"boom at /work/secret.py: SELECT * FROM api_tokens {order}")

    monkeypatch.setattr(api.cs.cards, "card", explode)
    answers.append(api.client.get(f"/api/v1/proposals/{proposal_id}", headers=headers))  # 500

    assert [r.status_code for r in answers] == [
        201, 200, 200, 401, 403, 404, 405, 413, 422, 400, 500,
    ]  # fmt: skip
    for response in answers:
        assert response.headers["x-content-type-options"] == "nosniff", response.status_code
        assert response.headers["cache-control"] == "no-store", response.status_code
        assert response.headers["x-correlation-id"].startswith("cs-")
        if response.status_code >= 400:
            _problem(response, response.status_code, response.json()["type"].rsplit(":", 1)[1])
            assert "boom" not in response.text
    # Not the browser pages' business: they set their own headers.
    assert "x-content-type-options" not in api.client.get("/openapi.json").headers
    unchanged.check()


def test_the_openapi_document_still_describes_the_request_bodies_and_the_new_answers(api):
    document = api.client.get("/openapi.json").json()
    paths = document["paths"]

    def body_schema(path: str) -> str:
        content = paths[path]["post"]["requestBody"]["content"]["application/json"]
        return str(content["schema"])

    assert "ProposeIn" in body_schema("/api/v1/proposals")
    assert "DeclineIn" in body_schema("/api/v1/proposals/{proposal_id}/decline")
    assert "MessageIn" in body_schema(
        "/api/v1/assistants/{section}/resources/{resource_id}/messages"
    )
    for operations in paths.values():
        for operation in operations.values():
            assert {"401", "413"} <= set(operation["responses"]), operation["summary"]
            assert operation["security"] == [{"ApiToken": []}]
    problem = document["components"]["schemas"]["ProblemDocument"]["properties"]
    assert "more_problems" in problem
    assert json.dumps(document).count("about:blank") == 0
