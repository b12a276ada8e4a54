"""Cheaper ``__init__``s for the domain's events, each the same as the one it replaces.

Every domain event is a frozen dataclass (eventsourcing makes each aggregate's events so),
and a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``: a call
through the slot wrapper for every field, about 1,000 instructions each under callgrind, and
a cycle makes seven events of ten or more fields. ``install`` gives each event class found an
``__init__`` that writes the same fields, in the same order, into the new instance's
``__dict__`` (what ``object.__setattr__`` does for a name with no descriptor in the class),
then calls ``__post_init__`` as the dataclass's does. The signature (names, order, kinds,
defaults) is the dataclass's own, so the same calls succeed and fail the same way; the
instance is the same, so the stored bytes are too (their order is the ``__dict__``'s). Events
stay frozen: assigning a field still raises.

Only the plainest classes are given one: a frozen dataclass with the generated ``__init__``,
every field an ``__init__`` parameter, no ``InitVar`` and no descriptor under a field's name
(the builder is the domain's, ``domain/frozen_records.py``, which its other values use too).
Any other class keeps its own. The aggregates' classes themselves are untouched;
``install`` runs when the application is made, over the event classes defined by then (a
class defined later keeps the dataclass's ``__init__``).
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from countersign.domain.frozen_records import cheaper_init
from eventsourcing.domain import DomainEvent

#: The classes given an ``__init__`` here (and those found unfit, so each is looked at once).
_SEEN: set[type] = set()
#: Each class given one here -> the dataclass's own ``__init__`` (tests compare the two).
ORIGINALS: dict[type, Any] = {}
_INSTALLING = threading.Lock()
#: Whose event classes ``install`` looks at, by the start of their module's name.
_OURS = ("countersign.",)


def install(root: type = DomainEvent, modules: tuple[str, ...] = _OURS) -> int:
    """Give every fit frozen dataclass under ``root`` (``root`` too) defined in one of
    ``modules`` (a prefix of its module's name) the cheaper ``__init__``; how many were
    given one now. Only countersign's own: the library's classes, and those of anything else
    in the process (the benchmarks' raw eventsourcing reference), keep theirs."""
    given = 0
    with _INSTALLING:
        for cls in unseen_classes(root, modules, _SEEN):
            init = _cheaper_init(cls)
            if init is not None:
                ORIGINALS[cls] = cls.__dict__["__init__"]
                cls.__init__ = init  # type: ignore[misc]
                given += 1
    return given


def unseen_classes(root: type, modules: tuple[str, ...], seen: set[type]) -> list[type]:
    """``root`` and every class under it defined in one of ``modules`` (a prefix of its
    module's name) not in ``seen``; each is added to ``seen``, so it is looked at once."""
    found = []
    pending = [root]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls in seen or not cls.__module__.startswith(modules):
            continue
        seen.add(cls)
        found.append(cls)
    return found


def _cheaper_init(cls: type) -> Any:
    """The ``__init__`` for ``cls``, or None where it keeps its own (the domain's builder,
    ``frozen_records.cheaper_init``, with the library's check on the id made cheaper)."""
    return cheaper_init(cls, _post_init)


def _post_init(cls: type, names: list[str], namespace: dict[str, Any]) -> list[str]:
    """The end of the body: the class's ``__post_init__``, as the dataclass's calls it."""
    post_init = getattr(cls, "__post_init__", None)
    if post_init is DomainEvent.__post_init__ and "originator_id" in names:
        # The library's check, which refuses an originator_id that is no UUID: an exact one
        # passes it, so it is called only for anything else (and raises, or passes, as ever).
        namespace["_UUID"] = UUID
        return ["    if type(originator_id) is not _UUID:\n        self.__post_init__()"]
    if post_init is not None:
        return ["    self.__post_init__()"]
    return []
