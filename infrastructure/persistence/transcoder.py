"""The stored events' transcoder: the library's JSON, written by orjson, byte for byte.

``JSONTranscoder`` (eventsourcing) writes an event's state with the standard library's
encoder, which calls back into Python for every id, time and decimal (``_encode_obj``), and a
cycle writes seven events. ``FastJSONTranscoder`` writes the same bytes with orjson: it first
turns the state into what orjson writes as the library would (an id, a time or a decimal
becomes the library's ``{"_type_": ..., "_data_": ...}``, a float the standard library's own
text), then orjson writes it in C. Anything it does not know how to write exactly as the
library would (a key that is not a string, a float or container subclass, an unregistered
type, a nesting or an integer too deep or too big for orjson) is written by the library's own
encoder instead, which writes it, or refuses it, as it always did. Reading is the library's.

The bytes are the library's: ``tests/test_transcoder.py`` compares the two on generated
states (every character, floats, big integers, nesting, every registered type).
Instructions per SQLite propose -> approve cycle (callgrind): 3,905,793 -> 3,729,108.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from countersign.domain import plain_json
from countersign.infrastructure.persistence.hexes import HEXES as _HEXES
from countersign.infrastructure.persistence.hexes import hex_of
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Transcoding, UUIDAsHex


def _preparer(types: dict[type, Transcoding]) -> Callable[[Any], Any]:
    """What orjson writes as the library's encoder would: a registered type (an id, a time,
    a decimal) as the library's ``{"_type_": ..., "_data_": ...}``.

    A time in UTC (every event's timestamp) is handed to orjson as it is: orjson writes a
    ``datetime`` in UTC as ``isoformat`` does (``+00:00``, microseconds only when there are
    any; ``tests/test_transcoder.py`` compares them), without the round trip through a
    Python string. Any other time, or a subclass, takes the library's ``isoformat``. An id
    is its ``hex``, a string, with nothing more to prepare.

    ``types`` is read at every call, not here: the application registers its transcodings
    after the transcoder is made (so a check made here saw none, and every time took the
    round trip through ``isoformat``)."""

    def convert(value: Any) -> Any:
        transcoding = types.get(type(value))
        if transcoding is None:
            raise plain_json.NotPlain
        transcoding_kind = type(transcoding)
        if transcoding_kind is UUIDAsHex:
            # An exact UUID (``types`` is keyed by exact type): its remembered hex digits.
            return {"_type_": transcoding.name, "_data_": _HEXES.get(value.int) or hex_of(value)}
        if transcoding_kind is DatetimeAsISO and value.tzinfo is UTC:
            # Only when times are the library's ISO text: another transcoding writes them
            # its way.
            return {"_type_": transcoding.name, "_data_": value}
        return {"_type_": transcoding.name, "_data_": prepare(transcoding.encode(value))}

    prepare = plain_json.preparer(convert)
    return prepare


class FastJSONTranscoder(JSONTranscoder):
    """The library's JSON transcoder, encoding with orjson to the same bytes."""

    def __init__(self) -> None:
        super().__init__()
        self._prepare = _preparer(self.types)

    def encode(self, obj: Any) -> bytes:
        try:
            if type(obj) is not dict:
                return plain_json.dumps(self._prepare(obj))
            return self._written(obj, obj.copy())
        except plain_json.REFUSED:
            # The library's encoder writes it, or refuses it, as it always did (its own
            # encode, inlined: the same depth of nesting reaches the same recursion limit).
            return self.encoder.encode(obj).encode("utf8")

    def encode_event(self, state: dict[str, Any], class_version: int) -> bytes:
        """``encode`` of the state the library's mapper hands it for an event whose
        ``__dict__`` is ``state`` (left as it is): a copy without ``originator_id`` and
        ``originator_version``, and ``class_version`` set when given (above 1), in the
        library's order. The same bytes as ``encode`` of that dict (tests/test_transcoder.py),
        without the mapper's dict made, its two pops, and the call here: one copy, not two."""
        prepared = state.copy()
        del prepared["originator_id"]
        del prepared["originator_version"]
        if class_version:
            prepared["class_version"] = class_version
        try:
            # ``_written(prepared, prepared)``, inline (a Python call an event, seven a
            # cycle): the copy's items prepared in place, a value replaced under a key
            # already there (which leaves the iteration as it was).
            types = self.types
            ids, times = types.get(UUID), types.get(datetime)
            ids_hex = type(ids) is UUIDAsHex
            times_iso = type(times) is DatetimeAsISO
            for key, value in prepared.items():
                kind = type(value)
                if kind is str or kind is int or kind is bool or value is None:
                    continue
                if kind is UUID and ids_hex:
                    prepared[key] = {
                        "_type_": ids.name,  # type: ignore[union-attr]
                        "_data_": _HEXES.get(value.int) or hex_of(value),
                    }
                elif kind is datetime and times_iso and value.tzinfo is UTC:
                    prepared[key] = {"_type_": times.name, "_data_": value}  # type: ignore[union-attr]
                else:
                    ready = self._prepare(value)
                    if ready is not value:
                        prepared[key] = ready
            return plain_json.dumps(prepared)
        except plain_json.REFUSED:
            # The dict the library's mapper would have handed ``encode``, unprepared.
            event_state = state.copy()
            del event_state["originator_id"]
            del event_state["originator_version"]
            if class_version:
                event_state["class_version"] = class_version
            return self.encoder.encode(event_state).encode("utf8")

    def _written(self, obj: dict[Any, Any], prepared: dict[Any, Any]) -> bytes:
        """The bytes of the state ``obj`` (a dict), its items prepared into ``prepared``, a
        copy of it made in C (or ``obj`` itself, a copy made for this call alone): only the
        items that change are written into it (a value replaced under a key already there,
        which leaves the iteration of ``obj`` as it was). Raises what ``REFUSED`` names where
        the library's encoder must write it."""
        # An event's state (every call the mapper makes): its own items are written here,
        # as ``_prepare``'s walk writes them, without a call for the walk and one for each
        # id and time in it (the timestamp, the aggregate's ids; a small event is little
        # else). The same bytes: tests/test_transcoder.py.
        types = self.types
        ids, times = types.get(UUID), types.get(datetime)
        ids_hex = type(ids) is UUIDAsHex
        times_iso = type(times) is DatetimeAsISO
        prepare = self._prepare
        # Most of a state's items are plain values (or containers the walk returns as they
        # are), and a store into a new dict costs more than the copy of it. A key that is
        # not an exact str is refused by orjson (the library writes 1 as "1", True as
        # "true"), and the library's encoder then writes it.
        for key, value in obj.items():
            kind = type(value)
            if kind is str or kind is int or kind is bool or value is None:
                continue
            if kind is UUID and ids_hex:
                # ``ids`` is UUIDAsHex, its name set when it was made.
                prepared[key] = {
                    "_type_": ids.name,  # type: ignore[union-attr]
                    "_data_": _HEXES.get(value.int) or hex_of(value),
                }
            elif kind is datetime and times_iso and value.tzinfo is UTC:
                prepared[key] = {"_type_": times.name, "_data_": value}  # type: ignore[union-attr]
            else:
                ready = prepare(value)
                if ready is not value:
                    prepared[key] = ready
        return plain_json.dumps(prepared)
