"""``@direct_init`` (domain/frozen_records.py) gives the values a cycle passes around (the
caller, its membership, the scope, a decision's reads and commit, the execution contract, the
reports) an ``__init__`` that makes the same instances as the dataclass's own: the same
fields in the same order, the same defaults and refusals, still frozen."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any
from uuid import uuid4

import pytest
from countersign.application import ports, quorum, reports
from countersign.application.authorization import Caller
from countersign.domain import frozen_records
from countersign.domain.club.organization import Member
from countersign.domain.contracts.base import Prepared
from countersign.domain.frozen_records import direct_init
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.scope import Scope

GIVEN = [
    Caller,
    Member,
    Scope,
    ports.Reads,
    ports.Commit,
    ports.Answer,
    Prepared,
    ExecutionContract,
    quorum.Approval,
    reports.ProposalCreated,
    reports.ApprovalReport,
]


def _arguments(cls: type) -> dict[str, Any]:
    """A value for every parameter without a default."""
    original = frozen_records.ORIGINALS[cls]
    return {
        name: f"value of {name}"
        for name, p in list(inspect.signature(original).parameters.items())[1:]
        if p.default is p.empty
    }


def _by_original(cls: type, *args: Any, **kwargs: Any) -> Any:
    made = object.__new__(cls)
    frozen_records.ORIGINALS[cls](made, *args, **kwargs)
    return made


@pytest.mark.parametrize("cls", GIVEN, ids=lambda cls: cls.__qualname__)
def test_each_is_given_one_that_makes_the_same_value(cls: type) -> None:
    assert cls in frozen_records.ORIGINALS
    assert cls.__init__ is not frozen_records.ORIGINALS[cls]
    kwargs = _arguments(cls)
    made, original = cls(**kwargs), _by_original(cls, **kwargs)
    assert list(vars(made).items()) == list(vars(original).items())
    assert made == original
    assert inspect.signature(cls.__init__) == inspect.signature(frozen_records.ORIGINALS[cls])
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, name, "changed")
    with pytest.raises(TypeError):
        cls(**kwargs, unknown=1)
    if kwargs:
        with pytest.raises(TypeError):
            cls(**dict(list(kwargs.items())[1:]))


def test_positional_arguments_defaults_and_factories_as_the_dataclass():
    @direct_init
    @dataclasses.dataclass(frozen=True)
    class Value:
        a: int
        b: str = "b"
        items: list[int] = dataclasses.field(default_factory=list)
        _: dataclasses.KW_ONLY
        c: tuple[int, ...] = ()

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    assert Value in frozen_records.ORIGINALS
    made = Value(1, "x", c=(2,))
    assert list(vars(made).items()) == [("a", 1), ("b", "x"), ("items", []), ("c", (2,))]
    assert made.items is not Value(1).items
    assert Value(1, "b", [4]).items == [4]
    assert vars(Value(5)) == vars(_by_original(Value, 5))
    with pytest.raises(ValueError, match="negative"):
        Value(-1)
    with pytest.raises(TypeError):
        Value(1, "b", [], (1,))  # c is keyword-only


def test_a_class_it_cannot_match_keeps_its_own():
    @dataclasses.dataclass(frozen=True)
    class Variable:
        seed: dataclasses.InitVar[int] = 0

    @dataclasses.dataclass
    class Unfrozen:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclasses.dataclass(frozen=True)
    class ByHand:
        def __init__(self) -> None:
            pass

    for cls in (Variable, Unfrozen, Slotted, ByHand):
        own = cls.__init__
        assert direct_init(cls) is cls
        assert cls.__init__ is own
        assert cls not in frozen_records.ORIGINALS


def test_given_twice_changes_nothing():
    init = Scope.__init__
    assert direct_init(Scope).__init__ is init
    assert Scope(uuid4(), "orders", uuid4()).key is None
