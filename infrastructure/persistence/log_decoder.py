"""Stored events decoded for projections: the mapper's result, at a fraction of its cost.

A rebuild decodes every event of the log once; with the library's JSON transcoder that is a
Python call for every JSON object in it (a Proposed event carries the whole frozen contract),
and it was a third of a rebuild's time. ``ProjectionDecoder`` parses with orjson and then
turns transcoded objects back into their types exactly as the transcoder's object hook does
(innermost first; an object of exactly ``_type_`` and ``_data_`` is decoded by the named
transcoding), and builds the same domain event class the same way the library's mapper does.

Anything unusual goes through the application's own mapper, so its guards and errors apply
unchanged: an encrypted or compressed store, a stored class version other than the current
one (upcasting, or an event from a newer countersign), a payload that orjson refuses or
reads otherwise (NaN, integers past 64 bits, bad UTF-8), a topic outside the domain, an
unknown transcoding.
``tests/test_projection_events.py`` checks the two decoders agree on every event type.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from types import GetSetDescriptorType
from typing import Any
from uuid import UUID, SafeUUID

import orjson
from countersign.infrastructure.persistence import stored_keys
from countersign.infrastructure.persistence.recorders import LogEntry
from countersign.infrastructure.persistence.stored_events import (
    is_domain_class,
    topic_allowed,
)
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from eventsourcing.persistence import (
    DatetimeAsISO,
    JSONTranscoder,
    Mapper,
    Notification,
    Transcoding,
    UUIDAsHex,
)
from eventsourcing.utils import resolve_topic

_SCALARS = frozenset({str, int, float, bool, type(None)})
_MISSING: Any = object()
#: Every digit becomes "0" and everything else a space: a run of 19 digits may be an integer
#: that orjson cannot hold. Two C passes; a regular expression took 3 us an event.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_NINETEEN_DIGITS = b"0" * 19
#: How many aggregates' ids ``ProjectionDecoder`` remembers (a batch holds at most 1,000).
_IDS_MAX = 2048
#: The transcoders that read exactly as the library's ``JSONTranscoder`` (the application's
#: ``FastJSONTranscoder`` writes with orjson and reads with the library's own ``decode``):
#: their events are decoded here; any other transcoder's by the mapper.
_READS_AS_LIBRARY = frozenset({JSONTranscoder, FastJSONTranscoder})


#: A UUID made without its ``__init__``, as ``uuid.UUID`` sets its immutable slots (it calls
#: ``object.__setattr__``; these are the slots' own setters, a third cheaper). The member
#: ``SafeUUID.unknown`` is read once: an enum member read from its class is a Python call
#: (``enum.property.__get__``), about 2,800 instructions.
_new_object = object.__new__
_set_uuid_int = UUID.__dict__["int"].__set__
_set_uuid_is_safe = UUID.__dict__["is_safe"].__set__
_UNKNOWN_SAFETY = SafeUUID.unknown


def _uuid_of(value: Any) -> UUID:
    """A UUID from the 32 hex digits SQLite stores (uuid.UUID's own way of setting its
    immutable slots, without its parsing of the many other forms it accepts)."""
    # uuid.UUID drops dashes before it reads the digits ("-" + 31 digits is refused there,
    # not read as a negative number); anything else int() takes, UUID() takes alike.
    if type(value) is str and len(value) == 32 and "-" not in value:
        number = int(value, 16)
        uuid = _new_object(UUID)
        _set_uuid_int(uuid, number)
        _set_uuid_is_safe(uuid, _UNKNOWN_SAFETY)
        return uuid
    return UUID(str(value))


class _UseMapper(Exception):
    """This event is decoded by the application's mapper instead."""


#: A UUID's string as stored -> the one UUID object handed out for it lately; emptied when full.
_UUIDS: dict[str, UUID] = {}


def _uuid_from_hex(data: Any) -> UUID:
    """``UUIDAsHex.decode``: a UUID from its string; anything else is the mapper's to refuse.

    The same id read lately gives the same object (an organization's, a resource's): building
    it again costs more than the lookup, and projections find its text by the object's
    identity (``projections.base.id_text``)."""
    if type(data) is not str:
        raise _UseMapper
    found = _UUIDS.get(data)
    if found is None:
        found = _uuid_of(data)
        if len(_UUIDS) >= _IDS_MAX:
            _UUIDS.clear()
        _UUIDS[data] = found
    return found


#: What the library's datetime and UUID transcodings decode a string to, without their method
#: call (datetime.fromisoformat refuses anything but a string, as their assertion does).
_FAST_DECODE: dict[type[Transcoding], Callable[[Any], Any]] = {
    DatetimeAsISO: datetime.fromisoformat,
    UUIDAsHex: _uuid_from_hex,
}


