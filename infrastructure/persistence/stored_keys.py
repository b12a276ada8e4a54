"""A stored event's key as the database gives it back, checked: its stream's id is a UUID and
its version a whole number from 1.

A writer of the database can put anything there that the column takes: SQLite's
``originator_id`` is TEXT and its ``originator_version`` INTEGER by affinity only (any text or
decimal stays as written); PostgreSQL's ``originator_id`` is uuid-typed (nothing else fits),
its ``originator_version`` bigint (0 and negatives fit). Such an event belongs to no stream
a read can see, or to no place in it. ``StoredKeyError`` names it: its log position where
known, which part of the key, and the stored value shown safely (``shown``), never a
traceback. ``audit verify`` lists each one (``malformed_keys``); ``audit anchor`` makes no
anchor of a log holding one; a read of the stream answers it as a damaged record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS

if TYPE_CHECKING:
    from countersign.infrastructure.persistence.sql import SqlDatabase

#: The most characters of a stored value a message shows (its repr, cut with "…").
SHOWN = 40

#: The stable code of each part of the key that can be malformed (``audit verify --json``).
CODES = {"originator_id": "originator_id_malformed", "version": "originator_version_malformed"}


def shown(raw: object) -> str:
    """A stored value as a message shows it: its repr (quotes, escapes: no control character
    of the writer's reaches a terminal), cut to ``SHOWN`` characters."""
    text = repr(raw)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


class StoredKeyError(ValueError):
    """A stored event's ``originator_id`` that is no UUID, or ``originator_version`` that is
    no whole number from 1 (``part``: "originator_id" or "version")."""

    def __init__(self, part: str, raw: object, position: int | None = None) -> None:
        self.part = part
        self.code = CODES[part]
        self.value = shown(raw)
        self.position = position
        where = "" if position is None else f" at log position {position}"
        super().__init__(f"stored event{where}: {part} {self.value} is not one")


def stream_id(raw: Any, position: int | None = None) -> UUID:
    """The UUID of a stored ``originator_id`` (PostgreSQL's UUID, SQLite's text), or
    StoredKeyError."""
    if type(raw) is UUID:
        return raw
    if isinstance(raw, str):
        try:
            return UUID(raw)
        except ValueError:
            pass
    raise StoredKeyError("originator_id", raw, position)


def version(raw: Any, position: int | None = None) -> int:
    """A stored ``originator_version`` that is a whole number from 1, or StoredKeyError
    (SQLite's 1.5 is not 1; its "1" is stored as 1 by the column's affinity)."""
    if type(raw) is int and raw >= 1:
        return raw
    raise StoredKeyError("version", raw, position)


def refuse_malformed(sql: SqlDatabase, head: int) -> None:
    """StoredKeyError for the first event at or before log position ``head`` whose key is no
    key (``audit anchor``: an anchor of such a log would leave the event out unsaid). One
    statement whose few candidates are confirmed here: on SQLite, a key not as countersign
    writes it (32 lowercase hex digits, an integer from 1), read from the primary key's
    index; on PostgreSQL, a version below 1 (its id column holds only UUIDs)."""
    if sql.is_postgres:
        where = "originator_version < 1"
        at, table = "notification_id", POSTGRES_EVENTS
    else:
        where = (
            "(typeof(originator_version) != 'integer' OR originator_version < 1 "
            "OR typeof(originator_id) != 'text' OR length(originator_id) != 32 "
            "OR originator_id GLOB '*[^0-9a-f]*')"
        )
        # "+rowid": the primary key's covering index is scanned, not the table with its
        # states (100,000 events: 0.14 to 0.44 s, the 2-core machine at a load of 8 to 13).
        at, table = "+rowid", SQLITE_EVENTS
    with sql.reading() as cursor:
        rows = cursor.execute(
            f"SELECT {at}, originator_id, originator_version FROM {table} "
            f"WHERE {where} AND {at} <= ?",
            (head,),
        ).fetchall()
    for position, raw_id, raw_version in sorted(rows, key=lambda row: int(row[0])):
        stream_id(raw_id, int(position))
        version(raw_version, int(position))
