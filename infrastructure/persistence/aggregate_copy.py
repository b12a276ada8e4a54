"""Cheap deep copies of aggregates, whose state is JSON-like, and frozen shared snapshots.

The store deep-copies aggregates often (a cached snapshot becomes a private, mutable copy).
``copy.deepcopy`` pays for generality on every nested value; ``copy_state`` copies dicts and
lists itself, shares values that cannot change in place, and hands anything else to
``copy.deepcopy`` with the same memo, so it is never less thorough than ``deepcopy``.

An aggregate the store keeps as a shared snapshot is frozen: a command given to it raises
instead of changing what every other reader sees. The aggregate classes know nothing of
either: the store copies with ``copy_aggregate`` and freezes with ``freeze``.
"""

from __future__ import annotations

import copy
import functools
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Any, TypeVar
from uuid import UUID

import eventsourcing.domain
from eventsourcing.domain import (
    Aggregate,
    BaseAggregate,
    CanCreateTimestamp,
    CanMutateAggregate,
    OriginatorIDError,
    OriginatorVersionError,
)

# Exact types whose values cannot be changed in place: a copy may share them. Enum classes
# join it as copies meet them (``_shares``): ``copy.deepcopy`` returns a member itself.
_IMMUTABLE: set[type] = set(
    {
        str,
        int,
        float,
        bool,
        complex,
        bytes,
        type(None),
        UUID,
        datetime,
        date,
        time,
        timedelta,
        timezone,
        Decimal,
    }
)

_MISSING = object()

A = TypeVar("A", bound=Aggregate)


def copy_state(value: Any, memo: dict[int, Any]) -> Any:
    """A deep copy of ``value``, like ``copy.deepcopy(value, memo)``: shared sub-objects stay
    shared in the copy, and no mutable object is shared with the original."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    # Items are tested inline so that plain values cost no call.
    if kind is dict or kind is list:
        copied = memo.get(id(value), _MISSING)
        if copied is not _MISSING:
            return copied
        # Recorded as copy.deepcopy records it, without its list that keeps each original
        # alive while the memo lives: every original here is held by the aggregate being
        # copied, which outlives the copy, so no id in the memo can be reused meanwhile
        # (``copy.deepcopy``, given the memo, keeps what it makes itself alive as ever).
        if kind is dict:
            copied = {}
            memo[id(value)] = copied
            for key, item in value.items():
                if type(key) not in _IMMUTABLE:
                    key = copy_state(key, memo)
                copied[key] = item if type(item) in _IMMUTABLE else copy_state(item, memo)
        else:
            copied = []
            memo[id(value)] = copied
            for item in value:
                copied.append(item if type(item) in _IMMUTABLE else copy_state(item, memo))
        return copied
    if kind is tuple:
        # A loop, not all() over a generator: most tuples are empty or a few strings.
        for item in value:
            if type(item) not in _IMMUTABLE:
                return copy.deepcopy(value, memo)
        return value
    if isinstance(value, Enum):  # Enum.__deepcopy__ returns the member itself
        _IMMUTABLE.add(kind)  # its other members, and it again, are shared without this test
        return value
    return copy.deepcopy(value, memo)


class _FrozenMark(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to a frozen aggregate that knows its own key in ``_FROZEN`` (the
    aggregate's id()), so that its callback needs no ``functools.partial`` made for each
    freeze: weakref's own ``__new__`` and ``__init__`` (C), the key set after."""

    __slots__ = ("key",)
    key: int


#: Aggregates that have become shared snapshots (see ``freeze``): id() -> a weak reference
#: to the object. Kept outside their state, so that equality, repr and copies of them are as
#: before; an entry goes with its object (the reference's callback). A plain dict of
#: references, not a WeakValueDictionary: every read and every command looks here, and the
#: dict's own get and the reference's call are C, where WeakValueDictionary's are Python.
_FROZEN: dict[int, weakref.ref[Any]] = {}


#: Held while an entry is added or removed. Re-entrant: the collector may run a reference's
#: callback in this thread while it holds the lock.
_FROZEN_WRITES = threading.RLock()


def _forget(reference: _FrozenMark) -> None:
    # Only this object's entry: another object may have been frozen under the same id()
    # after this one died and before the collector ran the callback. (The lock's own
    # methods, not ``with``: every frozen object that dies comes here, three a cycle.)
    key = reference.key
    _FROZEN_WRITES.acquire()
    try:
        if _FROZEN.get(key) is reference:
            del _FROZEN[key]
    finally:
        _FROZEN_WRITES.release()


#: Aggregate classes whose commands check ``_FROZEN`` first (see ``_guard``).
_GUARDED: set[type] = set()
_GUARDING = threading.Lock()


class SharedSnapshotError(Exception):
    """A command was given to an aggregate that is a shared snapshot (read-only)."""


