"""The store copies aggregates cheaply (``copy_aggregate``), and the copy is as deep as
``copy.deepcopy`` would make it: equal state, nothing mutable shared, aliases kept."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID, uuid4, uuid5

import pytest
from countersign.domain.club.accounts import MemberAccount
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.ids import _NAMESPACE, stable_id
from countersign.domain.club.orders import Order
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.club.roster import Roster
from countersign.domain.interaction import Interaction
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.infrastructure.persistence.aggregate_copy import (
    SharedSnapshotError,
    copy_aggregate,
    copy_state,
)
from eventsourcing.domain import Aggregate

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ORG = uuid4()


def _proposal() -> Proposal:
    proposal = Proposal.propose(
        id=uuid4(),
        organization_id=ORG,
        section="email_broadcasts",
        resource_id=uuid4(),
        requested_by="ava@granite.example",
        interaction_id="int-1",
        kind="email_broadcast.apply_draft",
        contract_version=1,
        arguments={"filters": {"leagues": ["Monday", "Tuesday"]}, "subject": "Hé", "count": 3},
        preview={"filters_in_words": "members of Monday or Tuesday", "nested": [{"a": [1, 2]}]},
        expires_at=NOW + timedelta(days=1),
        digest="d" * 64,
    )
    proposal.approve_and_claim("ava@granite.example", NOW, uuid4())
    proposal.record_revalidated({"audience_count": 3, "leagues": ["Monday", "Tuesday"]})
    return proposal


def _organization() -> Organization:
    organization = Organization(slug="granite", name="Granite")
    organization.add_member("ava@granite.example", "Ava", "manager", list(Permission))
    organization.add_member("ben@granite.example", "Ben", "staff", [Permission.READ_AUDIT])
    return organization


def _order() -> Order:
    order = Order(
        organization_id=ORG,
        key="A-1",
        participant_name="Pat",
        participant_email="pat@example.com",
        currency="CAD",
        line_items=[
            {"ref": "L1", "product": "League", "amount_cents": 32000, "configuration": "x"}
        ],
        discounts=[
            {
                "ref": "D1",
                "name": "Early bird",
                "line_item": "L1",
                "percent": 10,
                "amount_cents": None,
                "applied": False,
                "eligibility": "before June",
            }
        ],
        payments=[
            {
                "ref": "P1",
                "method": "card",
                "label": "Visa",
                "amount_cents": 32000,
                "charge_id": "ch_1",
            }
        ],
        note="",
        placed_at=NOW,
    )
    order.refund_manually("P1", 100, "ava@granite.example")
    order.start_refund_attempt(uuid4(), "P1", "D1", 3200, "key-1")
    return order


def _account() -> MemberAccount:
    account = MemberAccount(
        organization_id=ORG, email="Pat@Example.com", holder_name="Pat", currency="CAD"
    )
    account.credit(500, "goodwill", uuid4())
    return account


def _roster() -> Roster:
    roster = Roster(organization_id=ORG)
    roster.add_league("Monday")
    roster.join("Monday", "Ava", "ava@example.com")
    roster.join("Monday", "Ben", "ben@example.com")
    return roster


def _form() -> BroadcastForm:
    form = BroadcastForm(organization_id=ORG)
    form.apply_draft({"leagues": ["Monday"]}, "Subject", "Body", uuid4())
    return form


def _interaction() -> Interaction:
    interaction = Interaction(
        id=uuid4(),
        organization_id=ORG,
        section="orders",
        resource_id=uuid4(),
        manager="ava",
        started_through="person",
    )
    interaction.hear("refund the early bird discount")
    interaction.record_tool_call("propose", {"payment": "P1", "refs": ["L1", "D1"]}, "ok")
    interaction.link(uuid4())
    interaction.say("Done.", "application")
    return interaction


def _change_proposal(proposal: Any) -> None:
    proposal.succeed({"kind": "succeeded", "result": {"audience_count": 3}})
    proposal.arguments["filters"]["leagues"].append("Friday")
    proposal.preview["nested"][0]["a"].append(3)


def _change_organization(organization: Any) -> None:
    organization.change_permissions("ben@granite.example", [Permission.REFUND_ORDERS])
    organization.remove_member("ava@granite.example")
    organization.add_member("cy@granite.example", "Cy", "staff", [])


def _change_order(order: Any) -> None:
    (attempt,) = order.unresolved_attempts()
    order.settle_refund_attempt(UUID(attempt.proposal_id), "ava@granite.example")
    order.refund_manually("P1", 50, "ben@granite.example")
    order._line_items[0]["amount_cents"] = 1


def _change_account(account: Any) -> None:
    account.credit(700, "again", None)
    account.entries[0]["memo"] = "changed"


def _change_roster(roster: Any) -> None:
    roster.join("Monday", "Cy", "cy@example.com")
    roster.leave("Monday", "ava@example.com")
    roster.add_league("Tuesday")


def _change_form(form: Any) -> None:
    form.apply_draft({"leagues": ["Tuesday"]}, "Other", "Other body", uuid4())
    form.filters["leagues"].append("Friday")


def _change_interaction(interaction: Any) -> None:
    interaction.hear("and another")
    interaction.link(uuid4())
    interaction.end_turn("done")
    interaction.transcript[0]["text"] = "changed"


CASES: list[tuple[Callable[[], Aggregate], Callable[[Any], None]]] = [
    (_proposal, _change_proposal),
    (_organization, _change_organization),
    (_order, _change_order),
    (_account, _change_account),
    (_roster, _change_roster),
    (_form, _change_form),
    (_interaction, _change_interaction),
]
IDS = [build.__name__.strip("_") for build, _ in CASES]


def _mutables(value: Any, found: dict[int, Any]) -> dict[int, Any]:
    """Every dict and list reachable from ``value``, through aggregates and events too
    (enum members are singletons, shared by copy.deepcopy as well)."""
    if isinstance(value, dict | list) and id(value) not in found:
        found[id(value)] = value
        for item in value.values() if isinstance(value, dict) else value:
            _mutables(item, found)
    elif hasattr(value, "__dict__") and not isinstance(value, type | Enum):
        _mutables(vars(value), found)
    return found


def test_every_aggregate_class_copies_cheaply():
    """The cases cover every aggregate class, and each is a plain eventsourcing aggregate:
    the store copies any of them with ``copy_aggregate`` (the classes carry no copy code)."""
    classes = {type(build()) for build, _ in CASES}
    assert classes == {
        Proposal,
        Organization,
        Order,
        MemberAccount,
        Roster,
        BroadcastForm,
        Interaction,
    }
    assert all(cls.__bases__ == (Aggregate,) for cls in classes)


@pytest.mark.parametrize("collected", [False, True], ids=["pending", "saved"])
@pytest.mark.parametrize(("build", "change"), CASES, ids=IDS)
def test_copy_is_equal_and_independent(build, change, collected):
    original = build()
    if collected:
        original.collect_events()  # as when the store caches it after a save
    before = pickle.dumps(original)

    copied = copy_aggregate(original)

    assert type(copied) is type(original)
    assert vars(copied) == vars(original)
    assert vars(copied) == vars(copy.deepcopy(pickle.loads(before)))
    assert copied._pending_events is not original._pending_events
    assert not _mutables(vars(copied), {}).keys() & _mutables(vars(original), {}).keys()

    change(copied)
    copied.collect_events()

    assert pickle.dumps(original) == before
    assert vars(copied) != vars(original)


@pytest.mark.parametrize(("build", "change"), CASES, ids=IDS)
def test_copy_can_be_saved_and_replayed(build, change):
    """The copy's new events replay onto the original into the copy's state."""
    original = build()
    original.collect_events()
    copied = copy_aggregate(original)
    change(copied)
    for event in copied.collect_events():
        original = event.mutate(original)
    if isinstance(copied, Proposal):
        assert original.status == copied.status == ProposalStatus.SUCCEEDED
    assert original.version == copied.version


def test_aliases_within_an_aggregate_stay_aliases():
    """Like copy.deepcopy: a pending event and the state share the dict it carried."""
    original = _proposal()
    assert original._pending_events[0].arguments is original.arguments
    copied = copy_aggregate(original)
    assert copied._pending_events[0].arguments is copied.arguments
    assert copied.arguments is not original.arguments


@dataclass
class _Box:
    items: list[int]


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, {"b": (2, 3)}], "c": None, 4: "four", (5, 6): [7]},
        ["x", 1.5, True, Decimal("1.10"), date(2026, 1, 1), NOW, uuid4(), timedelta(1)],
        (1, [2, 3]),
        {1, 2},
        OrderedDict(a=[1]),
        _Box([1, 2]),
        ProposalStatus.PENDING,
        [[1], [2, [3, {"deep": ["er"]}]]],
    ],
)
def test_copy_state_is_as_deep_as_deepcopy(value):
    copied = copy_state(value, {})
    assert copied == copy.deepcopy(value)
    assert type(copied) is type(value)
    assert not _mutables(copied, {}).keys() & _mutables(value, {}).keys()


def test_copy_state_keeps_shared_containers_shared():
    shared: list[int] = [1]
    copied = copy_state({"a": shared, "b": [shared, (shared,)]}, {})
    assert copied["a"] is copied["b"][0] is copied["b"][1][0]
    assert copied["a"] is not shared


def test_stable_id_is_remembered_but_unchanged():
    organization_id = UUID("0b8f4a52-54e4-4d3c-9f7e-3c0c4a1f7e21")
    expected = uuid5(_NAMESPACE, f"roster/{organization_id}")
    assert Roster.create_id(organization_id) == expected
    assert Roster.create_id(organization_id) == expected
    assert stable_id("organization", "granite") == uuid5(_NAMESPACE, "organization/granite")
    assert stable_id("a", str(organization_id)) == stable_id("a", organization_id)


def test_a_finished_proposal_is_kept_as_the_snapshot_itself_and_refuses_commands(cs, seeded):
    """A final save hands the caller's object to the store as the shared snapshot: no copy.
    A command given to it afterwards raises instead of changing what others read."""
    created = cs.proposals.propose(
        organization="granite",
        actor="ava@granite.example",
        operation="order.refund_missing_discount",
        resource_id=seeded["orders"]["refund-ok"],
        request={
            "payment": "P1",
            "line_item": "L1",
            "discount": "D1",
            "destination": "original_payment_method",
        },
    )
    pid = UUID(created.proposal_id)
    shared = cs.store.read(pid, Proposal)
    with pytest.raises(SharedSnapshotError):
        shared.expire(shared.expires_at)
    assert cs.store.read(pid, Proposal).status == "pending"

    private = cs.store.get(pid, Proposal)  # a copy: a changeable aggregate again
    assert private is not shared
    private.expire(private.expires_at)
    assert private.status == "expired"
    assert cs.store.read(pid, Proposal).status == "pending"


def test_a_frozen_mark_goes_with_its_object_and_never_passes_to_another():
    """The shared-snapshot mark is kept by id(): when the object dies its entry goes, and an
    object that later gets the same id() is a private, changeable aggregate."""
    import gc

    from countersign.infrastructure.persistence import aggregate_copy

    slot = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
    aggregate_copy.freeze(slot)
    with pytest.raises(aggregate_copy.SharedSnapshotError):
        slot.hold("kind", "", uuid4())
    key = id(slot)
    assert key in aggregate_copy._FROZEN
    del slot
    gc.collect()
    assert key not in aggregate_copy._FROZEN
    # Many fresh objects, some of which reuse the dead one's id(): none is frozen.
    for _ in range(200):
        fresh = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
        fresh.hold("kind", "", uuid4())
        assert len(fresh.collect_events()) == 2


def test_the_guarded_trigger_event_is_the_librarys_step_for_step():
    """A guarded class whose events the library triggers as they are takes the store's own
    ``trigger_event`` (aggregate_copy._trigger_event): the same events, the same state and
    the same refusals as eventsourcing's ``trigger_event`` and ``mutate``."""
    from countersign.infrastructure.persistence import aggregate_copy
    from eventsourcing.domain import BaseAggregate

    lean, library = _proposal(), _proposal()
    library.__dict__.update(copy_aggregate(lean).__dict__)
    for aggregate in (lean, library):
        aggregate.collect_events()
    before = lean.version
    assert aggregate_copy._plain_events(Proposal, BaseAggregate.trigger_event)
    fields: dict[str, Any] = {
        "approved_by": "ava@granite.example",
        "approved_at": NOW,
        "role": None,
        "credential": "person",
        "membership_id": None,
        "passkey": None,
        "chain": "c" * 64,
    }
    aggregate_copy._trigger_event(lean, Proposal.Approved, **fields, timestamp=NOW)
    BaseAggregate.trigger_event(library, Proposal.Approved, **fields, timestamp=NOW)
    assert lean == library
    assert lean.collect_events() == library.collect_events()
    assert (lean.version, lean.modified_on) == (before + 1, NOW)

    # Without a timestamp, the library's own: now, in its time zone.
    aggregate_copy._trigger_event(
        lean, Proposal.Claimed, attempt_id=uuid4(), claimed_at=NOW, chain="d" * 64
    )
    (claimed,) = lean.collect_events()
    assert claimed.timestamp.tzinfo is UTC
    assert (lean.modified_on, lean.version) == (claimed.timestamp, before + 2)

    # The same refusals, the aggregate unchanged.
    for trigger in (aggregate_copy._trigger_event, BaseAggregate.trigger_event):
        with pytest.raises(TypeError, match="Can't construct event") as refused:
            trigger(library, Proposal.Claimed, attempt_id=uuid4())  # claimed_at missing
        assert "claimed_at" in str(refused.value)
    assert library.version == before + 1
    assert not library.collect_events()


