"""The s30-events shortcuts, each against the library's long way: an event's stored state
encoded from its ``__dict__`` in one call (``FastJSONTranscoder.encode_event``), the
``StoredEvent`` written into its ``__dict__`` (``GuardedMapper.to_stored_event``), freeze's
weak reference that knows its own key (``aggregate_copy._FrozenMark``), the trigger's and
``_create``'s timestamp test and zone by position, and ``_create``'s keywords for the
aggregate's ``__init__`` copied from the event's ``__dict__`` (``aggregate_create._copied``)."""

from __future__ import annotations

import gc
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID, uuid4

import eventsourcing.domain
import pytest
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence import aggregate_copy, aggregate_create, frozen_inits
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.stored_events import GuardedMapper
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from eventsourcing.application import Application
from eventsourcing.compressor import ZlibCompressor
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_values import leaves, nested
from tests.support.transcoders import fast_transcoder, library_transcoder

AT = datetime(2026, 12, 5, 4, 0, tzinfo=UTC)


LIBRARY, FAST = library_transcoder(), fast_transcoder()


def _mapper_state(state: dict[str, Any], class_version: int) -> dict[str, Any]:
    """What eventsourcing 9.5.6's ``Mapper.to_stored_event`` hands its transcoder."""
    event_state = dict(state)
    event_state.pop("originator_id")
    event_state.pop("originator_version")
    if class_version > 1:
        event_state["class_version"] = class_version
    return event_state


def _event_state(fields: dict[str, Any]) -> dict[str, Any]:
    return {"originator_id": uuid4(), "originator_version": 3, "timestamp": AT, **fields}


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"kind": "k", "subject": "", "proposal_id": uuid4()},
        {"at": datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=-5)))},  # not UTC
        {"naive": datetime(2026, 1, 1), "amount": Decimal("1.50"), "ratio": 1e-07},
        {"nested": {"ids": [uuid4(), uuid4()], "times": (AT,), "n": [1, "a"]}},
        {"class_version": 1, "x": "y"},  # a field of that name keeps its place
        {"odd": {1: "one", None: "no"}},  # keys orjson refuses: the library's encoder writes
        {"big": 2**70},  # past orjson's integers
        # Containers tested inline (plain ones written as they are), and those that are not.
        {"plain": {"a": "b", "n": None, "t": True, "i": 2}, "words": ["a", 1], "empty": {}},
        {"flags": [True, None], "none": [], "deep": {"x": 1.5}, "lists": {"x": [1, "a"]}},
        {"ids": {"a": uuid4()}, "floats": [1.0, 1e-07], "tuple": ("a", 1), "odd": {"k": (1,)}},
    ],
)
@pytest.mark.parametrize("class_version", [0, 2, 3])
def test_encode_event_writes_the_library_s_bytes(fields: dict[str, Any], class_version: int):
    state = _event_state(fields)
    before = list(state.items())
    expected = LIBRARY.encode(_mapper_state(state, class_version))
    assert FAST.encode_event(state, class_version) == expected
    assert FAST.encode(_mapper_state(state, class_version)) == expected
    assert list(state.items()) == before  # the event's own state is left as it was


@given(nested(leaves(), st.integers() | st.booleans()))
@settings(max_examples=150, deadline=None)
def test_encode_event_of_any_value_is_the_library_s(value: Any):
    state = _event_state({"value": value, "id": uuid4()})
    assert FAST.encode_event(state, 2) == LIBRARY.encode(_mapper_state(state, 2))


def test_encode_event_refuses_what_the_library_refuses():
    class Unknown:
        pass

    state = _event_state({"thing": Unknown()})
    with pytest.raises(TypeError) as library:
        LIBRARY.encode(_mapper_state(state, 0))
    with pytest.raises(TypeError) as fast:
        FAST.encode_event(state, 0)
    assert str(fast.value) == str(library.value)
    with pytest.raises(KeyError):  # as the library's pop: an event without its envelope
        FAST.encode_event({"timestamp": AT}, 0)


def _domain_events() -> list[Any]:
    slot = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
    slot.hold("email_broadcast.apply_draft", "", uuid4())
    proposal = Proposal(
        id=uuid4(),
        organization_id=uuid4(),
        section="email_broadcasts",
        resource_id=uuid4(),
        requested_by="ava@granite.example",
        interaction_id="int-1",
        kind="email_broadcast.apply_draft",
        contract_version=1,
        arguments={"subject": "Opener", "filters": {"leagues": ["Monday"]}, "n": 1.5},
        preview={"subject": "Opener"},
        expires_at=AT + timedelta(days=1),
        digest="d" * 64,
        chain="c" * 64,
        request={"subject": "Opener"},
        revision_of=None,
        policy=None,
        origin=None,
        resource_key=None,
        requested_through="person",
        seal={"key_id": "k1", "mac": "m" * 64},
    )
    return [*slot.collect_events(), *proposal.collect_events()]


