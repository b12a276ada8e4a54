"""The cycle's shortcuts give what the long way gives, and fail as clearly.

- ``domain/contracts/model_calls.py``: a model's validation and JSON dump called on its own
  pydantic-core validator and serializer; a model that overrides ``model_validate`` or
  ``model_dump`` is still called through its own method.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from countersign.domain.contracts.apply_broadcast_draft import (
    BroadcastDraftArguments,
    BroadcastDraftRequest,
    DraftFilters,
)
from countersign.domain.contracts.base import Frozen
from countersign.domain.contracts.model_calls import dumped, validated
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.request_errors import parse_request
from pydantic import ValidationError

REQUEST = {
    "filters": {"leagues": ["Thursday Seniors"]},
    "subject": " Opener ",
    "body": "Line\nline",
}

# -- model calls ----------------------------------------------------------------------------------


def test_validated_is_model_validate():
    assert validated(BroadcastDraftRequest, REQUEST) == BroadcastDraftRequest.model_validate(
        REQUEST
    )
    assert validated(BroadcastDraftRequest, REQUEST).subject == "Opener"  # the model's config


def test_validated_refuses_what_model_validate_refuses_with_the_same_errors():
    bad = {**REQUEST, "subject": 7, "extra": True}
    with pytest.raises(ValidationError) as theirs:
        BroadcastDraftRequest.model_validate(bad)
    with pytest.raises(ValidationError) as ours:
        validated(BroadcastDraftRequest, bad)
    assert ours.value.errors() == theirs.value.errors()
    assert ours.value.title == "BroadcastDraftRequest"


def test_a_request_with_a_control_character_is_still_refused_safely():
    with pytest.raises(InvalidRequestError) as refused:
        parse_request(BroadcastDraftRequest, {**REQUEST, "subject": "a\x1b[2Jb"})
    [problem] = refused.value.problems
    assert problem.field == "subject"
    assert "\x1b" not in problem.message


def test_dumped_is_model_dump_in_json_mode():
    arguments = BroadcastDraftArguments(
        form_id=uuid4(),
        filters=DraftFilters(leagues=["U9"]),
        subject="s",
        body="b",
        audience_count=3,
    )
    assert dumped(arguments) == arguments.model_dump(mode="json")
    assert type(dumped(arguments)["form_id"]) is str


class Shouting(Frozen):
    """A model that says how it is validated and dumped itself."""

    word: str

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Shouting:
        return super().model_validate({"word": str(obj["word"]).upper()}, **kwargs)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {"word": self.word + "!"}


class Whispering(Shouting):
    """Inherits the overrides."""


@pytest.mark.parametrize("model", [Shouting, Whispering])
def test_a_model_that_overrides_validation_or_dump_is_called_through_its_own_method(model):
    made = validated(model, {"word": "hey"})
    assert type(made) is model
    assert made.word == "HEY"
    assert dumped(made) == {"word": "HEY!"}
