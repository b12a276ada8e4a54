"""The pending-proposal slot forgets what can no longer be pending: a roster's slot held every
e-mail ever proposed for it (an agent token adding a new one each request grew it without
end, and every later proposal on the roster copied the whole of it). Each hold now records its
proposal's expiry and the application's time, and drops every subject whose proposal expired
by then; supersession inside a proposal's lifetime is unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from countersign.domain.pending_slot import FORGET_FROM, PendingSlot
from countersign.domain.proposal import Proposal
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.persistence.stored_snapshots import SNAPSHOT_INTERVAL

from tests.support.proposing import proposal

ADD = "roster.add_member"
DAY = timedelta(days=1)


def _add(cs, seeded, email: str):
    request = {"email": email, "league": "Junior Program", "name": "New Player"}
    return proposal(
        cs, seeded, operation=ADD, request=request, resource_id=seeded["rosters"]["granite"]
    )


def _roster_slot(cs, created) -> PendingSlot:
    made = cs.store.read(UUID(created.proposal_id), Proposal)
    slot_id = PendingSlot.create_id(made.organization_id, made.resource_id)
    return cs.store.read(slot_id, PendingSlot)


def _subjects(slot: PendingSlot) -> set[str]:
    return set(slot.latest.get(ADD, {}))


def test_a_hold_forgets_the_subjects_whose_proposals_have_expired(cs, seeded, clock):
    first = [_add(cs, seeded, f"player{i}@example.com") for i in range(FORGET_FROM)]
    assert len(_subjects(_roster_slot(cs, first[-1]))) == FORGET_FROM

    clock.advance(days=1, seconds=1)  # past their expiry (a day)
    later = _add(cs, seeded, "late@example.com")

    slot = _roster_slot(cs, later)
    assert _subjects(slot) == {"late@example.com/Junior Program"}
    assert set(slot.until[ADD]) == _subjects(slot)
    assert later.supersedes == []


def test_a_proposal_inside_its_lifetime_is_still_superseded(cs, seeded, clock):
    first = _add(cs, seeded, "same@example.com")
    clock.advance(hours=23)
    _add(cs, seeded, "other@example.com")  # a hold that forgets nothing yet
    again = _add(cs, seeded, "same@example.com")
    assert again.supersedes == [first.proposal_id]


def test_an_expired_proposal_not_yet_swept_is_superseded_or_left_to_expire(cs, seeded, clock):
    """Proposed again once it has expired (the sweeper not there yet): while the slot still
    knows it, the new one supersedes it; once a hold has forgotten it, it is left as it is,
    for the sweeper to expire: approving it fails on its expiry either way."""
    first = _add(cs, seeded, "same@example.com")
    clock.advance(days=1, seconds=1)
    again = _add(cs, seeded, "same@example.com")
    assert again.supersedes == [first.proposal_id]

    others = [_add(cs, seeded, f"player{i}@example.com") for i in range(FORGET_FROM - 1)]
    clock.advance(days=1, seconds=1)
    _add(cs, seeded, "someone.else@example.com")  # forgets "same@" and the others, expired
    third = _add(cs, seeded, "same@example.com")
    assert third.supersedes == []
    assert cs.store.read(UUID(again.proposal_id), Proposal).status == "pending"
    slot = _roster_slot(cs, third)
    assert slot.latest[ADD]["same@example.com/Junior Program"] == UUID(third.proposal_id)
    assert not {UUID(other.proposal_id) for other in others} & set(slot.latest[ADD].values())


def test_the_slot_stays_small_across_snapshots_and_cold_reads(cs, seeded, clock):
    """More holds than a snapshot interval, a day apart: a cold read of the slot (snapshot
    and the events after it) holds fewer than ``FORGET_FROM`` subjects, the last among them."""
    created = None
    for i in range(SNAPSHOT_INTERVAL + 5):
        created = _add(cs, seeded, f"p{i}@example.com")
        clock.advance(days=1, seconds=1)
    assert created is not None
    made = cs.store.read(UUID(created.proposal_id), Proposal)
    slot_id = PendingSlot.create_id(made.organization_id, made.resource_id)
    fresh = bootstrap(cs.settings, clock=cs.clock)  # another process's cold read
    try:
        cold = fresh.store.read(slot_id, PendingSlot)
    finally:
        fresh.close()
    assert len(cold.latest[ADD]) <= FORGET_FROM
    assert cold.latest[ADD][f"p{SNAPSHOT_INTERVAL + 4}@example.com/Junior Program"] == UUID(
        created.proposal_id
    )
    assert set(cold.until[ADD]) == set(cold.latest[ADD])


def test_holds_without_an_expiry_and_version_one_state_are_kept():
    """Version 1's holds (no expiry, no time) forget nothing and are never forgotten by time;
    a version 1 snapshot's state is upcast with no expiries."""
    slot = PendingSlot(organization_id=uuid4(), resource_id=uuid4())
    old = uuid4()
    slot.hold("kind", "old", old)
    at = datetime(2026, 12, 1, tzinfo=UTC)
    for i in range(FORGET_FROM):
        slot.hold("kind", f"s{i}", uuid4(), expires_at=at + DAY, at=at)
    slot.hold("other", "x", uuid4(), expires_at=at + DAY, at=at)
    assert len(slot.latest["kind"]) == FORGET_FROM + 1  # nothing expired yet
    last = uuid4()
    slot.hold("kind", "new", last, expires_at=at + 20 * DAY, at=at + 2 * DAY)
    assert slot.latest["kind"] == {"old": old, "new": last}  # "old" has no expiry known
    assert set(slot.until["kind"]) == {"new"}
    assert set(slot.latest["other"]) == {"x"}  # another operation's: forgotten at its own
    state: dict[str, object] = {"latest": {}}
    PendingSlot.upcast_v1_v2(state)
    assert state["until"] == {}
    event: dict[str, object] = {"kind": "k", "subject": "", "proposal_id": old}
    PendingSlot.Held.upcast_v1_v2(event)
    assert event["expires_s"] is None
    assert event["at_s"] is None
