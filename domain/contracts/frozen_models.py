"""The arguments and preview models this process froze, remembered by contract digest.

Freezing a proposal validates its arguments and preview and stores their JSON dumps, over
which the proposal's contract digest is computed. Approving it validates those stored dumps
again (``decode_arguments``, and the preview for the success sentence), about 34,000
instructions of a cycle's 1,830,000 (the arguments 20,600, the preview 13,200). The check
before executing recomputes the digest from the stored values; when it equals the proposal's
digest and this process froze models under that digest, the stored values are, as canonical
JSON, the dump of those models (SHA-256), and validating them again would build models equal
to the ones remembered. The approval takes those instead.

Validation is a function of the canonical JSON alone only for a model that says nothing of
its own about it: a class is remembered only if pydantic validates and dumps it with no
function of the model's (no ``field_validator``, ``model_validator``, serializer or computed
field anywhere in its core schema, and neither ``model_validate`` nor ``model_dump``
overridden), and once its first dump validated back to an equal model; an instance only if
every value in it is a plain one (text, a whole number, a finite float, a flag, an id, a
time, a decimal, an enum member, containers of them, nested models of the same kind), so no
NaN (which equals nothing) and no object pydantic would have to be asked about. Anything
else is never remembered and is validated at approval as before.

A remembered model is the caller's own: frozen models of immutable values are handed out as
they are; one holding a list, dict or set is copied on the way out (the containers, and the
models that hold them), so a caller that changes it does not change the one remembered.

This is plain computation, with no I/O and nothing to configure or replace: a memory of a
pure function (validating canonical JSON into a contract's model), beside the contracts and
the digest it rests on, rather than a port to infrastructure. It is bounded
(``CAPACITY`` digests, the oldest forgotten first) and shared by the process's threads: a
look-up is one dict read; remembering takes a lock.
"""

from __future__ import annotations

import math
import threading
from datetime import date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import Any, TypeVar
from uuid import UUID

from countersign.domain.contracts.model_calls import dumped_as_own, validated_as_own
from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)

#: Digests remembered at once: a proposal is usually approved long before this many newer
#: ones are frozen in the same process; a miss only costs the validation it would have saved.
CAPACITY = 512

_LEAVES: frozenset[type] = frozenset({str, int, bool, type(None), UUID, datetime, date, time})
_FUNCTIONS = frozenset({"function-before", "function-after", "function-wrap", "function-plain"})

# What an instance holds, as ``_held`` judges it.
_REFUSED, _IMMUTABLE, _MUTABLE = 0, 1, 2


def _schema_has_functions(schema: Any) -> bool:
    """Whether a core schema calls any function of the model's when it validates or
    dumps (validators, serializers) or adds computed fields."""
    if isinstance(schema, dict):
        kind = schema.get("type")  # a field may be named "type" too
        if (isinstance(kind, str) and kind in _FUNCTIONS) or schema.get("computed_fields"):
            return True
        return any(_schema_has_functions(value) for value in schema.values())
    if isinstance(schema, list | tuple):
        return any(_schema_has_functions(value) for value in schema)
    return False


def _held(value: Any) -> int:
    """``_IMMUTABLE`` or ``_MUTABLE`` (a list, dict or set somewhere in it) for a value made
    of plain values alone, ``_REFUSED`` for anything else."""
    kind = type(value)
    if kind in _LEAVES or isinstance(value, Enum):
        return _IMMUTABLE
    if kind is float:
        return _IMMUTABLE if math.isfinite(value) else _REFUSED
    if kind is Decimal:
        return _IMMUTABLE if value.is_finite() else _REFUSED
    if kind is tuple or kind is frozenset:
        found = _IMMUTABLE
    elif kind is list or kind is set:
        found = _MUTABLE
    elif kind is dict:
        if any(type(key) is not str for key in value):
            return _REFUSED
        value = value.values()
        found = _MUTABLE
    elif isinstance(value, BaseModel):
        if value.__pydantic_extra__ or value.__pydantic_private__:
            return _REFUSED
        found = _IMMUTABLE if kind.model_config.get("frozen") else _MUTABLE
        value = value.__dict__.values()
    else:
        return _REFUSED
    return _held_in(value, found)


