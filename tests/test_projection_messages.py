"""The outcome messages the card and the hand-back store (``projections.messages``): made once
for every equal operation, preview and outcome, and always what the domain says of them."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import pytest
from countersign.domain import messages as domain_messages
from countersign.projections import messages
from pydantic import ValidationError

from tests.conftest import DRAFT

FORM = str(uuid4())


def _preview(count: Any = 4) -> dict[str, Any]:
    return {
        "filters_in_words": "members of Thursday Seniors",
        "audience_count": count,
        "subject": "Ice times",
        "body": "Draws move later.",
        "sends_email": False,
    }


def _succeeded(count: Any = 4) -> dict[str, Any]:
    return {
        "kind": "succeeded",
        "result": {"form_id": FORM, "audience_count": count, "subject": "Ice times"},
    }


@pytest.fixture
def worded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every call that reached the domain's ``outcome_messages``, on an empty memory."""
    calls: list[tuple[Any, ...]] = []
    real = domain_messages.outcome_messages

    def counting(*args: Any) -> tuple[str, ...]:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(messages, "outcome_messages", counting)
    monkeypatch.setattr(messages, "_WORDED", {})
    monkeypatch.setattr(messages, "_last", None)
    return calls


def test_equal_values_are_worded_once_with_the_domains_own_texts(worded):
    expected = domain_messages.outcome_messages(DRAFT, _preview(), _succeeded())
    for _ in range(3):  # new objects each time, as each event's decoding makes them
        assert messages.outcome_texts(DRAFT, _preview(), _succeeded()) == expected
    assert len(worded) == 1
    failure = {"kind": "terminal_failure", "correlation_id": "cs-0123456789abcdef"}
    assert messages.outcome_texts(DRAFT, _preview(), dict(failure)) == (
        domain_messages.outcome_messages(DRAFT, _preview(), failure)
    )
    assert len(worded) == 2


@pytest.mark.parametrize(
    ("first", "then"),
    [
        (4, 4.0),  # equal under ==, other JSON
        (4.0, 4),
        (1, True),
        (4, 5),
    ],
)
def test_a_value_of_another_type_or_value_is_worded_on_its_own(worded, first, then):
    messages.outcome_texts(DRAFT, _preview(first), _succeeded())
    try:
        expected: Any = domain_messages.outcome_messages(DRAFT, _preview(then), _succeeded())
    except ValidationError as error:
        expected = type(error)
    try:
        got: Any = messages.outcome_texts(DRAFT, _preview(then), _succeeded())
    except ValidationError as error:
        got = type(error)
    assert got == expected
    assert len(worded) == 2


def test_what_json_cannot_tell_apart_is_told_apart(worded):
    """A tuple is written as a list, NaN as null: ``==`` tells them apart (NaN is not even
    equal to itself). An operation no longer registered words a failure without its
    preview, so any preview is accepted."""
    failure = {"kind": "terminal_failure", "correlation_id": "cs-0123456789abcdef"}
    expected = domain_messages.outcome_messages("gone.operation", {}, failure)
    previews = [{"x": [1]}, {"x": (1,)}, {"x": None}, {"x": float("nan")}, {"x": float("nan")}]
    for preview in previews:
        assert messages.outcome_texts("gone.operation", preview, dict(failure)) == expected
    assert [call[1] for call in worded] == previews
    messages.outcome_texts("gone.operation", {"x": (1,)}, dict(failure))
    assert len(worded) == len(previews)  # the tuple again: remembered, as the last of its JSON


def test_an_invalid_value_fails_every_time(worded):
    for _ in range(2):
        with pytest.raises(ValidationError):
            messages.outcome_texts(DRAFT, _preview("four"), _succeeded())
    assert len(worded) == 2


def test_subclasses_are_worded_every_time(worded):
    class Text(str):
        pass

    preview = _preview()
    preview["subject"] = Text("Ice times")
    for _ in range(2):
        assert messages.outcome_texts(DRAFT, dict(preview), _succeeded()) == (
            domain_messages.outcome_messages(DRAFT, _preview(), _succeeded())
        )
    assert len(worded) == 2


def test_another_contract_for_the_operation_is_worded_anew(worded, monkeypatch):
    messages.outcome_texts(DRAFT, _preview(), _succeeded())

    class Registry:
        def get(self, kind: str) -> object:
            return object()  # not the contract the texts were made under

    monkeypatch.setattr(messages, "REGISTRY", Registry())
    messages.outcome_texts(DRAFT, _preview(), _succeeded())
    assert len(worded) == 2


def test_the_memory_is_bounded(worded, monkeypatch):
    monkeypatch.setattr(messages, "_WORDED_MAX", 3)
    for count in range(10):
        messages.outcome_texts(DRAFT, _preview(count + 1), _succeeded(count + 1))
    assert len(messages._WORDED) <= 3
    assert len(worded) == 10


def test_rebuilt_cards_and_hand_backs_say_what_the_domain_says_of_each(cs, seeded, clock):
    """Alike drafts (their messages remembered once worded) among every other outcome: after
    a rebuild of every projection together, each card's and each conversation's outcome
    message is the domain's own for that proposal's operation, preview and outcome."""
    from countersign.infrastructure.projection_engine.together import rebuild_together

    from tests.conftest import AVA
    from tests.support.proposing import propose_on
    from tests.test_projections import DRAFT_REQUEST, lifecycle_history

    lifecycle_history(cs, seeded, clock)
    form = seeded["broadcast_forms"]["granite"]
    for _ in range(3):
        cs.proposals.approve(propose_on(cs, form, DRAFT_REQUEST, operation=DRAFT), AVA)
    messages._WORDED.clear()
    rebuild_together(cs.projection_runners())
    with cs.sql.transaction() as cursor:
        cards = cursor.execute(
            "SELECT proposal_id, operation, preview, outcome, message_en, message_fr"
            " FROM proposal_cards WHERE outcome IS NOT NULL"
        ).fetchall()
        told = dict(
            cursor.execute(
                "SELECT proposal_id, text_fr FROM handback_messages WHERE kind = 'outcome'"
            ).fetchall()
        )
    kinds = set()
    for proposal_id, operation, preview, outcome, message_en, message_fr in cards:
        preview, outcome = (v if isinstance(v, dict) else json.loads(v) for v in (preview, outcome))
        kinds.add(outcome["kind"])
        expected = domain_messages.outcome_messages(operation, preview, outcome)
        assert (message_en, message_fr) == expected
        assert told[proposal_id] == expected[1]
    assert {"succeeded", "revision_required"} <= kinds
    assert sum(operation == DRAFT for _, operation, *_ in cards) >= 4
