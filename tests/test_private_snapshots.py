"""A decision's private aggregate is the cached snapshot itself when nothing but the cache held
it (``EventSourcedStore._private``): no copy. It must stay impossible for a decision to change
what anyone else reads: the snapshot leaves the cache first, and is handed over only if no
other reference to it is left; otherwise the decision gets a copy, as always."""

from __future__ import annotations

import gc
from typing import Any
from uuid import UUID

import pytest
from countersign.application.ports import Answer, Commit, Reads
from countersign.domain.errors import NotFoundError
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal
from countersign.domain.proposal_status import EXPIRED, PENDING
from countersign.infrastructure.persistence import aggregate_copy
from countersign.infrastructure.persistence.aggregate_copy import SharedSnapshotError

from tests.conftest import DRAFT
from tests.support.proposing import propose


def _pending(cs: Any, seeded: dict[str, Any]) -> UUID:
    """A pending broadcast draft on granite's form (tests.support.proposing)."""
    return UUID(propose(cs, seeded, operation=DRAFT))


def _frozen(aggregate: Any) -> bool:
    reference = aggregate_copy._FROZEN.get(id(aggregate))
    return reference is not None and reference() is aggregate


def test_a_snapshot_only_the_cache_held_is_the_decisions_own_until_it_commits(cs, seeded):
    pid = _pending(cs, seeded)
    held = id(cs.store._snapshots.get(pid))  # its id only: a reference would be a holder
    seen: dict[str, Any] = {}

    def expire(store: Repository) -> Commit[None]:
        proposal = store.get(pid, Proposal)
        seen["same"] = id(proposal) == held
        seen["cached"] = cs.store._snapshots.get(pid) is not None
        seen["frozen"] = _frozen(proposal)
        proposal.expire(proposal.expires_at)  # a command: it is no shared snapshot now
        return Commit([proposal], None)

    cs.store.decide(Reads([pid]), expire)

    assert seen == {"same": True, "cached": False, "frozen": False}
    # What it committed is the snapshot again, frozen.
    snapshot = cs.store.read(pid, Proposal)
    assert id(snapshot) == held
    assert snapshot.status == EXPIRED
    assert _frozen(snapshot)
    with pytest.raises(SharedSnapshotError):
        snapshot.trigger_event(Proposal.Expired, at=snapshot.expires_at, chain="c" * 64)


def test_a_snapshot_held_elsewhere_is_copied_and_never_changes(cs, seeded):
    pid = _pending(cs, seeded)
    other = cs.store.read(pid, Proposal)  # another reader's: the shared snapshot
    taken: list[Proposal] = []

    def expire(store: Repository) -> Commit[None]:
        proposal = store.get(pid, Proposal)
        taken.append(proposal)
        proposal.expire(proposal.expires_at)
        return Commit([proposal], None)

    cs.store.decide(Reads([pid]), expire)

    assert taken[0] is not other
    assert other.status == PENDING
    assert _frozen(other)
    with pytest.raises(SharedSnapshotError):
        other.expire(other.expires_at)


def test_what_a_decision_changed_and_did_not_commit_is_never_read(cs, seeded):
    pid = _pending(cs, seeded)
    changed: list[Proposal] = []

    def change_and_answer(store: Repository) -> Answer[None]:
        proposal = store.get(pid, Proposal)
        proposal.expire(proposal.expires_at)
        changed.append(proposal)
        return Answer(None)

    cs.store.decide(Reads([pid]), change_and_answer)

    assert changed
    assert all(p.status == EXPIRED for p in changed)
    again = cs.store.read(pid, Proposal)
    assert again.status == PENDING
    assert _frozen(again)
    assert all(again is not p for p in changed)
    gc.collect()


def test_a_second_read_in_the_decision_sees_the_stored_state(cs, seeded):
    pid = _pending(cs, seeded)
    statuses: list[tuple[str, str, bool]] = []

    def read_twice(store: Repository) -> Answer[None]:
        proposal = store.get(pid, Proposal)
        proposal.expire(proposal.expires_at)
        again = store.read(pid, Proposal)
        statuses.append((str(proposal.status), str(again.status), again is proposal))
        return Answer(None)

    cs.store.decide(Reads([pid]), read_twice)

    assert statuses
    assert all(s == (str(EXPIRED), str(PENDING), False) for s in statuses)


def test_outside_a_decision_get_copies_and_the_cache_keeps_its_snapshot(cs, seeded):
    pid = _pending(cs, seeded)
    held = id(cs.store._snapshots.get(pid))

    with cs.store.one_request():
        private = cs.store.get(pid, Proposal)
    private.expire(private.expires_at)

    cached = cs.store._snapshots.get(pid)
    assert id(cached) == held
    assert cached.status == PENDING
    assert _frozen(cached)


def test_a_read_of_the_wrong_type_leaves_the_snapshot_cached(cs, seeded):
    pid = _pending(cs, seeded)
    held = id(cs.store._snapshots.get(pid))

    def wrong_type(store: Repository) -> Answer[None]:
        store.get(pid, PendingSlot)  # NotFoundError: never taken from the cache
        return Answer(None)

    with pytest.raises(NotFoundError):
        cs.store.decide(Reads([pid]), wrong_type)

    cached = cs.store._snapshots.get(pid)
    assert id(cached) == held
    assert _frozen(cached)


def test_hand_overs_are_made_only_where_reference_counts_show_every_holder(monkeypatch):
    # This interpreter (CPython 3.11-3.13 with its GIL) counts as taken_or_copied relies on.
    assert aggregate_copy._counts_every_holder()
    # 3.14's interpreter may leave a stack reference uncounted (a holder hidden by a count
    # one short): copies there, always; so on another implementation, or a count that is off.
    monkeypatch.setattr(aggregate_copy.sys, "version_info", (3, 14, 0))
    assert not aggregate_copy._counts_every_holder()
    monkeypatch.undo()
    monkeypatch.setattr(aggregate_copy, "_HELD_BY_US", aggregate_copy._HELD_BY_US + 1)
    assert not aggregate_copy._counts_every_holder()
    monkeypatch.undo()
    monkeypatch.setattr(aggregate_copy.sys.implementation, "name", "pypy")
    assert not aggregate_copy._counts_every_holder()