def copy_aggregate(aggregate: A) -> A:
    """A private, changeable deep copy of an aggregate, as ``copy.deepcopy`` would make it,
    with its state copied by ``copy_state``. It adds no state and no events."""
    cls = type(aggregate)
    copied = cls.__new__(cls)
    memo: dict[int, Any] = {id(aggregate): copied}
    state = copied.__dict__
    for name, value in aggregate.__dict__.items():
        kind = type(value)
        # An empty tuple (a proposal has several) is shared as ``copy_state`` would share
        # it, without the call.
        if kind in _IMMUTABLE or (kind is tuple and not value):
            state[name] = value
        else:
            state[name] = copy_state(value, memo)
    return copied


def freeze(aggregate: Aggregate) -> None:
    """From now on this object is shared read-only state: a command raises
    SharedSnapshotError (a copy is a private, changeable aggregate again)."""
    key = id(aggregate)
    reference = _FROZEN.get(key)
    if reference is not None and reference() is aggregate:
        return  # most reads are of snapshots frozen already: a lookup, not a new weak ref
    if type(aggregate) not in _GUARDED:
        _guard(type(aggregate))
    frozen = _FrozenMark(aggregate, _forget)
    frozen.key = key
    # The lock's own methods, not ``with`` (two special methods looked up): four a cycle.
    _FROZEN_WRITES.acquire()
    try:
        _FROZEN[key] = frozen
    finally:
        _FROZEN_WRITES.release()


#: ``sys.getrefcount`` of a snapshot in ``taken_or_copied`` held by the caller's variable,
#: the parameter and the count's own argument alone; and with the cache and preloaded reads.
_HELD_BY_US = 3
_HELD_BY_CACHE_AND_US = 5


def _counted(value: object) -> int:
    """``taken_or_copied``'s count, in its shape: a caller's variable, a parameter, the
    count's own argument."""
    return sys.getrefcount(value)


def _counts_every_holder() -> bool:
    """Whether this interpreter counts references as ``taken_or_copied`` relies on: CPython
    with its GIL, before 3.14 (whose interpreter may leave a reference on the stack
    uncounted, so a count could come out one short and hide a holder), and the count of an
    object held only by the probe's own variable what 3.11-3.13 give."""
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 14):
        return False
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        return False
    held = object()
    return _counted(held) == _HELD_BY_US


#: Whether the store may hand a decision a snapshot that only its cache held, rather than a
#: copy (``taken_or_copied``): it counts references, which only CPython with its GIL keeps
#: exactly (every holder of an object owns a reference to it). Anywhere else, a copy always.
TAKES = _counts_every_holder()


def taken_or_copied(
    aggregate: A, aggregate_id: UUID, drop: Callable[[UUID], None], preloaded: dict[int, Any]
) -> A:
    """For a decision to change (``EventSourcedStore.get`` in a decision, which passes its
    own variable's snapshot): the snapshot itself if nobody else holds it, else a copy.

    A copy of a pending proposal costs about 85,000 instructions, and a cycle made three
    (the proposal, the form, the slot), each of a snapshot that only the cache held and the
    decision's commit replaced a moment later. So the snapshot is taken out of the cache
    (``drop``, under the cache's lock: no thread finds it there afterwards) and out of the
    decision's ``preloaded`` reads, and then, if the only references left to it are the
    caller's and this call's, nobody else can reach it: a thread that found it before holds
    a reference. It is thawed, and is the decision's private aggregate; what the decision
    commits becomes the snapshot again (the store's ``_keep``), and what it does not commit
    is gone from the cache, so the next read queries the stored state. If anything else
    holds it (another thread or request, an earlier read of this decision), the decision
    gets a copy, as always, and the shared snapshot is never changed."""
    if sys.getrefcount(aggregate) > _HELD_BY_CACHE_AND_US:
        return copy_aggregate(aggregate)  # read elsewhere too: not worth dropping
    key = aggregate_id.int
    was_preloaded = preloaded.pop(key, None) is not None
    drop(aggregate_id)
    if sys.getrefcount(aggregate) == _HELD_BY_US:
        thaw(aggregate)
        return aggregate
    if was_preloaded:
        preloaded[key] = aggregate
    return copy_aggregate(aggregate)


def thaw(aggregate: Aggregate) -> None:
    """The reverse of ``freeze``: commands change this object again. Only for one that
    nobody else can reach any more: the store's ``get`` hands a decision the snapshot itself
    only once it is out of the cache and no other reference to it exists
    (``taken_or_copied``)."""
    key = id(aggregate)
    _FROZEN_WRITES.acquire()
    try:
        reference = _FROZEN.get(key)
        if reference is not None and reference() is aggregate:
            del _FROZEN[key]
    finally:
        _FROZEN_WRITES.release()


