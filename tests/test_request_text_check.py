"""The request's control-character check reaches every text, however it is nested: a field,
a list's items, a nested model's fields and a nested model's extra fields, each refused at
its own location; printable text and multi-line fields' line breaks pass."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.domain.contracts.base import ContractRequest
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.request_errors import parse_request
from pydantic import BaseModel, ConfigDict


class Loose(BaseModel):
    """A nested model that is not a request (no check of its own) and keeps extra fields."""

    model_config = ConfigDict(extra="allow")
    name: str


class Inner(ContractRequest):
    tags: list[str]


class Outer(ContractRequest):
    multiline_fields = frozenset({"body"})

    title: str
    body: str
    inner: Inner
    loose: Loose
    rows: list[list[str]]


def _ok() -> dict[str, Any]:
    return {
        "title": "Opener ✓",
        "body": "line one\nline two\tand a tab",
        "inner": {"tags": ["a", "b"]},
        "loose": {"name": "x", "note": "free"},
        "rows": [["c", "d"], []],
    }


def _fields(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidRequestError) as invalid:
        parse_request(Outer, raw)
    return [p.field for p in invalid.value.problems]


def test_printable_and_multiline_text_passes() -> None:
    parsed = parse_request(Outer, _ok())
    assert parsed.body == "line one\nline two\tand a tab"
    assert parsed.loose.model_extra == {"note": "free"}


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("title",), "a\nb", "title"),
        (("body",), "a\x1b[2Jb", "body"),
        (("inner", "tags", 1), "b\x07", "inner.tags"),
        (("loose", "name"), "x\x00", "loose"),
        (("loose", "note"), "free\r", "loose"),
        (("rows", 0, 1), "d\x9b", "rows"),
    ],
)
def test_a_control_character_is_refused_wherever_it_is(
    path: tuple[Any, ...], value: str, field: str
) -> None:
    raw = _ok()
    target: Any = raw
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    assert _fields(raw) == [field]
