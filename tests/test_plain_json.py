"""domain/plain_json.py: a container of plain items alone is handed to orjson as it is (no
copy); anything else is copied where it needs preparing, and the text is the standard
library's either way."""

from __future__ import annotations

import json
from uuid import uuid4

import pytest
from countersign.domain import plain_json

prepare = plain_json.preparer(plain_json.not_plain)


def _stdlib(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_plain_containers_are_not_copied():
    preview = {"subject": "é", "count": 3, "sends": False, "none": None}
    leagues = ["U9", "U11"]
    pairs = (1, "a")
    assert prepare(preview) is preview
    assert prepare(leagues) is leagues
    assert prepare(pairs) is pairs
    for value in (preview, leagues, pairs):
        assert plain_json.dumps(prepare(value)) == _stdlib(value)


def test_anything_else_is_prepared_in_a_copy_and_written_as_the_standard_library_does():
    nested = {"a": "x", "filters": {"leagues": ["U9"]}, "ratio": 0.1, "list": [1, 1e-07, True]}
    prepared = prepare(nested)
    assert prepared is not nested
    assert prepared["filters"]["leagues"] is nested["filters"]["leagues"]  # plain: shared
    assert nested == {
        "a": "x",
        "filters": {"leagues": ["U9"]},
        "ratio": 0.1,
        "list": [1, 1e-07, True],
    }
    assert plain_json.dumps(prepared) == _stdlib(nested)
    with pytest.raises(plain_json.NotPlain):
        prepare({"a": "x", 1: "y"})
    with pytest.raises(plain_json.NotPlain):
        prepare({"id": uuid4()})
