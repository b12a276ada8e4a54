"""Cheap deep copies of aggregates, whose state is JSON-like: dicts, lists and plain values.

The store deep-copies aggregates often (a cached snapshot becomes a private, mutable copy).
``copy.deepcopy`` pays for generality on every nested value; ``copy_state`` copies dicts and
lists itself, shares values that cannot change in place, and hands anything else to
``copy.deepcopy`` with the same memo, so it is never less thorough than ``deepcopy``.
"""

from __future__ import annotations

import copy
import weakref
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Any, Self
from uuid import UUID

# Exact types whose values cannot be changed in place: a copy may share them.
_IMMUTABLE: frozenset[type] = frozenset(
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
        if kind is dict:
            copied = {}
            _remember(value, copied, memo)
            for key, item in value.items():
                if type(key) not in _IMMUTABLE:
                    key = copy_state(key, memo)
                copied[key] = item if type(item) in _IMMUTABLE else copy_state(item, memo)
        else:
            copied = []
            _remember(value, copied, memo)
            for item in value:
                copied.append(item if type(item) in _IMMUTABLE else copy_state(item, memo))
        return copied
    if kind is tuple and all(type(item) in _IMMUTABLE for item in value):
        return value
    if isinstance(value, Enum):  # Enum.__deepcopy__ returns the member itself
        return value
    return copy.deepcopy(value, memo)


def _remember(original: Any, copied: Any, memo: dict[int, Any]) -> None:
    """Record the copy as ``copy.deepcopy`` does, keeping the original alive while the memo
    lives so that its id cannot be reused by another object."""
    memo[id(original)] = copied
    memo.setdefault(id(memo), []).append(original)


#: Aggregates that have become shared snapshots (see ``freeze``), by id(). Kept outside
#: their state, so that equality, repr and copies of them are as before; an entry goes
#: with its object.
_FROZEN: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


class SharedSnapshotError(Exception):
    """A command was given to an aggregate that is a shared snapshot (read-only)."""


class CheapDeepCopy:
    """Mixin for aggregates: ``copy.deepcopy`` copies the instance state with ``copy_state``,
    and an aggregate handed over as a shared snapshot refuses commands.

    It adds no state and no events; an aggregate's events and stored form are unchanged.
    """

    def freeze(self) -> None:
        """From now on this object is shared read-only state: a command raises
        SharedSnapshotError (a deep copy is a private, changeable aggregate again)."""
        _FROZEN[id(self)] = self

    def trigger_event(self, *args: Any, **kwargs: Any) -> None:
        # Every command changes an aggregate through here (the library's event machinery).
        if _FROZEN.get(id(self)) is self:
            raise SharedSnapshotError(f"{type(self).__name__} {self.__dict__.get('_id')}")
        super().trigger_event(*args, **kwargs)  # type: ignore[misc]

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        cls = type(self)
        copied = cls.__new__(cls)
        memo[id(self)] = copied
        state = copied.__dict__
        for name, value in self.__dict__.items():
            state[name] = value if type(value) in _IMMUTABLE else copy_state(value, memo)
        return copied
