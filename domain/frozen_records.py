"""A frozen dataclass's ``__init__`` without a call through ``object.__setattr__`` per field.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__(self,
name, value)`` (a plain assignment would raise): a call through the slot wrapper for every
field, about 1,000 instructions each under callgrind. The values a cycle passes around (the
caller, its membership, the scope, the reads and commits of a decision, the execution
contract, the reports) are such dataclasses, about 65 fields a cycle. ``cheaper_init(cls)``
writes the same ``__init__`` that sets the same fields, in the same order, straight into the
new instance's ``__dict__`` (what ``object.__setattr__`` does for a name with no descriptor in
the class), default factories called as the dataclass calls them, then ``__post_init__`` as
the dataclass's does. The signature (names, order, kinds, defaults) is the dataclass's own, so
the same calls succeed and fail the same way and make equal instances; they stay frozen:
assigning a field still raises ``FrozenInstanceError``.

``@direct_init`` (above ``@dataclass(frozen=True)``) gives a class this ``__init__`` when it
is defined; the persistence package gives it to the domain's events
(``infrastructure/persistence/frozen_inits.py``). Only the plainest classes get one: a frozen
dataclass without slots, with the generated ``__init__``, every field an ``__init__``
parameter, no ``InitVar`` and no descriptor under a field's name. Any other keeps its own.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

C = TypeVar("C", bound=type)

#: Each class given one by ``direct_init`` -> the dataclass's own ``__init__`` (tests compare).
ORIGINALS: dict[type, Any] = {}


def direct_init(cls: C) -> C:
    """Give the frozen dataclass ``cls`` the cheaper ``__init__`` (if it fits; else it keeps
    its own), and return it."""
    init = cheaper_init(cls)
    if init is not None:
        ORIGINALS[cls] = cls.__dict__["__init__"]
        cls.__init__ = init  # type: ignore[misc]
    return cls


def cheaper_init(
    cls: type, post_init: Callable[[type, list[str], dict[str, Any]], list[str]] | None = None
) -> Any:
    """The ``__init__`` for ``cls``, or None where it keeps its own. ``post_init``, given the
    class, its field names and the code's namespace, returns the lines that end the body in
    place of the plain ``self.__post_init__()`` call (the events' cheaper check)."""
    original = _generated_init(cls)
    if original is None:
        return None
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    signature = inspect.signature(original)
    parameters = list(signature.parameters.values())[1:]  # without self
    if not _plain_fields(cls, fields, parameters):
        return None
    factories = {f.name: f.default_factory for f in fields if f.default_factory is not _MISSING}
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    arguments = []
    for p in parameters:
        if p.kind is p.KEYWORD_ONLY and "*" not in arguments:
            arguments.append("*")
        if p.name in factories:
            namespace[f"_factory_{p.name}"] = factories[p.name]
            arguments.append(f"{p.name}=_FACTORY")
        elif p.default is p.empty:
            arguments.append(p.name)
        else:
            namespace[f"_default_{p.name}"] = p.default
            arguments.append(f"{p.name}=_default_{p.name}")
    body = []
    for name in names:
        if name in factories:
            body.append(
                f"    _state[{name!r}] = _factory_{name}() if {name} is _FACTORY else {name}"
            )
        else:
            body.append(f"    _state[{name!r}] = {name}")
    if post_init is not None:
        body += post_init(cls, names, namespace)
    elif getattr(cls, "__post_init__", None) is not None:
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


_MISSING: Any = dataclasses.MISSING


class _Factory:
    """The default of a field with a default factory (the dataclass has its own such mark)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


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
    if code.co_qualname != "__create_fn__.<locals>.__init__":
        return None  # one of these already (the dataclass's is made inside __create_fn__)
    return original


def _plain_fields(cls: type, fields: Any, parameters: list[inspect.Parameter]) -> bool:
    """Whether every field is set as given: an ``__init__`` parameter of the same name, no
    descriptor in the class (``object.__setattr__`` would call it), no ``InitVar``, and no
    name the generated code uses itself."""
    names = [f.name for f in fields]
    if sorted(p.name for p in parameters) != sorted(names):
        return False  # an InitVar, or a field left out of __init__
    if any(
        name in ("self", "_state", "_FACTORY") or name.startswith(("_default_", "_factory_"))
        for name in names
    ):
        return False
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters):
        return False
    for f in fields:
        if not f.init:
            return False
        if hasattr(type(inspect.getattr_static(cls, f.name, None)), "__set__"):
            return False
    return True
