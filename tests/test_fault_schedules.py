"""Suite 3 of "proof under fire": generated provider fault schedules against concurrent
approvers and the reconciler. Zero double effects; every lost response reconciled.

A schedule is one to three proposals (card refunds through the payment sandbox, at most one
broadcast send through the e-mail sandbox), a script of faults per idempotency key (ok, lost
response, outage, decline, slow answer, duplicate delivery: sandbox_faults.py), one to three
approvers that approve every proposal at once, each in its own thread with its own wired
countersign (its own store, snapshots and connections, like an API worker), and a reconciler
running passes meanwhile, sometimes after the lease has passed, so that it takes over from
claimants still at work. Then the lease passes and the reconciler runs until nothing is left.

Each schedule is drawn from a seeded generator. A failure names the seed and the schedule;
``COUNTERSIGN_FAULT_SEED=SEED`` replays the run, ``COUNTERSIGN_FAULT_SCHEDULE=N`` only its
schedule N. Sizes: ``SCHEDULES`` per database, chosen by time (each finds every deliberate bug
of ``tests/support/mutants.py`` it can see within seconds: ``scripts/mutants``); 10,000 on
each with ``COUNTERSIGN_SOAK=full``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.sandbox_faults import FAULTS, Fault
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA
from tests.exactly_once import (
    External,
    broadcast_send,
    card_refund,
    check_exactly_once,
    figures,
)

pytestmark = pytest.mark.slow

FULL = os.environ.get("COUNTERSIGN_SOAK") == "full"
SCHEDULES = {"sqlite": 10_000, "postgres": 10_000} if FULL else {"sqlite": 150, "postgres": 75}
APPROVERS = 3
#: A reconciler pass replays a proposal at most once, and each replay takes a script step:
#: this many passes after the lease settle any script (a test failing here found a proposal
#: the reconciler cannot settle).
LONGEST_SCRIPT = 4
PASSES_TO_SETTLE = LONGEST_SCRIPT + 2


@dataclass(frozen=True)
class Schedule:
    """One generated schedule: what each proposal's provider meets, and who runs when."""

    number: int
    kinds: tuple[str, ...]  # "refund" | "send", one per proposal
    scripts: tuple[tuple[Fault, ...], ...]  # one per proposal
    approvers: int
    passes_during: int  # reconciler passes while the approvers run
    lease_passes_during: bool  # whether the clock passes the lease before those passes
    orders: tuple[tuple[int, ...], ...]  # each approver's order of the proposals

    @classmethod
    def draw(cls, seed: int, number: int) -> Schedule:
        rng = random.Random(f"{seed}:{number}")
        size = rng.randint(1, 3)
        kinds = tuple("send" if n == 0 and rng.random() < 0.4 else "refund" for n in range(size))
        scripts = tuple(
            tuple(rng.choice(FAULTS) for _ in range(rng.randint(0, LONGEST_SCRIPT)))
            for _ in range(size)
        )
        approvers = rng.randint(1, APPROVERS)
        orders = tuple(tuple(rng.sample(range(size), size)) for _ in range(approvers))
        return cls(
            number,
            kinds,
            scripts,
            approvers,
            rng.randint(0, 2),
            rng.random() < 0.5,
            orders,
        )


class Wired:
    """The processes of one database: approvers and a reconciler, each wired on its own,
    their sandboxes following the scripts; one clock for all, the test's."""

    def __init__(self, url: str, clock: FakeClock) -> None:
        self.clock = clock
        self.swept: Counter[str] = Counter()  # what the reconciler did, by action
        self.approvers = [self._wire(url) for _ in range(APPROVERS)]
        self.reconciler = self._wire(url)

    def _wire(self, url: str) -> Countersign:
        wired = bootstrap(Settings(database_url=url), clock=self.clock)
        wired.sandbox.faults.follow()
        wired.email_sandbox.faults.follow()
        return wired

    def sweep(self) -> bool:
        """One reconciler pass; whether it found work."""
        swept = self.reconciler.sweepers.reconcile()
        self.swept.update(report.action for report in swept)
        return bool(swept)

    def close(self) -> None:
        for wired in [*self.approvers, self.reconciler]:
            wired.close()


@pytest.fixture
def wired(cs: Countersign, seeded: dict[str, Any], database_url: str, clock: FakeClock) -> Any:
    processes = Wired(database_url, clock)
    yield processes
    processes.close()


def _prepare(cs: Countersign, schedule: Schedule) -> list[External]:
    proposals = []
    for n, (kind, script) in enumerate(zip(schedule.kinds, schedule.scripts, strict=True)):
        name = f"s{schedule.number}-{n}-{random.getrandbits(32):08x}"
        proposal = card_refund(cs, name) if kind == "refund" else broadcast_send(cs, name)
        provider = cs.sandbox if kind == "refund" else cs.email_sandbox
        if script:
            provider.faults.script(proposal.key, script)
        proposals.append(proposal)
    return proposals


