"""Cheaper creation of the domain's aggregates: the same aggregate and the same event.

eventsourcing 9.5.6 creates an aggregate (``Proposal(...)``, ``PendingSlot(...)``) through
``BaseAggregate._create``: the "created" event is made, then its ``CanInitAggregate.mutate``
resolves the aggregate's topic, filters the event's fields twice through the signatures of
``__base_init__`` and ``__init__`` (a comprehension each over every field) and calls both
with keywords. A proposal's ``Proposed`` has twenty fields: creating one cost about 120,000
instructions under callgrind, about 5% of a local cycle.

``install`` gives each aggregate class of the domain that creates itself as the library does
(its ``_create``, ``__base_init__``, no explicit ``TOPIC``, a topic that resolves to it) a
``_create`` that takes the same steps in the same order with what the library looks up on
every call looked up once per class and event class: the topic, which of the event's fields
``__init__`` takes, whether ``__init__`` takes the id, whether the event's ``apply`` is the
library's own (which does nothing). ``__base_init__`` is written inline, setting the same
attributes in the same order, so the aggregate's ``__dict__`` (what a stored snapshot holds)
is the library's, key for key. An event class whose ``mutate``, ``create_timestamp`` or
signature differs from the library's takes the library's ``_create`` itself, as does a class
defined after ``install`` ran. ``tests/test_aggregate_create.py`` compares the two.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from datetime import datetime
from typing import Any
from uuid import UUID

import eventsourcing.domain
from countersign.infrastructure.persistence import frozen_inits
from countersign.infrastructure.persistence.frozen_inits import unseen_classes
from eventsourcing.domain import (
    BaseAggregate,
    CanCreateTimestamp,
    CanInitAggregate,
    CanMutateAggregate,
    DomainEvent,
)
from eventsourcing.utils import get_topic, resolve_topic

#: The library's own, which a class keeps or falls back to.
LIBRARY_CREATE: Any = BaseAggregate.__dict__["_create"].__func__
_LIBRARY_BASE_INIT = BaseAggregate.__base_init__
_LIBRARY_MUTATE = CanInitAggregate.mutate
_LIBRARY_APPLY = CanMutateAggregate.apply
_LIBRARY_AS_DICT = CanMutateAggregate._as_dict
_LIBRARY_TIMESTAMP = CanCreateTimestamp.create_timestamp

#: Whose aggregate classes ``install`` looks at, by the start of their module's name.
_OURS = ("countersign.",)
#: The classes given a ``_create`` here (and those found unfit, so each is looked at once).
_SEEN: set[type] = set()
GIVEN: set[type] = set()
_INSTALLING = threading.Lock()

#: What ``_create`` needs of an aggregate class and its event class: the topic, the names
#: ``__init__`` takes, whether it is given the id, whether the event's ``apply`` is the
#: library's, and ``_Copied`` or None (see ``_copied``).
_Facts = tuple[str, frozenset[str], bool, bool, "_Copied | None"]
#: (aggregate class, event class) -> what ``_create`` needs of them, or None: the library's.
_FACTS: dict[tuple[type, type], _Facts | None] = {}

#: For an event class whose ``__dict__`` is its fields alone, in their order: its
#: ``__init__`` (the one ``frozen_inits`` gave it), the fields the aggregate's ``__init__``
#: does not take, and how many it does.
_Copied = tuple[Any, tuple[str, ...], int]


def install(root: type = BaseAggregate, modules: tuple[str, ...] = _OURS) -> int:
    """Give every fit aggregate class under ``root`` defined in one of ``modules`` the
    cheaper ``_create``; how many were given one now."""
    given = 0
    with _INSTALLING:
        for cls in unseen_classes(root, modules, _SEEN):
            if _fits(cls):
                cls._create = classmethod(_create)  # type: ignore[attr-defined]
                GIVEN.add(cls)
                given += 1
    return given


def _fits(cls: type) -> bool:
    """Whether ``cls`` creates itself exactly as the library's ``_create`` does."""
    create = getattr(cls, "_create", None)
    return (
        getattr(create, "__func__", None) is LIBRARY_CREATE
        and not getattr(cls, "TOPIC", None)
        and getattr(cls, "__base_init__", None) is _LIBRARY_BASE_INIT
        and getattr(cls, "INITIAL_VERSION", None) == 1
    )


