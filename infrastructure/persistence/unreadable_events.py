"""Which stored event of a damaged record does not read: found once a read failed, for the
operator, who is told its log position, its version, its topic and what is wrong with it (as
``audit verify`` codes it), never only that "a stored record" is damaged.

A read of an aggregate selects its events by stream and version, without their log positions
(the hot path's query stays as it is); when it fails, ``first_unreadable`` reads the streams
it asked for again, each event with its position, in log order, and checks them one by one
as a read does: its version a whole number from 1 and the next of its stream
(``stored_keys``), its state decoded by the mapper (its guards included), the event applied
to the ones before it. One query per stream, on the failure's path only, of its first
``MOST_EVENTS`` events; it never raises (a finder that fails finds nothing, and the failure
is answered as before)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from countersign.application.errors import UnreadableEvent
from countersign.infrastructure.persistence import stored_keys
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder

log = logging.getLogger("countersign.store")

#: The most streams a failed read's finder reads (a read of a whole club asks for many; the
#: first damaged one is what the operator needs, and ``audit verify`` names every one).
MOST_STREAMS = 50
#: The most events it reads of each: a page of a damaged record asked again and again must
#: not decode a long stream each time (past it, the error is answered as before).
MOST_EVENTS = 2000

#: What is wrong with the event, by ``UnreadableEvent.code``, in the log's English (the
#: command line words each code in English and French: cli/audit_words.py ``LINK_PROBLEMS``).
PROBLEMS = {
    "originator_version_malformed": "its version is not a whole number from 1",
    "version_gap": "the version before it is missing (version gap)",
    "event_unreadable": "it does not decode ({error})",
    "event_does_not_replay": "it does not apply to the events before it ({error})",
}

#: What the operator does about it, in the log's English: as ``audit verify`` and a stopped
#: projection say it (cli/key_words.py, projection_engine/stops.py).
WHAT_TO_DO = (
    "restore it from a backup (`countersign audit verify` names every damaged event); if it "
    "cannot be restored, `countersign projections skip {position} --reason TEXT` passes it "
    "in every projection, recorded"
)


def described(event: UnreadableEvent) -> str:
    """The event, what is wrong with it and what to do, in one line of the log's English."""
    problem = PROBLEMS[event.code].format(error=event.error)
    return (
        f"the stored event at log position {event.position} (version {event.version}, "
        f"{event.topic.rpartition(':')[2]} of {event.stream_id}) cannot be read: {problem} "
        f"[{event.code}]; " + WHAT_TO_DO.format(position=event.position)
    )


def first_unreadable(
    recorder: Any, mapper: Mapper[UUID] | None, stream_ids: Sequence[UUID]
) -> UnreadableEvent | None:
    """The first event of the first of ``stream_ids`` (``MOST_STREAMS`` of them) that does not
    read, or None; without a ``mapper``, only its key and place are checked."""
    for stream_id in list(dict.fromkeys(stream_ids))[:MOST_STREAMS]:
        try:
            found = _in_stream(recorder, mapper, stream_id)
        except Exception:  # on an error's path: finding nothing leaves the error as it was
            log.debug("the unreadable event of %s could not be found", stream_id, exc_info=True)
            return None
        if found is not None:
            return found
    return None


def _in_stream(
    recorder: Any, mapper: Mapper[UUID] | None, stream_id: UUID
) -> UnreadableEvent | None:
    from countersign.infrastructure.persistence.stored_events import applied

    aggregate: Any = None
    expected = 1
    for raw_position, raw_version, raw_topic, state in _rows(recorder, stream_id):
        position, topic = int(raw_position), str(raw_topic)
        at = (position, stream_id)
        try:
            version = stored_keys.version(raw_version, position)
        except stored_keys.StoredKeyError as malformed:
            return UnreadableEvent(*at, malformed.value, topic[:120], malformed.code)
        if version != expected:
            return UnreadableEvent(*at, str(version), topic[:120], "version_gap")
        expected += 1
        if mapper is None:
            continue
        stored = StoredEvent(stream_id, version, topic, b"" if state is None else bytes(state))
        try:
            event = mapper.to_domain_event(stored)
        except Exception as error:
            name = type(error).__name__
            return UnreadableEvent(*at, str(version), topic[:120], "event_unreadable", name)
        try:
            aggregate = applied(None, aggregate, event)
        except Exception as error:
            name = type(error).__name__
            return UnreadableEvent(*at, str(version), topic[:120], "event_does_not_replay", name)
    return None


def _rows(recorder: Any, stream_id: UUID) -> list[tuple[Any, ...]]:
    """The stream's events with their log positions, in log order."""
    from countersign.infrastructure.persistence.stored_events import _table_name

    table = _table_name(recorder)
    if isinstance(recorder, SQLiteAggregateRecorder):
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                f"SELECT rowid, originator_version, topic, state FROM {table} "
                f"WHERE originator_id = ? ORDER BY rowid LIMIT {MOST_EVENTS}",
                (stream_id.hex,),
            )
            return [tuple(row) for row in cursor.fetchall()]
    with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
        cursor.execute(
            f"SELECT notification_id, originator_version, topic, state FROM {table} "
            f"WHERE originator_id = %s ORDER BY notification_id LIMIT {MOST_EVENTS}",
            (stream_id,),
        )
        return [
            (r["notification_id"], r["originator_version"], r["topic"], r["state"])
            for r in cursor.fetchall()
        ]
