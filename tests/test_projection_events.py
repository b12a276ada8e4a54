"""Projections decode events with orjson: the result must be the mapper's, event for event, and
anything unusual must take the mapper's own path (its upcasts, its guards, its errors)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence.log_decoder import (
    ProjectionDecoder,
    _dict_setter,
    _uuid_of,
)
from countersign.infrastructure.persistence.log_structs import StructDecoder
from countersign.infrastructure.persistence.recorders import LogEntry
from countersign.infrastructure.persistence.stored_events import UnreadableEventError
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from countersign.infrastructure.projection_engine.together import rebuild_together
from eventsourcing.persistence import JSONTranscoder, Notification

from tests.test_projections import lifecycle_history, snapshot

PROPOSED = "countersign.domain.proposal:Proposal.Proposed"


def _all_entries(cs) -> list[LogEntry]:
    entries: list[LogEntry] = []
    while batch := cs.app.recorder.select_log(entries[-1].id if entries else 0, 500):
        entries.extend(batch)
    return entries


def _same(fast: Any, slow: Any) -> None:
    assert type(fast) is type(slow)
    assert fast.__dict__ == slow.__dict__
    assert {k: type(v) for k, v in fast.__dict__.items()} == {
        k: type(v) for k, v in slow.__dict__.items()
    }
    # UUIDs compare by their number alone: their other slot too (the decoder sets both).
    assert {k: v.is_safe for k, v in fast.__dict__.items() if isinstance(v, UUID)} == {
        k: v.is_safe for k, v in slow.__dict__.items() if isinstance(v, UUID)
    }


def test_every_stored_event_decodes_exactly_as_the_mapper_decodes_it(cs, seeded, clock):
    lifecycle_history(cs, seeded, clock)
    decode = ProjectionDecoder(cs.app.mapper)
    entries = _all_entries(cs)
    notifications = cs.app.recorder.select_notifications(1, limit=len(entries) + 1)
    assert [n.id for n in notifications] == [e.id for e in entries]
    topics = set()
    for entry, notification in zip(entries, notifications, strict=True):
        slow = cs.app.mapper.to_domain_event(notification)
        _same(decode(entry), slow)
        _same(decode(notification), slow)
        topics.add(entry.topic)
    # The history covers every proposal outcome, supersession, a quorum's lone approval and
    # the club's own events, a policy change among them.
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
    assert any(t.startswith("countersign.domain.club") for t in topics)


def _entry(state: dict[str, Any] | bytes, topic: str = PROPOSED) -> LogEntry:
    raw = state if isinstance(state, bytes) else json.dumps(state).encode()
    return LogEntry(1, uuid4().hex, 1, topic, raw)


def _stored_proposed(cs, seeded) -> dict[str, Any]:
    from tests.support.proposing import propose_on

    propose_on(cs, seeded["orders"]["refund-ok"])
    entry = next(e for e in _all_entries(cs) if e.topic == PROPOSED)
    stored: dict[str, Any] = json.loads(entry.state)
    return stored


def test_transcoded_values_below_the_top_level_are_decoded_too(cs, seeded):
    state = _stored_proposed(cs, seeded)
    when = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    an_id = uuid4()
    state["preview"] = {
        **state["preview"],
        "when": {"_type_": "datetime_iso", "_data_": when.isoformat()},
        "ids": [{"_type_": "uuid_hex", "_data_": an_id.hex}],
    }
    decode = ProjectionDecoder(cs.app.mapper)
    entry = _entry(state)
    event = decode(entry)
    assert event.preview["when"] == when
    assert event.preview["ids"] == [an_id]
    _same(event, cs.app.mapper.to_domain_event(_as_notification(entry)))


def test_an_escaped_key_takes_the_mappers_path_and_agrees_with_it(cs, seeded):
    state = _stored_proposed(cs, seeded)
    nested = {"_type_": "datetime_iso", "_data_": "2026-11-30T09:00:00+00:00"}
    raw = json.dumps({**state, "preview": {"when": nested}}).encode()
    escaped = raw.replace(
        b'"_type_":"datetime_iso","_data_"', b'"\\u005ftype_":"datetime_iso","_data_"'
    )
    entry = _entry(escaped)
    event = ProjectionDecoder(cs.app.mapper)(entry)
    assert event.preview["when"] == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    _same(event, cs.app.mapper.to_domain_event(_as_notification(entry)))


def _as_notification(entry: LogEntry) -> Notification:
    return Notification(
        id=entry.id,
        originator_id=UUID(str(entry.originator_id)),
        originator_version=entry.originator_version,
        topic=entry.topic,
        state=entry.state,
    )


class _Recording:
    """The application's mapper, counting the events it was asked to decode."""

    def __init__(self, mapper: Any) -> None:
        self.mapper = mapper
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.mapper, name)

    def to_domain_event(self, notification: Any) -> Any:
        self.calls += 1
        return self.mapper.to_domain_event(notification)


def test_the_applications_own_events_never_need_the_mapper(cs, seeded, clock):
    """The fast path is the point of the decoder: with the application's own transcoder (which
    writes with orjson and reads as the library does) the events of a whole history are
    decoded without the mapper, but for those whose bytes hold what the fast path leaves to it
    (19 digits in a row, which a hex digest sometimes has, or an escape). A transcoder the
    decoder did not know sent every event there, and a rebuild decoded at half the speed
    without any test noticing."""
    assert FastJSONTranscoder.decode is JSONTranscoder.decode  # it reads as the library
    assert type(cs.app.mapper.transcoder) is FastJSONTranscoder
    lifecycle_history(cs, seeded, clock)
    recording = _Recording(cs.app.mapper)
    decode = ProjectionDecoder(recording)  # type: ignore[arg-type]
    entries = _all_entries(cs)
    for entry in entries:
        _same(decode(entry), cs.app.mapper.to_domain_event(_as_notification(entry)))
    left_to_the_mapper = [e for e in entries if re.search(rb"[0-9]{19}|\\u", e.state)]
    assert len(left_to_the_mapper) < len(entries) / 4
    assert recording.calls == len(left_to_the_mapper)


