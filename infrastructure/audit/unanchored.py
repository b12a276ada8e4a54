"""What an anchor does not cover: the events recorded after it was made, the proposals'
and (for an anchor of every stream) the other streams' apart (``audit verify --anchor``,
docs/design.md, "Anchors").

An anchor is where every proposal's stream stood at a position of the notification log; an
event recorded after that position and deleted before the next anchor is shown by nothing.
So the check says how many there are now, of how many proposals (those made since among
them), and lists the first ``LISTED`` of those proposals, in the order their first event
after the anchor was recorded; ``--max-unanchored N`` fails it beyond N.

The events after the position are read a window of positions at a time (``WINDOW``), each
looked up in its stream by the primary key, so the memory stays flat and the progress can be
said however many there are: a proposal is counted at its first event after the anchor (no
event of its stream before it is after the position), so none is counted twice and none is
held in memory but the listed ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.stream_lines import names
from countersign.infrastructure.persistence import stored_keys
from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import stored_topics

#: Proposals listed (``--json``; the terminal shows fewer).
LISTED = 100
#: Log positions read at a time.
WINDOW = 10_000


@dataclass
class Unanchored:
    """The proposals' events (or, ``streams``, the other streams') recorded after an
    anchor's position, up to the log's head."""

    log_position: int
    head: int
    #: ``--max-unanchored``: the most events after the anchor the check accepts (None: any).
    limit: int | None = None
    events: int = 0
    proposals: int = 0
    #: Of ``proposals``, those made after the anchor (the anchor holds none of their events).
    new_proposals: int = 0
    #: The first ``LISTED`` proposals, each ``{"proposal_id", "first_version",
    #: "last_version", "events", "made_after_anchor"}`` (streams: ``"stream_id"`` and its
    #: ``"kind"``, the aggregate's class, for ``"proposal_id"``).
    listed: list[dict[str, Any]] = field(default_factory=list)
    #: Whether these are the other streams' (``proposals`` then counts streams).
    streams: bool = False

    @property
    def ok(self) -> bool:
        return self.limit is None or self.events <= self.limit

    def to_json(self) -> dict[str, Any]:
        counted = (
            {"streams": self.proposals, "new_streams": self.new_proposals}
            if self.streams
            else {"proposals": self.proposals, "new_proposals": self.new_proposals}
        )
        return {
            "ok": self.ok,
            "after_log_position": self.log_position,
            "up_to_log_position": self.head,
            "max_unanchored": self.limit,
            "events": self.events,
            **counted,
            "listed": self.listed,
        }


def count_unanchored(
    sql: SqlDatabase,
    log_position: int,
    head: int,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
    *,
    streams: bool = False,
) -> Unanchored:
    """The proposals' events (``streams``: the other streams') after ``log_position`` up to
    ``head`` (the log's head now), counted a window of positions at a time; ``progress`` is
    told the positions read."""
    found = Unanchored(log_position, max(head, log_position), limit, streams=streams)
    reader = _Reader(sql, log_position, streams)
    firsts: dict[UUID, tuple[int, str]] = {}
    low = log_position
    while low < found.head:
        high = min(low + WINDOW, found.head)
        found.events += reader.count(low, high)
        for proposal_id, version, kind in reader.firsts(low, high):
            found.proposals += 1
            found.new_proposals += version == 1
            if len(firsts) < LISTED:
                firsts[proposal_id] = (version, kind)
        if progress is not None:
            progress(high - low)
        low = high
    counts = reader.counts(list(firsts), found.head)
    for proposal_id, (first, kind) in firsts.items():
        events, last = counts.get(proposal_id, (0, first))
        named = {"stream_id": str(proposal_id), "kind": kind} if streams else {}
        found.listed.append(
            {
                **(named or {"proposal_id": str(proposal_id)}),
                "first_version": first,
                "last_version": last,
                "events": events,
                "made_after_anchor": first == 1,
            }
        )
    return found


class _Reader:
    """The statements, on either database: a proposal's events are those of a stream whose
    first event is a ``Proposed`` (any other stream is no proposal's). Each event of a window
    is looked up in its stream by the primary key, in subqueries the planners run per row
    (a join here let PostgreSQL hash the whole table for each window)."""

    def __init__(self, sql: SqlDatabase, log_position: int, streams: bool = False) -> None:
        self.sql = sql
        self.anchored = log_position
        self.table = POSTGRES_EVENTS if sql.is_postgres else SQLITE_EVENTS
        self.position = "notification_id" if sql.is_postgres else "rowid"
        self.topics = stored_topics(Proposal, ["Proposed"])
        at = self.position
        # The other streams: those whose first event is no ``Proposed`` (or is gone).
        which = "NOT IN" if streams else "IN"
        self._window = (
            f"FROM {self.table} e WHERE e.{at} > ? AND e.{at} <= ? "
            f"AND COALESCE((SELECT p.topic FROM {self.table} p WHERE p.originator_id = "
            f"e.originator_id AND p.originator_version = 1), '') {which} "
            f"({', '.join('?' for _ in self.topics)}) "
        )
        before = (
            f"FROM {self.table} b WHERE b.originator_id = e.originator_id "
            "AND b.originator_version = e.originator_version - 1"
        )
        # The event before it at or before the anchor, or none: its first (version 1), or a
        # gap (``verify`` names it) where none of the stream before it is after the anchor.
        self._first = (
            f"AND COALESCE((SELECT b.{at} {before}), -1) <= ? "
            f"AND (e.originator_version = 1 OR EXISTS (SELECT 1 {before}) "
            f"OR NOT EXISTS (SELECT 1 FROM {self.table} g WHERE g.originator_id = "
            f"e.originator_id AND g.originator_version < e.originator_version AND g.{at} > ?)) "
        )

    def count(self, low: int, high: int) -> int:
        with self.sql.reading() as cursor:
            row = cursor.execute(
                f"SELECT COUNT(*) {self._window}", (low, high, *self.topics)
            ).fetchone()
        return int(row[0]) if row else 0

    def firsts(self, low: int, high: int) -> list[tuple[UUID, int, str]]:
        """The proposals (streams) whose first event after the anchor is in (``low``,
        ``high``], with its version and the aggregate's class its topic names, in the order
        they were recorded."""
        with self.sql.reading() as cursor:
            rows = cursor.execute(
                f"SELECT e.originator_id, e.originator_version, e.topic "
                f"{self._window}{self._first}ORDER BY e.{self.position}",
                (low, high, *self.topics, self.anchored, self.anchored),
            ).fetchall()
        # An event whose key is no key is in no stream: counted above, and named by the
        # check of the whole log (``malformed_keys``), not listed here as a stream's first.
        keyed = (_keyed(row) for row in rows)
        return [(k[0], k[1], _kind(str(k[2]))) for k in keyed if k is not None]

    def counts(self, ids: list[UUID], head: int) -> dict[UUID, tuple[int, int]]:
        """For each of these proposals, its events after the anchor up to ``head``: how many,
        and the last one's version."""
        if not ids:
            return {}
        keys = [i if self.sql.is_postgres else i.hex for i in ids]
        with self.sql.reading() as cursor:
            rows = cursor.execute(
                f"SELECT originator_id, COUNT(*), MAX(originator_version) FROM {self.table} "
                f"WHERE originator_id IN ({', '.join('?' for _ in ids)}) "
                f"AND {self.position} > ? AND {self.position} <= ? GROUP BY originator_id",
                (*keys, self.anchored, head),
            ).fetchall()
        keyed = (_keyed(row, 2) for row in rows)  # (id, count, version) where a key
        return {k[0]: (int(k[1]), k[2]) for k in keyed if k is not None}


def _kind(topic: str) -> str:
    kind = names(topic)[0]
    return kind if kind.isidentifier() and len(kind) <= 100 else "?"


def _keyed(row: Any, at: int = 1) -> tuple[Any, ...] | None:
    """A row with its stream id a UUID and its version (``row[at]``) a whole number from 1,
    or None where either is no key (stored_keys.py)."""
    try:
        key = stored_keys.stream_id(row[0]), stored_keys.version(row[at])
    except stored_keys.StoredKeyError:
        return None
    return (key[0], *row[1:at], key[1], *row[at + 1 :])
