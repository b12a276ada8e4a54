"""domain/plain_json.py: a container of plain items alone is handed to orjson as it is (no
copy); anything else is copied where it needs preparing, and the text is the standard
library's either way."""

from __future__ import annotations

import json
from uuid import uuid4

import pytest
from countersign.domain import plain_json

prepare = plain_json.preparer(plain_json.not_plain)


class StrKey(str):
    def __str__(self) -> str:
        return "other"


class ListOf(list[str]):
    pass


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
        prepare({"id": uuid4()})


@pytest.mark.parametrize(
    "value",
    [
        {"a": "x", 1: "y"},
        {"nested": {True: "yes"}},
        {"list": [{None: 1}]},
        [{2.5: "half"}],
        {StrKey("k"): "s"},
    ],
)
def test_a_key_that_is_not_an_exact_string_is_refused_by_orjson(value):
    # The walk does not test keys: what it returns is refused by ``dumps``, a REFUSED error,
    # and the caller's reference encoder writes it.
    with pytest.raises(plain_json.REFUSED):
        plain_json.dumps(prepare(value))


def test_a_dicts_lists_are_tested_where_they_stand():
    # A list of strings and integers in a dict is written as it is; any other item in it
    # (a float, a bool, a nested container, a subclass) takes the walk.
    leagues = ["U9", 11]
    value = {
        "plain": leagues,
        "floats": ["a", 1e-07, 1e16],
        "flags": [1, True, None],
        "nested": [["x"], {"y": 0.5}],
        "texts": [StrKey("t")],
    }
    prepared = prepare(value)
    assert prepared["plain"] is leagues
    assert plain_json.dumps(prepared) == _stdlib(value)
    with pytest.raises(plain_json.NotPlain):
        prepare({"list": ["a", uuid4()]})
    with pytest.raises(plain_json.NotPlain):
        prepare({"subclass": ListOf(["a"])})
