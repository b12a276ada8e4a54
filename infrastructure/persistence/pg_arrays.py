"""PostgreSQL arrays already in their binary wire format (``array_send``), for the commit
function's parameters: psycopg adapts Python lists element by element in Python, and packing
the arrays of a commit here is several times faster. Imported only by a process on
PostgreSQL (it imports psycopg)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import psycopg
from psycopg.adapt import Dumper
from psycopg.postgres import types as pg_types
from psycopg.pq import Format


class PackedArray:
    """A one-dimensional PostgreSQL array already in its binary wire format (``array_send``).

    psycopg adapts Python lists element by element in Python; packing the arrays of a commit
    here is several times faster, and the commit path runs for every proposal and approval.
    """

    __slots__ = ("data",)
    element_type = ""
    #: The element type's oid, looked up once (``pg_types[...]`` is a Python call).
    element_oid = 0

    def __init__(self, data: bytes) -> None:
        self.data = data


def _array_header(element_oid: int, count: int, has_nulls: bool = False) -> bytes:
    # ndim, has-nulls flag, element type; then (size, lower bound) for the one dimension.
    if not count:
        return struct.pack("!iiI", 0, 0, element_oid)
    return struct.pack("!iiIii", 1, int(has_nulls), element_oid, count, 1)


class UUIDs(PackedArray):
    __slots__ = ()
    element_type = "uuid"

    element_oid = pg_types["uuid"].oid

    @classmethod
    def of(cls, values: Sequence[UUID | str]) -> UUIDs:
        head = _array_header(cls.element_oid, len(values))
        # An exact UUID's bytes straight from its int (``UUID.bytes`` is a Python property).
        return cls(
            head
            + b"".join(
                [
                    b"\0\0\0\x10"
                    + (v.int.to_bytes(16, "big") if type(v) is UUID else _uuid(v).bytes)
                    for v in values
                ]
            )
        )


def _uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(value)


class BigInts(PackedArray):
    """``bigint[]``; a None is SQL NULL (a read-set entry for an aggregate that did not
    exist: the insert function's ``IS DISTINCT FROM`` then expects no event of it)."""

    __slots__ = ()
    element_type = "int8"
    element_oid = pg_types["int8"].oid

    @classmethod
    def of(cls, values: Sequence[int | None]) -> BigInts:
        if None not in values:
            head = _array_header(cls.element_oid, len(values))
            body = struct.pack("!" + "iq" * len(values), *[x for v in values for x in (8, v)])
            return cls(head + body)
        head = _array_header(cls.element_oid, len(values), has_nulls=True)
        return cls(
            head
            + b"".join(
                struct.pack("!i", -1) if v is None else struct.pack("!iq", 8, v) for v in values
            )
        )


class Bytes(PackedArray):
    """``text[]`` or ``bytea[]``: length-prefixed elements (text as UTF-8)."""

    __slots__ = ()

    @classmethod
    def of(cls, values: Iterable[bytes], count: int) -> Bytes:
        head = _array_header(cls.element_oid, count)
        return cls(head + b"".join([struct.pack("!i", len(v)) + v for v in values]))


class Texts(Bytes):
    __slots__ = ()
    element_type = "text"
    element_oid = pg_types["text"].oid


class Byteas(Bytes):
    __slots__ = ()
    element_type = "bytea"
    element_oid = pg_types["bytea"].oid


def _packed_dumper(packed: type[PackedArray]) -> type[Dumper]:
    class PackedDumper(Dumper):
        format = Format.BINARY
        oid = pg_types[packed.element_type].array_oid

        def dump(self, obj: Any) -> bytes:
            return obj.data  # type: ignore[no-any-return]

    PackedDumper.__name__ = f"{packed.__name__}Dumper"
    return PackedDumper


# Registered on psycopg's global adapters: these types are made only for the commit's parameters.
for _packed in (UUIDs, BigInts, Texts, Byteas):
    psycopg.adapters.register_dumper(_packed, _packed_dumper(_packed))


# -- a commit's six arrays at once ----------------------------------------------------------

#: An element's length, before it: 16 for a uuid, 8 for a bigint; -1 for NULL.
_LENGTH_16 = struct.pack("!i", 16)
_LENGTH_8 = struct.pack("!i", 8)
_NULL = struct.pack("!i", -1)
#: The one dimension's lower bound, after its size.
_LOWER_BOUND = struct.pack("!i", 1)
_BIGINT = struct.Struct("!iq").pack
_LENGTH = struct.Struct("!i").pack


def _head(packed: type[PackedArray], has_nulls: bool = False) -> bytes:
    """A one-dimensional array's header up to its size: ndim, has-nulls flag, element type."""
    return struct.pack("!iiI", 1, int(has_nulls), packed.element_oid)


_UUIDS_HEAD = _head(UUIDs)
_BIGINTS_HEAD = _head(BigInts)
_BIGINTS_WITH_NULLS_HEAD = _head(BigInts, has_nulls=True)
_TEXTS_HEAD = _head(Texts)
_BYTEAS_HEAD = _head(Byteas)


def commit_arrays(
    events: Sequence[Any], expected: Mapping[UUID, int | None]
) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes]:
    """The commit function's six arrays in their wire format, byte for byte what ``UUIDs.of``,
    ``BigInts.of``, ``Texts.of`` and ``Byteas.of`` give for the events' ids, versions, topics
    (UTF-8) and states, and the read set's ids and versions: gathered in one pass over each,
    without a call of each class's ``of``, its header function and a comprehension for every
    array (about 11,000 instructions each under callgrind, six a commit)."""
    if not events:
        return (
            UUIDs.of([]).data,
            BigInts.of([]).data,
            Texts.of([], 0).data,
            Byteas.of([], 0).data,
            *_read_set_arrays(expected),
        )
    size = len(events).to_bytes(4, "big")
    ids = [_UUIDS_HEAD, size, _LOWER_BOUND]
    versions = [_BIGINTS_HEAD, size, _LOWER_BOUND]
    topics = [_TEXTS_HEAD, size, _LOWER_BOUND]
    states = [_BYTEAS_HEAD, size, _LOWER_BOUND]
    for event in events:
        originator = event.originator_id
        ids.append(_LENGTH_16)
        ids.append(
            originator.int.to_bytes(16, "big")
            if type(originator) is UUID
            else _uuid(originator).bytes
        )
        version = event.originator_version
        if version is None:
            versions[0] = _BIGINTS_WITH_NULLS_HEAD
            versions.append(_NULL)
        else:
            versions.append(_BIGINT(8, version))
        topic = event.topic
        element = _TOPICS.get(topic)
        if element is None:
            element = _topic_element(topic)
        topics.append(element)
        state = event.state
        states.append(_LENGTH(len(state)))
        states.append(state)
    join = b"".join
    return (join(ids), join(versions), join(topics), join(states), *_read_set_arrays(expected))


