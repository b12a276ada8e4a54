"""The anchor's lines of the streams that are no proposal's (an anchor of format 2,
``anchor.py``), and what the store shows against them.

A proposal's stream is anchored by its last chain link, which covers every event before it.
No other stream has links, so its line carries its own: for each event, the SHA-256 of what
is stored of it (its stream, version, topic and state, byte for byte), and a running digest
over those of the stream up to it. A line holds up to ``CHUNK`` consecutive events of one
stream: ``{"stream_id", "kind", "from_version", "version", "event", "marks", "digest"}``,
``kind`` the aggregate's class and ``event`` the last event's (each as its topic names it),
``marks`` the first 8 hexadecimal digits of each event's hash, in order, and ``digest`` the
running digest at ``version``. The digest proves the events (a changed one cannot be made to
give it); the marks only say which event differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stream_heads import StoredRow, events_of

#: Events a line holds at most (its marks are 8 digits each: 2,048 of its 4,096 bytes).
CHUNK = 256
MARK = 8
_HEX = frozenset("0123456789abcdef")
_LABEL = b"countersign stream event\0"


def event_hash(stream_id: UUID, version: int, topic: str, state: object) -> str:
    """The SHA-256 of one stored event, as stored (a state a writer stored as text, which
    SQLite allows, is hashed as its UTF-8)."""
    digest = hashlib.sha256(_LABEL)
    digest.update(f"{stream_id.hex}\0{version}\0{topic}\0".encode())
    if isinstance(state, str):
        digest.update(b"text\0" + state.encode("utf-8", "surrogatepass"))
    elif isinstance(state, bytes | bytearray | memoryview):
        digest.update(bytes(state))
    else:  # a number or a null where a state belongs: hashed as what it is
        digest.update(f"{type(state).__name__}\0{state!r}".encode())
    return digest.hexdigest()


def running(previous: str, hashed: str) -> str:
    """The stream's digest after an event whose hash is ``hashed``."""
    return hashlib.sha256(f"{previous}:{hashed}".encode()).hexdigest()


def names(topic: str) -> tuple[str, str]:
    """The aggregate's class and the event's, as a topic (``module:Aggregate.Event``) names
    them; an empty one where it names none."""
    qualname = topic.partition(":")[2]
    kind, _, event = qualname.rpartition(".")
    return (kind.partition(".")[0], event) if kind else ("", qualname)


@dataclass
class StreamLine:
    """An anchored run of one stream's consecutive events."""

    stream_id: UUID
    kind: str
    from_version: int
    version: int
    event: str
    marks: str
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {
            "stream_id": str(self.stream_id),
            "kind": self.kind,
            "from_version": self.from_version,
            "version": self.version,
            "event": self.event,
            "marks": self.marks,
            "digest": self.digest,
        }


def stream_lines(events: Iterable[tuple[UUID, int, str, object]]) -> Iterator[StreamLine]:
    """The lines of these events (in the order of their streams, then versions): a stream's
    events up to ``CHUNK`` a line, a new line where a version is missing (a gap is anchored
    as it is)."""
    line: StreamLine | None = None
    digest, kind = "", ""
    for stream_id, version, topic, state in events:
        hashed = event_hash(stream_id, version, topic, state)
        fresh = line is None or line.stream_id != stream_id
        if fresh:
            digest, kind = "", _printable(names(topic)[0])
        digest = running(digest, hashed)
        following = line is not None and not fresh and line.version + 1 == version
        if line is not None and following and len(line.marks) < CHUNK * MARK:
            line.version, line.event, line.digest = version, _event(topic), digest
            line.marks += hashed[:MARK]
            continue
        if line is not None:
            yield line
        line = StreamLine(stream_id, kind, version, version, _event(topic), hashed[:MARK], digest)
    if line is not None:
        yield line


def _event(topic: str) -> str:
    return _printable(names(topic)[1])


def _printable(name: str) -> str:
    """A name as the anchor keeps it (an identifier, or ``?``): what is printed of it is never
    text of a writer's own."""
    return name if name.isidentifier() and len(name) <= 100 else "?"


