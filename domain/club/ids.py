"""Deterministic ids for club aggregates, so seeding is idempotent and lookups need no index."""

from __future__ import annotations

from uuid import UUID, uuid5

_NAMESPACE = UUID("6f1d4c8e-2b57-4b8e-9a55-3c0c4a1f7e21")

#: How many derived ids are remembered (all are forgotten together past it): enough for the
#: few every request derives again; each costs a few hundred bytes, and new parts (a new
#: proposal's ids) fill any number given (tests/test_retained_memory.py).
_REMEMBERED = 512
#: The same few ids are derived on every request: remembered by their parts, an exact ``str``
#: as it is, an id part by its ``int`` (a ``UUID``'s own hash is a Python method; an int's is
#: C) and any other part with its type (a ``str`` subclass, say, may print differently from
#: the equal ``str``). The three kinds of key never compare equal to one another.
_IDS: dict[tuple[object, ...], UUID] = {}


def stable_id(*parts: str | UUID) -> UUID:
    # A name and one or two ids (most calls): ``_usual_key``'s key, made here without its call.
    count = len(parts)
    if count == 2 and type(parts[0]) is str and type(parts[1]) is UUID:
        key: tuple[object, ...] | None = (parts[0], parts[1].int)
    elif count == 3 and type(parts[0]) is str and type(parts[1]) is UUID and type(parts[2]) is UUID:
        key = (parts[0], parts[1].int, parts[2].int)
    else:
        key = _usual_key(parts)
    if key is None:
        # A loop: a comprehension is a call of its own.
        listed: list[object] = []
        for part in parts:
            exact = type(part)
            if exact is str:
                listed.append(part)
            elif isinstance(part, UUID) and exact is UUID:
                listed.append(part.int)
            else:
                listed.append((exact, part))
        key = tuple(listed)
    found = _IDS.get(key)
    if found is None:
        found = uuid5(_NAMESPACE, "/".join(str(part) for part in parts))
        if len(_IDS) >= _REMEMBERED:
            # Not the oldest alone: finding it iterates the dict, which another thread may be
            # adding to, and iteration then raises. A clear is one call, safe from any thread.
            _IDS.clear()
        _IDS[key] = found
    return found


def _usual_key(parts: tuple[str | UUID, ...]) -> tuple[object, ...] | None:
    """The key ``stable_id``'s loop makes, made without it for the parts every request
    derives (a kind's name and a slug, or one or two ids: about 2,500 instructions fewer a
    call, eight calls a cycle); None for any other parts."""
    if len(parts) == 2:
        name, part = parts
        if type(name) is str:
            kind = type(part)
            if kind is str:
                return parts  # two texts: the key is the parts themselves
            if kind is UUID:
                return (name, part.int)  # type: ignore[union-attr]
    elif len(parts) == 3:
        name, first, second = parts
        if type(name) is str and type(first) is UUID and type(second) is UUID:
            return (name, first.int, second.int)
    return None