def _revive(value: Any, names: dict[str, Transcoding]) -> Any:
    """What the JSON transcoder's object hook makes of a parsed value."""
    kind = type(value)
    if kind is dict:
        revived = {k: v if type(v) in _SCALARS else _revive(v, names) for k, v in value.items()}
        if len(revived) == 2 and "_type_" in revived and "_data_" in revived:
            transcoding = names.get(revived["_type_"])
            if transcoding is None:
                raise _UseMapper  # the mapper raises its own error for it
            return transcoding.decode(revived["_data_"])
        return revived
    if kind is list:
        return [v if type(v) in _SCALARS else _revive(v, names) for v in value]
    return value


class ProjectionDecoder:
    """Notifications to domain events, as ``mapper.to_domain_event`` makes them."""

    def __init__(self, mapper: Mapper[UUID]) -> None:
        self.mapper = mapper
        transcoder = mapper.transcoder
        fast = (
            type(transcoder) in _READS_AS_LIBRARY
            and mapper.cipher is None
            and mapper.compressor is None
        )
        self._names: dict[str, Transcoding] = transcoder.names if fast else {}  # type: ignore[attr-defined]
        self._fast = fast
        #: transcoding name -> its decode, or for the library's own datetime and UUID
        #: transcodings what their decode returns for a string, without its method call
        #: (and, for a UUID, its parsing of forms a stored one never takes)
        self._decoders: dict[str, Callable[[Any], Any]] = {
            name: _FAST_DECODE.get(type(transcoding), transcoding.decode)
            for name, transcoding in self._names.items()
        }
        #: topic -> how to decode it fast, or None: decode with the mapper
        self._kinds: dict[str, _Kind | None] = {}
        #: originator id as stored (or its int, from PostgreSQL) -> the one UUID handed out
        #: for it; emptied when full
        self._ids: dict[str | int, UUID] = {}

    def decode(self, entry: LogEntry | Notification) -> Any:  # noqa: C901 - one frame
        """The domain event of a log entry (or a library notification).

        It runs once for every event of a rebuild, so its fast path is written out here, in
        one frame (and runners call this method, not the instance: no ``__call__`` slot).
        Anything the fast path does not take (``_UseMapper``, or any error of its own) goes
        to the mapper, which decides and reports it."""
        topic = entry.topic
        try:
            kind = self._kinds[topic]
        except KeyError:
            kind = self._kinds[topic] = self._kind(topic)
        if kind is not None:
            try:
                stored = entry.state
                # orjson reads integers past 64 bits as floats (json does not); an escape
                # could hide a "_type_" key from the count below. Either way: the long path.
                # (One-byte searches are several times faster than two-byte ones: backslash
                # first. Searched with ``partition``, whose middle is what it looked for or
                # empty: it takes its one argument as it is, where ``find`` parses a tuple
                # of them, about 500 instructions a call; bytes' ``in`` first tries its
                # operand as an integer, and raises and clears a formatted TypeError, 1,800.)
                if stored.translate(_DIGITS_ONLY).partition(_NINETEEN_DIGITS)[1] or (
                    stored.partition(b"\\")[1] and stored.find(b"\\u") != -1
                ):
                    raise _UseMapper
                state = orjson.loads(stored)
                if type(state) is not dict or (len(state) == 2 and "_type_" in state):
                    raise _UseMapper  # not an object, or one the transcoder turns into a value
                # The common case, cheaply: every transcoded object sits at the top level (a
                # timestamp, say) and nothing below needs reviving. Each has the key "_type_",
                # which the encoder writes as those very bytes, so counting them tells whether
                # the fields that held one last time hold them all.
                expected = stored.count(b'"_type_"')
                if expected:
                    # Subscripts, not ``get``: a field or key that is not there, or a
                    # transcoding nobody registered, raises, and the mapper decides.
                    decoders = self._decoders
                    for key in kind.transcoded:
                        value = state[key]
                        if type(value) is dict:
                            data = value["_data_"]
                            if len(value) != 2 or type(data) not in _SCALARS:
                                break
                            state[key] = decoders[value["_type_"]](data)
                            expected -= 1
                    if expected:
                        state = self._walk(stored, kind)
                # Upcast, or refuse a newer version: the mapper's job. But an event stored
                # without a seal, as its version before seals was (proposal_events.py), reads
                # as its one upcaster leaves it (its class's ``seal``, None).
                written = state.pop("class_version", 1)
                if written != kind.class_version and (written != kind.unsealed or "seal" in state):
                    raise _UseMapper
                # The aggregate's one UUID, looked up here for SQLite's strings (a method call
                # an event costs more than the lookup); PostgreSQL's UUIDs and any id not seen
                # lately take the method.
                stored_id = entry.originator_id
                originator_id = self._ids.get(stored_id) if type(stored_id) is str else None
                if originator_id is None:
                    originator_id = self._originator_id(stored_id)
                state["originator_id"] = originator_id
                version = entry.originator_version
                if type(version) is not int or version < 1:
                    raise _UseMapper  # no key (stored_keys.py): refused below
                state["originator_version"] = version
                event: Any = _new_object(kind.cls)
                kind.set_dict(event, state)
                return event
            except Exception:  # noqa: S110 - the mapper decides, and reports, any oddity
                pass
        return self.mapper.to_domain_event(_notification(entry))

    __call__ = decode

    def _originator_id(self, stored: UUID | str) -> UUID:
        """One UUID object for all the events of an aggregate read lately: an aggregate's
        events follow each other in the log, so this saves building the UUID again (0.7 us)
        and lets ``projections.base.aggregate_id`` find its text by the object's identity."""
        key: str | int = stored.int if isinstance(stored, UUID) else stored
        found = self._ids.get(key)
        if found is None:
            found = stored if type(stored) is UUID else _uuid_of(stored)
            if len(self._ids) >= _IDS_MAX:
                self._ids.clear()
            self._ids[key] = found
        return found

    def _walk(self, stored: bytes, kind: _Kind) -> dict[str, Any]:
        """The whole walk, on a fresh parse; it also learns which top-level fields of this
        event type hold transcoded objects, for the fast path next time."""
        parsed: dict[str, Any] = orjson.loads(stored)
        names = self._names
        wrapped = [
            key
            for key, value in parsed.items()
            if type(value) is dict and len(value) == 2 and "_type_" in value
        ]
        kind.transcoded = tuple(dict.fromkeys((*kind.transcoded, *wrapped)))
        return {k: v if type(v) in _SCALARS else _revive(v, names) for k, v in parsed.items()}

    def _kind(self, topic: str) -> _Kind | None:
        if not self._fast or not topic_allowed(topic):
            return None
        try:
            cls = resolve_topic(topic)
        except Exception:
            return None  # the mapper reports it, with its own error
        if not is_domain_class(cls):
            return None
        set_dict = _dict_setter(cls)
        if set_dict is None:
            return None
        kind = _Kind(cls, getattr(cls, "class_version", 1), set_dict)
        kind.unsealed = getattr(cls, "unsealed_version", None)
        return kind


