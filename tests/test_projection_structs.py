"""Projections read events decoded by msgspec into structs (log_structs.py): every field a
projection reads, and every field the mapper's event holds, must be the mapper's, for every
event type, and anything msgspec would read otherwise must take the long way (orjson's
decoder, then the mapper: its upcasts, its guards, its errors)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import msgspec
import pytest
from countersign.infrastructure.persistence.event_structs import event_struct
from countersign.infrastructure.persistence.log_decoder import ProjectionDecoder
from countersign.infrastructure.persistence.log_structs import StructDecoder
from countersign.infrastructure.persistence.recorders import LogEntry
from countersign.infrastructure.projection_engine.together import rebuild_together

from tests.test_projection_events import _as_notification, _Recording
from tests.test_projections import lifecycle_history, snapshot

PROPOSED = "countersign.domain.proposal:Proposal.Proposed"
APPROVED = "countersign.domain.proposal:Proposal.Approved"


def all_entries(cs: Any) -> list[LogEntry]:
    entries: list[LogEntry] = []
    while batch := cs.app.recorder.select_log(entries[-1].id if entries else 0, 500):
        entries.extend(batch)
    return entries


# The mapper's view of a log entry, and a mapper that counts its decodes: the same helpers
# the orjson decoder's agreement test uses.
as_notification = _as_notification
Recording = _Recording


def reads_alike(fast: Any, slow: Any, names: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """``fast`` reads as ``slow``: its class's names, and every field ``slow`` holds and every
    name in ``names`` (what projections read), of the same value and type (a UUID's other
    slot too), absent where ``slow``'s is."""
    assert (type(fast).__name__, type(fast).__qualname__) == (
        type(slow).__name__,
        type(slow).__qualname__,
    )
    missing = object()
    for name in sorted(set(vars(slow)) | names):
        mine, theirs = getattr(fast, name, missing), getattr(slow, name, missing)
        assert (name, mine, type(mine)) == (name, theirs, type(theirs))
        if isinstance(theirs, UUID):
            assert (name, mine.is_safe) == (name, theirs.is_safe)


@contextlib.contextmanager
def projections_reads(topics: dict[str, type]) -> Iterator[dict[str, set[str]]]:
    """Per topic, the names projections read of its events (of the classes ``topics`` maps
    them to), recorded by each class's ``__getattribute__`` while the block runs."""
    read: dict[str, set[str]] = {}
    generic = object.__getattribute__
    for topic, cls in topics.items():
        names = read.setdefault(topic, set())

        def recording(self: Any, name: str, names: set[str] = names) -> Any:
            if not name.startswith("__"):  # the mapper's own read of ``__dict__``
                names.add(name)
            return generic(self, name)

        cls.__getattribute__ = recording  # type: ignore[method-assign,assignment]
    try:
        yield read
    finally:
        for cls in topics.values():
            del cls.__getattribute__  # type: ignore[misc]


def _by_the_mapper(self: ProjectionDecoder, entry: Any) -> Any:
    return self.mapper.to_domain_event(as_notification(entry))


def test_every_event_type_reads_as_the_mappers_event_in_every_field_projections_read(
    cs, seeded, clock, monkeypatch
):
    lifecycle_history(cs, seeded, clock)
    entries = all_entries(cs)
    slow = [cs.app.mapper.to_domain_event(as_notification(entry)) for entry in entries]
    topics = {entry.topic: type(event) for entry, event in zip(entries, slow, strict=True)}
    # What projections read of each event type: recorded on the mapper's events, which
    # every projection rebuilds from once here.
    with monkeypatch.context() as patched:
        patched.setattr(StructDecoder, "decode", _by_the_mapper)
        with projections_reads(topics) as read:
            rebuild_together(cs.projection_runners())
    assert read[PROPOSED] >= {"organization_id", "expires_at", "policy", "timestamp"}

    recording = Recording(cs.app.mapper)
    decode = StructDecoder(recording)  # type: ignore[arg-type]
    structs = 0
    for entry, event in zip(entries, slow, strict=True):
        fast = decode(entry)
        reads_alike(fast, event, read.get(entry.topic, set()))
        structs += isinstance(fast, msgspec.Struct)
    # Every event of the history went the struct's way: none to the mapper, none to orjson's
    # decoder (whose events are the mapper's classes).
    assert (structs, recording.calls) == (len(entries), 0)
    assert {t.rpartition(".")[2] for t in topics} >= {
        "Superseded",
        "ApprovalPolicySet",
        "Proposed",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
        "RevisionRequired",
        "Reconciling",
        "Declined",
    }


def _stored(cs, seeded, topic: str = PROPOSED) -> dict[str, Any]:
    from tests.support.proposing import propose_on

    proposal = propose_on(cs, seeded["orders"]["refund-ok"])
    if topic == APPROVED:
        cs.proposals.approve(proposal, "ava@granite.example")
    entry = next(e for e in all_entries(cs) if e.topic == topic)
    stored: dict[str, Any] = json.loads(entry.state)
    return stored


def _entry(state: dict[str, Any], topic: str = PROPOSED) -> LogEntry:
    return LogEntry(1, uuid4().hex, 1, topic, json.dumps(state, ensure_ascii=False).encode())


def _decoded_both_ways(cs, entry: LogEntry) -> tuple[Any, Any, int]:
    """The struct decoder's event, the mapper's (or the error each raised) and how many
    events the struct decoder asked the mapper for."""
    recording = Recording(cs.app.mapper)
    try:
        slow: Any = cs.app.mapper.to_domain_event(as_notification(entry))
    except Exception as error:
        slow = error
    try:
        fast: Any = StructDecoder(recording)(entry)  # type: ignore[arg-type]
    except Exception as error:
        fast = error
    return fast, slow, recording.calls


