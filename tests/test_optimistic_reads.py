"""Decisions taken on state this process already holds are checked inside their commit.

Two wired instances over one database stand for two processes: each has its own snapshots.
Whatever one changes, the other never executes, refuses or reports from the old state.
"""

from __future__ import annotations

import threading
import uuid
from uuid import uuid4

import psycopg
import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization, Permission
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence.recorders import EXPECTED_VERSIONS, ReadSetChangedError
from countersign.infrastructure.settings import Settings
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import Mapper

from tests.conftest import (
    AVA,
    BEN,
    DRAFT,
    _truncate_postgres,
    count_events,
    events_table,
)
from tests.support import lock_waits
from tests.support.proposing import propose, propose_on


def _set_permissions(cs: Countersign, email: str, permissions: list[Permission]) -> None:
    granite = cs.store.get(Organization.create_id("granite"), Organization)
    granite.change_permissions(email, permissions)
    cs.store.save(granite)


def test_a_permission_revoked_elsewhere_stops_an_approval_this_process_holds_state_for(
    cs, other, seeded
):
    proposal_id = propose(cs, seeded, "refund-ok")
    _set_permissions(other, AVA, [])
    before = count_events(cs)

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.result, report.reason, report.status) == (
        "not_approvable",
        "forbidden",
        "pending",
    )
    assert count_events(cs) == before


def test_a_permission_revoked_elsewhere_stops_a_proposal(cs, other, seeded):
    propose(cs, seeded, "refund-ok")  # this process now holds granite's state
    _set_permissions(other, AVA, [])
    before = count_events(cs)

    with pytest.raises(ForbiddenError):
        propose(cs, seeded, "refund-declined")
    assert count_events(cs) == before


def test_a_permission_granted_elsewhere_is_honoured_at_once(cs, other, seeded):
    with pytest.raises(ForbiddenError):
        propose(cs, seeded, "refund-ok", actor=BEN)
    _set_permissions(other, BEN, [Permission.REFUND_ORDERS])

    assert propose(cs, seeded, "refund-ok", actor=BEN)


def test_a_refund_made_elsewhere_makes_the_approval_fail_closed(cs, other, seeded):
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)
    other.club.refund_manually("granite", order_id, AVA, "P1", 34500)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome["kind"] == "revision_required"
    assert report.status == "revision_required"
    assert cs.sandbox.refunds() == []


def test_an_outcome_recorded_elsewhere_is_the_one_reported(cs, other, seeded):
    proposal_id = propose(cs, seeded, "refund-lost-response")
    assert cs.proposals.approve(proposal_id, AVA).outcome["kind"] == "needs_reconciliation"

    swept = other.sweepers.reconcile()

    assert [s.status for s in swept] == ["succeeded"]
    again = cs.proposals.approve(proposal_id, AVA)
    assert (again.result, again.status) == ("already_completed", "succeeded")
    assert again.outcome["kind"] == "succeeded"


def test_an_approval_elsewhere_is_answered_with_its_stored_outcome(cs, other, seeded):
    proposal_id = propose(cs, seeded, "refund-ok")
    first = other.proposals.approve(proposal_id, AVA)

    again = cs.proposals.approve(proposal_id, AVA)

    assert first.result == "executed"
    assert (again.result, again.outcome) == ("already_completed", first.outcome)
    assert len(cs.sandbox.refunds()) == 1


# -- the recorder ----------------------------------------------------------------------------


class Counter(Aggregate):
    """A throwaway aggregate for the recorder's own tests (its topic is not stored)."""

    @event("Started")
    def __init__(self) -> None:
        self.count = 0

    @event("Incremented")
    def increment(self) -> None:
        self.count += 1


def _stored(cs: Countersign, *aggregates: Aggregate) -> list:
    """Their events as the library's mapper stores them: countersign's refuses to store a
    class outside the packages it reads events of, as this test module's is."""
    store = Mapper.to_stored_event
    return [store(cs.app.mapper, e) for a in aggregates for e in a.collect_events()]


