"""domain/untrusted_json.py: the one reader of JSON text from outside (a model's tool call, a
page's form field, the command line's --request, an agent framework's call). It refuses text
that is not JSON, is too long, nests too deep or holds a number too long, always with a
ValueError naming which, never RecursionError or int()'s own ValueError."""

from __future__ import annotations

import pytest
from countersign.domain.untrusted_json import (
    MAX_CHARS,
    MAX_DEPTH,
    MAX_NUMBER,
    UnreadableJsonError,
    read_json,
)
from countersign.infrastructure.entrypoints.web.request_form import form_json


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_json_within_every_bound_is_read() -> None:
    text = '{"a": [1, -2.5e3, "x"], "b": {"c": null, "d": true}}'
    assert read_json(text) == {"a": [1, -2500.0, "x"], "b": {"c": None, "d": True}}
    deepest: list[object] = []
    for _ in range(MAX_DEPTH - 1):
        deepest = [deepest]
    assert read_json(_nested(MAX_DEPTH)) == deepest
    assert read_json("9" * MAX_NUMBER) == int("9" * MAX_NUMBER)
    assert read_json('"' + "x" * (MAX_CHARS - 2) + '"') == "x" * (MAX_CHARS - 2)


@pytest.mark.parametrize(
    ("text", "kind", "why"),
    [
        ('{"a": 1', "syntax", "Expecting ',' delimiter"),
        ("", "syntax", "Expecting value"),
        (_nested(MAX_DEPTH + 1), "depth", "nested too deeply"),
        (_nested(5000), "depth", "nested too deeply"),
        ("1" * (MAX_NUMBER + 1), "number", "a number too large to read"),
        ("[" + "1" * 5000 + "]", "number", "a number too large to read"),
        ("0." + "1" * MAX_NUMBER, "number", "a number too large to read"),
        ('"' + "x" * (MAX_CHARS - 1) + '"', "length", f"longer than {MAX_CHARS} characters"),
    ],
)
def test_text_past_a_bound_is_refused_saying_which(text: str, kind: str, why: str) -> None:
    with pytest.raises(UnreadableJsonError) as refused:
        read_json(text)
    assert (refused.value.kind, refused.value.why) == (kind, why)
    assert isinstance(refused.value, ValueError)


def test_a_caller_may_set_tighter_bounds() -> None:
    with pytest.raises(UnreadableJsonError) as refused:
        read_json("[[[]]]", max_depth=2)
    assert refused.value.kind == "depth"
    with pytest.raises(UnreadableJsonError) as refused:
        read_json('"abcdef"', max_chars=5)
    assert refused.value.why == "longer than 5 characters"


def test_a_form_field_refuses_a_number_too_long_as_the_command_line_does() -> None:
    """Before, each reader's bound on a number was int()'s (4,300 digits, read slowly): a page's
    JSON field read one of a thousand digits. Every reader now refuses past ``MAX_NUMBER``."""
    with pytest.raises(ValueError, match="a number too large to read"):
        form_json('{"id": ' + "7" * 1000 + "}")
