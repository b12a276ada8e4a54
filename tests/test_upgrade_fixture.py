"""An upgrade keeps every stored proposal working: a database written by main at 0a9997d (before
the ``countersign.`` namespace, so its events name the old topics) is opened by today's code,
and its pending proposals are approved, its reconciling refund is settled, and its history,
audit chain, projections and hand-back still read.

The fixture is ``tests/fixtures/golden_0a9997d`` (``make.py`` there says how it was made): a
SQLite file, and the same story as a PostgreSQL dump.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA
from tests.support.golden_postgres import GoldenPostgres

FIXTURE = Path(__file__).parent / "fixtures" / "golden_0a9997d"


@pytest.fixture
def upgraded(
    database_url: str, golden_postgres: GoldenPostgres, tmp_path: Path
) -> Iterator[tuple[Countersign, dict[str, Any]]]:
    """Today's code on a copy of the old database, an hour after it was written."""
    if database_url.startswith("sqlite"):
        copy = tmp_path / "upgraded.db"
        shutil.copyfile(FIXTURE / "countersign.db", copy)
        database_url = f"sqlite:///{copy}"
        manifest = json.loads((FIXTURE / "manifest.json").read_text())
    else:
        database_url = golden_postgres.copy(FIXTURE / "postgres.sql")
        manifest = json.loads((FIXTURE / "manifest-postgres.json").read_text())
    clock = FakeClock(datetime.fromisoformat(manifest["written_at"]))
    clock.advance(hours=1)
    cs = bootstrap(Settings(database_url=database_url), clock=clock)
    yield cs, manifest
    cs.close()


def _status(cs: Countersign, proposal_id: str) -> str:
    return cs.cards.card(proposal_id, AVA).status


def test_every_stored_proposal_reads_as_it_was_left(upgraded):
    cs, manifest = upgraded
    ids = manifest["proposals"]
    assert _status(cs, ids["pending_card_refund"]) == "pending"
    assert _status(cs, ids["pending_broadcast_draft"]) == "pending"
    assert _status(cs, ids["succeeded_account_credit"]) == "succeeded"
    assert _status(cs, ids["reconciling_card_refund"]) == "reconciling"
    assert _status(cs, ids["declined"]) == "declined"
    history = cs.audit.history(ids["succeeded_account_credit"])
    assert [e["type"] for e in history["events"]][:2] == ["Proposed", "Approved"]
    assert verify(cs.app, cs.sql).ok


def test_pending_proposals_are_approved_and_the_reconciling_refund_settles(upgraded):
    cs, manifest = upgraded
    ids = manifest["proposals"]
    card = cs.proposals.approve(ids["pending_card_refund"], AVA)
    draft = cs.proposals.approve(ids["pending_broadcast_draft"], AVA)
    assert (card.result, card.status) == ("executed", "succeeded")
    assert (draft.result, draft.status) == ("executed", "succeeded")

    settled = cs.sweepers.reconcile()
    assert [(r.proposal_id, r.status) for r in settled] == [
        (ids["reconciling_card_refund"], "succeeded")
    ]
    lost_key = next(
        r for r in cs.sandbox.refunds() if ids["reconciling_card_refund"] in r["idempotency_key"]
    )
    assert lost_key["requests"] == 1  # looked up, never sent again

    again = cs.proposals.approve(ids["succeeded_account_credit"], AVA)
    assert again.result == "already_completed"
    assert verify(cs.app, cs.sql).ok


def test_projections_rebuild_from_the_old_log_and_read_its_conversation(upgraded):
    cs, manifest = upgraded
    # The conversation's card refund, approved after the upgrade, hands back to it.
    cs.proposals.approve(manifest["proposals"]["pending_card_refund"], AVA)
    for runner in cs.projection_runners():
        runner.rebuild()
    granite = manifest["seed"]["organizations"][0]["id"]
    cards = {pid: cs.read_models.card(granite, pid) for pid in manifest["proposals"].values()}
    assert all(card is not None for card in cards.values())
    assert cards[manifest["proposals"]["succeeded_account_credit"]]["status"] == "succeeded"
    messages = cs.read_models.handback(granite, manifest["interaction_id"])
    assert messages, "the old conversation hands back the new outcome"


def test_leagues_stored_before_capacities_have_no_limit_and_take_moves(upgraded):
    cs, _ = upgraded
    leagues = {league["name"]: league for league in cs.club.leagues("granite")}
    assert leagues["Thursday Seniors"] == {
        "name": "Thursday Seniors",
        "active_members": 4,
        "capacity": None,
    }
    roster_id = Roster.create_id(Organization.create_id("granite"))
    roster = cs.store.get(roster_id, Roster)
    roster.move("olivia.chen@example.com", "Sunday Mixed Doubles", "Thursday Seniors")
    cs.store.save(roster)
    assert cs.club.leagues("granite")[-1]["active_members"] == 5  # Thursday Seniors, sorted last


def test_orders_stored_before_they_recorded_a_league_load_active_and_without_one(upgraded):
    cs, manifest = upgraded
    order = cs.club.order("granite", manifest["seed"]["orders"]["refund-stale"])
    assert order.league is None
    assert order.is_active
    assert order.refundable_balance_cents == order.paid_cents == 34500
