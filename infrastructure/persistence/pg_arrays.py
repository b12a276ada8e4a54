"""PostgreSQL arrays already in their binary wire format (``array_send``), for the commit
function's parameters: psycopg adapts Python lists element by element in Python, and packing
the arrays of a commit here is several times faster. Imported only by a process on
PostgreSQL (it imports psycopg)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
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
