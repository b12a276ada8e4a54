"""A process killed between the claim and the outcome, after which the reconciler resolves the
proposal with no second refund.

A child process (the same interpreter, its own bootstrap on the same database) approves a card
refund through a payment provider that SIGKILLs the process either right after the real
sandbox applied the refund, or at the start of the call, after the claim commit. The parent
then plays the manager and the reconciler. The child's clock is fixed at the parent's
FakeClock time, so the claim time is the parent's "now" and the lease is measured on one clock.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Mapping
from typing import Any

import pytest
from countersign.application.ports import EffectProvider
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.ports import EffectResponse
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, REFUND
from tests.support.proposing import propose_on
from tests.workers import start

pytestmark = pytest.mark.slow

TIMEOUT = 60
CHARGED = 34500
REFUNDED = 4800
SUCCEEDED = {
    "kind": "succeeded",
    "result": {
        "refund_ref": "R1",
        "amount_cents": REFUNDED,
        "currency": "CAD",
        "destination": "Visa •••• 4242",
        "resulting_order_total_cents": CHARGED - REFUNDED,
    },
}


def _approve_in_a_process_that_dies(
    database_url: str, clock: FakeClock, proposal_id: str, when: str
) -> None:
    child = start("crash", database_url, clock.now().isoformat(), proposal_id, when)
    out, err = child.communicate(timeout=TIMEOUT)
    survived = [json.loads(line[7:]) for line in out.splitlines() if line.startswith("report ")]
    assert child.returncode == -signal.SIGKILL, (child.returncode, survived, err[-3000:])


def _requests(cs: Countersign, proposal_id: str) -> list[dict[str, Any]]:
    key = f"countersign:{REFUND}:{proposal_id}"
    return [
        {"requests": r["requests"], "status": r["status"], "amount_cents": r["amount_cents"]}
        for r in cs.sandbox.refunds()
        if r["idempotency_key"] == key
    ]


def _event_types(cs: Countersign, proposal_id: str) -> list[str]:
    return [event["type"] for event in cs.audit.history(proposal_id)["events"]]


def _assert_stuck_executing(cs: Countersign, proposal_id: str, order_id: str) -> None:
    """The claim is committed, no outcome is: nobody may approve it or settle it yet."""
    assert cs.cards.card(proposal_id, AVA).status == "executing"
    assert _event_types(cs, proposal_id) == ["Proposed", "Approved", "Claimed", "Revalidated"]
    order = cs.club.investigate("granite", order_id)
    assert order["unresolved_refund_attempts"] == 1
    assert order["refunds"] == []
    assert order["total_cents"] == CHARGED

    again = cs.proposals.approve(proposal_id, AVA)
    assert (again.result, again.reason, again.status) == (
        "not_approvable",
        "in_progress",
        "executing",
    )


def test_killed_after_the_provider_refunded_the_reconciler_settles_without_a_second_refund(
    cs: Countersign, seeded: dict[str, Any], database_url: str, clock: FakeClock
) -> None:
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)

    _approve_in_a_process_that_dies(database_url, clock, proposal_id, "after")

    # The money moved; the outcome was never recorded.
    assert _requests(cs, proposal_id) == [
        {"requests": 1, "status": "succeeded", "amount_cents": REFUNDED}
    ]
    _assert_stuck_executing(cs, proposal_id, order_id)
    assert len(_requests(cs, proposal_id)) == 1
    assert _requests(cs, proposal_id)[0]["requests"] == 1  # the repeated approval sent nothing

    # Within the lease the claimant may still be working: the reconciler leaves it alone.
    assert cs.sweepers.reconcile() == []
    clock.advance(seconds=cs.settings.reconcile_lease_seconds - 1)
    assert cs.sweepers.reconcile() == []
    assert cs.cards.card(proposal_id, AVA).status == "executing"

    clock.advance(seconds=2)
    swept = cs.sweepers.reconcile()

    assert [(s.proposal_id, s.action, s.status, s.outcome) for s in swept] == [
        (proposal_id, "settled", "succeeded", SUCCEEDED)
    ]
    assert _requests(cs, proposal_id) == [
        {"requests": 1, "status": "succeeded", "amount_cents": REFUNDED}
    ]
    order = cs.club.investigate("granite", order_id)
    assert [(r["destination"], r["amount_cents"]) for r in order["refunds"]] == [("card", REFUNDED)]
    assert order["unresolved_refund_attempts"] == 0
    assert order["total_cents"] == CHARGED - REFUNDED
    assert order["payments"][0]["refundable_cents"] == CHARGED - REFUNDED

    settled = cs.proposals.approve(proposal_id, AVA)
    assert (settled.result, settled.status, settled.outcome) == (
        "already_completed",
        "succeeded",
        SUCCEEDED,
    )
    assert _event_types(cs, proposal_id) == [
        "Proposed",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
    ]
    assert cs.sweepers.reconcile() == []
    assert _requests(cs, proposal_id)[0]["requests"] == 1


def test_killed_after_the_claim_before_the_provider_call_is_replayed_under_the_same_key(
    cs: Countersign, seeded: dict[str, Any], database_url: str, clock: FakeClock
) -> None:
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)

    _approve_in_a_process_that_dies(database_url, clock, proposal_id, "before")

    assert cs.sandbox.refunds() == []
    _assert_stuck_executing(cs, proposal_id, order_id)
    assert cs.sandbox.refunds() == []
    assert cs.sweepers.reconcile() == []

    clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
    swept = cs.sweepers.reconcile()

    # The provider holds nothing under the key, so the reconciler replays the original,
    # unchanged request under the same key: the approved refund happens exactly once.
    assert [(s.proposal_id, s.action, s.status, s.outcome) for s in swept] == [
        (proposal_id, "replayed", "succeeded", SUCCEEDED)
    ]
    assert [r["requests"] for r in _requests(cs, proposal_id)] == [1]
    order = cs.club.investigate("granite", order_id)
    assert order["unresolved_refund_attempts"] == 0
    assert [r["amount_cents"] for r in order["refunds"]] == [REFUNDED]
    assert order["total_cents"] == CHARGED - REFUNDED

    again = cs.proposals.approve(proposal_id, AVA)
    assert (again.result, again.outcome) == ("already_completed", SUCCEEDED)
    assert _event_types(cs, proposal_id) == [
        "Proposed",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
    ]
    assert cs.sweepers.reconcile() == []


class _PausedProvider:
    """The real sandbox, reached only after the claimant was paused past the lease, during
    which another process's reconciler ran (a GC or VM pause, a slow DNS lookup or TLS
    handshake before the request leaves)."""

    def __init__(self, clock: FakeClock, reconciler: Countersign, lease_seconds: int) -> None:
        self.clock = clock
        self.reconciler = reconciler
        self.lease_seconds = lease_seconds
        self.inner: EffectProvider | None = None
        self.swept: list[tuple[str, str]] = []

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        assert self.inner is not None
        self.clock.advance(seconds=self.lease_seconds + 1)
        self.swept = [(s.action, s.status) for s in self.reconciler.sweepers.reconcile()]
        return self.inner.perform(key, request)

    def lookup(self, key: str) -> EffectResponse | None:
        assert self.inner is not None
        return self.inner.lookup(key)


def test_a_claimant_paused_past_the_lease_never_pays_twice(
    cs: Countersign, seeded: dict[str, Any], database_url: str, clock: FakeClock
) -> None:
    """The reconciler cannot tell a dead claimant from a paused one. It replays the original
    request under the same key, so when the paused claimant's request arrives the provider
    answers with the stored refund: one payment, recorded once, and no second proposal."""
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)
    paused = _PausedProvider(clock, cs, cs.settings.reconcile_lease_seconds)
    approver = bootstrap(
        Settings(database_url=database_url), clock=clock, providers={"payments": paused}
    )
    paused.inner = approver.sandbox
    raised = None
    try:
        approver.proposals.approve(proposal_id, AVA)
    except Exception as error:
        raised = f"{type(error).__name__}: {error}"
    finally:
        approver.close()
    cs.sweepers.reconcile()  # any later sweep

    def paid() -> int:
        refunds = cs.sandbox.refunds()
        return sum(int(str(r["amount_cents"])) for r in refunds if r["status"] == "succeeded")

    order = cs.club.investigate("granite", order_id)
    observed: dict[str, Any] = {
        "approve raised": raised,
        "paid by the provider": paid(),
        "recorded on the order": sum(r["amount_cents"] for r in order["refunds"]),
    }
    try:
        second = propose_on(cs, order_id)
    except InvalidRequestError:
        pass  # the discount is recorded as refunded: no second proposal
    else:
        cs.proposals.approve(second, AVA)
    observed["paid after a second proposal for the same discount"] = paid()

    assert paused.swept == [("replayed", "succeeded")]  # the pause was past the lease
    assert [r["requests"] for r in _requests(cs, proposal_id)] == [2]  # replay + late original
    assert observed == {
        "approve raised": None,
        "paid by the provider": REFUNDED,
        "recorded on the order": REFUNDED,
        "paid after a second proposal for the same discount": REFUNDED,
    }
