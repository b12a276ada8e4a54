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
its own about it. A class is judged once, by its core schema and its first instance: it is
remembered only if every field is a plain value (text, a whole number, a flag, an id, a time,
a literal, an enum member, containers of them with string keys, frozen models of the same
kind), with no alias, no function of the model's anywhere (no ``field_validator``,
``model_validator``, serializer or computed field; neither ``model_validate`` nor
``model_dump`` overridden), the class itself frozen, and if that first instance's dump
validated back to an equal model. Floats and decimals are refused (NaN equals nothing, so a
dump of it never validates back to an equal model); so is anything the schema does not name
as one of the above. Anything else is never remembered and is validated at approval as
before.

A remembered model is the caller's own: a frozen model of immutable values (the draft's,
whose leagues are a tuple) is handed out as it is; one holding a list, set or dict is copied
on the way out (those containers, and the models that hold them; about 10,000 instructions a
model, about what validating it again costs), so a caller that changes it does not change the
one remembered.

This is plain computation, with no I/O and nothing to configure or replace: a memory of a
pure function (validating canonical JSON into a contract's model), beside the contracts and
the digest it rests on, rather than a port to infrastructure. It is bounded
(``CAPACITY`` digests, the oldest forgotten first) and shared by the process's threads: a
look-up is one dict read; remembering takes a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from countersign.domain.contracts.model_calls import dumped_as_own, validated_as_own
from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)

#: Digests remembered at once: the proposals frozen in this process since the one being
#: approved, in a club's day rarely more than a few; a miss only costs the validation it would
#: have saved. Kept small because what it holds lives on: 512 (250 alive in the count below)
#: gave back most of the gain, 1,827,532 client instructions a cycle against 1,808,668 and
#: 1,811,517 with 64 (``scripts/cycle_instructions.py --backend postgres --cycles 200``).
CAPACITY = 64

#: Core schemas of values that are immutable and equal to themselves once validated. Floats
#: and decimals are not among them (NaN equals nothing), nor any function of the model's
#: (validators: ``function-*``), nor a reference to a definition (a recursive model).
_IMMUTABLE = frozenset(
    {"str", "int", "bool", "none", "uuid", "datetime", "date", "time", "timedelta", "literal"}
)
#: Containers of such values, immutable themselves or copied on the way out.
_SHALLOW_COPIES: dict[str, Callable[[Any], Any]] = {"list": list, "set": set, "dict": dict}

_object_setattr = object.__setattr__

#: How to hand out a model of a class: ``()`` as it is (frozen, every value immutable), the
#: fields to copy (with their copier) otherwise; None: never remembered.
_Plan = tuple[tuple[str, Callable[[Any], Any]], ...] | None
_REFUSED = object()  # a field's value the memory does not know to be plain
_SHARED = object()  # a value handed out as it is


def _copier(schema: dict[str, Any], plans: dict[type[BaseModel], _Plan]) -> Any:
    """How a value of ``schema`` is handed out: ``_SHARED``, a copier, or ``_REFUSED``."""
    kind = schema.get("type")
    if "serialization" in schema:
        return _REFUSED
    if kind in _IMMUTABLE or kind == "enum":
        return _SHARED
    if kind == "default" or kind == "nullable":
        inner = _copier(schema["schema"], plans)
        if inner is _REFUSED or inner is _SHARED:
            return inner
        return lambda value: None if value is None else inner(value)
    if kind in ("tuple", "frozenset", "list", "set"):
        items = schema.get("items_schema", {"type": "any"})  # a tuple's: a list of them
        if isinstance(items, dict):
            items = [items]
        if any(_copier(item, plans) is not _SHARED for item in items):
            return _REFUSED
        return _SHALLOW_COPIES.get(kind, _SHARED)
    if kind == "dict":
        keys, values = schema.get("keys_schema", {}), schema.get("values_schema", {})
        if keys.get("type") != "str" or _copier(values, plans) is not _SHARED:
            return _REFUSED
        return dict
    if kind == "model":
        plan = _plan_of(schema["cls"], plans)
        if plan is None:
            return _REFUSED
        return _SHARED if plan == () else _copy_with(plan)
    return _REFUSED