class _OtherTranscoder(FastJSONTranscoder):
    """A transcoder the decoder knows nothing about (it might read otherwise)."""


def test_a_transcoder_the_decoder_does_not_know_leaves_every_event_to_the_mapper(cs, seeded):
    state = _stored_proposed(cs, seeded)
    recording = _Recording(cs.app.mapper)
    recording.transcoder = _OtherTranscoder()
    decode = ProjectionDecoder(recording)  # type: ignore[arg-type]
    entry = _entry(state)
    _same(decode(entry), cs.app.mapper.to_domain_event(_as_notification(entry)))
    assert recording.calls == 1


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            lambda s: {**s, "class_version": Proposal.Proposed.class_version + 1},
            "a class version from a newer countersign",
        ),
        (lambda s: {**s, "contract_version": float("nan")}, "NaN, which orjson refuses"),
        (lambda s: {**s, "contract_version": 2**70}, "an integer past 64 bits"),
        (
            lambda s: {**s, "arguments": {"deep": [{"n": -(2**70)}], "x": 1}},
            "an integer past 64 bits below the top level",
        ),
        (
            lambda s: {**s, "preview": [1.5, {"n": 10**19}]},
            "an integer past 64 bits beside a float",
        ),
    ],
)
def test_what_orjson_or_the_fast_path_cannot_decode_goes_to_the_mapper(cs, seeded, change, why):
    state = change(_stored_proposed(cs, seeded))
    recording = _Recording(cs.app.mapper)
    decode = ProjectionDecoder(recording)  # type: ignore[arg-type]
    entry = _entry(json.dumps(state, ensure_ascii=False).encode())  # no escape decides it
    try:
        expected: Any = cs.app.mapper.to_domain_event(_as_notification(entry))
    except Exception as error:
        expected = error
    if isinstance(expected, Exception):
        with pytest.raises(type(expected)):
            decode(entry)
    else:
        _same(decode(entry), expected)
    assert recording.calls == 1, why


def test_forbidden_topics_and_unknown_transcodings_fail_as_the_mapper_fails(cs, seeded):
    state = _stored_proposed(cs, seeded)
    decode = ProjectionDecoder(cs.app.mapper)
    with pytest.raises(UnreadableEventError):
        decode(_entry(state, topic="os:system"))
    unknown = {**state, "preview": {"x": {"_type_": "no_such_type", "_data_": 1}}}
    entry = _entry(unknown)
    with pytest.raises(Exception) as mapper_error:
        cs.app.mapper.to_domain_event(_as_notification(entry))
    with pytest.raises(type(mapper_error.value)):
        decode(entry)


class _Plain:
    pass


class _PlainChild(_Plain):
    pass


class _Slotted:
    __slots__ = ("a",)


class _OwnDict:
    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        return {}


def test_an_events_dict_is_set_as_object_setattr_sets_it_or_by_the_mapper():
    """The decoder sets a new event's ``__dict__`` through the descriptor
    ``object.__setattr__`` would use; a class without one (slots, a ``__dict__`` of its own
    making) gets no setter, so its events go to the mapper."""
    for cls in (_Plain, _PlainChild):
        set_dict = _dict_setter(cls)
        assert set_dict is not None
        event = object.__new__(cls)
        state = {"a": 1}
        set_dict(event, state)
        assert vars(event) is state
        assert event.a == 1  # type: ignore[attr-defined]
    assert _dict_setter(_Slotted) is None
    assert _dict_setter(_OwnDict) is None


def test_a_decoded_uuid_is_the_one_uuid_makes():
    for text in ("01f2436791055876ba6988e4e5a2bfd1", "ffffffffffffffffffffffffffffffff"):
        made, parsed = _uuid_of(text), UUID(text)
        assert type(made) is UUID
        assert (made.int, made.is_safe, made.hex, str(made)) == (
            parsed.int,
            parsed.is_safe,
            parsed.hex,
            str(parsed),
        )
    # Anything else is UUID's own to read or refuse.
    assert _uuid_of("01f24367-9105-5876-ba69-88e4e5a2bfd1") == UUID(
        "01f24367-9105-5876-ba69-88e4e5a2bfd1"
    )
    with pytest.raises(ValueError):
        _uuid_of("-" + "1" * 31)


def test_the_projections_rows_are_the_same_whichever_way_events_are_decoded(
    cs, seeded, clock, monkeypatch
):
    """End to end: a history of every event type rebuilt together, and followed live, with
    the decoder's fast path stores exactly the rows it stores with every event decoded by the
    application's mapper (values, JSON texts, positions)."""
    lifecycle_history(cs, seeded, clock)
    for runner in cs.projection_runners():
        runner.catch_up()
    followed = snapshot(cs)
    rebuild_together(cs.projection_runners())
    fast = snapshot(cs)
    assert fast == followed
    assert sum(map(len, fast.values())) > 50

    def by_the_mapper(self: ProjectionDecoder, entry: Any) -> Any:
        return self.mapper.to_domain_event(_as_notification(entry))

    monkeypatch.setattr(ProjectionDecoder, "decode", by_the_mapper)
    monkeypatch.setattr(StructDecoder, "decode", by_the_mapper)
    rebuild_together(cs.projection_runners())
    assert snapshot(cs) == fast
