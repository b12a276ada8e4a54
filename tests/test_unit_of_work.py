"""The unit of work behind every decision: reads, commits, retries (docs/concurrency.md)."""

from __future__ import annotations

from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster

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
