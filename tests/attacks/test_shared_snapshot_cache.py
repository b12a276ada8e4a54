"""Issue 23, part 6: a reader could change the shared snapshot cache.

Only snapshots handed over by a commit were frozen; one loaded from the database was not. A
command run on a loaded ``read()`` Roster was accepted (its version went from 20 to 21 with one
pending event) and the next reader in that process got the changed object. Now every shared
snapshot is frozen however it got into the cache, ``read()`` always answers a frozen object,
and the read-only facts a proposal is prepared from refuse commands.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from uuid import UUID

import pytest
from countersign.application.ports import Answer, Reads, SharedSnapshots
from countersign.domain.club.roster import Roster
from countersign.domain.errors import StaleReadError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.persistence.aggregate_copy import SharedSnapshotError

from tests.conftest import AVA
from tests.support.proposing import propose
from tests.test_corrupt_records import _fresh, _rewrite_state

LEAGUE = "Monday Night Open"


def _roster_id(seeded: dict[str, Any]) -> UUID:
    return UUID(str(seeded["rosters"]["granite"]))


def test_a_snapshot_loaded_from_the_database_refuses_commands(other: Countersign, seeded):
    """``other`` is a second process: it holds nothing, so its read loads from the database."""
    roster_id = _roster_id(seeded)
    loaded = other.store.read(roster_id, Roster)
    version = loaded.version
    with pytest.raises(SharedSnapshotError):
        loaded.join(LEAGUE, "Eve Intruder", "eve@example.com")
    again = other.store.read(roster_id, Roster)
    assert again.version == version
    assert not again.plays_in(LEAGUE, "eve@example.com")
    assert list(again.collect_events()) == []
    # A private copy (get) is still a changeable aggregate of its own.
    mine = other.store.get(roster_id, Roster)
    mine.join(LEAGUE, "Eve Member", "eve@example.com")
    assert not other.store.read(roster_id, Roster).plays_in(LEAGUE, "eve@example.com")


def test_a_snapshot_read_inside_a_decision_refuses_commands(other: Countersign, seeded):
    roster_id = _roster_id(seeded)

    def meddling(facts: Any) -> Answer[None]:
        facts.read(roster_id, Roster).join(LEAGUE, "Eve Intruder", "eve@example.com")
        return Answer(None)

    with pytest.raises(SharedSnapshotError):
        other.store.decide(Reads([roster_id]), meddling)
    assert not other.store.read(roster_id, Roster).plays_in(LEAGUE, "eve@example.com")


def test_the_read_only_facts_refuse_commands(other: Countersign, seeded):
    roster_id = _roster_id(seeded)

    def preparing(facts: Any) -> Answer[None]:
        SharedSnapshots(facts).get(roster_id, Roster).join(LEAGUE, "Eve", "eve@example.com")
        return Answer(None)

    with pytest.raises(SharedSnapshotError):
        other.store.decide(Reads([roster_id]), preparing)


# -- _fail logs after the commit -------------------------------------------------------------------


def test_a_terminal_failure_logs_only_the_correlation_id_it_stored(cs, seeded, clock, caplog):
    """The claim's decision runs twice (its first commit is refused as stale): only the
    second run's correlation id is stored, and only it may be logged."""
    proposal_id = propose(cs, seeded)

    def corrupt(state: dict[str, Any]) -> dict[str, Any]:
        state["arguments"]["amount_cents"] = "lots"
        return state

    _rewrite_state(cs, proposal_id, 1, corrupt)
    process = _fresh(cs, clock)
    save = process.store.save
    refused: list[int] = []

    def first_commit_loses(*aggregates: Any, **options: Any) -> None:
        if not refused:
            refused.append(1)
            raise StaleReadError("another process moved on")
        save(*aggregates, **options)

    process.store.save = first_commit_loses  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.ERROR, logger="countersign"):
            report = process.proposals.approve(proposal_id, AVA)
    finally:
        process.close()
    assert refused == [1]
    stored = report.outcome["correlation_id"]
    logged = re.findall(r"cs-[0-9a-f]{16}", caplog.text)
    assert logged == [stored]
