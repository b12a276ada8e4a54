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
every field an ``__init__`` parameter with no default factory, no ``InitVar`` and no
descriptor under a field's name. Any other class keeps its own. The aggregates' classes
themselves are untouched; ``install`` runs when the application is made, over the event
classes defined by then (a class defined later keeps the dataclass's ``__init__``).
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from typing import Any
from uuid import UUID

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
        pending = [root]
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            if cls in _SEEN or not cls.__module__.startswith(modules):
                continue
            _SEEN.add(cls)
            init = _cheaper_init(cls)
            if init is not None:
                ORIGINALS[cls] = cls.__dict__["__init__"]
                cls.__init__ = init  # type: ignore[misc]
                given += 1
    return given


def _cheaper_init(cls: type) -> Any:
    """The ``__init__`` for ``cls``, or None where it keeps its own."""
    original = _generated_init(cls)
    if original is None:
        return None
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    signature = inspect.signature(original)
    parameters = list(signature.parameters.values())[1:]  # without self
    if not _plain_fields(cls, fields, parameters):
        return None
    namespace: dict[str, Any] = {}
    arguments = []
    for p in parameters:
        if p.kind is p.KEYWORD_ONLY and "*" not in arguments:
            arguments.append("*")
        if p.default is p.empty:
            arguments.append(p.name)
        else:
            namespace[f"_default_{p.name}"] = p.default
            arguments.append(f"{p.name}=_default_{p.name}")
    body = [f"    _state[{name!r}] = {name}" for name in names]
    post_init = getattr(cls, "__post_init__", None)
    if post_init is DomainEvent.__post_init__ and "originator_id" in names:
        # The library's check, which refuses an originator_id that is no UUID: an exact one
        # passes it, so it is called only for anything else (and raises, or passes, as ever).
        namespace["_UUID"] = UUID
        body.append("    if type(originator_id) is not _UUID:\n        self.__post_init__()")
    elif post_init is not None:
        body.append("    self.__post_init__()")
    source = (
        f"def __init__(self, {', '.join(arguments)}):\n"
        "    _state = self.__dict__\n" + "\n".join(body) + "\n"
    )
    exec(source, namespace)  # noqa: S102 -- built from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = original.__doc__
    init.__annotations__ = dict(original.__annotations__)
    init.__signature__ = signature
    return init


def _generated_init(cls: type) -> Any:
    """The ``__init__`` a frozen dataclass was given (dataclasses._create_fn), or None: not
    a frozen dataclass, one with slots, or an ``__init__`` written by hand."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" in cls.__dict__:
        return None
    original: Any = cls.__dict__.get("__init__")
    code = getattr(original, "__code__", None)
    if code is None or code.co_filename != "<string>" or original.__name__ != "__init__":
        return None
    return original


def _plain_fields(cls: type, fields: Any, parameters: list[inspect.Parameter]) -> bool:
    """Whether every field is set as given: an ``__init__`` parameter of the same name, no
    default factory, no descriptor in the class (``object.__setattr__`` would call it), no
    ``InitVar``, and no name the generated code uses itself."""
    names = [f.name for f in fields]
    if sorted(p.name for p in parameters) != sorted(names):
        return False  # an InitVar, or a field left out of __init__
    if any(name in ("self", "_state") or name.startswith("_default_") for name in names):
        return False
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters):
        return False
    for f in fields:
        if not f.init or f.default_factory is not dataclasses.MISSING:
            return False
        if hasattr(type(inspect.getattr_static(cls, f.name, None)), "__set__"):
            return False
    return True
