"""The msgspec structs projections decode stored events into (log_structs.py), made from
each event class's own fields. Imported when a process makes its first ``StructDecoder``
(a projection runner's): msgspec is no import of the commands' help nor of a propose ->
approve cycle, which make no runner (client memory).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from datetime import datetime
from types import NoneType, UnionType
from typing import Any, ClassVar
from uuid import UUID

import msgspec
from eventsourcing.domain import Aggregate

#: The fields every event has that the mapper takes from the log entry, not the stored bytes.
_FROM_ENTRY = frozenset({"originator_id", "originator_version"})
#: Class attributes of the library's events, never stored.
_LIBRARY = frozenset(typing.get_type_hints(Aggregate.Created))


class _DatetimeISO(
    msgspec.Struct, tag_field="_type_", tag="datetime_iso", forbid_unknown_fields=True, gc=False
):
    """The library's ``DatetimeAsISO`` object. Its text is read by ``datetime.fromisoformat``
    as the library reads it (log_structs.py), not by msgspec, which reads some texts
    otherwise (it rounds a fraction of more than six digits, where ``fromisoformat`` cuts it)."""

    value: str = msgspec.field(name="_data_")


class _UUIDHex(
    msgspec.Struct, tag_field="_type_", tag="uuid_hex", forbid_unknown_fields=True, gc=False
):
    """The library's ``UUIDAsHex`` object; msgspec reads its digits in C (the 32 digits or
    the dashed form, as ``UUID`` reads them; any other form it refuses, and the long way
    takes the event)."""

    value: UUID = msgspec.field(name="_data_")


#: The transcoded objects' structs: a time's (whose ``value`` is its text) and an id's.
TIME, ID = _DatetimeISO, _UUIDHex
#: What msgspec reads a field of these declared types as: the transcoded object, or any text
#: (an id kept as text, as the benchmark's lifecycles keep their organization's).
_TRANSCODED: dict[Any, Any] = {datetime: _DatetimeISO | str, UUID: _UUIDHex | str}


def _field_type(hint: Any) -> tuple[Any, bool]:
    """msgspec's type for a field declared ``hint``, and whether it may hold a transcoded
    object: a time or an id (optional or not) as the transcoder writes it or as text;
    anything else as JSON reads it (``Any``), its own transcoded objects left for the count
    in ``StructDecoder.decode`` to find."""
    args = typing.get_args(hint) if isinstance(hint, UnionType) else ()
    if hint in _TRANSCODED:
        return _TRANSCODED[hint], True
    if len(args) == 2 and NoneType in args:
        (inner,) = (arg for arg in args if arg is not NoneType)
        if inner in _TRANSCODED:
            return _TRANSCODED[inner] | None, True
    return Any, False


def event_struct(cls: type) -> tuple[type, tuple[str, ...]] | None:
    """The struct msgspec decodes events of ``cls`` into, and its fields that may hold a
    transcoded object; None when the class cannot have one (not a dataclass, hints that do
    not resolve, a default msgspec cannot take, a field named as one of the struct's own,
    ``stored_version`` or ``class_version``): its events take the long way."""
    if not dataclasses.is_dataclass(cls):
        return None
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        return None
    found = _fields(cls, hints)
    if found is None:
        return None
    fields, transcoded = found
    fields.sort(key=lambda field: field[2] is not msgspec.NODEFAULT)
    fields += [(name, Any, None) for name in sorted(_FROM_ENTRY)]
    fields.append(("stored_version", int, 1))
    names = [name for name, _, _ in fields]
    if len(set(names)) < len(names) or "class_version" in names:
        return None  # a field named as one of the struct's own (msgspec would take both)
    try:
        struct = msgspec.defstruct(
            cls.__name__,
            [
                (name, kind) if default is msgspec.NODEFAULT else (name, kind, default)
                for name, kind, default in fields
            ],
            module=cls.__module__,
            rename={"stored_version": "class_version"},
            forbid_unknown_fields=True,
            gc=False,
        )
    except (TypeError, ValueError):
        return None  # a default msgspec refuses (a non-empty mutable one)
    struct.__qualname__ = cls.__qualname__
    return struct, tuple(transcoded)


def _fields(
    cls: type, hints: dict[str, Any]
) -> tuple[list[tuple[str, Any, Any]], list[str]] | None:
    """The stored fields of ``cls`` (name, msgspec's type, default or ``NODEFAULT``) and those
    that may hold a transcoded object; None for a field made by a factory, or a class-level
    value msgspec cannot take as a default."""
    fields: list[tuple[str, Any, Any]] = []
    transcoded: list[str] = []
    for field in dataclasses.fields(cls):
        if field.name in _FROM_ENTRY:
            continue
        kind, wraps = _field_type(hints.get(field.name, Any))
        if field.default is not dataclasses.MISSING:
            fields.append((field.name, kind, field.default))
        elif field.default_factory is not dataclasses.MISSING:
            return None
        else:
            fields.append((field.name, kind, msgspec.NODEFAULT))
        if wraps:
            transcoded.append(field.name)
    # A class-level value an event may also store (``seal``): the class's value unless stored.
    for name, hint in hints.items():
        if name in _LIBRARY or typing.get_origin(hint) is not ClassVar:
            continue
        default = getattr(cls, name, None)
        if default is not None and type(default) not in (str, int, bool):
            return None
        fields.append((name, Any, default))
    return fields, transcoded


def event_decoder(cls: type) -> tuple[Callable[[bytes], Any], tuple[str, ...]] | None:
    """``event_struct``'s decode of stored bytes, and its fields that may hold a transcoded
    object; None as ``event_struct``."""
    made = event_struct(cls)
    if made is None:
        return None
    return msgspec.json.Decoder(made[0]).decode, made[1]
