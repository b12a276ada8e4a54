"""The unit of work behind every decision: reads, commits, retries (docs/concurrency.md)."""

from __future__ import annotations

from uuid import uuid4

import pytest
from countersign.application.ports import Answer, Commit, Reads
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.errors import NotFoundError

from tests.conftest import AVA, DRAFT, count_events

DRAFT_REQUEST = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Ice", "body": "Hi"}


def _committed_then_retried(cs, monkeypatch):
    """The recorder's insert commits, then (as the library's retry after a dropped
    connection would) runs again and meets its own write."""
    insert_events = cs.app.recorder.insert_events

    def insert_twice(stored, **kwargs):
        insert_events(stored, **kwargs)
        return insert_events(stored, **kwargs)

    monkeypatch.setattr(cs.app.recorder, "insert_events", insert_twice)


def test_a_retried_insert_whose_first_try_committed_is_a_commit(cs, seeded, monkeypatch):
    roster_id = Roster.create_id(Organization.create_id("granite"))
    roster = cs.store.get(roster_id, Roster)
    roster.add_league("Sunday Spares")
    _committed_then_retried(cs, monkeypatch)

    cs.store.save(roster)  # not a ConcurrencyConflictError: the conflict is our own write

    monkeypatch.undo()
    stored = cs.store.get(roster_id, Roster)
    assert stored.version == roster.version
    assert "Sunday Spares" in stored.league_names()


def test_an_approval_whose_claim_commit_was_retried_reports_its_own_execution(
    cs, seeded, monkeypatch
):
    proposal_id = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=DRAFT,
        resource_id=seeded["broadcast_forms"]["granite"],
        request=DRAFT_REQUEST,
    ).proposal_id
    _committed_then_retried(cs, monkeypatch)
    before = count_events(cs, "Proposal.Claimed")

    report = cs.proposals.approve(proposal_id, AVA)

    monkeypatch.undo()
    assert (report.result, report.status) == ("executed", "succeeded")
    assert count_events(cs, "Proposal.Claimed") == before + 1
    assert cs.cards.card(proposal_id, AVA).outcome == report.outcome


@pytest.mark.parametrize("created", ["before_the_read", "after_the_read"])
def test_a_decision_on_an_absent_aggregate_is_decided_again_once_it_exists(
    cs, other, seeded, created
):
    """Another process creates what a decision found missing, before or after the decision
    looked for it: the decision's commit is refused, and it is decided again on fresh reads."""
    ghost = uuid4()
    absent_id = BroadcastForm.create_id(ghost)
    form_id = BroadcastForm.create_id(Organization.create_id("granite"))
    done: list[int] = []

    def create_elsewhere() -> None:
        if not done:
            other.store.save(BroadcastForm(organization_id=ghost))
            done.append(1)

    def decision(store):
        if created == "before_the_read":
            create_elsewhere()
        try:
            store.read(absent_id, BroadcastForm)
            return Answer("it exists")
        except NotFoundError:
            pass
        if created == "after_the_read":
            create_elsewhere()
        form = store.get(form_id, BroadcastForm)
        form.apply_draft({}, "s", "b", uuid4())
        return Commit([form], "committed on its absence")

    assert cs.store.decide(Reads([absent_id, form_id]), decision) == "it exists"
    assert _form(cs, form_id).drafts_applied == 0  # nothing was committed on the absence


def _form(cs, form_id):
    return cs.store.get(form_id, BroadcastForm)


def test_decisions_on_unknown_ids_leave_nothing_to_remember(cs, seeded):
    """A scanner declining random ids must not push useful read sets out of the memory."""
    read_sets = cs.store._unit_of_work._read_sets
    before = len(read_sets._items)
    for _ in range(50):
        cs.proposals.decline(str(uuid4()), AVA)
    assert len(read_sets._items) == before
