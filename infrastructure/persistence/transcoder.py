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

import json
from collections.abc import Callable
from typing import Any

import orjson
from eventsourcing.persistence import JSONTranscoder, Transcoding

_Fragment = orjson.Fragment
#: The standard library's text of a float: its repr, and NaN/Infinity as its encoder writes
#: them (orjson writes 1e-07 as 1e-7, and refuses NaN).
_float_text = json.JSONEncoder(allow_nan=True).encode


class _NotPlain(Exception):
    """The state holds something only the library's own encoder writes exactly."""


def _preparer(types: dict[type, Transcoding]) -> Callable[[Any], Any]:
    """A function that turns a state into what orjson writes as the library's encoder would
    (``types``: the transcoder's registered transcodings, by type)."""

    def prepare(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            prepared = {}
            for key, item in value.items():
                if type(key) is not str:
                    raise _NotPlain  # the library writes 1 as "1", True as "true"
                item_kind = type(item)
                prepared[key] = (
                    item
                    if item_kind is str or item_kind is int or item_kind is bool or item is None
                    else prepare(item)
                )
            return prepared
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if kind is list or kind is tuple:
            return [
                item if type(item) is str or type(item) is int else prepare(item) for item in value
            ]
        if kind is float:
            return _Fragment(_float_text(value).encode())
        transcoding = types.get(kind)
        if transcoding is not None:
            return {"_type_": transcoding.name, "_data_": prepare(transcoding.encode(value))}
        if isinstance(value, str):
            # A str subclass (a StrEnum's member): both write its characters as a string.
            return str.__str__(value)
        raise _NotPlain

    return prepare


class FastJSONTranscoder(JSONTranscoder):
    """The library's JSON transcoder, encoding with orjson to the same bytes."""

    def __init__(self) -> None:
        super().__init__()
        self._prepare = _preparer(self.types)

    def encode(self, obj: Any) -> bytes:
        try:
            return orjson.dumps(self._prepare(obj))
        except (_NotPlain, TypeError, RecursionError):
            # orjson's own refusals are TypeErrors (too big an integer, too deep a nesting):
            # the library's encoder then writes it, or refuses it, as it always did.
            return super().encode(obj)
