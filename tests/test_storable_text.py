"""What no database stores (``domain.storable_text``), and the shared request check's words
for it: a request made through the Python API (or a plug-in's code) with a lone surrogate is
refused naming the field and why, not with "must be a string"."""

from __future__ import annotations

import pytest
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.storable_text import holds_unstorable, unstorable, unstorable_target

from tests.conftest import AVA, REFUND, TO_CARD


@pytest.mark.parametrize("text", ["\x00", "a\x00b", "\ud800", "x\udfffy"])
def test_a_nul_or_a_lone_surrogate_is_unstorable(text: str) -> None:
    assert unstorable(text)
    assert holds_unstorable({"k": [{"n": text}]})
    assert holds_unstorable({text: 1})


@pytest.mark.parametrize(
    "text", ["", "plain", "é 😀 漢字", "line\nbreak\ttab", "\x1b[2J", "\u202e"]
)
def test_text_a_database_stores_is_storable(text: str) -> None:
    """(Other control and invisible characters are storable: other checks refuse them.)"""
    assert not unstorable(text)
    assert not holds_unstorable({"k": [text, 5, None, {"x": text}]})


def test_a_url_holds_a_nul_as_a_decoded_path_or_a_raw_query() -> None:
    assert unstorable_target("/a\x00b", b"")
    assert unstorable_target("/a", b"x=%00")
    assert unstorable_target("/a", b"x=\x00")
    assert not unstorable_target("/a%00", b"x=%2500&y=100")  # an escaped percent sign


def test_a_request_with_a_lone_surrogate_says_why_through_the_python_api(cs, seeded) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"]["refund-ok"],
            request={**TO_CARD, "payment": "P\ud800"},
        )
    [problem] = refused.value.problems
    assert (problem.field, problem.message) == (
        "payment",
        "holds a NUL character or a lone surrogate, which no database stores",
    )
