"""The fault points are where docs/faults.md says they are: every one is reached, in order, on
the approve path of an external operation and in the reconciler, none on a local one; and
``COUNTERSIGN_CRASH_AT`` names a point or is refused (the crash suite, test_crash_points.py,
kills processes at each)."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.application.ports import FAULT_POINTS, FaultPoint, NoFaults
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.crash_points import CrashAt, fault_points_from_env
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.settings import Settings, SettingsError

from tests.conftest import AVA
from tests.support.proposing import TO_ACCOUNT_CREDIT, propose


class Recorded:
    """The FaultPoints port, remembering every point reached."""

    def __init__(self) -> None:
        self.points: list[FaultPoint] = []

    def reached(self, point: FaultPoint) -> None:
        self.points.append(point)


APPROVE_PATH = [
    "after_claim_commit",
    "before_provider_call",
    "after_provider_call",
    "before_outcome_commit",
    "after_outcome_commit",
]


@pytest.fixture
def recorded(database_url: str, clock: FakeClock, seeded: dict[str, Any]) -> Any:
    faults = Recorded()
    wired = bootstrap(Settings(database_url=database_url), clock=clock, faults=faults)
    yield wired, faults
    wired.close()


def test_the_approve_path_of_a_card_refund_reaches_every_point_in_order(recorded, seeded):
    cs, faults = recorded
    proposal = propose(cs, seeded, "refund-ok")

    assert cs.proposals.approve(proposal, AVA).status == "succeeded"

    assert faults.points == APPROVE_PATH
    assert set(APPROVE_PATH) | {"reconcile_before_replay", "reconcile_after_replay"} == set(
        FAULT_POINTS
    )


def test_a_local_operation_commits_its_outcome_with_its_claim_and_reaches_no_point(
    recorded, seeded
):
    cs, faults = recorded
    proposal = propose(cs, seeded, "account-credit", request=TO_ACCOUNT_CREDIT)

    assert cs.proposals.approve(proposal, AVA).status == "succeeded"
    assert faults.points == []


def test_the_reconciler_reaches_its_replay_points_and_the_outcome_commit(recorded, seeded, clock):
    cs, faults = recorded
    proposal = propose(cs, seeded, "provider-outage")  # its first request gets a 503
    assert cs.proposals.approve(proposal, AVA).status == "reconciling"
    assert faults.points == ["after_claim_commit", "before_provider_call"]
    faults.points.clear()

    [swept] = cs.sweepers.reconcile()

    assert (swept.action, swept.status) == ("replayed", "succeeded")
    assert faults.points == [
        "reconcile_before_replay",
        "reconcile_after_replay",
        "before_outcome_commit",
        "after_outcome_commit",
    ]


def test_crash_at_names_a_point_and_which_time_it_is_reached():
    assert isinstance(fault_points_from_env({}), NoFaults)
    assert isinstance(fault_points_from_env({"COUNTERSIGN_CRASH_AT": " "}), NoFaults)
    first = fault_points_from_env({"COUNTERSIGN_CRASH_AT": "after_provider_call"})
    assert isinstance(first, CrashAt)
    assert (first.point, first.nth) == ("after_provider_call", 1)
    third = fault_points_from_env({"COUNTERSIGN_CRASH_AT": "reconcile_after_replay:3"})
    assert isinstance(third, CrashAt)
    assert (third.point, third.nth) == ("reconcile_after_replay", 3)
    third.reached("after_claim_commit")  # another point: not counted, nothing happens
    assert third.seen == 0


@pytest.mark.parametrize(
    "value", ["after_the_claim", "after_claim_commit:0", "after_claim_commit:x", ":2"]
)
def test_a_crash_point_that_names_nothing_is_refused_not_ignored(value):
    with pytest.raises(SettingsError, match="COUNTERSIGN_CRASH_AT is POINT or POINT:N"):
        fault_points_from_env({"COUNTERSIGN_CRASH_AT": value})
