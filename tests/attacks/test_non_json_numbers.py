"""An attack run (hC): the shared reader of JSON from outside (``domain.untrusted_json``: a
model's tool-call arguments, a page's JSON field, the command line's ``--request``, an agent
framework's call) took ``NaN``, ``Infinity`` and ``-Infinity``, which are not JSON, and
``1e999``, read as infinity, and handed them on as numbers. Now each is unreadable, as other
malformed text is: the model is told its arguments are malformed and the turn goes on, the
command exits 4 saying the request is not valid JSON, a page says its field is not in the
expected form; nothing is proposed.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.application.assistant.tool_arguments import (
    NOT_AN_OBJECT,
    parsed,
    why_unreadable,
)
from countersign.domain.untrusted_json import UnreadableJsonError, read_json
from countersign.infrastructure.adapters.scripted_model import Call, Say, Script
from countersign.infrastructure.entrypoints.web.request_form import form_json

from tests.attacks.test_held_model_surrogates import _message
from tests.conftest import AVA, REFUND, TO_CARD
from tests.test_assistant import PROPOSE_REFUND, wire  # noqa: F401

CONSTANTS = ("NaN", "Infinity", "-Infinity")


@pytest.mark.parametrize("constant", CONSTANTS)
def test_nan_and_infinity_are_not_json_and_are_refused(constant: str) -> None:
    for text in (constant, f"[1, {constant}]", f'{{"amount": {constant}}}'):
        with pytest.raises(UnreadableJsonError) as refused:
            read_json(text)
        assert (refused.value.kind, refused.value.why) == (
            "syntax",
            f"{constant} is not a JSON value",
        )
    with pytest.raises(ValueError, match="is not a JSON value"):
        form_json(f'{{"amount": {constant}}}')  # a page's JSON field: "not in the expected form"


@pytest.mark.parametrize("text", ["1e999", "-1e999", '{"amount": 2E+400}'])
def test_a_number_no_float_holds_is_too_large_to_read(text: str) -> None:
    with pytest.raises(UnreadableJsonError) as refused:
        read_json(text)
    assert (refused.value.kind, refused.value.why) == ("number", "a number too large to read")
    assert read_json("1e300") == 1e300  # a large number a float holds is read


@pytest.mark.parametrize("constant", [*CONSTANTS, "1e999"])
def test_the_model_is_told_its_arguments_are_malformed_and_the_turn_goes_on(
    wire: Any,  # noqa: F811
    constant: str,
) -> None:
    arguments = json.dumps(TO_CARD)[:-1] + f', "amount": {constant}}}'
    assert parsed(arguments) is None
    assert why_unreadable(arguments) == NOT_AN_OBJECT
    w = wire(Script(Call(PROPOSE_REFUND, arguments), Say("Sorry, I could not do that.")))

    answer = _message(w, "Refund the missed discount")

    assert answer.status_code == 200, answer.text
    assert answer.json()["ended"] == "reply"
    assert answer.json()["proposal"] is None
    told = [m for m in w.endpoint.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(told) == 1
    assert NOT_AN_OBJECT in told[0]["content"]
    events = list(w.cs.store.history(UUID(answer.json()["interaction_id"])))
    called = [e.fields for e in events if e.type == "ToolCalled"]
    assert [(c["outcome"], c["arguments"]) for c in called] == [("malformed", {})]


@pytest.mark.parametrize(
    ("constant", "why"),
    [
        ("NaN", "NaN is not a JSON value"),
        ("-Infinity", "-Infinity is not a JSON value"),
        ("1e999", "a number too large to read"),
    ],
)
def test_the_command_line_refuses_them_as_a_request_that_is_not_json(
    command, seeded, constant: str, why: str
) -> None:
    request = json.dumps(TO_CARD)[:-1] + f', "amount": {constant}}}'
    status, out, err = command(
        *("propose", "--org", "granite", "--as", AVA, "--operation", REFUND),
        *("--resource", seeded["orders"]["refund-ok"], "--request", request),
    )

    assert (status, out) == (4, "")
    assert f"      request: not valid JSON ({why})" in err.splitlines()
    assert "Traceback" not in err
