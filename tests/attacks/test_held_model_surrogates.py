"""Held: text no UTF-8 can hold, in a model's answer, is the model's mistake, not a crash.

A red-team run controlled the model's output (prompt injection) and answered a chat turn with a
tool call whose JSON arguments held an escaped lone surrogate (``{"payment": "\\ud800"}``:
valid JSON, but a string no UTF-8 text can hold), or with text holding one (the client reads
``"\\ud800"`` in the endpoint's JSON as that character). The arguments were read as they came,
recorded in the conversation, and the conversation's save failed on them: the person's message
answered 500 ``internal-error``, and nothing of the turn, their own words included, was kept,
turn after turn while the injected text was in reach. A pydantic request model raised the
same encoding error instead of a validation error. Now such arguments are unreadable, as
malformed JSON is (the model is told, and the turn goes on), and such text makes the answer
malformed (the turn ends "the assistant is unavailable"): the turn is recorded either way.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import httpx2
import pytest
from countersign.domain.untrusted_json import UnreadableJsonError, read_json
from countersign.infrastructure.adapters.scripted_model import Call, Say, Script, ScriptedEndpoint
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA
from tests.test_assistant import PROPOSE_REFUND, Wired, wire  # noqa: F401

LONE = "\\ud800"  # as the endpoint's JSON carries it: an escape, ASCII on the wire


class _EscapingEndpoint(ScriptedEndpoint):
    """The scripted endpoint's text answers written as an OpenAI-compatible server writes
    JSON: every character outside ASCII escaped, a lone surrogate included."""

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        answer = self.policy(json.loads(request.content))
        assert isinstance(answer, Say)
        self.requests.append(json.loads(request.content))
        message = {"role": "assistant", "content": answer.text}
        document = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        }
        return httpx2.Response(
            200,
            content=json.dumps(document).encode("ascii"),
            headers={"content-type": "application/json"},
        )


def _message(w: Wired, text: str) -> Any:
    token = issue_token(
        w.cs, "granite", "chat-agent", ["orders.refund"], issued_by=AVA, kind="agent"
    )
    with TestClient(create_app(w.cs), raise_server_exceptions=False) as client:
        return client.post(
            f"/api/v1/assistants/orders/resources/{w.order}/messages",
            headers={"Authorization": f"Bearer {token.token}"},
            json={"message": text},
        )


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(f'{{"payment": "P1{LONE}"}}', id="propose-value"),
        pytest.param(f'{{"P1{LONE}": "x"}}', id="propose-key"),
    ],
)
def test_a_tool_call_with_a_lone_surrogate_is_malformed_and_the_turn_goes_on(
    wire: Any,  # noqa: F811
    arguments: str,
):
    w = wire(Script(Call(PROPOSE_REFUND, arguments), Say("Sorry, I could not do that.")))

    answer = _message(w, "Refund the missed discount")

    assert answer.status_code == 200, answer.text
    turn = answer.json()
    assert turn["ended"] == "reply"
    assert turn["messages"] == [{"author": "model", "text": "Sorry, I could not do that."}]
    assert turn["proposal"] is None
    events = list(w.cs.store.history(UUID(turn["interaction_id"])))
    assert [e.type for e in events if e.type == "ManagerMessaged"] == ["ManagerMessaged"]
    called = [e.fields for e in events if e.type == "ToolCalled"]
    assert [(c["name"], c["outcome"], c["arguments"]) for c in called] == [
        (PROPOSE_REFUND, "malformed", {})
    ]


def test_an_answer_whose_text_holds_a_lone_surrogate_ends_the_turn_unavailable(
    wire: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr("tests.test_assistant.ScriptedEndpoint", _EscapingEndpoint)
    w = wire(Script(Say("Refunded \ud800 already.")))

    answer = _message(w, "Refund the missed discount")

    assert answer.status_code == 200, answer.text
    turn = answer.json()
    assert turn["ended"] == "model_unavailable"
    assert all("\ud800" not in m["text"] for m in turn["messages"])
    events = list(w.cs.store.history(UUID(turn["interaction_id"])))
    assert [e.type for e in events][-1] == "TurnEnded"


@pytest.mark.parametrize("text", ['"\\ud800"', '{"a": ["x\\udfff"]}', '{"\\ud800": 1}'])
def test_untrusted_json_refuses_a_string_no_utf8_can_hold(text: str):
    with pytest.raises(UnreadableJsonError) as refused:
        read_json(text)
    assert refused.value.kind == "text"
    assert read_json('"\\ud83d\\ude00"') == "\U0001f600"  # a pair is one character: fine


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param('{"payment": "P1\\u0000"}', id="nul-value"),
        pytest.param('{"P1\\u0000": "x"}', id="nul-key"),
        pytest.param(f'{{"payment": "P1{LONE}"}}', id="lone-surrogate"),
    ],
)
def test_the_model_is_told_its_arguments_hold_text_no_database_stores(
    wire: Any,  # noqa: F811
    arguments: str,
):
    """What the model reads back (the tool's answer in its next request) says why, in the
    model-facing error's words, without echoing the text; the turn goes on, nothing is
    proposed, and the call is recorded as malformed with no arguments."""
    w = wire(Script(Call(PROPOSE_REFUND, arguments), Say("Sorry, I could not do that.")))

    answer = _message(w, "Refund the missed discount")

    assert answer.status_code == 200, answer.text
    assert answer.json()["ended"] == "reply"
    assert answer.json()["proposal"] is None
    told = [m for m in w.endpoint.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(told) == 1
    assert "a string no database stores (a NUL character or a lone surrogate" in told[0]["content"]
    assert "\\u0000" not in told[0]["content"]
    assert "\x00" not in told[0]["content"]
    events = list(w.cs.store.history(UUID(answer.json()["interaction_id"])))
    called = [e.fields for e in events if e.type == "ToolCalled"]
    assert [(c["outcome"], c["arguments"]) for c in called] == [("malformed", {})]


def test_a_nul_in_the_answers_text_is_removed_and_the_answer_kept(
    wire: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
):
    """A NUL in the model's prose (``\\u0000`` in the endpoint's JSON) was recorded in the
    conversation's events as it came. It has no glyph and no meaning in prose, so the adapter
    removes it: the person reads the answer (refusing it all, as a lone surrogate is, would
    end the turn "unavailable" over an invisible character), and nothing stored holds one."""
    monkeypatch.setattr("tests.test_assistant.ScriptedEndpoint", _EscapingEndpoint)
    w = wire(Script(Say("Refunded\x00 already.\x00")))

    answer = _message(w, "Refund the missed discount")

    assert answer.status_code == 200, answer.text
    turn = answer.json()
    assert turn["ended"] == "reply"
    assert turn["messages"] == [{"author": "model", "text": "Refunded already."}]
    events = list(w.cs.store.history(UUID(turn["interaction_id"])))
    said = [e.fields["text"] for e in events if e.type == "AssistantReplied"]
    assert said == ["Refunded already."]
    assert not any(
        "\x00" in json.dumps(e.fields, default=str)
        or "\\u0000" in json.dumps(e.fields, default=str)
        for e in events
    )


def test_a_tool_call_whose_name_holds_a_nul_ends_the_turn_unavailable(
    wire: Any,  # noqa: F811
):
    """No tool's name (and no call's id) holds a NUL: such a call is not one of ours, and
    recorded as it came it put a NUL in the conversation's events (``ToolCalled``)."""
    w = wire(Script(Call(PROPOSE_REFUND + "\x00", "{}"), Say("Done.")))

    answer = _message(w, "Refund the missed discount")

    assert answer.status_code == 200, answer.text
    turn = answer.json()
    assert turn["ended"] == "model_unavailable"
    events = list(w.cs.store.history(UUID(turn["interaction_id"])))
    assert not any("\x00" in json.dumps(e.fields, default=str) for e in events)
    assert not any("\\u0000" in json.dumps(e.fields, default=str) for e in events)
