"""The hash chain's links are byte-for-byte what they always were: ``chain_link`` and
``contract_digest`` are compared with the original implementation, kept here verbatim."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.hash_chain import chain_link, contract_digest, proposed_digest_and_link
from countersign.domain.proposal import ProposalStatus
from countersign.domain.scope import Section
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.json_values import leaves, nested

# -- the original implementation ---------------------------------------------------------------


def original_canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): original_canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [original_canonical(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


def original_chain_link(
    previous: str,
    version: int,
    event_type: str,
    fields: dict[str, Any],
    at: datetime | None = None,
) -> str:
    """The definition: a link made since events' times were linked has ``at``, the event's
    time as ISO 8601; one made before has no such key."""
    linked = {
        "previous": previous,
        "version": version,
        "type": event_type,
        "fields": original_canonical(fields),
    }
    if at is not None:
        linked["at"] = at.isoformat()
    content = json.dumps(
        linked,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(content.encode()).hexdigest()


def original_contract_digest(kind: str, version: int, arguments: Any, preview: Any) -> str:
    canonical = json.dumps(
        {"kind": kind, "version": version, "arguments": arguments, "preview": preview},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


# -- payloads ------------------------------------------------------------------------------------

ID = UUID("0b8f4a52-54e4-4d3c-9f7e-3c0c4a1f7e21")
AT = datetime(2026, 11, 30, 9, 0, 1, 123456, tzinfo=UTC)
MONTREAL = timezone(timedelta(hours=-5), "EST")


class Colour(str, Enum):  # noqa: UP042 -- str() differs from the value, unlike StrEnum
    RED = "red"


class Level(IntEnum):
    HIGH = 3


class Tagged(str):
    def __str__(self) -> str:
        return "tagged"


class MyUUID(UUID):
    pass


class MyDateTime(datetime):
    pass


PROPOSED = {
    "organization_id": ID,
    "section": "email_broadcasts",
    "resource_id": ID,
    "requested_by": "ava@granite.example",
    "interaction_id": "int-1",
    "kind": "email_broadcast.apply_draft",
    "contract_version": 1,
    "arguments": {
        "form_id": str(ID),
        "filters": {"leagues": ["Lundi soir", "Mardi — élite", "日本"]},
        "subject": "Ouverture de la saison 🏒",
        "body": 'Line one\nline "two"\ttab \\ backslash \u2028 \x7f',
        "audience_count": 12,
    },
    "preview": {"amount_cents": -1250, "ratio": 0.1, "big": 10**30, "ok": True, "none": None},
    "expires_at": AT,
    "digest": "d" * 64,
}

FIELDS: list[dict[str, Any]] = [
    PROPOSED,
    {"approved_by": "ava@granite.example", "approved_at": AT},
    {"attempt_id": ID, "claimed_at": AT.astimezone(MONTREAL)},
    {"facts": {"audience_count": 3, "leagues": ("Monday", "Tuesday"), "at": [AT, ID]}},
    {"outcome": {"kind": "succeeded", "result": {"refund_ref": "R1", "nested": [[{"a": []}]]}}},
    {"outcome": {}, "error_class": "ValueError"},
    {"declined_by": "ava@granite.example", "note": None},
    {"at": datetime(2026, 1, 1)},  # naive
    {"at": MyDateTime(2026, 1, 1, tzinfo=UTC), "id": MyUUID(int=5)},
    {"status": ProposalStatus.SUCCEEDED, "section": Section("orders"), "level": Level.HIGH},
    {"colour": Colour.RED, "tagged": Tagged("raw"), "floats": [float("inf"), -0.0, 1e-7]},
    # keys json.dumps would write differently from str(): the original form is kept
    {"facts": {1: "one", 10: "ten", 9: "nine"}},
    {"facts": {True: "yes", None: "nothing", 2.5: "half"}},
    {"facts": {ID: "by id", AT: "by time", (1, 2): "pair"}},
    {"facts": {Colour.RED: 1, Tagged("k"): 2}},
    {"facts": OrderedDict([("b", 1), ("a", 2)])},
    {"facts": [OrderedDict(z=ID)]},
    {"facts": [OrderedDict([(10, "ten"), (9, "nine")])]},
    {},
]


@pytest.mark.parametrize("fields", FIELDS)
def test_chain_link_bytes_are_unchanged(fields):
    for previous, version, event_type in [("", 1, "Proposed"), ("a" * 64, 7, "Succeeded")]:
        assert chain_link(previous, version, event_type, fields) == original_chain_link(
            previous, version, event_type, fields
        )


@pytest.mark.parametrize(
    "fields",
    [
        {"amount": Decimal("1.10")},
        {"day": date(2026, 1, 1)},
        {"tags": {"a"}},
        {"nested": [{"b": object()}]},
    ],
)
def test_chain_link_refuses_what_it_always_refused(fields):
    with pytest.raises(TypeError) as original:
        original_chain_link("", 1, "Proposed", fields)
    with pytest.raises(TypeError) as now:
        chain_link("", 1, "Proposed", fields)
    assert str(now.value) == str(original.value)


@pytest.mark.parametrize(
    ("arguments", "preview"),
    [
        (PROPOSED["arguments"], PROPOSED["preview"]),
        ({"a": 1}, {"p": 1}),
        ({"z": [1, {"y": "é"}]}, {}),
    ],
)
def test_contract_digest_bytes_are_unchanged(arguments, preview):
    assert contract_digest("k", 1, arguments, preview) == original_contract_digest(
        "k", 1, arguments, preview
    )
    with pytest.raises(TypeError):
        contract_digest("k", 1, {"at": AT}, preview)


# -- generated payloads: orjson writes the original's bytes, or the original writes them -----

_values = nested(
    leaves(st.sampled_from([Colour.RED, Level.HIGH, ProposalStatus.PENDING, Tagged("t")])),
    st.integers() | st.booleans() | st.uuids(),
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=12), _values, max_size=6), st.text(max_size=64))
def test_generated_chain_links_are_unchanged(fields, previous):
    assert chain_link(previous, 3, "Revalidated", fields) == original_chain_link(
        previous, 3, "Revalidated", fields
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_json, _json)
def test_generated_contract_digests_are_unchanged(arguments, preview):
    assert contract_digest("k", 2, arguments, preview) == original_contract_digest(
        "k", 2, arguments, preview
    )


# -- ids and times: orjson writes an exact UUID and a datetime in UTC itself ------------------

_ZONES = st.none() | st.sampled_from(
    [
        UTC,
        timezone(timedelta(0), "UTC"),
        timezone(timedelta(hours=5, minutes=30)),
        timezone(timedelta(hours=-3, seconds=7, microseconds=5)),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(timezones=_ZONES), st.uuids())
def test_generated_ids_and_times_link_as_they_always_did(when, ident):
    fields = {"at": when, "id": ident, "in": [when, ident, {"at": when, "id": ident}]}
    assert chain_link("", 2, "Approved", fields) == original_chain_link("", 2, "Approved", fields)


# -- a proposal's digest and first link, from one walk of its arguments and preview ----------


def _apart(fields: dict[str, Any], at: datetime = AT) -> tuple[str, str]:
    """The digest and the first link, each computed by the original, from its own walk."""
    digest = original_contract_digest(
        fields["kind"], fields["contract_version"], fields["arguments"], fields["preview"]
    )
    content = {key: value for key, value in fields.items() if key != "id"}
    content["digest"] = digest
    return digest, original_chain_link("", 1, "Proposed", content, at)


_UNDIGESTED = {key: value for key, value in PROPOSED.items() if key != "digest"}


@pytest.mark.parametrize(
    ("arguments", "preview"),
    [
        (PROPOSED["arguments"], PROPOSED["preview"]),
        ({"a": 1}, {"p": 1}),
        ({"z": [1, {"y": "é"}], "f": [1e-7, float("nan"), -0.0]}, {"t": ("a", 2)}),
        ({"s": Colour.RED, "l": Level.HIGH, "t": Tagged("x")}, {}),
        ({"keys": {1: "one", 10: "ten"}}, {}),  # the original form of keys is kept
        ({"big": 10**30}, {"x": [[[]]]}),
    ],
)
def test_a_proposals_digest_and_first_link_are_each_as_computed_apart(arguments, preview):
    fields = {"id": ID, **_UNDIGESTED, "arguments": arguments, "preview": preview}
    fields["request"] = {"filters": {"leagues": ["Lundi"]}, "ratio": 0.5, "at": None}
    assert proposed_digest_and_link(fields, AT) == _apart(fields)


def test_a_proposals_digest_refuses_an_id_or_a_time_as_it_always_did():
    fields = {"id": ID, **_UNDIGESTED, "arguments": {"at": AT}}
    with pytest.raises(TypeError):
        proposed_digest_and_link(fields, AT)
    # ... and a chain field the chain refuses is refused too.
    with pytest.raises(TypeError):
        proposed_digest_and_link(
            {**fields, "arguments": {}, "policy": {"day": date(2026, 1, 1)}}, AT
        )


@settings(max_examples=200, deadline=None)
@given(_json, _json, _values)
def test_generated_proposals_digests_and_first_links_are_as_computed_apart(
    arguments, preview, request
):
    fields = {"id": ID, **_UNDIGESTED, "arguments": arguments, "preview": preview}
    fields["request"] = request
    assert proposed_digest_and_link(fields, AT) == _apart(fields)


_ODD = timezone(timedelta(hours=-3, seconds=7, microseconds=5))  # orjson writes it otherwise


@pytest.mark.parametrize(
    "unusual",
    [
        {"expires_at": AT.replace(tzinfo=_ODD)},
        {"expires_at": AT.astimezone(MONTREAL)},
        {"expires_at": datetime(2026, 1, 1)},  # naive
        {"expires_at": MyDateTime(2026, 1, 1, tzinfo=UTC)},
        {"organization_id": MyUUID(int=5), "resource_id": str(ID)},
        {"section": Tagged("raw"), "interaction_id": Colour.RED},
        {"ratio": 1e-07, "floats": [1e16, -0.0]},
        {"contract_version": Level.HIGH},
        {"big": 10**30},  # orjson refuses it: the two functions write it
        {"request": {"ids": [ID], "at": AT.replace(tzinfo=_ODD), "n": 1e16}},
        {"policy": OrderedDict([(10, "ten"), (9, "nine")])},
        {"origin": {Tagged("k"): "v"}},
        {"id": MyUUID(int=7)},  # left out, as ever
        {"digest": "given before, replaced by the one computed"},
    ],
)
def test_a_proposals_first_link_over_unusual_fields_is_as_computed_apart(unusual):
    # The fields besides the arguments and preview are tested one by one, and only what the
    # walk would change is walked: each kind of value at the top and below it, as apart.
    fields = {"id": ID, **_UNDIGESTED, "preview": {"amount_cents": -1250, "ratio": 0.1}}
    fields.update(unusual)
    assert proposed_digest_and_link(fields, AT) == _apart(fields)


# -- an event's time, linked since 2026-12-06 ------------------------------------------------


@pytest.mark.parametrize(
    "at",
    [
        AT,
        AT.replace(microsecond=0),  # isoformat writes no fraction then, nor does orjson
        AT.astimezone(MONTREAL),
        AT.replace(tzinfo=_ODD),
        MyDateTime(2026, 1, 1, tzinfo=UTC),
    ],
)
@pytest.mark.parametrize("fields", FIELDS[:4])
def test_a_link_covers_its_events_time_as_written_apart(fields, at):
    """A link made since events' times were linked covers the time too, written as the
    definition writes it, and differs from the link of the same fields without it, or at
    another time."""
    linked = chain_link("a" * 64, 3, "Approved", fields, at)
    assert linked == original_chain_link("a" * 64, 3, "Approved", fields, at)
    assert linked != chain_link("a" * 64, 3, "Approved", fields)
    assert linked != chain_link("a" * 64, 3, "Approved", fields, at + timedelta(microseconds=1))


@settings(max_examples=100, deadline=None)
@given(st.datetimes(timezones=_ZONES))
def test_generated_times_link_as_the_definition_writes_them(when):
    fields = {"approved_by": "ava@granite.example", "at": when}
    assert chain_link("", 2, "Approved", fields, when) == original_chain_link(
        "", 2, "Approved", fields, when
    )