#: A topic's element of a ``text[]``, its length and its UTF-8 bytes, by topic: a commit's
#: topics are its events' classes, the same few each time. At most ``_TOPICS_KEPT``.
_TOPICS: dict[str, bytes] = {}
_TOPICS_KEPT = 1024


def _topic_element(topic: str) -> bytes:
    encoded = topic.encode()
    element = _LENGTH(len(encoded)) + encoded
    if len(_TOPICS) < _TOPICS_KEPT:
        _TOPICS[topic] = element
    return element


def _read_set_arrays(expected: Mapping[UUID, int | None]) -> tuple[bytes, bytes]:
    """The read set's ids and versions, as ``UUIDs.of`` and ``BigInts.of`` give them."""
    if not expected:
        return _EMPTY_UUIDS, _EMPTY_BIGINTS
    size = len(expected).to_bytes(4, "big")
    ids = [_UUIDS_HEAD, size, _LOWER_BOUND]
    versions = [_BIGINTS_HEAD, size, _LOWER_BOUND]
    for aggregate, version in expected.items():
        ids.append(_LENGTH_16)
        ids.append(
            aggregate.int.to_bytes(16, "big") if type(aggregate) is UUID else _uuid(aggregate).bytes
        )
        if version is None:
            versions[0] = _BIGINTS_WITH_NULLS_HEAD
            versions.append(_NULL)
        else:
            versions.append(_BIGINT(8, version))
    join = b"".join
    return join(ids), join(versions)


_EMPTY_UUIDS = UUIDs.of([]).data
_EMPTY_BIGINTS = BigInts.of([]).data