@pytest.mark.parametrize("compressed", [False, True])
def test_a_stored_event_is_the_library_s_field_for_field(compressed: bool):
    app = CountersignApplication()
    try:
        mapper = app.mapper
        assert isinstance(mapper, GuardedMapper)
        assert type(mapper.transcoder) is FastJSONTranscoder
        compressor = ZlibCompressor() if compressed else None
        ours = GuardedMapper(transcoder=mapper.transcoder, compressor=compressor)
        library = Mapper(transcoder=LIBRARY, compressor=compressor)
        for event in _domain_events():
            before = list(vars(event).items())
            stored, expected = ours.to_stored_event(event), library.to_stored_event(event)
            assert type(stored) is StoredEvent
            assert list(vars(stored).items()) == list(vars(expected).items())
            assert stored == expected
            assert list(vars(event).items()) == before
            with pytest.raises(AttributeError):  # still frozen
                stored.topic = "x"  # type: ignore[misc]
    finally:
        app.close()


def test_a_mapper_with_the_library_s_transcoder_writes_as_before():
    """Any other transcoder is handed the library's dict, as the library's mapper hands it."""
    seen: list[dict[str, Any]] = []

    class Watching(JSONTranscoder):
        def encode(self, obj: Any) -> bytes:
            seen.append(dict(obj))
            return super().encode(obj)

    transcoder = Watching()
    Application().register_transcodings(transcoder)
    ours, library = GuardedMapper(transcoder=transcoder), Mapper(transcoder=LIBRARY)
    for event in _domain_events():
        stored = ours.to_stored_event(event)
        assert stored == library.to_stored_event(event)
        class_version = getattr(type(event), "class_version", 1)
        assert list(seen.pop().items()) == list(_mapper_state(vars(event), class_version).items())


def test_a_frozen_mark_knows_its_key_and_removes_only_its_own_entry():
    slot = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
    aggregate_copy.freeze(slot)
    key = id(slot)
    mark = aggregate_copy._FROZEN[key]
    assert type(mark) is aggregate_copy._FrozenMark
    assert (mark.key, mark()) == (key, slot)
    # A dead object's late callback does not remove what was frozen under its id() since.
    other = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
    stale = aggregate_copy._FrozenMark(other, aggregate_copy._forget)
    stale.key = key
    aggregate_copy._forget(stale)
    assert aggregate_copy._FROZEN[key] is mark
    with pytest.raises(aggregate_copy.SharedSnapshotError):
        slot.hold("kind", "", uuid4())
    del slot, mark
    gc.collect()
    assert key not in aggregate_copy._FROZEN
    aggregate_copy.freeze(other)
    aggregate_copy.thaw(other)  # the mark's own object: removed
    assert id(other) not in aggregate_copy._FROZEN
    other.hold("kind", "", uuid4())


@pytest.mark.parametrize(
    "trigger",
    [aggregate_copy._trigger_event, eventsourcing.domain.BaseAggregate.trigger_event],
)
def test_the_trigger_s_timestamp_is_the_library_s(trigger: Any, monkeypatch: pytest.MonkeyPatch):
    slot = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
    slot.collect_events()
    pid = uuid4()
    trigger(slot, PendingSlot.Held, **_held(pid), timestamp=AT)
    trigger(slot, PendingSlot.Held, **_held(pid), timestamp=None)
    before = datetime.now(tz=UTC)
    trigger(slot, PendingSlot.Held, **_held(pid))
    given_at, given_none, made = slot.collect_events()
    assert given_at.timestamp is AT
    assert before >= given_none.timestamp.replace(tzinfo=UTC) >= AT
    assert given_none.timestamp.tzinfo is UTC
    assert made.timestamp.tzinfo is UTC
    assert datetime.now(tz=UTC) >= made.timestamp >= before
    # The library's zone, read at every call.
    zone = timezone(timedelta(hours=2), "EET")
    monkeypatch.setattr(eventsourcing.domain, "TZINFO", zone)
    trigger(slot, PendingSlot.Held, **_held(pid))
    (zoned,) = slot.collect_events()
    assert zoned.timestamp.tzinfo is zone
    assert slot.modified_on is zoned.timestamp


def _held(proposal_id: Any) -> dict[str, Any]:
    """A ``Held`` event's fields (version 2: no expiry known)."""
    return {"kind": "k", "subject": "", "proposal_id": proposal_id, "expires_s": None, "at_s": None}


