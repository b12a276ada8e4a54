"""The outcome messages the cards and the hand-back store stay those of ``outcome_messages``
while they get cheaper (issue 27, ``projections/messages.py``): the same texts for every
outcome of each release's golden stream, and a stored value the contract's models refuse
still raises, as before, so the projection stops at its event instead of wording it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from countersign.domain.contracts import REGISTRY
from countersign.domain.messages import outcome_messages
from countersign.projections import messages
from countersign.projections.messages import outcome_texts
from pydantic import ValidationError

from tests.support.golden_tables import FIXTURES, open_golden

RELEASES = sorted(path.name for path in FIXTURES.glob("golden_*"))

DRAFT = "email_broadcast.apply_draft"
PREVIEW = {
    "filters_in_words": "members of Thursday Seniors",
    "audience_count": 4,
    "subject": "Ice times",
    "body": "Draws move later.",
    "sends_email": False,
}
RESULT = {"form_id": "6d1f2a52-96a4-4c1b-9d39-3c1d8b0e6f11", "audience_count": 4, "subject": "Ice"}


def _outcomes(release: str, tmp_path: Path) -> list[tuple[str, Any, Any]]:
    """(operation, preview, stored outcome) of every outcome event in a golden stream."""
    cs = open_golden(release, tmp_path)
    try:
        [runner] = cs.projection_runners(["browser_view"])
        proposed: dict[Any, Any] = {}
        found = []
        for event in (event for batch in _batches(runner) for event in batch):
            name = type(event).__name__
            if name == "Proposed":
                proposed[event.originator_id] = event
            elif hasattr(event, "outcome") and event.originator_id in proposed:
                made = proposed[event.originator_id]
                found.append((made.kind, made.preview, event.outcome))
        return found
    finally:
        cs.close()


def _batches(runner: Any) -> Any:
    position = 0
    while decoded := runner.read(position, runner.projection.handles_topic):
        yield [event for _, event in decoded]
        position = decoded[-1][0].id


@pytest.mark.parametrize("release", RELEASES)
def test_every_golden_outcome_reads_as_outcome_messages_words_it(
    release: str, tmp_path: Path
) -> None:
    outcomes = _outcomes(release, tmp_path)
    assert {outcome["kind"] for _, _, outcome in outcomes} >= {"succeeded", "revision_required"}
    for operation, preview, outcome in outcomes:
        assert outcome_texts(operation, preview, outcome) == outcome_messages(
            operation, preview, outcome
        ), outcome


def _refused(operation: str, preview: Any, outcome: Any) -> type[Exception]:
    """What ``outcome_messages`` raises, and checks ``outcome_texts`` raises the same."""
    with pytest.raises(Exception) as before:
        outcome_messages(operation, preview, outcome)
    with pytest.raises(before.type):
        outcome_texts(operation, dict(preview), dict(outcome))  # new objects: no memo
    return before.type


def test_a_success_is_worded_without_validating_the_stored_outcome_whole() -> None:
    success = {"kind": "succeeded", "result": RESULT}
    assert outcome_texts(DRAFT, PREVIEW, success) == outcome_messages(DRAFT, PREVIEW, success)
    assert messages._success_texts(DRAFT, PREVIEW, success) is not None


@pytest.mark.parametrize(
    "preview",
    [
        {key: value for key, value in PREVIEW.items() if key != "subject"},  # a field missing
        {**PREVIEW, "audience_count": "four"},  # a value the model refuses
        {**PREVIEW, "unexpected": 1},  # a field the model does not have
    ],
)
def test_a_corrupt_preview_still_fails_as_before(preview: dict[str, Any]) -> None:
    assert _refused(DRAFT, preview, {"kind": "succeeded", "result": RESULT}) is ValidationError


@pytest.mark.parametrize(
    "outcome",
    [
        {"kind": "succeeded", "result": {**RESULT, "form_id": "not a uuid"}},
        {"kind": "succeeded", "result": {}},
        {"kind": "succeeded", "result": ["not", "a", "dict"]},
        {"kind": "succeeded"},
        {"kind": "succeeded", "result": RESULT, "extra": True},  # Succeeded forbids extras
        {"kind": "succeeded_but_not_quite", "result": RESULT},
    ],
)
def test_a_corrupt_outcome_still_fails_as_before(outcome: dict[str, Any]) -> None:
    assert _refused(DRAFT, PREVIEW, outcome) is ValidationError


def test_a_success_of_an_operation_no_longer_registered_reads_in_general_words() -> None:
    """A plug-in turned off: its successes raised KeyError, which stopped every projection's
    rebuild (a plug-in author's finding). Both paths say the same general words."""
    assert "no.such_operation" not in REGISTRY
    success = {"kind": "succeeded", "result": RESULT}
    said = outcome_messages("no.such_operation", PREVIEW, success)
    assert outcome_texts("no.such_operation", dict(PREVIEW), dict(success)) == said
    assert said[0].startswith("Carried out as approved. Its operation is no longer enabled")
    assert said[1].startswith("Effectué comme approuvé. Son opération n'est plus activée")


def test_a_model_with_its_own_model_validate_is_validated_by_it() -> None:
    """Only pydantic's own ``model_validate`` is skipped for the validator it calls."""
    contract = REGISTRY[DRAFT]
    assert messages._validator(contract.Preview) == (
        contract.Preview.__pydantic_validator__.validate_python
    )

    class Checked(contract.Preview):  # type: ignore[name-defined,misc]
        @classmethod
        def model_validate(cls, obj: Any, **options: Any) -> Any:
            raise ValueError("checked by the model itself")

    with pytest.raises(ValueError, match="checked by the model itself"):
        messages._validator(Checked)(PREVIEW)
