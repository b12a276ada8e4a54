"""Every stored event at or before a position of the notification log that is no proposal's
(the clubs, their members and rosters, orders, forms, policies, a plug-in's aggregates:
whatever the store holds), read from the event table a page at a time in the order of the
primary key, so that memory stays flat however many there are (``audit anchor``,
infrastructure/audit/stream_lines.py). A proposal's stream, one whose first event is a
``Proposed``, is anchored by its chain link instead (proposal_heads.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple
from uuid import UUID

from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import stored_topics

#: Events read at a time.
PAGE = 2_000


class StreamHeads:
    """The events of every stream that is no proposal's, as they stood at notification
    ``head``: ``(stream id, version, topic, state)`` in the order of the ids, then versions."""

    def __init__(self, sql: SqlDatabase, head: int) -> None:
        self.sql = sql
        self.head = head
        self.page = PAGE
        postgres = sql.is_postgres
        self.table = POSTGRES_EVENTS if postgres else SQLITE_EVENTS
        position = "notification_id" if postgres else "rowid"
        self.topics = stored_topics(Proposal, ["Proposed"])
        # A stream whose first event is a ``Proposed`` is a proposal's; the lookup is by the
        # primary key, per row (a stream without a first event is no proposal's, and kept).
        self._where = (
            f"e.{position} <= ? AND COALESCE((SELECT p.topic FROM {self.table} p "
            "WHERE p.originator_id = e.originator_id AND p.originator_version = 1), '') "
            f"NOT IN ({', '.join('?' for _ in self.topics)}) "
        )

    def _id(self, value: UUID) -> object:
        return value if self.sql.is_postgres else value.hex

    def events(self) -> Iterator[tuple[UUID, int, str, object]]:
        after: tuple[UUID, int] | None = None
        while True:
            since = "" if after is None else "AND (e.originator_id, e.originator_version) > (?, ?) "
            more = [] if after is None else [self._id(after[0]), after[1]]
            with self.sql.reading() as cursor:
                rows = cursor.execute(
                    "SELECT e.originator_id, e.originator_version, e.topic, e.state "
                    f"FROM {self.table} e WHERE {self._where}{since}"
                    f"ORDER BY e.originator_id, e.originator_version LIMIT {self.page}",
                    [self.head, *self.topics, *more],
                ).fetchall()
            for raw_id, version, topic, state in rows:
                after = (UUID(str(raw_id)), int(version))
                yield after[0], after[1], str(topic), state
            if len(rows) < self.page:
                return


class StoredRow(NamedTuple):
    """An event as stored: its topic and state."""

    topic: str
    state: object


def events_of(sql: SqlDatabase, stream_ids: list[UUID]) -> dict[UUID, dict[int, StoredRow]]:
    """Every stored event of these streams, by stream and version (a stream with none is
    absent), in one statement."""
    if not stream_ids:
        return {}
    table = POSTGRES_EVENTS if sql.is_postgres else SQLITE_EVENTS
    keys = [i if sql.is_postgres else i.hex for i in stream_ids]
    with sql.reading() as cursor:
        rows = cursor.execute(
            f"SELECT originator_id, originator_version, topic, state FROM {table} "
            f"WHERE originator_id IN ({', '.join('?' for _ in keys)})",
            keys,
        ).fetchall()
    found: dict[UUID, dict[int, StoredRow]] = {}
    for raw_id, version, topic, state in rows:
        if type(version) is not int or version < 1:
            # No place in its stream ('x', 1.5: stored_keys.py): the stream shows a gap or a
            # change there, and ``audit verify`` names the event by its log position.
            continue
        found.setdefault(UUID(str(raw_id)), {})[version] = StoredRow(str(topic), state)
    return found