def _guard(cls: type[Aggregate]) -> None:
    """Make the commands of ``cls`` refuse a frozen object. Every command changes an
    aggregate through ``trigger_event`` (the library's event machinery), so that is where the
    check goes; the domain class itself stays plain."""
    with _GUARDING:
        if cls in _GUARDED:
            return
        trigger = cls.trigger_event
        if _plain_events(cls, trigger):
            # The library's trigger_event, step for step, this check first: one call.
            cls.trigger_event = _trigger_event  # type: ignore[method-assign]
            _GUARDED.add(cls)
            return

        @functools.wraps(trigger)
        def trigger_event(self: Aggregate, *args: Any, **kwargs: Any) -> None:
            reference = _FROZEN.get(id(self))
            if reference is not None and reference() is self:
                raise SharedSnapshotError(f"{type(self).__name__} {self.__dict__.get('_id')}")
            trigger(self, *args, **kwargs)

        cls.trigger_event = trigger_event  # type: ignore[method-assign,assignment]
        _GUARDED.add(cls)


# -- the library's collect_events, for a commit ------------------------------------------------

#: What a commit writes: each aggregate with the events it collected.
Pending = list[tuple[Aggregate, Sequence[Any]]]

#: eventsourcing 9.5.6's ``collect_events``, which ``collected`` does inline.
_LIBRARY_COLLECT = Aggregate.collect_events


def collected(aggregates: Sequence[Aggregate]) -> tuple[Pending, dict[int, UUID]]:
    """Each aggregate with the events it collected, and the ids of those that have any (by
    their ``int``), for ``EventSourcedStore.save``. Loops, not comprehensions (in ``save``
    too): each is a call of its own."""
    pending: Pending = []
    written: dict[int, UUID] = {}
    for aggregate in aggregates:
        if type(aggregate).collect_events is _LIBRARY_COLLECT:
            # The library's collect_events without its Python call: the pending events in
            # order, in a new list, and the aggregate's own list left empty (it pops them
            # from the front one by one into a new list).
            queued = aggregate._pending_events
            events: Sequence[Any] = queued[:]
            queued.clear()
        else:
            events = aggregate.collect_events()
        pending.append((aggregate, events))
        if events:
            aggregate_id = aggregate._id
            written[aggregate_id.int] = aggregate_id
    return pending, written


# -- the library's trigger_event, for the aggregates that use it as it is ---------------------

_LIBRARY_TRIGGER = BaseAggregate.trigger_event
_LIBRARY_MUTATE = CanMutateAggregate.mutate
_LIBRARY_TIMESTAMP = CanCreateTimestamp.create_timestamp
_LIBRARY_PROPERTIES = {
    name: BaseAggregate.__dict__[name] for name in ("id", "version", "modified_on")
}


def _plain_events(cls: type[Aggregate], trigger: Any) -> bool:
    """Whether ``cls`` triggers its events with the library's ``trigger_event`` as it is (no
    override, no explicit topics) over the library's ``id``, ``version`` and ``modified_on``:
    then ``_trigger_event`` does the same."""
    return (
        trigger is _LIBRARY_TRIGGER
        and not getattr(cls, "TOPIC", None)
        and all(getattr(cls, name) is found for name, found in _LIBRARY_PROPERTIES.items())
    )


def _trigger_event(self: Any, event_class: Any, **kwargs: Any) -> None:
    """eventsourcing 9.5.6's ``BaseAggregate.trigger_event``, and its event's ``mutate`` when
    that is the library's, step for step, with the attributes behind the ``id``, ``version``
    and ``modified_on`` properties read and written directly: each property is a Python call,
    and an event took about a dozen calls where it takes three (the event, its ``apply``,
    and the command's own method). The same event, the same state, the same errors.
    ``kwargs`` is this call's own dict already (the library copies its own). A shared
    snapshot refuses it first, as every guarded class's ``trigger_event`` does (``_guard``)."""
    reference = _FROZEN.get(id(self))
    if reference is not None and reference() is self:
        raise SharedSnapshotError(f"{type(self).__name__} {self.__dict__.get('_id')}")
    next_version = self._version + 1
    originator_id = self._id
    kwargs["originator_id"] = originator_id
    kwargs["originator_version"] = next_version
    # ``kwargs.get("timestamp") is None`` without the method's call: most commands give none.
    if "timestamp" not in kwargs or kwargs["timestamp"] is None:
        if event_class.create_timestamp is _LIBRARY_TIMESTAMP:
            # The library's ``datetime.now(tz=TZINFO)``, its time zone passed by position
            # (the same call, without a keyword for the C function to parse).
            kwargs["timestamp"] = datetime.now(eventsourcing.domain.TZINFO)
        else:
            kwargs["timestamp"] = event_class.create_timestamp()
    try:
        new_event = event_class(**kwargs)
    except TypeError as e:
        msg = f"Can't construct event {event_class}: {e}"
        raise TypeError(msg) from None
    if type(new_event).mutate is not _LIBRARY_MUTATE:
        new_event.mutate(self)
    else:
        # CanMutateAggregate.mutate, on this aggregate.
        event_id = new_event.originator_id
        if event_id is not originator_id and event_id != self._id:
            raise OriginatorIDError(event_id, self._id)
        if new_event.originator_version != self._version + 1:
            raise OriginatorVersionError(new_event.originator_version, self._version + 1)
        new_event.apply(self)
        self._version = new_event.originator_version
        self._modified_on = new_event.timestamp
    self._pending_events.append(new_event)
