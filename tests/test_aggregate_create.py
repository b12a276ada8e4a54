"""The domain's aggregates created by the store's cheaper ``_create``
(infrastructure/persistence/aggregate_create.py) are the library's: the same aggregate, key
for key, the same event, the same stored bytes, and the same refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence import aggregate_create
from countersign.infrastructure.persistence.app import CountersignApplication
from eventsourcing.domain import Aggregate

AT = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)
#: What differs between two aggregates made a moment apart.
_TIMES = ("_created_on", "_modified_on", "_pending_events")


@pytest.fixture(autouse=True)
def _installed() -> None:
    """What the application does when it is made (CountersignApplication)."""
    aggregate_create.install()


def _proposal_fields() -> dict[str, Any]:
    return {
        "id": uuid4(),
        "organization_id": uuid4(),
        "section": "email_broadcasts",
        "resource_id": uuid4(),
        "requested_by": "ava@granite.example",
        "interaction_id": "int-1",
        "kind": "email_broadcast.apply_draft",
        "contract_version": 1,
        "arguments": {"subject": "Opener", "filters": {"leagues": ["Monday"]}, "n": 1.5},
        "preview": {"subject": "Opener", "sends_email": False},
        "expires_at": AT + timedelta(days=1),
        "request": {"subject": "Opener"},
        "policy": {"approvals_required": 2},
        "revision_of": None,
        "origin": None,
        "resource_key": None,
        "requested_through": "person",
        "seal": {"key_id": "k1", "mac": "the seal"},
        "digest": "the digest",
        "chain": "the first link",
    }


def _by_library(cls: type[Aggregate], **kwargs: Any) -> Any:
    """``cls(**kwargs)`` through the library's own ``_create``."""
    given = cls.__dict__["_create"]
    del cls._create  # type: ignore[attr-defined]
    try:
        return cls(**kwargs)
    finally:
        cls._create = given  # type: ignore[attr-defined]


def _both(cls: Any, event_class: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The aggregate made by the cheaper ``_create`` and by the library's, of the same
    arguments."""
    return (
        cls._create(event_class, **kwargs),
        aggregate_create.LIBRARY_CREATE(cls, event_class, **kwargs),
    )


def test_the_domain_aggregates_are_given_one():
    for cls in (Proposal, PendingSlot, BroadcastForm):
        assert cls in aggregate_create.GIVEN
        assert cls.__dict__["_create"].__func__ is aggregate_create._create


def test_a_proposal_is_the_library_s_key_for_key():
    made, original = _both(Proposal, Proposal.Proposed, **_proposal_fields(), timestamp=AT)
    assert list(vars(made)) == list(vars(original))
    pending_made, pending_original = made.collect_events(), original.collect_events()
    assert vars(made) == vars(original)
    assert len(pending_made) == len(pending_original) == 1
    assert list(vars(pending_made[0]).items()) == list(vars(pending_original[0]).items())
    assert type(pending_made[0]) is type(pending_original[0]) is Proposal.Proposed
    mapper = CountersignApplication().mapper
    stored, expected = (mapper.to_stored_event(e) for e in (pending_made[0], pending_original[0]))
    assert (stored.topic, stored.state) == (expected.topic, expected.state)
    assert made.version == original.version == 1
    assert made.created_on == made.modified_on == AT


def test_a_proposal_made_as_the_domain_makes_it_is_too():
    fields = _proposal_fields()
    del fields["digest"], fields["chain"], fields["seal"]
    before = datetime.now(tz=UTC)
    made = Proposal.propose(**fields)
    made_again = {"digest": made.digest, "chain": made.chain, "seal": made.seal}
    original = _by_library(Proposal, **{**fields, **made_again})
    assert list(vars(made)) == list(vars(original))
    assert {k: v for k, v in vars(made).items() if k not in _TIMES} == {
        k: v for k, v in vars(original).items() if k not in _TIMES
    }
    assert before <= made.created_on <= datetime.now(tz=UTC)
    assert made.created_on.tzinfo is UTC


def test_an_aggregate_that_derives_its_id_takes_the_library_s_way():
    organization, resource = uuid4(), uuid4()
    made = PendingSlot(organization_id=organization, resource_id=resource)
    original = _by_library(PendingSlot, organization_id=organization, resource_id=resource)
    assert made.id == original.id == PendingSlot.create_id(organization, resource)
    made_vars, original_vars = vars(made), vars(original)
    assert list(made_vars) == list(original_vars)
    assert {k: v for k, v in made_vars.items() if k not in _TIMES} == {
        k: v for k, v in original_vars.items() if k not in _TIMES
    }


@pytest.mark.parametrize(
    "broken",
    [
        {"unknown": 1},  # a field no event has
        {"id": "not-a-uuid-object", "organization_id": 7},  # the library's check on the id
        {"id": 12},  # neither a UUID nor a str
    ],
)
def test_the_same_calls_are_refused(broken: dict[str, Any]):
    fields = {**_proposal_fields(), **broken}
    errors = []
    for create in (lambda: Proposal(**fields), lambda: _by_library(Proposal, **fields)):
        with pytest.raises(TypeError) as raised:
            create()
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


def test_a_missing_field_is_refused_alike():
    fields = _proposal_fields()
    del fields["kind"]
    errors = []
    for create in (
        lambda: Proposal._create(Proposal.Proposed, **fields),  # type: ignore[attr-defined]
        lambda: aggregate_create.LIBRARY_CREATE(Proposal, Proposal.Proposed, **fields),
    ):
        with pytest.raises(TypeError) as raised:
            create()
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


def test_a_class_that_creates_itself_its_own_way_keeps_it():
    class OwnCreate(Aggregate):
        @classmethod
        def _create(cls, event_class: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return super()._create(event_class, **kwargs)

    class OwnBaseInit(Aggregate):
        def __base_init__(self, *args: Any, **kwargs: Any) -> None:
            super().__base_init__(*args, **kwargs)

    class Plain(Aggregate):
        def __init__(self, name: str) -> None:
            self.name = name

    for cls in (OwnCreate, OwnBaseInit):
        assert not aggregate_create._fits(cls)
    assert aggregate_create._fits(Plain)


def test_a_subclass_that_initialises_its_base_its_own_way_takes_the_library_s_way():
    class Base(Aggregate):
        def __init__(self, name: str) -> None:
            self.name = name

    Base.__module__ = "countersign.tests_only"
    aggregate_create.install()
    assert Base in aggregate_create.GIVEN

    class Sub(Base):
        def __base_init__(
            self, originator_id: Any, originator_version: int, timestamp: datetime
        ) -> None:
            super().__base_init__(originator_id, originator_version, timestamp)
            self.based = True

    sub = Sub._create(Sub.Created, id=uuid4(), name="x")
    assert sub.based
    assert sub.name == "x"