def test_a_command_on_a_guarded_class_uses_the_store_trigger_event(cs, seeded):
    """Proposal is guarded once the store has frozen one, and its commands then take
    ``_trigger_event``; its result is the one the library's gives (above)."""
    from countersign.infrastructure.persistence import aggregate_copy

    created = cs.proposals.propose(
        organization="granite",
        actor="ava@granite.example",
        operation="email_broadcast.apply_draft",
        resource_id=seeded["broadcast_forms"]["granite"],
        request={"filters": {"leagues": ["Thursday Seniors"]}, "subject": "S", "body": "B"},
    )
    assert Proposal in aggregate_copy._GUARDED
    assert Proposal.trigger_event is aggregate_copy._trigger_event
    calls: list[str] = []
    original = aggregate_copy._trigger_event

    def counting(self: Any, event_class: Any, **kwargs: Any) -> None:
        calls.append(event_class.__name__)
        original(self, event_class, **kwargs)

    Proposal.trigger_event = counting  # type: ignore[method-assign]
    try:
        assert cs.proposals.approve(created.proposal_id, "ava@granite.example").result == (
            "executed"
        )
    finally:
        Proposal.trigger_event = original  # type: ignore[method-assign]
    assert calls == ["Approved", "Claimed", "Revalidated", "Succeeded"]
    # ... and a shared snapshot still refuses a command through it.
    shared = cs.store.read(UUID(created.proposal_id), Proposal)
    with pytest.raises(SharedSnapshotError):
        shared.trigger_event(Proposal.Claimed, attempt_id=uuid4(), claimed_at=NOW, chain="c" * 64)
    assert shared.status == "succeeded"
