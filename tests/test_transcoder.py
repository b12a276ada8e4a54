"""Stored events are written by orjson (``FastJSONTranscoder``) to exactly the bytes the
library's own JSON transcoder writes, so a stored event, its chain and every reader are as
before; whatever orjson cannot write exactly is written by the library's encoder."""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.domain.hash_chain import contract_digest, digest_content
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from eventsourcing.persistence import TranscodingNotRegisteredError
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_values import leaves, nested
from tests.support.transcoders import fast_transcoder, library_transcoder

LIBRARY, FAST = library_transcoder(), fast_transcoder()


class Colour(StrEnum):
    RED = "red"


class Size(IntEnum):
    BIG = 3


def _same(value: object) -> bytes:
    expected = LIBRARY.encode(value)
    assert FAST.encode(value) == expected
    return expected


states = nested(
    leaves(
        st.decimals(allow_nan=False, allow_infinity=False),
        st.sampled_from([Colour.RED, Size.BIG]),
    ),
    st.integers() | st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=12), states, max_size=6))
def test_it_writes_what_the_library_writes(state):
    _same(state)


def test_every_character_is_written_as_the_library_writes_it():
    # Every code point but the surrogates (which neither writes), as text and as keys in
    # the order chain links and digests sort them.
    characters = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
    text = "".join(characters)
    _same({"text": text, text: [text]})
    keys = {f"a{c}b": index for index, c in enumerate(characters[::97])}
    assert (
        contract_digest("k", 1, keys, {})
        == hashlib.sha256(digest_content("k", 1, keys, {}).encode()).hexdigest()
    )


@pytest.mark.parametrize(
    "number", [0.1, 1e16, 1e-07, 5e-324, -0.0, 1.0, 1e22, math.inf, -math.inf, math.nan]
)
def test_floats_keep_the_standard_librarys_text(number):
    assert _same({"x": number}) == LIBRARY.encode({"x": number})


def test_an_event_state_with_ids_times_and_decimals():
    state = {
        "timestamp": datetime(2026, 12, 2, 12, 0, 0, 1, tzinfo=UTC),
        "attempt_id": uuid4(),
        "claimed_at": datetime(2026, 12, 2, 12, 0, tzinfo=UTC),
        "amount": Decimal("12.50"),
        "nested": {"ids": (UUID(int=1), UUID(int=2)), "when": [datetime(2026, 1, 1)]},
        "chain": "a" * 64,
    }
    written = _same(state)
    assert b'"_type_":"uuid_hex"' in written
    assert (
        FAST.decode(written)
        == LIBRARY.decode(written)
        == {
            **state,
            "nested": {"ids": [UUID(int=1), UUID(int=2)], "when": [datetime(2026, 1, 1)]},
        }
    )


def test_what_orjson_cannot_write_is_written_or_refused_as_the_library_does():
    _same({"big": 2**80, "keys": {1: "one", False: "no", None: "none", 2.5: "half"}})
    deep: list[object] = []
    for _ in range(300):
        deep = [deep]
    _same({"deep": deep})
    with pytest.raises(TranscodingNotRegisteredError):
        FAST.encode({"when": datetime(2026, 1, 1).date()})
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        FAST.encode(loop)


def test_the_application_stores_events_with_it(cs):
    assert type(cs.store.app.mapper.transcoder) is FastJSONTranscoder


@pytest.mark.parametrize("microsecond", [0, 1, 999_999])
@pytest.mark.parametrize("year", [1, 999, 2026, 9999])
def test_utc_times_go_to_orjson_as_they_are_and_read_the_same(year, microsecond):
    when = datetime(year, 12, 31, 23, 59, 59, microsecond, tzinfo=UTC)
    written = _same({"timestamp": when, "in": [when, {"at": when}]})
    assert FAST.decode(written) == {"timestamp": when, "in": [when, {"at": when}]}


