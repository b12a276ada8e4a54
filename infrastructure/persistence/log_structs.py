"""Stored events decoded for projections by msgspec, into structs that read like the events.

``ProjectionDecoder`` (log_decoder.py) parses an event with orjson and then builds the domain
event class around the parsed dict: a Python step for every transcoded value, and fields read
through the instance's dict by orjson's own key objects (the generic path, about 470
instructions a read where an interned name costs 54). ``StructDecoder`` decodes the stored
bytes with msgspec, in C, straight into a ``msgspec.Struct`` made for the event class from its
own fields (so a new operation or plug-in needs nothing here): the struct has the class's
name, every field the mapper's event would carry (stored keys it does not declare are refused,
so nothing stored is dropped), its ids parsed by msgspec in C and its times by
``datetime.fromisoformat`` as the library reads them, and its fields in slots, which the
interpreter reads by its fastest path. Projections read it as they read the event: by
attribute, and by its class's name (docs/speed.md, session 58: 16.6% of a rebuild's
instructions).

Anything else goes to ``ProjectionDecoder``, and from there, as before, to the application's
mapper, whose guards and errors apply unchanged: an event msgspec refuses (a missing field, a
stored key the class does not declare, a value of another shape, NaN, bad UTF-8), one with an
escape (which could hide a transcoded object from the count below), a transcoded object below
the top level, a stored class version other than the current one, an unknown topic.
``tests/test_projection_structs.py`` checks the decoders agree on every field a projection
reads, for every event type (and ``tests/test_plugins.py`` and ACME's tests, for plug-ins').
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from countersign.infrastructure.persistence.log_decoder import ProjectionDecoder
from countersign.infrastructure.persistence.recorders import LogEntry
from eventsourcing.persistence import Mapper, Notification

_from_iso = datetime.fromisoformat


class _Shape:
    """One event class decoded by msgspec: its struct's decoder, the fields that may hold a
    transcoded object, its current class version and the one it is stored at unsealed."""

    __slots__ = ("class_version", "decode", "id", "time", "transcoded", "unsealed")

    def __init__(
        self,
        decode: Callable[[bytes], Any],
        transcoded: tuple[str, ...],
        cls: type,
        wrappers: tuple[type, type],
    ) -> None:
        self.decode = decode
        self.transcoded = transcoded
        #: the structs msgspec makes of a transcoded time and id
        self.time, self.id = wrappers
        self.class_version: int = getattr(cls, "class_version", 1)
        self.unsealed: int | None = getattr(cls, "unsealed_version", None)


class StructDecoder(ProjectionDecoder):
    """Notifications to structs that read as ``mapper.to_domain_event``'s events do."""

    def __init__(self, mapper: Mapper[UUID]) -> None:
        super().__init__(mapper)
        # msgspec is imported here, with the first decoder a process makes (a runner's), not
        # with this module: the commands' help and a propose -> approve cycle import the
        # runners' module but make no runner, and leave msgspec out (client memory).
        from countersign.infrastructure.persistence import event_structs

        self._structs = event_structs
        #: topic -> its shape, or None: ``ProjectionDecoder`` decodes it
        self._shapes: dict[str, _Shape | None] = {}

    def decode(self, entry: LogEntry | Notification) -> Any:
        """The event of a log entry, as a struct; ``ProjectionDecoder``'s when it is not one
        msgspec reads as the mapper would."""
        topic = entry.topic
        try:
            shape = self._shapes[topic]
        except KeyError:
            shape = self._shapes[topic] = self._shape(topic)
        if shape is not None:
            try:
                stored = entry.state
                if not (stored.partition(b"\\")[1] and stored.find(b"\\u") != -1):
                    event = shape.decode(stored)
                    expected = stored.count(b'"_type_"')
                    for name in shape.transcoded:
                        value = getattr(event, name)
                        kind = type(value)
                        if kind is shape.time:  # read as the library's DatetimeAsISO reads it
                            setattr(event, name, _from_iso(value.value))
                            expected -= 1
                        elif kind is shape.id:
                            setattr(event, name, value.value)
                            expected -= 1
                    written = event.stored_version
                    version = entry.originator_version
                    if (
                        not expected
                        and (
                            written == shape.class_version
                            or (written == shape.unsealed and event.seal is None)
                        )
                        and type(version) is int
                        and version > 0
                    ):
                        stored_id = entry.originator_id
                        originator_id = self._ids.get(stored_id) if type(stored_id) is str else None
                        if originator_id is None:
                            originator_id = self._originator_id(stored_id)
                        event.originator_id = originator_id
                        event.originator_version = version
                        return event
            except Exception:  # noqa: S110 - the long way decides, and reports, any oddity
                pass
        return ProjectionDecoder.decode(self, entry)

    __call__ = decode

    def _shape(self, topic: str) -> _Shape | None:
        """How events of ``topic`` are decoded by msgspec, or None: by ``ProjectionDecoder``
        (a topic it leaves to the mapper, or a class no struct is made for)."""
        kind = self._kind(topic)
        if kind is None:
            return None
        structs = self._structs
        try:
            made = structs.event_decoder(kind.cls)
        except Exception:
            return None  # a class msgspec cannot make a struct of: the long way decides
        if made is None:
            return None
        return _Shape(made[0], made[1], kind.cls, (structs.TIME, structs.ID))
