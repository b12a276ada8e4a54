"""The 32 hex digits of the ids the store writes, remembered.

``UUID.hex`` formats the 128-bit int in Python every time (about 3,400 instructions under
callgrind), and a cycle writes the same few ids many times: SQLite stores an id as its hex
digits, and the transcoder writes every id in an event's state as them
(``{"_type_": "uuid_hex", ...}``). An int's hash and a dict's get are C.
"""

from __future__ import annotations

from uuid import UUID

#: How many ids' hex digits ``hex_of`` remembers (all are forgotten together past it): the
#: same few ids are written many times a cycle; every new id of every cycle is remembered too,
#: so this is the size the memory reaches (tests/test_retained_memory.py).
REMEMBERED = 512
#: An id's ``int`` -> its 32 hex digits. Callers may look here first, inline, and call
#: ``hex_of`` only for an id not found (a call costs more than the lookup).
HEXES: dict[int, str] = {}


def hex_of(aggregate_id: UUID) -> str:
    """``aggregate_id.hex``, remembered."""
    key = aggregate_id.int
    found = HEXES.get(key)
    if found is None:
        if len(HEXES) >= REMEMBERED:
            # All at once: forgetting the oldest would iterate the dict, which another thread
            # may be adding to. A clear is one call, safe from any thread.
            HEXES.clear()
        # What ``UUID.hex`` returns, without its property's Python call.
        found = HEXES[key] = f"{key:032x}"
    return found