def _facts(cls: type, event_class: type) -> _Facts | None:
    """The topic, the names ``__init__`` takes, whether it is given the id, and whether the
    event's ``apply`` is the library's (which does nothing); None where anything differs
    from what the library's ``_create`` and ``mutate`` were written for."""
    facts: _Facts | None = None
    topic = get_topic(cls)
    init = getattr(cls, "__init__", None)
    if (
        # What ``_fits`` asked of the class it was installed on, asked of this one (a
        # subclass inherits the cheaper ``_create``, not the reasons it was given).
        not getattr(cls, "TOPIC", None)
        and getattr(cls, "__base_init__", None) is _LIBRARY_BASE_INIT
        and getattr(cls, "INITIAL_VERSION", None) == 1
        and getattr(event_class, "mutate", None) is _LIBRARY_MUTATE
        and getattr(event_class, "_as_dict", None) is _LIBRARY_AS_DICT
        and getattr(event_class, "create_timestamp", None) is _LIBRARY_TIMESTAMP
        and resolve_topic(topic) is cls
        and inspect.isfunction(init)
    ):
        names = frozenset(inspect.signature(init).parameters)
        facts = (
            topic,
            names,
            cls in eventsourcing.domain._init_mentions_id,
            getattr(event_class, "apply", None) is _LIBRARY_APPLY,
            _copied(event_class, names),
        )
    _FACTS[(cls, event_class)] = facts
    return facts


def _copied(event_class: type, init_names: frozenset[str]) -> _Copied | None:
    """For an event class given its ``__init__`` by ``frozen_inits`` (which writes its
    fields into the new event's ``__dict__``, in their order, and nothing else) whose
    ``__post_init__`` is the library's check (which writes nothing): its ``__init__``, the
    fields the aggregate's ``__init__`` does not take, and how many fields it takes. Then the
    aggregate's keywords are the event's ``__dict__`` copied in C, those fields deleted: the
    library's comprehension over every field, in the same order. None for any other class."""
    init = event_class.__dict__.get("__init__")
    if (
        event_class not in frozen_inits.ORIGINALS
        or init is frozen_inits.ORIGINALS[event_class]
        or getattr(event_class, "__post_init__", None) is not DomainEvent.__post_init__
    ):
        return None
    names = [f.name for f in dataclasses.fields(event_class)]
    dropped = tuple(name for name in names if name not in init_names)
    return init, dropped, len(names) - len(dropped)


def _create(cls: Any, /, event_class: Any, *, id: Any = None, **kwargs: Any) -> Any:
    """eventsourcing 9.5.6's ``BaseAggregate._create`` and its event's
    ``CanInitAggregate.mutate``, step for step, with what they look up on every call looked
    up once (``_facts``). The same event, the same aggregate, the same errors."""
    key = (cls, event_class)
    facts = _FACTS[key] if key in _FACTS else _facts(cls, event_class)
    if facts is None or id is None:
        # Not written for here, or an id the class derives itself: the library's own way.
        return LIBRARY_CREATE(cls, event_class, id=id, **kwargs)
    topic, init_names, mentions_id, plain_apply, copied = facts
    if not isinstance(id, UUID | str):
        msg = f"Given id was not a UUID or str: {id!r}"
        raise TypeError(msg)
    # ``kwargs`` is this call's own dict already (the library copies its own).
    kwargs["originator_topic"] = topic
    kwargs["originator_id"] = id
    kwargs["originator_version"] = 1
    if "timestamp" not in kwargs or kwargs["timestamp"] is None:
        # ``datetime.now(tz=TZINFO)``, the time zone by position (``_trigger_event`` too).
        kwargs["timestamp"] = datetime.now(eventsourcing.domain.TZINFO)
    try:
        created_event = event_class(**kwargs)
    except TypeError as e:
        msg = f"Unable to construct '{event_class.__qualname__}' event: {e}"
        raise TypeError(msg) from e
    # CanInitAggregate.mutate(None): the topic resolves to ``cls`` (``_facts``).
    agg = cls.__new__(cls)
    state = created_event.__dict__
    # The library's __base_init__, its attributes in its order.
    agg._id = state["originator_id"]
    agg._version = state["originator_version"]
    agg._created_on = state["timestamp"]
    agg._modified_on = state["timestamp"]
    agg._pending_events = []
    if copied is not None and event_class.__init__ is copied[0]:
        # The comprehension below, in C (``_copied``): the same keys in the same order.
        init_kwargs = state.copy()
        for name in copied[1]:
            del init_kwargs[name]
        if len(init_kwargs) != copied[2]:  # never, for such a class: the library's way then
            init_kwargs = {k: v for k, v in state.items() if k in init_names}
    else:
        init_kwargs = {k: v for k, v in state.items() if k in init_names}
    if mentions_id:
        init_kwargs["id"] = state["originator_id"]
    agg.__init__(**init_kwargs)
    if not plain_apply:
        created_event.apply(agg)
    agg._pending_events.append(created_event)
    return agg