def _dict_setter(cls: type) -> Callable[[Any, dict[str, Any]], None] | None:
    """What ``object.__setattr__(event, "__dict__", state)`` runs for an instance of ``cls``
    (the ``__dict__`` descriptor the class's MRO gives it), bound: called directly it skips
    ``object.__setattr__``'s own checks and walk of the MRO, about 600 instructions an
    event. None when the class's ``__dict__`` is anything else (slots, a property): the
    mapper decodes those."""
    for klass in cls.__mro__:
        if "__dict__" in klass.__dict__:
            descriptor = klass.__dict__["__dict__"]
            if type(descriptor) is not GetSetDescriptorType:
                return None
            return descriptor.__set__
    return None


class _Kind:
    """One event class, its current class version (and the one it is stored at unsealed),
    how its instances' ``__dict__`` is set and where its transcoded fields were."""

    __slots__ = ("class_version", "cls", "set_dict", "transcoded", "unsealed")

    def __init__(
        self, cls: type, class_version: int, set_dict: Callable[[Any, dict[str, Any]], None]
    ) -> None:
        self.cls = cls
        self.class_version = class_version
        self.set_dict = set_dict
        self.transcoded: tuple[str, ...] = ()
        #: The version an event that may carry a seal is stored at without one, else None.
        self.unsealed: int | None = None


def _notification(entry: LogEntry | Notification) -> Notification:
    """The library's notification for a log entry (its originator id as a UUID)."""
    if isinstance(entry, Notification):
        stored_keys.version(entry.originator_version, entry.id)
        return entry
    # A key a writer made no key (stored_keys.py) stops the projection at this event, as any
    # event that does not decode: named with its position, skippable.
    return Notification(
        id=entry.id,
        originator_id=stored_keys.stream_id(entry.originator_id, entry.id),
        originator_version=stored_keys.version(entry.originator_version, entry.id),
        topic=entry.topic,
        state=entry.state,
    )