def _run(wired: Wired, schedule: Schedule, proposals: list[External]) -> list[dict[str, Any]]:
    """The approvers and the reconciler, all at once; every approver's answers."""
    lease = wired.reconciler.settings.reconcile_lease_seconds
    start = threading.Barrier(schedule.approvers + 1)
    answers: list[dict[str, Any]] = []

    def approve(approver: Countersign, order: tuple[int, ...]) -> None:
        start.wait()
        for index in order:
            proposal_id = proposals[index].proposal_id
            try:
                answers.append(approver.proposals.approve(proposal_id, AVA).to_json())
            except Exception as error:  # reported: the test fails on it
                answers.append({"proposal_id": proposal_id, "error": repr(error)})

    def reconcile() -> None:
        start.wait()
        for _ in range(schedule.passes_during):
            time.sleep(0.005)
            if schedule.lease_passes_during:
                wired.clock.advance(seconds=lease + 1)
            wired.sweep()

    threads = [
        threading.Thread(target=approve, args=(wired.approvers[n], order))
        for n, order in enumerate(schedule.orders)
    ]
    threads.append(threading.Thread(target=reconcile))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def _settle(wired: Wired) -> int:
    """Reconciler passes after the lease until none finds work; how many it took."""
    lease = wired.reconciler.settings.reconcile_lease_seconds
    for passes in range(1, PASSES_TO_SETTLE + 1):
        wired.clock.advance(seconds=lease + 1)
        if not wired.sweep():
            return passes
    raise AssertionError(f"still unsettled after {PASSES_TO_SETTLE} reconciler passes")


def _check_answers(answers: list[dict[str, Any]], finals: dict[str, Any]) -> None:
    """One approver executed each proposal; every other answer is one the stored state gave
    at some moment: in progress, needs reconciliation, or the final outcome."""
    assert not [a for a in answers if "error" in a], answers
    executed = Counter(a["proposal_id"] for a in answers if a["result"] == "executed")
    assert executed == Counter(list(finals)), answers
    for answer in answers:
        outcome = answer["outcome"]
        if answer["result"] == "not_approvable":
            assert (answer["status"], answer["reason"]) == ("executing", "in_progress"), answer
        else:
            assert answer["result"] in ("executed", "already_completed"), answer
            final = finals[answer["proposal_id"]]
            assert outcome == final or outcome["kind"] == "needs_reconciliation", answer


def _selected(seed: int, backend: str) -> Iterator[Schedule]:
    only = os.environ.get("COUNTERSIGN_FAULT_SCHEDULE")
    numbers = [int(only)] if only else range(SCHEDULES[backend])
    for number in numbers:
        yield Schedule.draw(seed, number)


def test_fault_schedules_against_concurrent_approvers_and_the_reconciler(cs, wired, database_url):
    seed = int(os.environ.get("COUNTERSIGN_FAULT_SEED") or random.randrange(2**32))
    started = time.monotonic()
    met: Counter[str] = Counter()
    ran = passes = proposals_made = 0
    backend = "postgres" if database_url.startswith("postgresql") else "sqlite"
    for schedule in _selected(seed, backend):
        proposals = _prepare(cs, schedule)
        proposals_made += len(proposals)
        try:
            answers = _run(wired, schedule, proposals)
            passes += _settle(wired)
            check_exactly_once(cs, proposals, requests=None)
            finals = {p.proposal_id: cs.cards.card(p.proposal_id, AVA).outcome for p in proposals}
            _check_answers(answers, finals)
        except AssertionError as failed:
            raise AssertionError(
                f"COUNTERSIGN_FAULT_SEED={seed} COUNTERSIGN_FAULT_SCHEDULE={schedule.number}: "
                f"{schedule}: {failed}"
            ) from failed
        ran += 1
    for provider in (cs.sandbox, cs.email_sandbox):
        met.update(fault for _, fault in provider.faults.taken())
    # The generator reaches every fault, and the schedules met each one at least once.
    assert ran < 50 or set(met) == set(FAULTS), met
    figures(
        "fault schedules",
        database="sqlite" if database_url.startswith("sqlite") else "postgres",
        schedules=ran,
        proposals=proposals_made,
        faults_met=dict(sorted(met.items())),
        reconciler=dict(sorted(wired.swept.items())),
        reconciler_passes_after_the_lease=passes,
        seed=seed,
        seconds=round(time.monotonic() - started, 1),
    )