def _held_in(items: Any, found: int) -> int:
    """``_held`` of a container of ``items``, ``found`` on its own."""
    for item in items:
        held = _held(item)
        if held == _REFUSED:
            return _REFUSED
        if held == _MUTABLE:
            found = _MUTABLE
    return found


def _copy(value: Any) -> Any:
    """A copy of a value ``_held`` found ``_MUTABLE``: every list, dict, set and model new,
    immutable values shared."""
    kind = type(value)
    if kind is list:
        return [_copy(item) for item in value]
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is set:
        return set(value)
    if kind is tuple:
        return tuple(_copy(item) for item in value)
    if isinstance(value, BaseModel):
        copy = object.__new__(kind)
        fields = {name: _copy(item) for name, item in value.__dict__.items()}
        object.__setattr__(copy, "__dict__", fields)
        object.__setattr__(copy, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
        object.__setattr__(copy, "__pydantic_extra__", None)
        object.__setattr__(copy, "__pydantic_private__", None)
        return copy
    return value


class FrozenModels:
    """The models frozen under each contract digest (``FROZEN_MODELS``, the process's)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        # digest -> (arguments, whether to copy them, preview, whether to copy it)
        self._models: dict[str, tuple[BaseModel, bool, BaseModel, bool]] = {}
        self._round_trips: dict[type[BaseModel], bool] = {}
        self._lock = threading.Lock()

    def remember(
        self,
        digest: str,
        arguments: BaseModel,
        stored_arguments: Any,
        preview: BaseModel,
        stored_preview: Any,
    ) -> None:
        """Remember the models ``arguments`` and ``preview`` frozen as ``stored_arguments``
        and ``stored_preview`` (their dumps) under their contract ``digest``, if both may be
        (see the module's docstring); else nothing."""
        held_arguments = _held(arguments)
        held_preview = _held(preview)
        if held_arguments == _REFUSED or held_preview == _REFUSED:
            return
        if not (
            self._round_trips_of(arguments, stored_arguments)
            and self._round_trips_of(preview, stored_preview)
        ):
            return
        remembered = (arguments, held_arguments == _MUTABLE, preview, held_preview == _MUTABLE)
        with self._lock:
            models = self._models
            models.pop(digest, None)
            while len(models) >= self._capacity:
                del models[next(iter(models))]
            models[digest] = remembered

    def arguments(self, digest: str, model: type[ModelT]) -> ModelT | None:
        """The caller's own arguments remembered under ``digest``, if they are a ``model``;
        None otherwise. ``digest`` must be the one just computed from the stored values."""
        found = self._models.get(digest)
        if found is None or type(found[0]) is not model:
            return None
        arguments: ModelT = _copy(found[0]) if found[1] else found[0]
        return arguments

    def preview(self, digest: str, model: type[ModelT]) -> ModelT | None:
        """The caller's own preview remembered under ``digest``, if it is a ``model``; None
        otherwise. ``digest`` must be the one just computed from the stored values."""
        found = self._models.get(digest)
        if found is None or type(found[2]) is not model:
            return None
        preview: ModelT = _copy(found[2]) if found[3] else found[2]
        return preview

    def _round_trips_of(self, instance: BaseModel, stored: Any) -> bool:
        """Whether ``instance``'s class may be remembered: judged once, on its first
        instance, by its core schema and by validating that instance's dump back."""
        model = type(instance)
        known = self._round_trips.get(model)
        if known is None:
            known = (
                validated_as_own(model)
                and dumped_as_own(model)
                and not _schema_has_functions(model.__pydantic_core_schema__)
                and model.model_validate(stored) == instance
            )
            self._round_trips[model] = known
        return known


FROZEN_MODELS = FrozenModels()
"""The process's memory of frozen models, shared by freezing and approval."""
