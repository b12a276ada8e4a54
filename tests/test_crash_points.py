"""Suite 2 of "proof under fire": processes SIGKILLed at each step of the approve path and of
the reconciler, then one reconciler pass. No double effect, no proposal stuck, and the same
outcome on a second approval (docs/faults.md says what each point proves).

Every kill is a real process: a child forked from the fork server (tests/workers.py, which
pays for the imports once), with ``COUNTERSIGN_CRASH_AT`` naming the point its own bootstrap
reads. Half the proposals are card refunds (the payment sandbox), half broadcast sends (the
e-mail sandbox). The children's clocks are fixed at the parent's FakeClock time, so a claim
is made at the parent's "now"; the parent then moves its clock past the lease, which is how
the reconciler learns that a claimant is dead (test_crash_recovery.py does the same).

Sizes: ``KILLS`` kills at each point and ``RANDOM_KILLS`` random ones, on each database; with
``COUNTERSIGN_SOAK=full``, 200 per point and 1,000 random. A failure prints the seed of the
random kills; ``COUNTERSIGN_CRASH_SEED`` replays it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.crash_points import CRASH_AT_ENV
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA
from tests.exactly_once import (
    External,
    broadcast_send,
    card_refund,
    check_exactly_once,
    figures,
    held,
)
from tests.workers import Forks

pytestmark = pytest.mark.slow

FULL = os.environ.get("COUNTERSIGN_SOAK") == "full"
KILLS = 200 if FULL else 10
RANDOM_KILLS = 1000 if FULL else 20
#: Proposals a streaming worker is given at a time; random kills land among them.
STREAM = 12
#: The longest a streaming worker lives before its random kill, after it started.
LONGEST_LIFE = 0.08
#: The most that window grows to while workers answer nothing (below), and how many workers
#: in a row may answer nothing before the stream is called stuck (about 40 s of windows).
SLOWEST_LIFE = 10.0
SILENT_WORKERS = 12

#: What the reconciler pass after the kills does to a proposal whose approver died there.
SWEEP = {
    "after_claim_commit": "replayed",  # nothing was sent: the same request, same key
    "before_provider_call": "replayed",
    "after_provider_call": "settled",  # the provider holds the answer: recorded as is
    "before_outcome_commit": "settled",
    "after_outcome_commit": None,  # recorded: nothing to do
}


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    server = Forks(tmp_path_factory.mktemp("forks") / "stderr.txt")
    yield server
    server.close()


def _external(cs: Countersign, number: int) -> External:
    name = f"crash-{number}-{random.getrandbits(32):08x}"
    return broadcast_send(cs, name) if number % 2 else card_refund(cs, name)


def _kill(forks: Forks, command: str, *args: str, point: str, nth: int = 1) -> None:
    child = forks.run(command, *args, env={CRASH_AT_ENV: f"{point}:{nth}"})
    assert child.killed, (command, point, child, forks.errors())


def _approve_and_die(
    forks: Forks, url: str, clock: FakeClock, proposal: External, point: str
) -> None:
    _kill(forks, "approve_one", url, clock.now().isoformat(), proposal.proposal_id, point=point)


def _backend(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgres"


@pytest.mark.parametrize("point", list(SWEEP))
def test_approvers_killed_at_a_point_of_the_approve_path_then_one_reconciler_pass(
    point, cs, seeded, database_url, clock, forks
):
    started = time.monotonic()
    proposals = []
    for number in range(KILLS):
        proposal = _external(cs, number)
        _approve_and_die(forks, database_url, clock, proposal, point)
        proposals.append(proposal)

    sent = point not in ("after_claim_commit", "before_provider_call")
    holding = held(cs)
    for proposal in proposals:
        assert (proposal.key in holding) == sent, (point, proposal)
        status = cs.cards.card(proposal.proposal_id, AVA).status
        if point == "after_outcome_commit":
            assert status in ("succeeded", "revision_required")
            continue
        # Claimed, no outcome: a second approval is told so, and sends nothing.
        assert status == "executing"
        again = cs.proposals.approve(proposal.proposal_id, AVA)
        assert (again.result, again.reason) == ("not_approvable", "in_progress")
    assert cs.sweepers.reconcile() == []  # within the lease the claimant may be alive

    clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
    swept = cs.sweepers.reconcile()

    action = SWEEP[point]
    assert sorted((s.proposal_id, s.action, s.status) for s in swept) == sorted(
        (p.proposal_id, action, "succeeded") for p in proposals if action
    )
    assert set(check_exactly_once(cs, proposals, requests=1).values()) == {"succeeded"}
    assert cs.sweepers.reconcile() == []
    figures(
        "crash points",
        point=point,
        database=_backend(database_url),
        kills=KILLS,
        seconds=round(time.monotonic() - started, 1),
    )


@pytest.mark.parametrize("point", ["reconcile_before_replay", "reconcile_after_replay"])
def test_reconcilers_killed_inside_their_pass_then_one_more_pass(
    point, cs, seeded, database_url, clock, forks
):
    """Each round leaves one more claimant dead before its provider call, and kills a
    reconciler on it: before its replay (the previous round's proposal, still unsent, is
    replayed first, so the kill is at the second replay), or right after the replay (the
    previous round's proposal is settled from the provider's answer first)."""
    started = time.monotonic()
    proposals: list[External] = []
    for number in range(KILLS):
        proposal = _external(cs, number)
        _approve_and_die(forks, database_url, clock, proposal, "before_provider_call")
        proposals.append(proposal)
        clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
        nth = 2 if point == "reconcile_before_replay" and number else 1
        _kill(forks, "reconcile", database_url, clock.now().isoformat(), point=point, nth=nth)

    *settled, last = proposals
    holding = held(cs)
    assert (last.key in holding) == (point == "reconcile_after_replay")
    assert cs.cards.card(last.proposal_id, AVA).status == "executing"
    for proposal in settled:
        assert cs.cards.card(proposal.proposal_id, AVA).status == "succeeded"

    swept = cs.sweepers.reconcile()

    action = "settled" if point == "reconcile_after_replay" else "replayed"
    assert [(s.proposal_id, s.action, s.status) for s in swept] == [
        (last.proposal_id, action, "succeeded")
    ]
    assert set(check_exactly_once(cs, proposals, requests=1).values()) == {"succeeded"}
    figures(
        "crash points",
        point=point,
        database=_backend(database_url),
        kills=KILLS,
        approvers_killed_before_the_call=KILLS,
        seconds=round(time.monotonic() - started, 1),
    )


def test_a_worker_approving_a_stream_killed_at_random_moments_then_reconciled(
    cs, seeded, database_url, clock, forks, tmp_path
):
    """A worker approves proposal after proposal and is SIGKILLed at a random moment (in a
    commit, in a provider call, between two), restarted on what it has not answered, killed
    again... Each stream of proposals, once answered, gets one reconciler pass after the
    lease: every proposal succeeded once."""
    seed = int(os.environ.get("COUNTERSIGN_CRASH_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    started = time.monotonic()
    kills = streams = caught_executing = 0
    ids_file = tmp_path / "ids.json"
    while kills < RANDOM_KILLS:
        streams += 1
        proposals = [card_refund(cs, f"stream-{streams}-{n}") for n in range(STREAM)]
        answers: dict[str, list[dict[str, Any]]] = {p.proposal_id: [] for p in proposals}
        unanswered = list(answers)
        # A worker killed before its first answer leaves the next one a window twice as long:
        # on a machine whose disk other work keeps busy an approval's commits can take longer
        # than LONGEST_LIFE every time, and 600 workers in a row died before answering (a CI
        # run beside three other suites). The kill still lands anywhere in the work; only
        # the stream always gets through.
        life, silent = LONGEST_LIFE, 0
        for _ in range(50 * STREAM):
            if not unanswered or silent > SILENT_WORKERS:
                break
            ids_file.write_text(json.dumps(unanswered))
            child = forks.spawn("stream", database_url, clock.now().isoformat(), str(ids_file))
            assert forks.read_until(child, "started"), (seed, child, forks.errors())
            time.sleep(rng.uniform(0, life))
            os.kill(child.pid, signal.SIGKILL)
            forks.wait(child)
            assert child.killed, (seed, child, forks.errors())
            kills += "done" not in child.lines
            answered = child.json("answered")
            for answer in answered:
                answers[answer["proposal_id"]].append(answer)
                unanswered.remove(answer["proposal_id"])
            silent = 0 if answered else silent + 1
            life = LONGEST_LIFE if answered else min(2 * life, SLOWEST_LIFE)
        assert not unanswered, (
            f"the stream never got through (seed {seed}; {silent} workers in a row answered"
            f" nothing, the last given {life} s)"
        )

        clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
        caught_executing += len(cs.sweepers.reconcile())  # killed between claim and outcome

        try:
            check_exactly_once(cs, proposals, requests=1)
        except AssertionError as failed:
            raise AssertionError(f"seed {seed}, stream {streams}: {failed}") from failed
        for proposal in proposals:
            outcome = cs.cards.card(proposal.proposal_id, AVA).outcome
            for answer in answers[proposal.proposal_id]:
                said = (answer["result"], answer["status"], answer["reason"])
                assert said in (
                    ("executed", "succeeded", None),
                    ("already_completed", "succeeded", None),
                    ("not_approvable", "executing", "in_progress"),
                ), (seed, answer)
                assert answer["outcome"] in (None, outcome), (seed, answer)
    figures(
        "crash points",
        point="random",
        database=_backend(database_url),
        kills=kills,
        proposals=streams * STREAM,
        left_executing=caught_executing,
        seed=seed,
        seconds=round(time.monotonic() - started, 1),
    )
