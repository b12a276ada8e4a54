"""The cycle's shortcuts give what the long way gives, and fail as clearly.

- ``domain/contracts/model_calls.py``: a model's validation and JSON dump called on its own
  pydantic-core validator and serializer; a model that overrides ``model_validate`` or
  ``model_dump`` is still called through its own method;
- ``domain/plain_json.py``: a dict whose items all come back unchanged is written as it is,
  one that has any to change is copied, never changed in place;
- ``domain/club/ids.py``: ids remembered under short keys, a ``str`` subclass apart from the
  equal ``str``;
- the SQLite recorder's statement texts, made once per table and size;
- ``retire`` (``application/supersession.py``) with nothing to retire.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4, uuid5

import pytest
from countersign.domain import plain_json
from countersign.domain.club.ids import _NAMESPACE, stable_id
from countersign.domain.contracts.apply_broadcast_draft import (
    BroadcastDraftArguments,
    BroadcastDraftRequest,
    DraftFilters,
)
from countersign.domain.contracts.base import Frozen
from countersign.domain.contracts.model_calls import dumped, validated
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.contracts.request_errors import parse_request
from countersign.domain.hash_chain import chain_content, chain_link
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.persistence.recorders import (
    CountersignSQLiteFactory,
    CountersignSQLiteRecorder,
    ReadSetChangedError,
)
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import Environment
from pydantic import ValidationError

from tests.conftest import AVA, DRAFT

REQUEST = {
    "filters": {"leagues": ["Thursday Seniors"]},
    "subject": " Opener ",
    "body": "Line\nline",
}

# -- model calls ----------------------------------------------------------------------------------


def test_validated_is_model_validate():
    assert validated(BroadcastDraftRequest, REQUEST) == BroadcastDraftRequest.model_validate(
        REQUEST
    )
    assert validated(BroadcastDraftRequest, REQUEST).subject == "Opener"  # the model's config


def test_validated_refuses_what_model_validate_refuses_with_the_same_errors():
    bad = {**REQUEST, "subject": 7, "extra": True}
    with pytest.raises(ValidationError) as theirs:
        BroadcastDraftRequest.model_validate(bad)
    with pytest.raises(ValidationError) as ours:
        validated(BroadcastDraftRequest, bad)
    assert ours.value.errors() == theirs.value.errors()
    assert ours.value.title == "BroadcastDraftRequest"


def test_a_request_with_a_control_character_is_still_refused_safely():
    with pytest.raises(InvalidRequestError) as refused:
        parse_request(BroadcastDraftRequest, {**REQUEST, "subject": "a\x1b[2Jb"})
    [problem] = refused.value.problems
    assert problem.field == "subject"
    assert "\x1b" not in problem.message


def test_dumped_is_model_dump_in_json_mode():
    arguments = BroadcastDraftArguments(
        form_id=uuid4(),
        filters=DraftFilters(leagues=["U9"]),
        subject="s",
        body="b",
        audience_count=3,
    )
    assert dumped(arguments) == arguments.model_dump(mode="json")
    assert type(dumped(arguments)["form_id"]) is str


class Shouting(Frozen):
    """A model that says how it is validated and dumped itself."""

    word: str

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Shouting:
        return super().model_validate({"word": str(obj["word"]).upper()}, **kwargs)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {"word": self.word + "!"}


class Whispering(Shouting):
    """Inherits the overrides."""


@pytest.mark.parametrize("model", [Shouting, Whispering])
def test_a_model_that_overrides_validation_or_dump_is_called_through_its_own_method(model):
    made = validated(model, {"word": "hey"})
    assert type(made) is model
    assert made.word == "HEY"
    assert dumped(made) == {"word": "HEY!"}


def test_a_plain_function_set_in_place_of_model_validate_is_called(monkeypatch):
    """A test or a plug-in may set a plain function on the class (it has no ``__func__``): it
    is called, not passed over and not an internal error."""
    seen: list[Any] = []

    def watching(obj: Any, **kwargs: Any) -> Any:
        seen.append(obj)
        return Shouting.__pydantic_validator__.validate_python(obj)

    monkeypatch.setattr(Shouting, "model_validate", watching)
    made = validated(Shouting, {"word": "hey"})
    assert (made.word, seen) == ("hey", [{"word": "hey"}])


# -- plain_json's walk ----------------------------------------------------------------------------

prepare = plain_json.preparer(plain_json.not_plain)
chain_ready = plain_json.preparer(lambda value: value if type(value) is UUID else str(value))


def _stdlib(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_dict_of_plain_nested_containers_is_written_as_it_is():
    arguments = {"filters": {"leagues": ["U9", "U11"]}, "subject": "é", "pairs": (1, "a")}
    assert prepare(arguments) is arguments
    assert plain_json.dumps(prepare(arguments)) == _stdlib(arguments)


def test_a_dict_with_an_item_to_change_is_copied_and_left_as_it_was():
    an_id = uuid4()
    fields = {"a": "x", "at": datetime(2026, 1, 2, tzinfo=UTC), "id": an_id, "n": 0.5}
    before = dict(fields)
    ready = chain_ready(fields)
    assert ready is not fields
    assert fields == before
    assert ready["id"] is an_id  # unchanged by ``convert``: the same object
    assert ready["at"] == "2026-01-02 00:00:00+00:00"
    assert plain_json.dumps(ready) == _stdlib({**fields, "at": str(fields["at"]), "id": str(an_id)})


def test_a_key_that_is_not_a_string_is_refused_wherever_it_is():
    # The walk leaves keys to orjson: what it returns is refused by ``dumps`` (REFUSED).
    for bad in ({1: "x", "a": 0.5}, {"a": 0.5, 1: "x"}, {"a": {"b": [1]}, 2: "x"}):
        with pytest.raises(plain_json.REFUSED):
            plain_json.dumps(prepare(bad))


def test_a_chain_link_over_ids_and_times_is_the_standard_librarys():
    fields = {"approved_by": "a@b.c", "approved_at": datetime.now(UTC), "attempt_id": uuid4()}
    link = chain_link("prev", 3, "Claimed", fields)
    expected = hashlib.sha256(chain_content("prev", 3, "Claimed", fields).encode()).hexdigest()
    assert link == expected


# -- stable ids -----------------------------------------------------------------------------------


class Loud(str):
    """A str that prints otherwise than the equal str."""

    def __str__(self) -> str:
        return self.upper()


def test_a_str_subclass_and_the_equal_str_derive_their_own_ids_in_any_order():
    organization_id = uuid4()
    plain = uuid5(_NAMESPACE, f"t/{organization_id}/quiet")
    loud = uuid5(_NAMESPACE, f"t/{organization_id}/QUIET")
    assert stable_id("t", organization_id, "quiet") == plain
    assert stable_id("t", organization_id, Loud("quiet")) == loud
    assert stable_id("t", organization_id, "quiet") == plain
    assert stable_id("t", str(organization_id), "quiet") == plain


def test_the_usual_parts_are_remembered_under_the_key_the_loop_makes():
    """``stable_id`` keys the parts every request derives without its loop: the same key the
    loop makes, so an id is remembered once whichever way it was derived."""
    from countersign.domain.club import ids

    def loop_key(*parts: object) -> tuple[object, ...]:
        return tuple(
            p if type(p) is str else p.int if type(p) is UUID else (type(p), p)  # type: ignore[attr-defined]
            for p in parts
        )

    first, second = uuid4(), uuid4()
    for parts in [("organization", "granite"), ("roster", first), ("slot", first, second)]:
        assert ids._usual_key(parts) == loop_key(*parts)
        assert stable_id(*parts) == uuid5(_NAMESPACE, "/".join(str(p) for p in parts))
    for other in [("t", Loud("quiet")), ("t", first, "quiet"), ("t",), (Loud("t"), first)]:
        assert ids._usual_key(other) is None


# -- SQLite's statement texts ---------------------------------------------------------------------


def test_statements_are_made_for_each_table_apart(tmp_path: Path):
    """Two recorders on two tables of one SQLite file, with commits of the same sizes: each
    writes and checks its own table."""
    env = Environment("t", {"SQLITE_DBNAME": str(tmp_path / "two.db")})
    datastore = CountersignSQLiteFactory(env).datastore
    recorders = [CountersignSQLiteRecorder(datastore, f"{name}_events") for name in "ab"]
    for recorder in recorders:
        recorder.create_table()
    read = uuid4()
    recorders[0].insert_events([StoredEvent(read, 1, "t:E", b"{}")])
    for recorder in recorders:
        written = uuid4()
        recorder.insert_events([StoredEvent(written, 1, "t:E", b"{}")])
        assert [e.originator_version for e in recorder.select_events(written)] == [1]
    # ``read`` is in the first table alone: the second's check of it finds it absent.
    recorders[0].insert_events([StoredEvent(uuid4(), 1, "t:E", b"{}")], expected_versions={read: 1})
    with pytest.raises(ReadSetChangedError):
        recorders[1].insert_events(
            [StoredEvent(uuid4(), 1, "t:E", b"{}")], expected_versions={read: 1}
        )
    assert [len(r.select_notifications(1, limit=10)) for r in recorders] == [3, 1]


# -- retire ---------------------------------------------------------------------------------------


def test_a_success_with_nothing_to_retire_commits_its_own_events_alone(cs: Countersign, seeded):
    """The form's slot holds this draft alone: the approval's commit is the proposal's events
    and the form's, and nothing is superseded."""
    form_id = seeded["broadcast_forms"]["granite"]
    created = cs.proposals.propose(
        organization="granite", actor=AVA, operation=DRAFT, resource_id=form_id, request=REQUEST
    )
    before = cs.app.recorder.max_notification_id()
    report = cs.proposals.approve(created.proposal_id, AVA)
    assert report.result == "executed"
    written = cs.app.recorder.select_notifications(before + 1, limit=20)
    assert [n.topic.rsplit(".", 1)[1] for n in written] == [
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
        "DraftApplied",
    ]