def test_create_s_timestamp_is_the_library_s(monkeypatch: pytest.MonkeyPatch):
    aggregate_create.install()
    org, resource = uuid4(), uuid4()
    made = PendingSlot._create(
        PendingSlot.Opened, id=uuid4(), organization_id=org, resource_id=resource, timestamp=AT
    )
    assert made.created_on is AT
    zone = timezone(timedelta(hours=2), "EET")
    monkeypatch.setattr(eventsourcing.domain, "TZINFO", zone)
    for timestamp in ({}, {"timestamp": None}):
        made = PendingSlot._create(
            PendingSlot.Opened, id=uuid4(), organization_id=org, resource_id=resource, **timestamp
        )
        assert made.created_on.tzinfo is zone


def _proposal_fields() -> dict[str, Any]:
    return {
        "organization_id": uuid4(),
        "section": "email_broadcasts",
        "resource_id": uuid4(),
        "requested_by": "ava@granite.example",
        "interaction_id": "int-1",
        "kind": "email_broadcast.apply_draft",
        "contract_version": 1,
        "arguments": {"subject": "Opener"},
        "preview": {"subject": "Opener"},
        "expires_at": AT + timedelta(days=1),
        "request": {"subject": "Opener"},
        "policy": None,
        "revision_of": None,
        "origin": None,
        "resource_key": "rk",
        "requested_through": "agent_token:ops",
        "seal": None,
        "digest": "the digest",
        "chain": "the first link",
    }


def test_create_copies_the_aggregate_s_keywords_from_the_event_as_the_library_picks_them():
    frozen_inits.install()
    aggregate_create.install()
    seen: list[list[tuple[str, Any]]] = []
    original = Proposal.__init__

    def watching(self: Proposal, **kwargs: Any) -> None:
        seen.append(list(kwargs.items()))
        original(self, **kwargs)

    proposal_id, fields = uuid4(), _proposal_fields()
    made = Proposal._create(Proposal.Proposed, id=proposal_id, timestamp=AT, **fields)
    facts = aggregate_create._FACTS[(Proposal, Proposal.Proposed)]
    assert facts is not None
    assert facts[4] is not None  # the copy, not the comprehension
    init, dropped, taken = facts[4]
    assert init is Proposal.Proposed.__init__
    assert set(dropped) == {"originator_id", "originator_version", "timestamp", "originator_topic"}
    (event,) = made.collect_events()
    # The library's comprehension over the event's state, then the id.
    expected = [(k, v) for k, v in vars(event).items() if k in facts[1]] + [("id", proposal_id)]
    assert taken == len(expected) - 1
    try:
        Proposal.__init__ = watching  # type: ignore[method-assign]
        again = Proposal._create(Proposal.Proposed, id=proposal_id, timestamp=AT, **fields)
    finally:
        Proposal.__init__ = original  # type: ignore[method-assign]
    assert seen == [expected]
    library = aggregate_create.LIBRARY_CREATE(
        Proposal, Proposal.Proposed, id=proposal_id, timestamp=AT, **fields
    )
    (library_event,) = library.collect_events()
    assert list(vars(library_event).items()) == list(vars(event).items())
    again.collect_events()
    assert list(vars(library).items()) == list(vars(made).items()) == list(vars(again).items())


def test_create_takes_the_comprehension_for_an_event_class_not_given_a_cheaper_init():
    aggregate_create.install()
    frozen_inits.install()
    event_class = Proposal.Proposed
    given = event_class.__dict__["__init__"]
    try:
        event_class.__init__ = frozen_inits.ORIGINALS[event_class]  # type: ignore[misc]
        assert aggregate_create._copied(event_class, frozenset({"self"})) is None
        # The facts remembered for the class see the __init__ changed, and take the
        # comprehension: the same aggregate.
        made = Proposal._create(event_class, id=uuid4(), timestamp=AT, **_proposal_fields())
        assert made.resource_key == "rk"
        assert made.requested_through == "agent_token:ops"
    finally:
        event_class.__init__ = given  # type: ignore[misc]
    assert aggregate_create._copied(event_class, frozenset({"self"})) is not None
    assert isinstance(made.id, UUID)


def test_a_read_set_is_remembered_from_a_copy_of_the_decision_s_reads():
    """``_ReadSets.remember_read`` copies a dict by its own ``copy`` (any other mapping by
    ``dict()``): the same ids remembered, the decision's own dict left as it was."""
    from types import MappingProxyType

    from countersign.infrastructure.persistence.unit_of_work import _key, _ReadSets

    named_id, first, second = uuid4(), uuid4(), uuid4()
    read = {named_id.int: named_id, first.int: first, second.int: second}
    before = list(read.items())
    for reads in (read, MappingProxyType(dict(read))):
        sets = _ReadSets(8)
        sets.remember_read((named_id,), reads, _key((named_id,)))
        assert sets.with_remembered((named_id,)) == [named_id, first, second]
    assert list(read.items()) == before
