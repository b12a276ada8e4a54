"""The propose half's shortcuts give what the long way gives, and refuse what it refused.

- ``domain/contracts/base.py``: a nested request whose own validation checked every text
  as the outer walk would (``CHECKED_ITSELF``) is not walked again; one handed in as an
  instance is validated again, so a control character in it is still refused;
- ``domain/uuids.py``: ``new_id_prefix()`` is ``new_id().hex[:16]``;
- ``domain/club/ids.py``: the inline key of a name and one or two ids is ``_usual_key``'s;
- ``email_broadcast.apply_draft``'s arguments validated from one dict are the model made
  field by field;
- ``Proposal.propose`` given every field makes what it makes given the required ones alone;
- a request of at most MAX_PROBLEMS keys is not looked at key by key for unknown ones.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4, uuid5

import pytest
from countersign.domain import uuids
from countersign.domain.club import ids
from countersign.domain.contracts.apply_broadcast_draft import (
    AudienceFilters,
    BroadcastDraftArguments,
    BroadcastDraftRequest,
    DraftFilters,
)
from countersign.domain.contracts.model_calls import dumped, validated
from countersign.domain.contracts.problems import MAX_PROBLEMS, InvalidRequestError
from countersign.domain.contracts.request_errors import _bounded_unknown_keys, parse_request
from countersign.domain.contracts.request_model import CHECKED_ITSELF, ContractRequest
from countersign.domain.proposal import Proposal
from pydantic import BaseModel, ConfigDict

# -- a nested request's texts ---------------------------------------------------------------------


class Tags(ContractRequest):
    tags: list[str]


class Notes(ContractRequest):
    """A nested request with a multi-line field: the outer walk refuses its line breaks."""

    multiline_fields = frozenset({"note"})
    note: str


class Open(ContractRequest):
    """A nested request that keeps extra fields, which no field validator sees."""

    model_config = ConfigDict(extra="allow")
    name: str


class Outer(ContractRequest):
    tags: Tags
    notes: Notes
    open: Open
    many: list[Tags]


def _raw(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "tags": {"tags": ["a", "b"]},
        "notes": {"note": "one line"},
        "open": {"name": "x", "more": "free"},
        "many": [{"tags": ["c"]}],
    }
    raw.update(changes)
    return raw


def _refused(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidRequestError) as invalid:
        parse_request(Outer, raw)
    return [p.field for p in invalid.value.problems]


def test_only_requests_that_check_every_text_themselves_are_skipped():
    assert Tags in CHECKED_ITSELF
    assert AudienceFilters in CHECKED_ITSELF
    assert Notes not in CHECKED_ITSELF  # a multi-line field: the outer walk is stricter
    assert Open not in CHECKED_ITSELF  # extra fields: no validator of its own sees them
    assert BroadcastDraftRequest not in CHECKED_ITSELF
    assert parse_request(Outer, _raw()).tags.tags == ["a", "b"]


def test_a_control_character_in_a_nested_request_is_refused_at_its_own_place():
    assert _refused(_raw(tags={"tags": ["a", "b\x1b"]})) == ["tags.tags"]
    assert _refused(_raw(many=[{"tags": ["c\x07"]}])) == ["many.0.tags"]


def test_what_the_nested_checks_do_not_cover_is_still_walked():
    assert _refused(_raw(notes={"note": "two\nlines"})) == ["notes"]
    assert _refused(_raw(open={"name": "x", "more": "free\x00"})) == ["open"]


def test_a_request_whose_own_check_was_replaced_is_walked():
    class Quietly(ContractRequest):
        @classmethod
        def _no_control_characters(cls, value: Any, info: Any) -> Any:  # type: ignore[override]
            return value

        word: str

    class Holds(ContractRequest):
        inner: Quietly

    assert Quietly not in CHECKED_ITSELF
    with pytest.raises(InvalidRequestError) as invalid:
        parse_request(Holds, {"inner": {"word": "a\x1bb"}})
    assert [p.field for p in invalid.value.problems] == ["inner"]


@pytest.mark.parametrize("how", ["constructed", "changed"])
def test_a_nested_request_handed_in_as_an_instance_is_checked_again(how: str):
    """An instance is validated again (``revalidate_instances``), its own checks included:
    one made without validation, or changed after it, cannot carry a control character past
    the skipped walk."""
    if how == "constructed":
        inner = Tags.model_construct(tags=["a\x1bb"])
    else:
        inner = Tags(tags=["a"])
        inner.tags.append("a\x1bb")
    assert _refused(_raw(tags=inner)) == ["tags.tags"]
    fine = Tags.model_construct(tags=["  a  "])
    assert parse_request(Outer, _raw(tags=fine)).tags.tags == ["a"]  # validated like a dict


def test_a_plain_model_nested_in_a_list_is_still_walked():
    class Loose(BaseModel):
        name: str

    class Listing(ContractRequest):
        rows: list[Loose]

    with pytest.raises(InvalidRequestError):
        parse_request(Listing, {"rows": [{"name": "x\x00"}]})


# -- ids ------------------------------------------------------------------------------------------


def test_new_id_prefix_is_a_new_ids_first_sixteen_hex_digits(monkeypatch):
    drawn = [bytes(range(16)), bytes(range(200, 216)), b"\xff" * 16, b"\x00" * 16]

    def fixed(n: int) -> bytes:
        assert n == 16
        return drawn[len(seen) % len(drawn)]

    seen: list[str] = []
    monkeypatch.setattr(uuids, "urandom", fixed)
    for _ in drawn:
        expected = uuids.new_id().hex[:16]
        made = uuids.new_id_prefix()
        seen.append(made)
        assert made == expected
    assert {len(made) for made in seen} == {16}
    assert {made[12] for made in seen} == {"4"}  # the version digit


def test_the_inline_key_of_a_name_and_ids_is_the_usual_one():
    first, second = uuid4(), uuid4()
    for parts in [("roster", first), ("slot", first, second)]:
        ids._IDS.clear()
        made = ids.stable_id(*parts)
        assert made == uuid5(ids._NAMESPACE, "/".join(str(p) for p in parts))
        assert list(ids._IDS) == [ids._usual_key(parts)]
        assert ids.stable_id(*parts) is made
    # A str where an id may stand is its own part, and derives the same id by its text.
    ids._IDS.clear()
    assert ids.stable_id("roster", str(first)) == ids.stable_id("roster", first)
    assert len(ids._IDS) == 2


# -- a contract's arguments -----------------------------------------------------------------------


def test_broadcast_arguments_from_one_dict_are_the_model_made_field_by_field():
    form_id = uuid4()
    by_fields = BroadcastDraftArguments(
        form_id=form_id,
        filters=DraftFilters(leagues=["A", "B"]),
        subject="S",
        body="B",
        audience_count=3,
    )
    from_dict = validated(
        BroadcastDraftArguments,
        {
            "form_id": form_id,
            "filters": {"leagues": ["A", "B"]},
            "subject": "S",
            "body": "B",
            "audience_count": 3,
        },
    )
    assert from_dict == by_fields
    assert type(from_dict.filters) is DraftFilters
    assert type(from_dict.form_id) is UUID
    assert dumped(from_dict) == dumped(by_fields)


# -- a proposal's optional fields -----------------------------------------------------------------


def test_a_proposal_given_every_field_is_the_one_given_the_required_alone(monkeypatch):
    """``Proposal.propose`` fills only what is missing: given all the optional fields as None,
    or none of them, the ``Proposed`` event, its digest and its link are the same (at one
    time: the link covers the event's time)."""
    import countersign.domain.proposal as proposal_module

    at = datetime(2026, 12, 6, 6, 0, 0, 123456, tzinfo=UTC)
    monkeypatch.setattr(proposal_module, "_now", lambda: at)
    required: dict[str, Any] = {
        "id": uuid4(),
        "organization_id": uuid4(),
        "section": "orders",
        "resource_id": uuid4(),
        "requested_by": "ava@granite.example",
        "interaction_id": "int-1",
        "kind": "order.refund_missing_discount",
        "contract_version": 1,
        "arguments": {"a": 1},
        "preview": {"p": 1},
        "expires_at": datetime(2026, 12, 1, tzinfo=UTC),
    }
    optional = {"request": None, "revision_of": None, "policy": None, "origin": None}
    made = [
        Proposal.propose(**required),
        Proposal.propose(**required, **optional),  # one still missing: resource_key
        Proposal.propose(**required, **optional, resource_key=None),
    ]
    events = [proposal.collect_events()[0].__dict__ for proposal in made]
    for event in events:
        event.pop("timestamp")
    assert events[0] == events[1] == events[2]
    assert {"request", "revision_of", "policy", "origin", "resource_key"} <= events[0].keys()
    assert len({(p.digest, p.chain) for p in made}) == 1
    given = Proposal.propose(**required, **optional, resource_key="INV-1")
    assert given.resource_key == "INV-1"
    assert given.chain != made[0].chain


# -- a request's unknown keys ---------------------------------------------------------------------


@pytest.mark.parametrize("unknown", [0, 19, 20, 21, 25])
@pytest.mark.parametrize("known", [0, 3])
def test_at_most_max_problems_unknown_keys_are_kept_and_the_rest_counted(unknown: int, known: int):
    """A request of MAX_PROBLEMS keys or fewer is handed on as it is (it cannot hold more
    unknown keys than are reported); a larger one keeps its known keys and the first
    MAX_PROBLEMS unknown ones."""
    raw: dict[str, Any] = {f"x{i}": i for i in range(unknown)}
    raw.update(list({"filters": {}, "subject": "s", "body": "b"}.items())[:known])
    kept, dropped = _bounded_unknown_keys(BroadcastDraftRequest, raw)
    assert dropped == max(0, unknown - MAX_PROBLEMS)
    assert len(kept) == min(unknown, MAX_PROBLEMS) + known
    assert list(kept) == [key for key in raw if key in kept]  # the first ones, in order
    if dropped == 0:
        assert kept is raw