def test_a_commit_whose_read_set_moved_on_writes_nothing(cs, seeded):
    recorder = cs.app.recorder
    read = Counter()
    recorder.insert_events(_stored(cs, read))
    written = Counter()
    before = recorder.max_notification_id()

    # Version 1 is current: the commit goes through.
    recorder.insert_events(_stored(cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})
    read.increment()
    recorder.insert_events(_stored(cs, read))  # someone else moves it to version 2
    written.increment()

    with pytest.raises(ReadSetChangedError) as refused:
        recorder.insert_events(_stored(cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})

    assert refused.value.aggregate_id == str(read.id)
    assert recorder.max_notification_id() == before + 2
    assert [e.originator_version for e in recorder.select_events(written.id)] == [1]


def test_an_aggregate_that_did_not_exist_when_read_fails_the_check(cs, seeded):
    written = Counter()
    with pytest.raises(ReadSetChangedError):
        cs.app.recorder.insert_events(_stored(cs, written), **{EXPECTED_VERSIONS: {uuid4(): 3}})


def test_postgres_commits_wait_for_the_writers_lock(postgres_url, clock):
    """Notification ids follow commit order only if every insert takes the table lock."""
    _truncate_postgres(postgres_url)
    cs = bootstrap(Settings(database_url=postgres_url), clock=clock)
    done = threading.Event()
    try:
        with psycopg.connect(postgres_url) as holder:
            holder.execute(f"LOCK TABLE {events_table(cs)} IN EXCLUSIVE MODE")
            writer = threading.Thread(
                target=lambda: (cs.app.recorder.insert_events(_stored(cs, Counter())), done.set())
            )
            writer.start()
            lock_waits.until_blocked(holder, events_table(cs), done.is_set)
            assert not done.is_set(), "an insert went past another writer's table lock"
            holder.rollback()
        writer.join(timeout=10)
        assert done.is_set()
    finally:
        cs.close()


def test_a_member_joining_between_revalidation_and_claim_is_caught_by_the_claim_commit(
    cs, other, seeded
):
    """The roster is only read by an approval, never written: its commit must still check it."""
    form_id = seeded["broadcast_forms"]["granite"]
    proposal_id = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=DRAFT,
        resource_id=form_id,
        request={"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Ice", "body": "Hi"},
    ).proposal_id
    store = cs.store
    save = store.save
    joined = []

    def save_after_someone_joins(*aggregates, **options):
        if not joined:  # the first save is the claim commit, after revalidation
            joined.append(other.club.join("granite", "Thursday Seniors", "Grace Kim", "g@x.ca"))
        save(*aggregates, **options)

    store.save = save_after_someone_joins
    try:
        report = cs.proposals.approve(proposal_id, AVA)
    finally:
        del store.save

    assert report.status == "revision_required"
    assert report.outcome["reason"]["code"] == "audience_changed"
    assert report.outcome["reason"]["params"] == {"approved_count": 4, "current_count": 5}
    assert cs.store.get(uuid.UUID(form_id), BroadcastForm).subject == ""


def test_drafts_applied_to_the_form_meanwhile_do_not_make_a_new_draft_stale(cs, other, seeded):
    """The form is only where a draft goes: another draft applied to it between this process's
    read and its commit changes nothing in this one, so the proposal is stored at once."""
    form_id = seeded["broadcast_forms"]["granite"]
    request = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Ice", "body": "Hi"}

    def draft(wired: Countersign) -> str:
        return wired.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=DRAFT,
            resource_id=form_id,
            request=request,
        ).proposal_id

    draft(cs)  # this process now holds the form and the roster
    # The form moves on in another process (a proposal made there would also move the
    # resource's supersession slot, which this one must then read again).
    form = other.store.get(uuid.UUID(form_id), BroadcastForm)
    form.apply_draft({}, "Typed at the desk", "Another body", uuid.uuid4())
    other.store.save(form)
    commits = []
    insert_events = cs.app.recorder.insert_events

    def counted(*args, **kwargs):
        commits.append(kwargs)
        return insert_events(*args, **kwargs)

    cs.app.recorder.insert_events = counted
    try:
        assert draft(cs)
    finally:
        del cs.app.recorder.insert_events
    assert len(commits) == 1  # not refused as stale, not retried
    assert uuid.UUID(form_id) not in commits[0][EXPECTED_VERSIONS]
