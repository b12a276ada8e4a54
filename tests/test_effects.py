"""External effects go through the EffectProvider port, by provider name: the service knows
nothing of refunds, and reconciliation replays the described request under its own key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from countersign.application.ports import EffectResponseLostError
from countersign.domain.ports import EffectResponse
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, REFUND
from tests.support.proposing import propose


class RecordingProvider:
    """An in-memory EffectProvider: performs every request once per key, and loses the
    response to the first request it is sent (before performing it, like an outage)."""

    def __init__(self) -> None:
        self.performed: dict[str, EffectResponse] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        self.requests.append((key, dict(request)))
        if len(self.requests) == 1:
            raise EffectResponseLostError("503 Service Unavailable")
        if key not in self.performed:
            self.performed[key] = EffectResponse(
                idempotency_key=key, status="succeeded", reference=f"fake-{len(self.performed)}"
            )
        return self.performed[key]

    def lookup(self, key: str) -> EffectResponse | None:
        return self.performed.get(key)


@pytest.fixture
def faked(database_url, clock, cs, seeded):
    provider = RecordingProvider()
    wired = bootstrap(
        Settings(database_url=database_url), clock=clock, providers={"payments": provider}
    )
    yield wired, provider
    wired.close()


def test_a_registered_provider_gets_the_described_request_and_the_reconciler_replays_it(
    faked, seeded
):
    cs, provider = faked
    proposal_id = propose(cs, seeded, "refund-ok")

    lost = cs.proposals.approve(proposal_id, AVA)
    swept = cs.sweepers.reconcile()

    key = f"countersign:{REFUND}:{proposal_id}"
    assert (lost.status, lost.outcome["kind"]) == ("reconciling", "needs_reconciliation")
    assert [(s.action, s.status) for s in swept] == [("replayed", "succeeded")]
    (first_key, first), (replayed_key, replayed) = provider.requests
    assert first_key == replayed_key == key  # never a new key
    assert replayed == first  # the same request, described again from the frozen arguments
    assert first == {
        "charge_id": "ch_granite_refund-ok",
        "amount_cents": 4800,
        "metadata": {"proposal_id": proposal_id, "order_key": "refund-ok"},
    }
    assert cs.sandbox.refunds() == []  # the sandbox is not the "payments" provider here


def test_an_effect_for_a_provider_nobody_registered_fails_closed_before_anything_is_sent(
    cs, seeded
):
    proposal_id = propose(cs, seeded, "refund-ok")
    cs.proposals.settlement.providers = {}

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.status, report.outcome["kind"]) == ("failed", "terminal_failure")
    assert cs.sandbox.refunds() == []
    order = cs.club.investigate("granite", seeded["orders"]["refund-ok"])
    assert order["unresolved_refund_attempts"] == 0


def test_a_contract_that_cannot_start_its_effect_fails_closed_with_a_reference(
    cs, seeded, monkeypatch, caplog
):
    from countersign.domain.contracts import REGISTRY

    proposal_id = propose(cs, seeded, "refund-ok")

    def broken(*_: Any) -> Any:
        raise RuntimeError("the domain record refused the attempt")

    monkeypatch.setattr(REGISTRY[REFUND], "start_external", broken)
    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.result, report.status) == ("executed", "failed")
    assert report.outcome["kind"] == "terminal_failure"
    assert report.outcome["correlation_id"] in caplog.text
    assert cs.sandbox.refunds() == []  # nothing was sent
    order = cs.club.investigate("granite", seeded["orders"]["refund-ok"])
    assert order["unresolved_refund_attempts"] == 0  # nor recorded half-way
    again = cs.proposals.approve(proposal_id, AVA)
    assert (again.result, again.outcome) == ("already_completed", report.outcome)