WHEN = {"_type_": "datetime_iso", "_data_": "2026-11-30T09:00:00+00:00"}


#: (topic, change to its stored state, whether msgspec reads it: True, False, or either)
CHANGES: list[tuple[str, Any, bool | None, str]] = [
    (PROPOSED, lambda s: {**s, "preview": {"when": WHEN}}, False, "a time below the top level"),
    (PROPOSED, lambda s: {**s, "seal": {"key_id": "k", "mac": "m"}}, True, "a seal stored"),
    (PROPOSED, lambda s: {**s, "unknown": 1}, False, "a field the class does not declare"),
    (PROPOSED, lambda s: {k: v for k, v in s.items() if k != "origin"}, False, "one missing"),
    (PROPOSED, lambda s: {**s, "expires_at": 5}, False, "a time stored as a number"),
    (PROPOSED, lambda s: {**s, "expires_at": "soon"}, True, "a time stored as text"),
    (
        PROPOSED,
        lambda s: {**s, "expires_at": {**WHEN, "_data_": "2026-11-30T09:00:00.1234569+00:00"}},
        None,
        "a fraction of seven digits, which fromisoformat cuts (msgspec would round it)",
    ),
    (PROPOSED, lambda s: {**s, "contract_version": 2**70}, None, "an integer past 64 bits"),
    (PROPOSED, lambda s: {**s, "class_version": 3}, False, "a version from a newer release"),
    (PROPOSED, lambda s: {**s, "class_version": 1}, False, "an older version: upcast"),
    (PROPOSED, lambda s: {**s, "contract_version": float("nan")}, False, "NaN"),
    (
        PROPOSED,
        lambda s: {**s, "expires_at": {**WHEN, "_type_": "no_such_type"}},
        False,
        "an unknown transcoding",
    ),
    (APPROVED, lambda s: {**s, "seal": None}, None, "the unsealed version with a null seal"),
    (
        APPROVED,
        lambda s: {**s, "seal": {"key_id": "k", "mac": "m"}},
        False,
        "a seal at the unsealed version",
    ),
    (APPROVED, lambda s: {**s, "class_version": 4, "seal": {"key_id": "k"}}, True, "sealed"),
]


@pytest.mark.parametrize(("topic", "change", "struct", "why"), CHANGES)
def test_what_the_struct_cannot_read_as_the_mapper_takes_the_long_way(
    cs, seeded, topic, change, struct, why
):
    fast, slow, calls = _decoded_both_ways(cs, _entry(change(_stored(cs, seeded, topic)), topic))
    if isinstance(slow, Exception):
        assert (type(fast), calls) == (type(slow), 1), why
        return
    reads_alike(fast, slow)
    if struct is not None:
        assert isinstance(fast, msgspec.Struct) is struct, why


def test_an_escaped_key_takes_the_long_way_and_agrees_with_the_mapper(cs, seeded):
    state = _stored(cs, seeded)
    raw = json.dumps({**state, "preview": {"when": WHEN}}, separators=(",", ":")).encode()
    escaped = raw.replace(b'"_type_":"datetime_iso"', b'"\\u005ftype_":"datetime_iso"', 1)
    assert escaped != raw
    fast, slow, _ = _decoded_both_ways(cs, LogEntry(1, uuid4().hex, 1, PROPOSED, escaped))
    assert not isinstance(fast, msgspec.Struct)
    assert fast.preview["when"] == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    reads_alike(fast, slow)


def test_the_projections_rows_are_the_same_whichever_way_events_are_decoded(
    cs, seeded, clock, monkeypatch
):
    """End to end: a history of every event type rebuilt together with the structs stores
    exactly the rows it stores with orjson's decoder, and with the mapper's events."""
    lifecycle_history(cs, seeded, clock)
    rebuild_together(cs.projection_runners())
    structs = snapshot(cs)
    assert sum(map(len, structs.values())) > 50
    monkeypatch.setattr(StructDecoder, "decode", ProjectionDecoder.decode)
    rebuild_together(cs.projection_runners())
    assert snapshot(cs) == structs
    monkeypatch.setattr(StructDecoder, "decode", _by_the_mapper)
    rebuild_together(cs.projection_runners())
    assert snapshot(cs) == structs


@dataclasses.dataclass(frozen=True)
class _Event:
    originator_id: UUID
    originator_version: int
    timestamp: datetime
    when: datetime | None
    note: str = "none"


@dataclasses.dataclass(frozen=True)
class _NamedAsTheStructs(_Event):
    stored_version: int = 0


@dataclasses.dataclass(frozen=True)
class _NamedAsTheVersion(_Event):
    class_version: int = 0


@dataclasses.dataclass(frozen=True)
class _Made(_Event):
    tags: list[str] = dataclasses.field(default_factory=list)


def test_a_class_whose_fields_a_struct_cannot_carry_gets_none_and_takes_the_long_way():
    made = event_struct(_Event)
    assert made is not None
    struct, transcoded = made
    assert (struct.__name__, struct.__qualname__, transcoded) == (
        "_Event",
        "_Event",
        ("timestamp", "when"),
    )
    event = msgspec.json.decode(b'{"timestamp": "t", "when": null}', type=struct)
    assert (event.timestamp, event.when, event.note, event.stored_version) == ("t", None, "none", 1)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"timestamp": "t", "when": null, "other": 1}', type=struct)
    for cls in (_NamedAsTheStructs, _NamedAsTheVersion, _Made):
        assert event_struct(cls) is None, cls
