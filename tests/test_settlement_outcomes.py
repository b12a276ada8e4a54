"""``succeeded(result)`` (application/settlement.py) is the stored outcome
``stored(Succeeded(result=result.model_dump(mode="json")))`` makes, key for key and in the
same order, for results of every shape a contract returns."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from uuid import uuid4

import orjson
from countersign.application.settlement import stored, succeeded
from countersign.domain.contracts.apply_broadcast_draft import BroadcastDraftResult
from countersign.domain.contracts.base import Frozen
from countersign.domain.outcomes import Succeeded


class Colour(StrEnum):
    RED = "red"


class Inner(Frozen):
    at: datetime
    amount: Decimal
    ratio: float


class Everything(Frozen):
    id: object
    name: str
    count: int
    colour: Colour
    tags: list[str]
    inner: Inner
    maybe: int | None = None
    mapping: dict[str, list[int]] = {}


def _results() -> list[Frozen]:
    return [
        BroadcastDraftResult(form_id=uuid4(), audience_count=12, subject="Season opener"),
        Everything(
            id=uuid4(),
            name="é \u2028 ✓",
            count=2**40,
            colour=Colour.RED,
            tags=["b", "a"],
            inner=Inner(
                at=datetime(2026, 12, 3, 9, 0, 1, 5, tzinfo=UTC), amount=Decimal("1.10"), ratio=0.1
            ),
            mapping={"z": [1], "a": []},
        ),
    ]


def test_the_stored_success_is_the_models_own():
    for result in _results():
        mine = succeeded(result)
        theirs = stored(Succeeded(result=result.model_dump(mode="json")))
        assert mine == theirs
        assert list(mine) == list(theirs)
        assert orjson.dumps(mine) == orjson.dumps(theirs)