def read_line(document: dict[str, Any] | None) -> StreamLine | None:
    """A stream's line as ``audit anchor`` writes it, or None."""
    if document is None:
        return None
    raw_id, kind, event = document.get("stream_id"), document.get("kind"), document.get("event")
    low, high = document.get("from_version"), document.get("version")
    marks, digest = document.get("marks"), document.get("digest")
    if not (
        isinstance(raw_id, str)
        and isinstance(kind, str)
        and isinstance(event, str)
        and _printable(kind) == kind
        and _printable(event) == event
        and type(low) is int
        and type(high) is int
        and 1 <= low <= high
        and high - low < CHUNK
        and isinstance(marks, str)
        and len(marks) == (high - low + 1) * MARK
        and set(marks) <= _HEX
        and isinstance(digest, str)
        and len(digest) == 64
        and set(digest) <= _HEX
    ):
        return None
    try:
        return StreamLine(UUID(raw_id), kind, low, high, event, marks, digest)
    except ValueError:
        return None


class StreamCheck:
    """Each anchored stream's lines against the store, in the anchor's order: the first
    difference of each stream, or None."""

    def __init__(self, app: CountersignApplication, sql: SqlDatabase | None = None) -> None:
        self.app = app
        self.sql = sql
        self._stream: UUID | None = None
        self._end = 0
        self._digest = ""
        self._differs = False
        #: The events of the streams ``hold`` read, by stream and version.
        self._held: dict[UUID, dict[int, StoredRow]] = {}

    def hold(self, stream_ids: list[UUID]) -> None:
        """Read these streams' events in one statement (with ``sql``; else each stream is
        read as its line is checked): on PostgreSQL a statement a stream took 12 s for
        16,000 streams, each a round trip."""
        if self.sql is not None:  # a stream with no event left is held as one
            self._held = {i: {} for i in stream_ids} | events_of(self.sql, stream_ids)

    def difference(self, line: StreamLine) -> dict[str, Any] | None:
        if line.stream_id != self._stream:
            self._stream, self._end, self._digest, self._differs = line.stream_id, 0, "", False
        if self._differs:  # its first difference is named; the rest follow from it
            return None
        held = self._held.get(line.stream_id)
        stored: dict[int, Any] = (
            {v: row for v, row in held.items() if self._end < v <= line.version}
            if held is not None
            else {
                record.originator_version: record
                for record in self.app.recorder.select_events(
                    line.stream_id, gt=self._end, lte=line.version
                )
            }
        )
        found = self._compare(line, stored)
        self._end = line.version
        self._differs = found is not None
        if found is None:
            return None
        return {"stream_id": str(line.stream_id), "kind": line.kind, **found}

    def _compare(self, line: StreamLine, stored: dict[int, Any]) -> dict[str, Any] | None:
        added = sorted(v for v in stored if v < line.from_version)
        if added:  # where the anchor has none (a gap it anchored): inserted there
            return self._said("added", added[0], line, stored)
        for version in range(line.from_version, line.version + 1):
            record = stored.get(version)
            if record is None:
                return self._missing(version, line)
            hashed = event_hash(line.stream_id, version, record.topic, record.state)
            self._digest = running(self._digest, hashed)
            at = (version - line.from_version) * MARK
            if hashed[:MARK] != line.marks[at : at + MARK]:
                return self._said("changed", version, line, stored)
        if self._digest != line.digest:  # its marks all equal: which one cannot be said
            return self._said("changed", line.version, line, stored, among=line.from_version)
        return None

    def _missing(self, version: int, line: StreamLine) -> dict[str, Any]:
        held = self._held.get(line.stream_id)
        if held is not None:  # its events whose version is one (events_of; stored_keys.py)
            stored_version = max(held, default=None)
        else:
            last = list(self.app.recorder.select_events(line.stream_id, desc=True, limit=1))
            stored_version = last[0].originator_version if last else None
        if stored_version is None:
            return {
                "problem": "removed",
                "version": version,
                "anchored_version": line.version,
                "stored_version": None,
            }
        problem = "cut_back" if stored_version < version else "gap"
        return {
            "problem": problem,
            "version": version,
            "anchored_version": line.version,
            "stored_version": stored_version,
        }

    def _said(
        self,
        problem: str,
        version: int,
        line: StreamLine,
        stored: dict[int, Any],
        among: int | None = None,
    ) -> dict[str, Any]:
        return {
            "problem": problem,
            "version": version,
            "stored_event": _event(str(stored[version].topic)),
            "anchored_version": line.version,
            **({} if among is None else {"from_version": among}),
        }
