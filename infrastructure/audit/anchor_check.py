"""What the store shows against an anchor ``read_anchor`` checked (``audit verify
--anchor``, anchor.py): each anchored proposal still has its anchored last link, and each
other stream (format 2) still holds each of its anchored events unchanged.

A proposal not as anchored is named removed (no stream), cut back (the events removed, from
which version) or rewritten (its link differs: changed, or cut back and made again, sealed or
not). Another stream is named at its first event not as anchored, by its version
(``stream_lines.StreamCheck``): removed, cut back, an event removed from its middle (a gap),
changed, or added where the anchor has none.

An event a writer puts in at a position of the log at or before the anchor's (a free one:
SQLite takes any rowid, PostgreSQL any notification id), appended to a stream or making a
new one, is in no anchored line and is not after the anchor either: the check counts the
events stored at or before its position, which must be no more than it holds
(``added_before``), and, only where they are more (or a stream is already not as anchored),
lists where they are (added_before.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.added_before import locate_added
from countersign.infrastructure.audit.anchor import LISTED, Anchor, entries
from countersign.infrastructure.audit.stream_lines import StreamCheck, StreamLine
from countersign.infrastructure.audit.unanchored import Unanchored
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import stored_topics, written_fields


@dataclass
class AnchorReport:
    """What the store showed against an anchor."""

    anchor: Anchor
    checked: int = 0
    #: The first ``LISTED`` proposals not as anchored, in the anchor's order.
    differences: list[dict[str, Any]] = field(default_factory=list)
    different: int = 0
    #: The other streams checked (format 2), and the first ``LISTED`` not as anchored.
    streams_checked: int = 0
    stream_differences: list[dict[str, Any]] = field(default_factory=list)
    streams_different: int = 0
    #: The events stored at or before its position beyond those it holds: written in since,
    #: at a position from before it (None: not counted, no SQL given).
    added_before: int | None = None
    #: Where they are (added_before.py): the first ``LISTED`` by log position.
    added_listed: list[dict[str, Any]] = field(default_factory=list)
    #: The proposals' events recorded after it, which it does not cover (unanchored.py).
    unanchored: Unanchored | None = None
    #: The other streams' events recorded after it (format 2; None for one of format 1).
    unanchored_streams: Unanchored | None = None

    @property
    def ok(self) -> bool:
        return (
            not self.different
            and not self.streams_different
            and not self.added_before
            and all(u is None or u.ok for u in (self.unanchored, self.unanchored_streams))
        )

    def to_json(self) -> dict[str, Any]:
        every = self.anchor.covers_every_stream
        return {
            "ok": self.ok,
            "format": self.anchor.format,
            # "every_stream": every stream at its position; "proposals_only": an anchor of
            # format 1, which holds no other stream (none of theirs was checked against it).
            "covers": "every_stream" if every else "proposals_only",
            "made_at": self.anchor.made_at,
            "log_position": self.anchor.log_position,
            "signed": self.anchor.signed,
            "key_id": self.anchor.key_id,
            # True: the sealing key; False: a retired key the key ring still lists.
            "key_current": self.anchor.key_current,
            "keys_configured": self.anchor.keys_configured,
            "anchored_proposals": self.anchor.proposals,
            "proposals_checked": self.checked,
            "not_as_anchored": self.different,
            "differences": self.differences,
            "anchored_streams": self.anchor.streams if every else None,
            "anchored_stream_events": self.anchor.stream_events if every else None,
            "streams_checked": self.streams_checked if every else None,
            "streams_not_as_anchored": self.streams_different,
            "stream_differences": self.stream_differences,
            "added_before_position": self.added_before,
            "added_before_events": self.added_listed,
            "unanchored": None if self.unanchored is None else self.unanchored.to_json(),
            "unanchored_streams": (
                None if self.unanchored_streams is None else self.unanchored_streams.to_json()
            ),
        }


def check_anchor(
    app: CountersignApplication,
    anchor: Anchor,
    progress: Callable[[int], None] | None = None,
    sql: SqlDatabase | None = None,
) -> AnchorReport:
    """Every anchored proposal and stream against the store as it is now (with ``sql``, the
    streams' events read ``HELD`` streams at a time); AnchorFileError if the file is no longer
    the one ``read_anchor`` checked."""
    report = AnchorReport(anchor)
    streams = StreamCheck(app, sql)
    batch: list[StreamLine] = []
    held = 0
    proposal_events = 0  # a proposal anchored at version v had v events at its position
    for entry in entries(anchor):
        if isinstance(entry, StreamLine):
            if not batch or batch[-1].stream_id != entry.stream_id:
                if held == HELD:
                    _check_streams(report, streams, batch)
                    held = 0
                held += 1
            batch.append(entry)
            continue
        proposal_id, organization, version, event, chain = entry
        report.checked += 1
        proposal_events += version
        difference = _difference(app, proposal_id, version, event, chain)
        if difference is not None:
            report.different += 1
            if len(report.differences) < LISTED:
                report.differences.append(
                    {"proposal_id": str(proposal_id), "organization_id": organization, **difference}
                )
        if progress is not None:
            progress(1)
    _check_streams(report, streams, batch)
    if sql is not None:
        held_events = proposal_events + anchor.stream_events
        stored = _stored_up_to(
            sql, anchor.log_position, proposals_only=not anchor.covers_every_stream
        )
        report.added_before = max(0, stored - held_events)
        if report.added_before or report.different or report.streams_different:
            # where they are: read only then (a removal can hide an addition from the count)
            added = locate_added(sql, anchor)
            report.added_before = max(report.added_before, added.count)
            report.added_listed = added.listed
    return report


def _stored_up_to(sql: SqlDatabase, position: int, *, proposals_only: bool) -> int:
    """How many events the store holds at or before ``position`` of the log (an anchor of
    format 1: of the proposals' streams alone, those whose first event is a ``Proposed``)."""
    table = POSTGRES_EVENTS if sql.is_postgres else SQLITE_EVENTS
    at = "notification_id" if sql.is_postgres else "rowid"
    topics = stored_topics(Proposal, ["Proposed"]) if proposals_only else []
    proposals = (
        f" AND (SELECT p.topic FROM {table} p WHERE p.originator_id = e.originator_id AND "
        f"p.originator_version = 1) IN ({', '.join('?' for _ in topics)})"
        if proposals_only
        else ""
    )
    with sql.reading() as cursor:
        row = cursor.execute(
            f"SELECT COUNT(*) FROM {table} e WHERE e.{at} <= ?{proposals}", [position, *topics]
        ).fetchone()
    return int(row[0]) if row else 0


#: Streams whose events are read in one statement.
HELD = 500


def _check_streams(report: AnchorReport, streams: StreamCheck, batch: list[StreamLine]) -> None:
    """Check these lines (whole streams), their events read at once; empty ``batch``."""
    streams.hold(list(dict.fromkeys(line.stream_id for line in batch)))
    last: UUID | None = None
    for line in batch:
        report.streams_checked += line.stream_id != last
        last = line.stream_id
        found = streams.difference(line)
        if found is not None:
            report.streams_different += 1
            if len(report.stream_differences) < LISTED:
                report.stream_differences.append(found)
    batch.clear()


def _difference(
    app: CountersignApplication, proposal_id: UUID, version: int, event: str, chain: str
) -> dict[str, Any] | None:
    """How a proposal's stream differs from its anchored last event, or None if it has it."""
    anchored = {"anchored_version": version, "anchored_event": event}
    at = list(app.recorder.select_events(proposal_id, gt=version - 1, limit=1))
    if at and at[0].originator_version == version:
        try:
            stored = written_fields(app.mapper, at[0]).get("chain")
        except Exception:
            stored = None  # unreadable: ``verify`` names it; here, not the anchored link
        if stored == chain:
            return None
        return {
            "problem": "rewritten",
            "stored_version": _last_version(app, proposal_id),
            **anchored,
            "text": f"rewritten: its link at version {version} ({event}) is not the anchored "
            "one (an event up to it was changed, or removed and made again)",
        }
    if at:  # its next event is later: the anchored one is gone from the middle
        return {
            "problem": "rewritten",
            "stored_version": _last_version(app, proposal_id),
            **anchored,
            "text": f"rewritten: its event {version} ({event}) is gone (the stream has a gap)",
        }
    last = _last_version(app, proposal_id)
    if last is None:
        return {
            "problem": "removed",
            "stored_version": None,
            **anchored,
            "text": f"removed: no stream (anchored at version {version}, {event})",
        }
    gone = f"event {version}" if last + 1 == version else f"events {last + 1} to {version}"
    return {
        "problem": "cut_back",
        "stored_version": last,
        "removed_from": last + 1,
        **anchored,
        "text": f"cut back: {gone} removed, the last anchored {event} (the stream now ends "
        f"at version {last})",
    }


def _last_version(app: CountersignApplication, proposal_id: UUID) -> int | None:
    last = list(app.recorder.select_events(proposal_id, desc=True, limit=1))
    return last[0].originator_version if last else None
