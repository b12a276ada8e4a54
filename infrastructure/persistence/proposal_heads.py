"""Where every proposal's stream stood at a position of the notification log: its last event
at or before it (its version, its type, its chain link) and its club, read from the event
table a page at a time in the order of the proposals' ids, so that memory stays flat however
many there are (``audit anchor``, infrastructure/audit/anchor.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import (
    _UNREADABLE,
    _corrupt,
    stored_topics,
    written_fields,
)
from eventsourcing.persistence import PersistenceError, StoredEvent

#: Proposals read at a time.
PAGE = 500


class ProposalHeads:
    """The proposals as they stood at notification ``head``, from the event table, a page at
    a time in the order of their ids (memory stays flat however many there are)."""

    def __init__(self, sql: SqlDatabase, head: int) -> None:
        self.sql = sql
        self.head = head
        self.page = PAGE
        postgres = sql.is_postgres
        self.table = POSTGRES_EVENTS if postgres else SQLITE_EVENTS
        self.position = "notification_id" if postgres else "rowid"
        self.topics = stored_topics(Proposal, ["Proposed"])
        self._proposed = (
            f"p.originator_version = 1 AND p.{self.position} <= ? "
            f"AND p.topic IN ({', '.join('?' for _ in self.topics)})"
        )

    def _id(self, value: UUID) -> Any:
        return value if self.sql.is_postgres else value.hex

    def count(self) -> int:
        with self.sql.reading() as cursor:
            row = cursor.execute(
                f"SELECT COUNT(*) FROM {self.table} p WHERE {self._proposed}",
                (self.head, *self.topics),
            ).fetchone()
        return int(row[0]) if row else 0

    def entries(self, app: CountersignApplication) -> Iterator[dict[str, Any]]:
        """Each proposal's line of the anchor, in the order of their ids: a page of
        proposals, then their last events, in two statements (one joining the two took a
        plan that read the whole table for each page)."""
        after: UUID | None = None
        while True:
            since = "" if after is None else "AND p.originator_id > ? "
            params = [self.head, *self.topics, *([] if after is None else [self._id(after)])]
            with self.sql.reading() as cursor:
                proposals = cursor.execute(
                    f"SELECT p.originator_id, p.topic, p.state FROM {self.table} p "
                    f"WHERE {self._proposed} {since}"
                    f"ORDER BY p.originator_id LIMIT {self.page}",
                    params,
                ).fetchall()
                lasts = self._lasts(cursor, [UUID(str(row[0])) for row in proposals])
            for raw_id, proposed_topic, proposed in proposals:
                after = UUID(str(raw_id))
                found = lasts.get(after)
                if found is None:  # removed as it was read: the count tells (AnchorChangedError)
                    continue
                version, topic, _ = found
                organization, chain = _club_and_link(app, after, (proposed_topic, proposed), found)
                yield {
                    "proposal_id": str(after),
                    "organization_id": organization,
                    "version": version,
                    "event": _event_type(topic),
                    "chain": chain,
                }
            if len(proposals) < self.page:
                return

    def _lasts(self, cursor: Any, ids: list[UUID]) -> dict[UUID, tuple[int, str, Any]]:
        """The last event at or before the head of each of these proposals: its version,
        topic and state."""
        if not ids:
            return {}
        rows = cursor.execute(
            f"SELECT e.originator_id, e.originator_version, e.topic, e.state "
            f"FROM {self.table} e WHERE e.originator_id IN ({', '.join('?' for _ in ids)}) "
            f"AND e.originator_version = (SELECT MAX(m.originator_version) "
            f"FROM {self.table} m WHERE m.originator_id = e.originator_id "
            f"AND m.{self.position} <= ?)",
            [*(self._id(i) for i in ids), self.head],
        ).fetchall()
        return {UUID(str(r[0])): (int(r[1]), str(r[2]), r[3]) for r in rows}


def _club_and_link(
    app: CountersignApplication,
    proposal_id: UUID,
    proposed: tuple[str, Any],
    last: tuple[int, str, Any],
) -> tuple[str, str]:
    """The club its ``Proposed`` names and its last event's chain link; CorruptRecordError
    (what ``audit verify`` names) if either does not read, that link is not one, or its
    topic names no event class: an anchor holds only what its own check reads back."""
    version, topic, state = last
    try:
        first = _fields(app, proposal_id, 1, *proposed)
        chain = _fields(app, proposal_id, version, topic, state).get("chain")
        if not (isinstance(chain, str) and len(chain) == 64 and set(chain) <= _HEX):
            raise ValueError(f"event {version} holds no chain link")
        if not _event_type(topic).isidentifier():  # as anchor.py reads an event's name
            raise ValueError(f"event {version}'s topic names no event class")
    except PersistenceError:
        raise  # the database out of reach, not a record that is bad
    except _UNREADABLE as error:
        raise _corrupt([proposal_id], error, app) from None
    return str(first.get("organization_id")), chain


_HEX = frozenset("0123456789abcdef")


def _fields(
    app: CountersignApplication, proposal_id: UUID, version: int, topic: str, state: Any
) -> dict[str, Any]:
    return written_fields(
        app.mapper,
        StoredEvent(
            originator_id=proposal_id,
            originator_version=version,
            topic=topic,
            state=bytes(state),
        ),
    )


def _event_type(topic: str) -> str:
    return topic.rpartition(".")[2]