def _plan_of(model: type[BaseModel], plans: dict[type[BaseModel], _Plan]) -> _Plan:
    """``model``'s plan, from its core schema, judged once."""
    if model in plans:
        return plans[model]
    plans[model] = None  # a model that holds itself is refused
    schema = model.__pydantic_core_schema__
    fields = schema.get("schema", {})
    plan: _Plan = None
    if (
        schema.get("type") == "model"
        and schema.get("cls") is model
        and model.model_config.get("frozen")  # else a caller could change it
        and not schema.get("root_model")
        and not schema.get("custom_init")
        and "serialization" not in schema
        and fields.get("type") == "model-fields"
        and not fields.get("computed_fields")
        and validated_as_own(model)
        and dumped_as_own(model)
    ):
        plan = _field_copies(fields["fields"], plans)
    plans[model] = plan
    return plan


def _field_copies(fields: dict[str, Any], plans: dict[type[BaseModel], _Plan]) -> _Plan:
    """The copier of each field of a model's ``fields`` (core schemas) to copy, or None if
    one holds a value the memory does not know to be plain."""
    copies = []
    for name, field in fields.items():
        copier = _copier(field["schema"], plans)
        # An alias, an exclusion or a field of its own config: refused as well.
        if copier is _REFUSED or set(field) - {"type", "schema", "metadata"}:
            return None
        if copier is not _SHARED:
            copies.append((name, copier))
    return tuple(copies)


def _copy_with(plan: tuple[tuple[str, Callable[[Any], Any]], ...]) -> Callable[[Any], Any]:
    def copy(model: Any) -> Any:
        fields = model.__dict__.copy()
        for name, copier in plan:
            fields[name] = copier(fields[name])
        copied = object.__new__(type(model))
        _object_setattr(copied, "__dict__", fields)
        _object_setattr(copied, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
        _object_setattr(copied, "__pydantic_extra__", None)
        _object_setattr(copied, "__pydantic_private__", None)
        return copied

    return copy


class FrozenModels:
    """The models frozen under each contract digest (``FROZEN_MODELS``, the process's)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        # digest -> (arguments, how to hand them out, preview, how to hand it out)
        self._models: dict[str, tuple[Any, Any, Any, Any]] = {}
        self._plans: dict[type[BaseModel], _Plan] = {}
        self._round_trips: dict[type[BaseModel], Any] = {}
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
        round_trips = self._round_trips
        hand_arguments = round_trips.get(type(arguments), _REFUSED)
        if hand_arguments is _REFUSED:
            hand_arguments = self._judged(arguments, stored_arguments)
        hand_preview = round_trips.get(type(preview), _REFUSED)
        if hand_preview is _REFUSED:
            hand_preview = self._judged(preview, stored_preview)
        if hand_arguments is None or hand_preview is None:
            return
        remembered = (arguments, hand_arguments, preview, hand_preview)
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
        arguments: ModelT = found[0] if found[1] is _SHARED else found[1](found[0])
        return arguments

    def preview(self, digest: str, model: type[ModelT]) -> ModelT | None:
        """The caller's own preview remembered under ``digest``, if it is a ``model``; None
        otherwise. ``digest`` must be the one just computed from the stored values."""
        found = self._models.get(digest)
        if found is None or type(found[2]) is not model:
            return None
        preview: ModelT = found[2] if found[3] is _SHARED else found[3](found[2])
        return preview

    def _judged(self, instance: BaseModel, stored: Any) -> Any:
        """How ``instance``'s class is handed out (``_SHARED`` or a copier), or None if it
        is never remembered: judged once, on its first instance, by its core schema and by
        validating that instance's dump back."""
        model = type(instance)
        plan = _plan_of(model, self._plans)
        hand: Any = None
        if plan is not None:
            try:
                if model.model_validate(stored) == instance:
                    hand = _SHARED if plan == () else _copy_with(plan)
            except ValidationError:
                pass
        self._round_trips[model] = hand
        return hand


FROZEN_MODELS = FrozenModels()
"""The process's memory of frozen models, shared by freezing and approval."""
