"""The domain events' cheaper ``__init__``s (infrastructure/persistence/frozen_inits.py) make
the same events as the dataclasses' own: the same fields in the same order, the same refusals,
still frozen."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import uuid4

import pytest
from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence import frozen_inits
from eventsourcing.domain import DomainEvent


@pytest.fixture(autouse=True)
def _installed() -> None:
    """What the application does when it is made (CountersignApplication)."""
    frozen_inits.install()


def _arguments(cls: type) -> dict[str, Any]:
    """A value for every parameter without a default: the name itself, ids and a time."""
    values: dict[str, Any] = {}
    for name, p in list(inspect.signature(frozen_inits.ORIGINALS[cls]).parameters.items())[1:]:
        if p.default is p.empty:
            values[name] = f"value of {name}"
    values["originator_id"] = uuid4()
    values["timestamp"] = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)
    return values


def _by_original(cls: type, **kwargs: Any) -> Any:
    event = object.__new__(cls)
    frozen_inits.ORIGINALS[cls](event, **kwargs)
    return event


def test_every_event_of_the_proposal_is_given_one():
    events = [
        value
        for value in vars(Proposal).values()
        if isinstance(value, type) and issubclass(value, DomainEvent)
    ]
    assert len(events) > 10
    assert all(cls in frozen_inits.ORIGINALS for cls in events)


def test_each_makes_the_same_event_as_the_dataclass_does():
    assert len(frozen_inits.ORIGINALS) > 50
    for cls in frozen_inits.ORIGINALS:
        if (
            not issubclass(cls, DomainEvent)
            or "originator_id" not in inspect.signature(cls).parameters
        ):
            continue
        kwargs = _arguments(cls)
        made, original = cls(**kwargs), _by_original(cls, **kwargs)
        assert list(vars(made).items()) == list(vars(original).items()), cls
        assert made == original
        assert inspect.signature(cls.__init__) == inspect.signature(frozen_inits.ORIGINALS[cls])
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.originator_version = 2  # type: ignore[misc]


def test_the_same_calls_are_refused():
    cls = Proposal.Approved
    kwargs = _arguments(cls)
    for broken in (
        {k: v for k, v in kwargs.items() if k != "chain"},  # missing
        {**kwargs, "unknown": 1},  # unexpected
    ):
        with pytest.raises(TypeError):
            _by_original(cls, **broken)
        with pytest.raises(TypeError):
            cls(**broken)
    # __post_init__ still runs: the library refuses an id that is not a UUID.
    with pytest.raises(TypeError, match="non-UUID"):
        cls(**{**kwargs, "originator_id": "not an id"})


def test_positional_defaults_and_keyword_only_fields_are_kept():
    @dataclasses.dataclass(frozen=True)
    class Event(DomainEvent):
        a: int
        b: str = "b"
        _: dataclasses.KW_ONLY
        c: tuple[int, ...] = ()

    original = Event.__init__
    assert frozen_inits.install(Event, (__name__,)) == 1
    assert Event.__init__ is not original
    made = Event(uuid4(), 1, datetime(2026, 1, 1, tzinfo=UTC), 5, c=(1,))
    assert list(vars(made)) == ["originator_id", "originator_version", "timestamp", "a", "b", "c"]
    assert (made.a, made.b, made.c) == (5, "b", (1,))
    with pytest.raises(TypeError):
        Event(uuid4(), 1, datetime(2026, 1, 1, tzinfo=UTC), 5, "b", (1,))  # c is keyword-only


def test_a_default_factory_is_called_for_each_event_as_the_dataclass_calls_it():
    @dataclasses.dataclass(frozen=True)
    class Factory(DomainEvent):
        items: list[int] = dataclasses.field(default_factory=list)

    original = Factory.__init__
    assert frozen_inits.install(Factory, (__name__,)) == 1
    assert Factory.__init__ is not original
    at = datetime(2026, 1, 1, tzinfo=UTC)
    first, second = Factory(uuid4(), 1, at), Factory(uuid4(), 1, at)
    assert first.items == []
    assert first.items is not second.items
    assert Factory(uuid4(), 1, at, [3]).items == [3]
    assert inspect.signature(Factory.__init__) == inspect.signature(original)


def test_a_class_it_cannot_match_keeps_its_own():
    @dataclasses.dataclass(frozen=True)
    class Variable(DomainEvent):
        seed: dataclasses.InitVar[int] = 0
        kept: ClassVar[int] = 1

    @dataclasses.dataclass
    class Unfrozen:
        a: int

    @dataclasses.dataclass(frozen=True)
    class ByHand(DomainEvent):
        def __init__(self) -> None:
            pass

    for cls in (Variable, Unfrozen, ByHand):
        own = cls.__init__
        assert frozen_inits.install(cls, (__name__,)) == 0
        assert cls.__init__ is own


def test_only_countersigns_own_event_classes_are_given_one():
    """The library's classes, and anyone else's in the process (bench.py's raw reference),
    keep the dataclass's ``__init__``."""

    @dataclasses.dataclass(frozen=True)
    class Elsewhere(DomainEvent):
        a: int

    own = Elsewhere.__init__
    assert frozen_inits.install(Elsewhere) == 0  # tests.*, not countersign.*
    assert Elsewhere.__init__ is own
    assert DomainEvent not in frozen_inits.ORIGINALS
    # (and the classes these tests defined here and installed themselves)
    assert all(c.__module__.startswith(("countersign.", __name__)) for c in frozen_inits.ORIGINALS)