def test_the_guarded_mapper_stores_events_as_the_librarys_mapper_does(cs, seeded):
    # It looks an event class's topic and class version up once, and makes the StoredEvent
    # from its dict: the same StoredEvent as the library's mapper, every time.
    from uuid import UUID as Id

    from countersign.domain.club.organization import Organization
    from eventsourcing.persistence import Mapper, StoredEvent

    from tests.conftest import AVA, DRAFT
    from tests.support.proposing import propose

    proposal_id = propose(cs, seeded, operation=DRAFT)
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"
    mapper = cs.store.app.mapper
    library = Mapper(transcoder=mapper.transcoder)
    events = [
        *cs.store.app.events.get(Organization.create_id("granite")),
        *cs.store.app.events.get(Id(proposal_id)),
    ]
    # Versioned as stored: an unsealed event after ``Proposed`` at its version before seals.
    versioned = [e for e in events if _stored_version(e) > 1]
    assert versioned, "a cycle writes events of a class_version above 1"
    for event in events:
        for _ in range(2):  # the second time from what the mapper learned of the class
            ours, theirs = mapper.to_stored_event(event), _librarys(library, event)
            assert type(ours) is StoredEvent
            assert ours == theirs
            assert vars(ours) == vars(theirs)
    for event in versioned:
        assert b'"class_version"' in mapper.to_stored_event(event).state


def _stored_version(event: Any) -> int:
    unsealed = getattr(type(event), "unsealed_version", None)
    if unsealed is not None and event.seal is None:
        return int(unsealed)
    return int(getattr(type(event), "class_version", 1))


def _librarys(library: Any, event: Any) -> Any:
    """What the library's mapper stores of ``event``; for an event after ``Proposed`` without
    a seal (no seal keys), what it stored of it before seals were: without the field, at the
    version before (domain/proposal_events.py, the same bytes as ever)."""
    from eventsourcing.persistence import StoredEvent

    unsealed = getattr(type(event), "unsealed_version", None)
    if unsealed is None or event.seal is not None:
        return library.to_stored_event(event)
    theirs = library.to_stored_event(event)
    state = {k: v for k, v in vars(event).items() if k != "seal"}
    del state["originator_id"], state["originator_version"]
    if unsealed > 1:
        state["class_version"] = unsealed
    return StoredEvent(
        originator_id=theirs.originator_id,
        originator_version=theirs.originator_version,
        topic=theirs.topic,
        state=library.transcoder.encode(state),
    )


def test_registered_after_it_is_made_ids_and_utc_times_still_take_the_short_way():
    # The application registers its transcodings after the transcoder is made: an id is
    # its hex and a time in UTC goes to orjson as it is, not through ``isoformat``.
    when = datetime(2026, 12, 2, 12, 0, 0, 1, tzinfo=UTC)
    ident = uuid4()
    assert FAST._prepare({"at": when, "id": ident}) == {
        "at": {"_type_": "datetime_iso", "_data_": when},
        "id": {"_type_": "uuid_hex", "_data_": ident.hex},
    }
    _same({"at": when, "id": ident, "in": [when, ident]})


def test_an_event_state_s_own_items_are_written_as_the_walk_writes_them():
    # The state's own items are written by ``encode`` itself (ids, UTC times, plain values),
    # the rest by the walk: every kind of item, at the top and below it, the same bytes.
    moment = datetime(2026, 12, 3, 7, 0, 1, 5, tzinfo=UTC)
    items = {
        "id": uuid4(),
        "at": moment,
        "naive": moment.replace(tzinfo=None),
        # an offset orjson writes otherwise than ``isoformat`` (-02:60 for -02:59:52.999995)
        "odd": moment.replace(tzinfo=timezone(timedelta(hours=-3, seconds=7, microseconds=5))),
        "text": "é\u2028",
        "flag": True,
        "none": None,
        "number": 7,
        "float": 1e-07,
        "amount": Decimal("1.10"),
        "colour": Colour.RED,
        "nested": {"id": uuid4(), "at": moment, "list": [uuid4(), 1.5]},
    }
    _same(items)
    _same({**items, 1: "a key that is not a string"})
    _same({"big": 2**70, **items})
