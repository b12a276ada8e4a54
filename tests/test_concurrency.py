"""Exactly once under concurrency: four OS processes approve the same 24 proposals at once.

Sixteen card refunds go through the payment provider (claim commit, provider call, outcome
commit), one account-credit refund is local, and seven broadcast drafts are local operations
that all write the same broadcast form, so their claims also race on a shared aggregate.
Every worker approves every proposal, in its own shuffled order, starting at the same moment.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from countersign.application.ports import NoFaults
from countersign.application.proposals import ProposalService
from countersign.application.settlement import Settlement
from countersign.domain.club.orders import Order
from countersign.domain.club.roster import Roster
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import PLACED_AT, seed
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, REFUND, TO_CARD, _truncate_postgres, count_events
from tests.support.proposing import MOVE, TO_ACCOUNT_CREDIT, propose_on
from tests.workers import Forks, start

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WORKERS = 4
CARD_ORDERS = 16
#: (member, the league they leave) for moves to the Junior Program, which has room for all.
MOVES = [
    ("olivia.chen@example.com", "Monday Night Open"),
    ("noah.fraser@example.com", "Monday Night Open"),
    ("emma.singh@example.com", "Monday Night Open"),
    ("liam.gagnon@example.com", "Monday Night Open"),
    ("sophie.martin@example.com", "Monday Night Open"),
    ("lucas.roy@example.com", "Monday Night Open"),
    ("margaret.hughes@example.com", "Thursday Seniors"),
]
TIMEOUT = 120
BOOTSTRAP_ROUNDS = 15
#: Rounds of processes starting together on an empty database.
EMPTY_ROUNDS = 5

_TOTAL = 32000 + 4500 - 2000  # league fee + locker rental - returning member discount
_EXPECTED_TYPES = ["Proposed", "Approved", "Claimed", "Revalidated", "Succeeded"]


@pytest.fixture
def pg(postgres_url: str, clock: FakeClock) -> Iterator[Countersign]:
    _truncate_postgres(postgres_url)
    wired = bootstrap(Settings(database_url=postgres_url), clock=clock)
    yield wired
    wired.close()


def _card_order(cs: Countersign, organization_id: UUID, number: int) -> str:
    """An order like the seeded ones, paid by a card that refunds, with D1 missed."""
    key = f"race-{number:02d}"
    charge_id = f"ch_granite_{key}"
    cs.sandbox.create_charge(charge_id, CARD_OK, _TOTAL)
    order = Order(
        organization_id=organization_id,
        key=key,
        participant_name=f"Racer {number}",
        participant_email=f"racer{number}@example.com",
        currency="CAD",
        line_items=[
            {
                "ref": "L1",
                "product": "Fall Monday Night League",
                "amount_cents": 32000,
                "configuration": "Full season, 20 draws, team of four",
            },
            {
                "ref": "L2",
                "product": "Locker rental",
                "amount_cents": 4500,
                "configuration": "Half locker, fall season",
            },
        ],
        discounts=[
            {
                "ref": "D1",
                "name": "Early-bird 15% discount",
                "line_item": "L1",
                "percent": 15,
                "amount_cents": None,
                "applied": False,
                "eligibility": "Registered early",
            },
            {
                "ref": "D2",
                "name": "Returning member $20 off",
                "line_item": "L1",
                "percent": None,
                "amount_cents": 2000,
                "applied": True,
                "eligibility": "Played last season",
            },
        ],
        payments=[
            {
                "ref": "P1",
                "method": "card",
                "label": "Visa •••• 4242",
                "amount_cents": _TOTAL,
                "charge_id": charge_id,
            },
        ],
        note="",
        placed_at=PLACED_AT,
    )
    cs.store.save(order)
    return str(order.id)


def _move(cs: Countersign, roster_id: str, email: str, from_league: str) -> str:
    request = {"email": email, "from_league": from_league, "to_league": "Junior Program"}
    return propose_on(cs, roster_id, request, operation=MOVE)


def _race(
    url: str, clock: FakeClock, ids: list[str], tmp_path: Path
) -> tuple[list[dict[str, Any]], int]:
    """Start the workers one after another, then release them at once.

    Returns every report and how many saves lost an optimistic-concurrency race. Workers
    bootstrap one at a time because simultaneous bootstraps are a separate problem (see
    ``test_workers_that_start_at_the_same_moment_all_bootstrap``); the approvals all start
    together. Workers 0 and 1 share one shuffled order and 2 and 3 another, so each pair
    races on the same proposal at the same moment while the pairs cross each other.
    """
    ids_file = tmp_path / "proposal_ids.json"
    ids_file.write_text(json.dumps(ids))
    at = clock.now().isoformat()
    workers: list[subprocess.Popen[str]] = []
    reports: list[dict[str, Any]] = []
    conflicts: list[int] = []
    problems: list[str] = []
    try:
        for seed in range(WORKERS):
            order = str(seed // 2)
            worker = start("approve", url, at, order, str(ids_file), stdin=subprocess.PIPE)
            workers.append(worker)
            assert worker.stdout is not None
            worker.stdout.readline()  # "ready", or "" if it died while starting
        for worker in workers:
            assert worker.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                worker.stdin.write("go\n")
                worker.stdin.flush()
        for worker in workers:
            out, err = worker.communicate(timeout=TIMEOUT)
            lines = [line for line in out.splitlines() if line.startswith("reports ")]
            if worker.returncode != 0 or len(lines) != 1:
                problems.append(f"worker exited {worker.returncode}: {err[-3000:]}")
                continue
            answer = json.loads(lines[0].removeprefix("reports "))
            reports.extend(answer["reports"])
            conflicts.append(answer["conflicts"])
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
    assert not problems, problems
    return reports, sum(conflicts)


def test_four_processes_racing_execute_every_proposal_exactly_once(
    pg: Countersign, clock: FakeClock, postgres_url: str, tmp_path: Path
) -> None:
    seeded = seed(pg)
    granite = UUID(seeded["organizations"][0]["id"])
    card_orders = {}
    for number in range(CARD_ORDERS):
        order_id = _card_order(pg, granite, number)
        card_orders[propose_on(pg, order_id, TO_CARD)] = order_id
    credit_order = seeded["orders"]["account-credit"]
    local_refund = propose_on(pg, credit_order, TO_ACCOUNT_CREDIT)
    # Moves of different members: each is its own thing (no supersession), and every one
    # changes the one roster, so their claims race on a shared fact.
    roster_id = seeded["rosters"]["granite"]
    moves = [_move(pg, roster_id, email, league) for email, league in MOVES]
    ids = [*card_orders, local_refund, *moves]
    assert len(ids) == 24

    reports, conflicts = _race(postgres_url, clock, ids, tmp_path)

    assert conflicts > 0, "the workers never raced: nothing was tested"
    errors = [r for r in reports if "error" in r]
    assert not errors, errors
    by_proposal: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for report in reports:
        by_proposal[report["proposal_id"]].append(report)
    assert sorted(by_proposal) == sorted(ids)
    for proposal_id in ids:
        answers = by_proposal[proposal_id]
        assert len(answers) == WORKERS
        executed = [r for r in answers if r["result"] == "executed"]
        assert len(executed) == 1, (proposal_id, answers)
        stored = executed[0]["outcome"]
        assert executed[0]["status"] == "succeeded"
        assert stored["kind"] == "succeeded"
        for other in answers:
            if other is executed[0]:
                continue
            summary = (other["result"], other["status"], other["reason"])
            if other["result"] == "already_completed":
                assert other["outcome"] == stored, (proposal_id, other)
                assert other["status"] == "succeeded"
            else:
                # Only a card refund is ever visible between its claim and its outcome:
                # a local operation commits its claim and its effect together.
                assert summary == ("not_approvable", "executing", "in_progress"), (
                    proposal_id,
                    other,
                )
                assert proposal_id in card_orders, (proposal_id, other)

    # The final state, read back by the parent.
    sandbox = {r["idempotency_key"]: r for r in pg.sandbox.refunds()}
    assert len(sandbox) == CARD_ORDERS
    for proposal_id, order_id in card_orders.items():
        card = pg.cards.card(proposal_id, AVA)
        assert card.status == "succeeded"
        refund = sandbox[f"countersign:{REFUND}:{proposal_id}"]
        assert (refund["requests"], refund["status"], refund["amount_cents"]) == (
            1,
            "succeeded",
            4800,
        )
        order = pg.club.investigate("granite", order_id)
        assert [(r["destination"], r["amount_cents"]) for r in order["refunds"]] == [("card", 4800)]
        assert order["unresolved_refund_attempts"] == 0
        assert order["total_cents"] == _TOTAL - 4800
    for proposal_id in ids:
        types = [e["type"] for e in pg.audit.history(proposal_id)["events"]]
        assert types == _EXPECTED_TYPES, (proposal_id, types)
    credit = pg.club.investigate("granite", credit_order)
    assert [r["destination"] for r in credit["refunds"]] == ["account_credit"]
    roster_events = Counter(e.type for e in pg.store.history(UUID(roster_id)))
    assert roster_events["MemberMoved"] == len(MOVES)
    assert count_events(pg, "Proposal.Succeeded") == len(ids)
    assert count_events(pg, "Proposal.Claimed") == len(ids)


def test_workers_that_start_at_the_same_moment_all_bootstrap(
    pg: Countersign, postgres_url: str, tmp_path: Path
) -> None:
    """docs/concurrency.md: many API workers, projection runners and a reconciler share one
    database.

    Starting them together (a deploy, a restart) must not crash any of them. Each bootstrap
    re-runs the event store's schema statements, including ``CREATE OR REPLACE FUNCTION``,
    and PostgreSQL rejects concurrent replacements of one function with "tuple concurrently
    updated". The tables already exist here (``pg`` created them), as on any restart.

    The processes are forked from the fork server with everything imported, and released by
    one pipe write: they reach their schema statements within a millisecond of each other,
    closer than interpreters started one by one, and a round costs a fraction of a second.
    """
    forks = Forks(tmp_path / "forks-stderr.txt")
    failures: list[str] = []
    try:
        for _ in range(BOOTSTRAP_ROUNDS):
            child = forks.run("bootstrap_together", postgres_url, str(WORKERS))
            (counted,) = child.json("bootstrapped")
            assert counted["workers"] == WORKERS, (child, forks.errors())
            failures += child.json("failed")
            if failures:
                break
    finally:
        forks.close()
    assert failures == []


def test_workers_that_start_together_on_an_empty_database_make_its_schema_once(
    postgres_url: str, tmp_path: Path
) -> None:
    """A first deploy: the processes start together on a database that holds nothing yet.
    The schema lock lets one make the event store's tables, types and functions while the
    others wait, then find them made: every process starts, and each thing is there once
    (without the lock, concurrent ``CREATE TYPE`` and ``CREATE TABLE IF NOT EXISTS`` collide
    in PostgreSQL's catalogue and a process fails to start)."""
    forks = Forks(tmp_path / "forks-stderr.txt")
    failures: list[str] = []
    try:
        for _ in range(EMPTY_ROUNDS):
            _truncate_postgres(postgres_url)
            child = forks.run("bootstrap_together", postgres_url, str(WORKERS))
            (counted,) = child.json("bootstrapped")
            assert counted["workers"] == WORKERS, (child, forks.errors())
            failures += child.json("failed")
            if failures:
                break
            with psycopg.connect(postgres_url) as conn:
                made = conn.execute(
                    "SELECT t.typname, count(*) FROM pg_type AS t"
                    " JOIN pg_namespace AS n ON n.oid = t.typnamespace"
                    " WHERE n.nspname = 'public' AND t.typname IN"
                    " ('stored_event_uuid', 'countersign_events', 'countersign_snapshots')"
                    " GROUP BY t.typname ORDER BY 1"
                ).fetchall()
            assert made == [
                ("countersign_events", 1),
                ("countersign_snapshots", 1),
                ("stored_event_uuid", 1),
            ]
    finally:
        forks.close()
    assert failures == []


def test_an_approval_that_loses_races_on_shared_facts_backs_off_and_then_executes(
    pg: Countersign, clock: FakeClock, postgres_url: str
) -> None:
    """Moves of different members share one roster, so a move's claim commit conflicts
    whenever another member was moved since it loaded the roster. ``approve`` backs off with
    jitter and tries again; it never answers "in progress" for a proposal that is still
    pending. (Here another approver wins each of the first five rounds deterministically.)
    """
    seeded = seed(pg)
    roster_id = seeded["rosters"]["granite"]
    target, *others = [_move(pg, roster_id, email, league) for email, league in MOVES[:6]]
    other = bootstrap(Settings(database_url=postgres_url), clock=clock)
    save = pg.store.save

    def save_after_another_approver_wins(*aggregates: Any, **options: Any) -> None:
        """Just before each save that writes the roster, another approver moves another
        member."""
        if others and any(isinstance(a, Roster) for a in aggregates):
            assert other.proposals.approve(others.pop(0), AVA).result == "executed"
        save(*aggregates, **options)

    pg.store.save = save_after_another_approver_wins  # type: ignore[method-assign]
    try:
        settlement = Settlement(pg.store, {"payments": pg.sandbox}, NoFaults())
        report = ProposalService(pg.store, settlement, clock).approve(target, AVA)
    finally:
        del pg.store.save
        other.close()

    status = pg.cards.card(target, AVA).status
    assert others == []  # every round was lost
    assert (report.result, report.status, status) == ("executed", "succeeded", "succeeded")
