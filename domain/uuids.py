"""Ids made, written and read without ``uuid.UUID``'s Python-level work each time.

``uuid4()`` and ``UUID(text)`` run ``UUID.__init__`` in Python (its checks of which of five
forms was given, the version bits, two ``object.__setattr__`` calls), and ``str(an_id)``
formats the 128-bit number in Python: several thousand instructions each under callgrind, and
a cycle makes three new ids, writes the new proposal's id three times and reads two ids from
a request. Here:

- ``new_id()`` is ``uuid4()``: 16 random bytes from ``os.urandom``, the version and variant
  bits set as ``UUID(bytes=..., version=4)`` sets them, the ``UUID`` made as its
  ``__init__`` makes it (its two slots set, ``is_safe`` unknown);
- ``id_text(an_id)`` is ``str(an_id)``, and ``parse(text)`` is ``UUID(text)`` for an exact
  string: both remember the last few thousand ids they wrote or read, either way (a proposal's
  id is written when it is frozen and read back when it is approved; a form's id is read on
  every proposal), so most are a dictionary lookup. A text not remembered takes ``UUID``'s own
  way, and raises as it does.

A ``UUID`` is immutable, so a remembered one is the same value as a new one would be
(tests/test_uuids.py compares them).
"""

from __future__ import annotations

from os import urandom
from typing import Any
from uuid import UUID, SafeUUID

#: How many are remembered each way (all forgotten together past it, as ``stable_id`` does).
#: The ids read again soon are few (a club's forms and organization on every request, a
#: proposal's between its freezing and its approval in the same process); each remembered id
#: costs about 250 bytes both ways, and a process that makes three ids a cycle fills any
#: number it is given, so 4,096 held about 1 MB past the client's memory budget
#: (tests/test_retained_memory.py).
_REMEMBERED = 512
#: An id's ``int`` -> its text; a text -> its id.
_TEXTS: dict[int, str] = {}
_IDS: dict[str, UUID] = {}

_new = object.__new__
_set = object.__setattr__
_from_bytes = int.from_bytes
_UNKNOWN = SafeUUID.unknown
#: ``UUID(..., version=4)``: the variant (RFC 4122) and the version bits.
_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_SET = (0x8000 << 48) | (4 << 76)


def new_id() -> UUID:
    """A random id, as ``uuid.uuid4()`` makes it."""
    made: UUID = _new(UUID)
    _set(made, "int", (_from_bytes(urandom(16), "big") & _CLEAR) | _SET)
    _set(made, "is_safe", _UNKNOWN)
    return made


def new_id_prefix() -> str:
    """``new_id().hex[:16]``: the first 16 hex digits of a new random id (its version digit
    among them), written from its number without making the ``UUID`` (``UUID.hex`` is a
    Python property)."""
    return f"{((_from_bytes(urandom(16), 'big') & _CLEAR) | _SET) >> 64:016x}"


def id_text(value: UUID) -> str:
    """``str(value)``, remembered (for an exact ``UUID``)."""
    text = _TEXTS.get(value.int) if type(value) is UUID else None
    if text is None:
        text = str(value)
        if type(value) is UUID:
            _keep(_TEXTS, value.int, text)
            _keep(_IDS, text, value)
    return text


def parse(text: str) -> UUID:
    """``UUID(text)``, remembered for an exact ``str`` (ValueError for what is no id)."""
    found = _IDS.get(text) if type(text) is str else None
    if found is None:
        found = UUID(text)
        if type(text) is str:
            _keep(_IDS, text, found)
    return found


def _keep(memory: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memory) >= _REMEMBERED:
        # A clear is one call, safe from any thread (iterating to drop the oldest is not).
        memory.clear()
    memory[key] = value
