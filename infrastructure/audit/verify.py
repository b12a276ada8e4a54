"""``countersign audit verify``: prove that no stored proposal event was altered or removed.

Every proposal event carries ``chain = SHA-256(previous link, version, type, fields)``. The
verifier re-derives each link from the stored content, checks versions run 1, 2, 3… without a
gap, and cross-checks the audit trail's copy of every link, which also reveals a removed last
event. It replays each stream as a read would (the envelope, an event's time, is outside the
links), and reads the whole log for an event whose topic countersign does not read (it would
drop out of every read, and out of a check that found proposals by their topics). It reports
the first broken link it finds, in log order, naming its version.

An approval signed with a passkey is verified again from the event stream alone: its
signature against the public key the approver's ``PasskeyRegistered`` event holds (removed
passkeys included), and its challenge against this proposal's contract digest, id and
approver (``assertion_problem``). A proposal whose assertion does not hold is named like a
broken link.

With seal keys (``COUNTERSIGN_SEAL_KEYS``), each proposal's seal is checked against the first
link, and each later event's seal against its own link, once the chain holds (``seals.py``):
a proposal without one (made before keys were configured, or its seal removed) is counted
and listed as unsealed, and one whose seal, or an event's, is under a key not held, or is not
its link's, or an event without one after a sealed one, as badly sealed, which fails the
check.

Nothing in the database says which event was a stream's last: with an anchor kept outside it
(``audit verify --anchor``, ``anchor.py``), each anchored proposal must still have its
anchored last event, and one removed, cut back or rewritten fails the check (``anchor``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from countersign.domain.club.passkeys import PasskeyRing
from countersign.domain.hash_chain import chain_link
from countersign.domain.proposal import Proposal
from countersign.domain.seals import SealKeys
from countersign.infrastructure.audit.anchor_check import AnchorReport
from countersign.infrastructure.audit.seals import SealReport
from countersign.infrastructure.audit.snapshot_check import SnapshotReport, check_snapshots
from countersign.infrastructure.identity.passkeys import assertion_problem
from countersign.infrastructure.persistence import stored_keys
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.presence import POSTGRES_EVENTS, SQLITE_EVENTS
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.stored_events import (
    applied,
    stored_topics,
    topic_allowed,
    written_fields,
)

#: What a link does not cover of an event's stored state (its seal is outside the link it
#: seals, as the link is).
_ENVELOPE = {
    "originator_id",
    "originator_version",
    "timestamp",
    "originator_topic",
    "chain",
    "seal",
}


@dataclass
class VerifyReport:
    """What ``audit verify`` found."""

    proposals: int = 0
    events: int = 0
    #: Events whose link was made before events' times were linked: their fields are proved,
    #: their times are not (hash_chain.py).
    times_unlinked: int = 0
    #: Streams that are no proposal's, of topics countersign does not read, by package (a
    #: plug-in's aggregates while it is not enabled): not checked, said.
    unread: dict[str, int] = field(default_factory=dict)
    broken: list[dict[str, Any]] = field(default_factory=list)
    #: Stored events whose key is no key (stored_keys.py), in the log's order: in no stream.
    malformed: list[dict[str, Any]] = field(default_factory=list)
    #: What the seals showed, with seal keys configured (None: not checked).
    seals: SealReport | None = None
    #: What the store showed against an anchor (``--anchor``; None: none given).
    anchor: AnchorReport | None = None
    #: The stored snapshots against their events (snapshot_check.py; None: not checked).
    snapshots: SnapshotReport | None = None

    @property
    def ok(self) -> bool:
        return (
            not self.broken
            and not self.malformed
            and (self.seals is None or self.seals.ok)
            and (self.anchor is None or self.anchor.ok)
            and (self.snapshots is None or self.snapshots.ok)
        )

    def to_json(self) -> dict[str, Any]:
        seals = {} if self.seals is None else {"seals": self.seals.to_json()}
        if self.anchor is not None:
            seals["anchor"] = self.anchor.to_json()
        if self.snapshots is not None:
            seals["snapshots"] = self.snapshots.to_json()
        return {
            "ok": self.ok,
            "proposals_checked": self.proposals,
            "events_checked": self.events,
            "events_with_unlinked_times": self.times_unlinked,
            "streams_not_read": dict(sorted(self.unread.items())),
            "first_broken_link": self.broken[0] if self.broken else None,
            "broken_proposals": len({b["proposal_id"] for b in self.broken}),
            # Each broken proposal's first broken link, in the log's order (the first
            # ``LISTED``: a store broken throughout would otherwise be a document as large).
            "broken_links": self.broken[:LISTED],
            # Events in no stream (or at no place in one): each's log position (``LISTED``).
            "malformed_keys": self.malformed[:LISTED],
            "malformed_key_count": len(self.malformed),
            **seals,
        }


#: Every problem a broken link can have, by the ``code`` its ``broken_links`` entry carries:
#: the English ``problem`` --json words it with, ``{error}`` the class of the error met (the
#: entry's ``error``). The terminal words each code in both languages (cli/audit_words.py).
PROBLEMS: dict[str, str] = {
    "events_unreadable": "stored events are unreadable ({error})",
    "event_unreadable": "stored event is unreadable ({error})",
    "version_gap": "event removed (version gap)",
    # A link that is neither its event's nor an older link of its fields.
    "link_mismatch": "content or time does not match its hash-chain link",
    "audit_copy_differs": "link differs from the audit trail's copy",
    "audited_event_missing": "event removed (audited, now missing)",
    "event_does_not_replay": "stored event does not replay ({error})",
    "passkey_missing": "approved without the passkey its policy required",
    "passkey_registered_after": "approved with a passkey registered only after the approval",
    "passkey_other_membership": "approved with a passkey registered during another membership",
    # A stored assertion that does not verify (identity/passkeys.py ``AssertionProblem``).
    "passkey_not_registered": "approved with a passkey the approver never registered",
    "assertion_unreadable": "the passkey assertion is unreadable",
    "assertion_not_bound": "the passkey assertion does not bind this proposal's digest",
    "signature_invalid": "the passkey signature does not verify against the registered key",
    # A stored event's key that is no key (``malformed_keys``: stored_keys.py), at ``{position}``
    # of the log, its stored value ``{value}`` shown safely.
    "originator_id_malformed": "the stored event at log position {position} has a stream id "
    "that is not a UUID ({value})",
    "originator_version_malformed": "the stored event at log position {position} has a "
    "version that is not a whole number from 1 ({value})",
}

#: How many broken proposals a report names (``VerifyReport.to_json``).
LISTED = 100


def verify(
    app: CountersignApplication,
    sql: SqlDatabase,
    progress: Callable[[int], None] | None = None,
    seals: SealKeys | None = None,
    *,
    require_seals: bool = False,
    snapshots_progress: Callable[[int], None] | None = None,
) -> VerifyReport:
    """Check every proposal's stream; with ``seals``, every proposal's seal too (with
    ``require_seals``, a proposal without one fails the check); then the stored snapshots
    (``snapshots_progress`` told of each read)."""
    report = VerifyReport(
        seals=None if seals is None else SealReport(seals, required=require_seals)
    )
    trail = AuditedLinks(sql)
    for proposal_id in _proposal_ids(app, sql, trail.proposal_ids(), report):
        report.proposals += 1
        problem = _check(app, proposal_id, trail.links(proposal_id), report)
        if problem is not None:
            report.broken.append({"proposal_id": str(proposal_id), **problem})
        if progress is not None:
            progress(1)
    report.snapshots = check_snapshots(app, sql, snapshots_progress)
    return report


def _check(
    app: CountersignApplication,
    proposal_id: UUID,
    audited: dict[int, str],
    report: VerifyReport,
) -> dict[str, Any] | None:
    try:
        stored_events = list(app.recorder.select_events(proposal_id))
    except Exception as error:
        return _broken(None, "events_unreadable", error=_name(error))
    events = []
    for record in stored_events:
        # Each read by the mapper (its guards refuse a foreign topic or a future version),
        # and hashed as it was written: an upcaster's fields were not there to be linked.
        try:
            events.append((app.mapper.to_domain_event(record), written_fields(app.mapper, record)))
        except Exception as error:
            return _broken(record.originator_version, "event_unreadable", error=_name(error))
    previous = ""
    for expected_version, (event, written) in enumerate(events, start=1):
        report.events += 1
        version = event.originator_version
        if version != expected_version:
            return _broken(expected_version, "version_gap")
        fields = _linked_fields(type(event).__name__, written)
        stored = written.get("chain")
        link = _link(previous, version, type(event).__name__, fields, written, report)
        if link is None:
            return _broken(version, "link_mismatch")
        if version in audited and audited[version] != stored:
            return _broken(version, "audit_copy_differs")
        if report.seals is not None:  # the proposal's seal, then each event's (seals.py)
            report.seals.check_link(proposal_id, version, type(event).__name__, link, written)
        previous = link
        if type(event).__name__ == "Approved":
            problem = _approval_problem(app, events[0][1], proposal_id, written)
            if problem is not None:
                return _broken(version, problem)
    if audited and max(audited) > len(events):
        return _broken(len(events) + 1, "audited_event_missing")
    return _replay_problem(events)


def _linked_fields(event_type: str, written: dict[str, Any]) -> dict[str, Any]:
    """What an event's link covers of its stored state: its fields without the envelope, and
    a ``Proposed`` event's without its id. No event's seal: it is outside the link it seals."""
    fields = {k: v for k, v in written.items() if k not in _ENVELOPE}
    if event_type == "Proposed":
        fields.pop("id", None)
    return fields


def _link(
    previous: str,
    version: int,
    event_type: str,
    fields: dict[str, Any],
    written: dict[str, Any],
    report: VerifyReport,
) -> str | None:
    """The stored link of an event if it is the link of its fields and time, or of its fields
    alone (a link made before events' times were linked: counted, the time not proved);
    None if it is neither."""
    stored: str | None = written.get("chain")
    at = written.get("timestamp")  # a stream without it does not replay (``_replay_problem``)
    if at is not None and stored == chain_link(previous, version, event_type, fields, at):
        return stored
    if stored == chain_link(previous, version, event_type, fields):
        report.times_unlinked += 1
        return stored
    return None


def _replay_problem(events: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any] | None:
    """Where the stream, every link holding, still does not make a proposal as a read of it
    would (its envelope, which the chain does not cover, edited: a time removed): the first
    event that does not apply, or None."""
    aggregate = None
    for event, _ in events:
        try:
            aggregate = applied(None, aggregate, event)  # of its own aggregate, as a read
        except Exception as error:
            return _broken(event.originator_version, "event_does_not_replay", error=_name(error))
    return None


def _name(error: BaseException) -> str:
    return type(error).__name__


def _broken(version: int | None, code: str, **fields: str) -> dict[str, Any]:
    """A proposal's first broken link: its version, the problem's code and the fields its
    words need, and the problem in English (``PROBLEMS``)."""
    return {"version": version, "code": code, **fields, "problem": PROBLEMS[code].format(**fields)}


def _approval_problem(
    app: CountersignApplication,
    proposed: dict[str, Any],
    proposal_id: UUID,
    approved: dict[str, Any],
) -> str | None:
    """Why an approval does not hold as the proposal's frozen policy asked, or None: where
    the policy required a passkey, the approval must carry an assertion, and an assertion
    must verify against a key the approver registered before approving, during the
    membership that approved. The problem is its code (``PROBLEMS``)."""
    assertion = approved.get("passkey")
    if not assertion:
        if (proposed.get("policy") or {}).get("require_passkey"):
            return "passkey_missing"
        return None
    registered = _ring_keys(app, proposed, approved)
    entry = registered.get(str(assertion.get("credential_id")))
    if entry is not None and not _before(entry.get("registered_at"), approved.get("approved_at")):
        return "passkey_registered_after"
    membership = approved.get("membership_id")
    if entry is not None and membership is not None and entry.get("membership_id") != membership:
        return "passkey_other_membership"
    return assertion_problem(
        assertion,
        registered=registered,
        digest=str(proposed.get("digest")),
        proposal_id=str(proposal_id),
        approver=str(approved.get("approved_by")),
    )


def _ring_keys(
    app: CountersignApplication, proposed: dict[str, Any], approved: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Every key the approver's ring ever held in this club, removed ones included."""
    try:
        ring_id = PasskeyRing.create_id(
            UUID(str(proposed["organization_id"])), str(approved.get("approved_by"))
        )
        ring: object = app.repository.get(ring_id)
    except Exception:
        return {}
    return dict(ring.registered) if isinstance(ring, PasskeyRing) else {}


def _before(registered_at: Any, approved_at: Any) -> bool:
    try:
        return bool(registered_at <= approved_at)
    except TypeError:  # a missing time proves nothing
        return False


def _proposal_ids(
    app: CountersignApplication, sql: SqlDatabase, audited: list[str], report: VerifyReport
) -> Iterator[UUID]:
    """Every proposal in the log, and the stream of every event whose topic countersign does
    not read where that stream is a proposal's: one event of it has a proposal's topic, or the
    audit trail recorded it as a proposal, or its first event is shaped as a proposal's
    (``_proposal_shaped``). Such an event is reported unreadable, never
    skipped, since a proposal's own event given a foreign topic would otherwise drop out of
    every read and of this check alike. A stream none of whose events is a proposal's and
    that the trail never saw as one (a plug-in's own aggregate, the plug-in no longer
    enabled) is no proposal: it is counted, by the package of its topic, not checked."""
    seen: set[UUID] = set()
    #: Streams of topics countersign does not read, not (yet) known to be a proposal's:
    #: id -> the package of the first such topic.
    foreign: dict[UUID, str] = {}
    proposals = tuple(topic.rpartition(".")[0] + "." for topic in stored_topics(Proposal, ["x"]))
    start = 1
    while True:
        batch = _log_page(sql, start, 1000, report)
        for _position, originator_id, topic in batch:
            is_proposal = topic.startswith(proposals)
            if originator_id is None or (not is_proposal and topic_allowed(topic)):
                continue  # no stream's (listed as malformed), or not one to check
            stream_id = originator_id
            if stream_id in seen:
                continue
            if is_proposal:
                foreign.pop(stream_id, None)
                seen.add(stream_id)
                yield stream_id
            elif stream_id not in foreign:
                foreign[stream_id] = topic.partition(":")[0]
        if not batch:
            break
        start = batch[-1][0] + 1
    trail = set(audited)
    for stream_id, package in foreign.items():
        if str(stream_id) in trail or _proposal_shaped(app, stream_id):
            seen.add(stream_id)
            yield stream_id
        else:
            report.unread[package] = report.unread.get(package, 0) + 1
    for audited_id in sorted(audited):
        if UUID(audited_id) not in seen:
            yield UUID(audited_id)


def _log_page(
    sql: SqlDatabase, start: int, limit: int, report: VerifyReport
) -> list[tuple[int, UUID | None, str]]:
    """The log from position ``start``: each event's position, stream and topic, never its
    state (one a writer emptied would stop the library's read of the whole page here; the
    stream's own check names it). An event whose key is no key is listed in ``report``
    (its stream None where its id is no UUID: it is in no stream)."""
    table = POSTGRES_EVENTS if sql.is_postgres else SQLITE_EVENTS
    at = "notification_id" if sql.is_postgres else "rowid"
    with sql.reading() as cursor:
        rows = cursor.execute(
            f"SELECT {at}, originator_id, originator_version, topic FROM {table} "
            f"WHERE {at} >= ? ORDER BY {at} LIMIT {int(limit)}",
            (start,),
        ).fetchall()
    page: list[tuple[int, UUID | None, str]] = []
    for raw_at, raw_id, raw_version, topic in rows:
        position, stream = int(raw_at), None
        try:
            stream = stored_keys.stream_id(raw_id, position)
            stored_keys.version(raw_version, position)
        except stored_keys.StoredKeyError as malformed:
            fields = {"position": str(position), "value": malformed.value}
            report.malformed.append(
                {
                    "log_position": position,
                    "code": malformed.code,
                    "value": malformed.value,
                    "problem": PROBLEMS[malformed.code].format(**fields),
                }
            )
        page.append((position, stream, str(topic)))
    return page


def _proposal_shaped(app: CountersignApplication, stream_id: UUID) -> bool:
    """Whether a stream of a topic countersign does not read opens as a proposal does: its
    first event's state holds a contract digest and a chain link, which only ``Proposed``
    writes (a proposal given a foreign topic, where a plug-in's aggregate has neither). Its
    JSON is read, no class of it made."""
    try:
        first = next(iter(app.recorder.select_events(stream_id, limit=1)), None)
        state = written_fields(app.mapper, first) if first is not None else {}
    except Exception:
        return True  # not even its JSON reads: checked, and reported unreadable
    return "chain" in state and "digest" in state


class AuditedLinks:
    """The audit trail's copy of every link, read per proposal so memory stays flat."""

    def __init__(self, sql: SqlDatabase) -> None:
        self.sql = sql
        self.available = True
        try:
            with sql.transaction() as cursor:
                cursor.execute("SELECT 1 FROM audit_events WHERE 1 = 0")
        except Exception:
            self.available = False  # no audit trail yet: the chain alone is checked

    def proposal_ids(self) -> list[str]:
        if not self.available:
            return []
        with self.sql.transaction() as cursor:
            rows = cursor.execute("SELECT DISTINCT proposal_id FROM audit_events").fetchall()
        return [str(row[0]) for row in rows]

    def links(self, proposal_id: UUID) -> dict[int, str]:
        if not self.available:
            return {}
        with self.sql.transaction() as cursor:
            rows = cursor.execute(
                "SELECT version, chain FROM audit_events WHERE proposal_id = ?", (str(proposal_id),)
            ).fetchall()
        # A copy of a version that is no whole number (SQLite's column holds one a writer put
        # there) is no link's: the event's own is checked, and its key named (malformed_keys).
        return {version: str(chain) for version, chain in rows if type(version) is int}
