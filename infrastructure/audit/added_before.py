"""Where the events an anchor does not hold, at or before its position, are (``audit verify
--anchor``, anchor_check.py): each by its stream, version and log position.

``check_anchor`` counts the events stored at or before the anchor's position with one
``COUNT``; an excess is an event a writer put in at a free position from before it (appended
to a stream, or making a new one). Only then (or when a stream is already not as anchored,
where a removal can hide an addition from the count) is this read: the anchor's lines again,
its proposals and its other streams merged in the order of their ids, and the event table
read a range of ids at a time (``HELD`` anchored streams, and every id between them), the
keys, positions and topics alone, so memory stays flat. An event is the anchor's if its
stream is anchored and its version at most the anchored one; any other is listed, the
``LISTED`` lowest positions kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.anchor import LISTED, Anchor, entries
from countersign.infrastructure.audit.stream_lines import StreamLine, names
from countersign.infrastructure.persistence import stored_keys
from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import stored_topics

#: Anchored streams whose range of ids is read in one statement.
HELD = 500
#: The aggregate's class an anchored proposal is named by.
PROPOSAL = "Proposal"


@dataclass
class Added:
    """The events at or before an anchor's position that it does not hold."""

    count: int = 0
    #: ``(position, item)`` of the ``LISTED`` lowest positions, as a heap (negated).
    _lowest: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)

    def take(self, item: dict[str, Any]) -> None:
        self.count += 1
        entry = (-int(item["log_position"]), self.count, item)
        if len(self._lowest) < LISTED:
            heapq.heappush(self._lowest, entry)
        elif entry > self._lowest[0]:
            heapq.heapreplace(self._lowest, entry)

    @property
    def listed(self) -> list[dict[str, Any]]:
        """``{"log_position", "stream_id", "kind", "version", "event", "anchored_version"}``
        (None: a stream the anchor does not hold), the lowest position first."""
        return [item for _, _, item in sorted(self._lowest, key=lambda e: (-e[0], e[1]))]


def locate_added(sql: SqlDatabase, anchor: Anchor) -> Added:
    """The events stored at or before ``anchor``'s position that it does not hold (format 1:
    of the proposals' streams alone, as its count is); AnchorFileError if the file is no
    longer the one ``read_anchor`` checked."""
    found = Added()
    reader = _Reader(sql, anchor.log_position, proposals_only=not anchor.covers_every_stream)
    low: UUID | None = None
    batch: dict[object, tuple[int, str]] = {}
    for stream_id, version, kind in _anchored(anchor):
        batch[reader.key(stream_id)] = (version, kind)
        if len(batch) == HELD:
            reader.read(low, stream_id, batch, found)
            low, batch = stream_id, {}
    reader.read(low, None, batch, found)
    reader.name(found.listed)
    return found


def _anchored(anchor: Anchor) -> Iterator[tuple[UUID, int, str]]:
    """Every anchored stream, in the order of the ids: its id, last anchored version and
    kind (the proposals' and the other streams' lines, each in that order, merged)."""
    proposals = (
        (entry[0], entry[2], PROPOSAL)
        for entry in entries(anchor, "proposals")
        if not isinstance(entry, StreamLine)
    )
    if not anchor.covers_every_stream:
        yield from proposals
        return
    yield from heapq.merge(proposals, _streams(anchor), key=lambda s: s[0].int)


def _streams(anchor: Anchor) -> Iterator[tuple[UUID, int, str]]:
    """The other streams, each once at its last anchored version."""
    held: StreamLine | None = None
    for entry in entries(anchor, "streams"):
        if not isinstance(entry, StreamLine):
            continue
        if held is not None and held.stream_id != entry.stream_id:
            yield held.stream_id, held.version, held.kind
        held = entry
    if held is not None:
        yield held.stream_id, held.version, held.kind


class _Reader:
    """The events of a range of ids at or before the position, on either database."""

    def __init__(self, sql: SqlDatabase, position: int, proposals_only: bool) -> None:
        self.sql = sql
        self.position = position
        self.table = POSTGRES_EVENTS if sql.is_postgres else SQLITE_EVENTS
        self.at = "notification_id" if sql.is_postgres else "rowid"
        self.topics = stored_topics(Proposal, ["Proposed"]) if proposals_only else []
        self._proposals = (
            f"AND (SELECT p.topic FROM {self.table} p WHERE p.originator_id = e.originator_id "
            f"AND p.originator_version = 1) IN ({', '.join('?' for _ in self.topics)}) "
            if proposals_only
            else ""
        )

    def key(self, value: UUID) -> object:
        """An id as the database gives it back (no UUID is made of each row read)."""
        return value if self.sql.is_postgres else value.hex

    def read(
        self,
        low: UUID | None,
        high: UUID | None,
        anchored: dict[object, tuple[int, str]],
        found: Added,
    ) -> None:
        """The events of the ids after ``low`` up to ``high`` (None: no bound) that the
        anchor does not hold (``anchored``: those of this range it holds, by ``key``) into
        ``found``: the keys and positions alone (on SQLite, the primary key's index alone)."""
        where: list[str] = [f"e.{self.at} <= ?"]
        params: list[object] = [self.position]
        if low is not None:
            where.append("e.originator_id > ?")
            params.append(self.key(low))
        if high is not None:
            where.append("e.originator_id <= ?")
            params.append(self.key(high))
        with self.sql.reading() as cursor:
            rows = cursor.execute(
                f"SELECT e.originator_id, e.originator_version, e.{self.at} "
                f"FROM {self.table} e WHERE {' AND '.join(where)} {self._proposals}",
                [*params, *self.topics],
            ).fetchall()
        for raw_id, version, at in rows:
            try:
                stream = stored_keys.stream_id(raw_id)
                stored_keys.version(version)
            except stored_keys.StoredKeyError:
                continue  # in no stream, or at no place in one: named by ``malformed_keys``
            held = anchored.get(raw_id)
            if held is not None and version <= held[0]:
                continue
            found.take(
                {
                    "log_position": int(at),
                    "stream_id": str(stream),
                    "kind": None if held is None else held[1],
                    "version": int(version),
                    "event": "?",
                    "anchored_version": None if held is None else held[0],
                }
            )

    def name(self, listed: list[dict[str, Any]]) -> None:
        """The class of each listed event, and of its stream where the anchor holds none,
        as its topic names them (a point read each: at most ``LISTED``)."""
        with self.sql.reading() as cursor:
            for item in listed:
                row = cursor.execute(
                    f"SELECT topic FROM {self.table} WHERE originator_id = ? "
                    "AND originator_version = ?",
                    [self.key(UUID(item["stream_id"])), item["version"]],
                ).fetchone()
                kind, event = names(str(row[0])) if row else ("", "")
                item["event"] = _printed(event)
                if item["kind"] is None:
                    item["kind"] = _printed(kind)


def _printed(name: str) -> str:
    """A class's name as a topic a writer may have made up gives it: printed only if it is
    one ("?" otherwise), never a control sequence for the auditor's terminal."""
    return name if name.isidentifier() and len(name) <= 100 else "?"
