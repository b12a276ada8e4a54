"""order.refund_missing_discount: propose, approve, replay, stale state, provider behaviours."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.base import RevisionNeededError
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, REFUND, TO_CARD
from tests.support.proposing import TO_ACCOUNT_CREDIT, propose, propose_on


def provider_requests(cs: Countersign, proposal_id: str) -> int:
    return sum(
        int(r["requests"])  # type: ignore[call-overload]
        for r in cs.sandbox.refunds()
        if r["metadata"]["proposal_id"] == proposal_id  # type: ignore[index]
    )


def test_the_preview_shows_the_computed_amount_and_both_totals(cs, seeded):
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    assert created.status == "pending"
    assert created.preview == {
        "participant_name": "Olivia Chen",
        "product_name": "Fall Monday Night League",
        "discount_name": "Early-bird 15% discount",
        "payment_method": "Visa •••• 4242",
        "amount_cents": 4800,
        "currency": "CAD",
        "current_order_total_cents": 34500,
        "resulting_order_total_cents": 29700,
        "refund_destination": "Visa •••• 4242",
        "product_configuration_unchanged": True,
    }


def test_a_card_refund_succeeds_once_and_replays_the_stored_outcome(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)

    first = cs.proposals.approve(proposal_id, AVA)
    again = cs.proposals.approve(proposal_id, AVA)

    assert first.result == "executed"
    assert first.outcome == {
        "kind": "succeeded",
        "result": {
            "refund_ref": "R1",
            "amount_cents": 4800,
            "currency": "CAD",
            "destination": "Visa •••• 4242",
            "resulting_order_total_cents": 29700,
        },
    }
    assert again.result == "already_completed"
    assert again.outcome == first.outcome
    assert again.message == first.message
    assert provider_requests(cs, proposal_id) == 1
    order = cs.club.investigate("granite", order_id)
    assert order["total_cents"] == 29700
    assert order["payments"][0]["refundable_cents"] == 34500 - 4800


def test_account_credit_is_local_and_credits_the_members_account(cs, seeded):
    order_id = seeded["orders"]["account-credit"]
    proposal_id = propose_on(cs, order_id, TO_ACCOUNT_CREDIT)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.status == "succeeded"
    assert report.outcome["result"]["destination"] == "club account credit for Sophie Martin"
    assert cs.sandbox.refunds() == []  # nothing went to the provider
    history = cs.audit.history(proposal_id)
    assert [e["type"] for e in history["events"]] == [
        "Proposed",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
    ]


def test_a_manual_refund_in_another_tab_makes_approval_fail_closed(cs, seeded):
    order_id = seeded["orders"]["refund-stale"]
    proposal_id = propose_on(cs, order_id)
    cs.club.refund_manually("granite", order_id, AVA, "P1", 34500)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required"
    assert report.outcome == {
        "kind": "revision_required",
        "reason": {"code": "payment_already_refunded", "params": {"payment": "Visa •••• 4242"}},
    }
    assert "already been refunded" in report.message
    assert cs.sandbox.refunds() == []
    assert cs.proposals.approve(proposal_id, AVA).outcome == report.outcome


def test_a_partial_manual_refund_leaving_too_little_is_insufficient(cs, seeded):
    order_id = seeded["orders"]["refund-stale"]
    proposal_id = propose_on(cs, order_id)
    cs.club.refund_manually("granite", order_id, AVA, "P1", 34500 - 1000)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome["reason"] == {
        "code": "insufficient_refundable",
        "params": {"refundable_cents": 1000, "currency": "CAD"},
    }
    assert "Only $10.00 CAD" in report.message


def test_a_changed_order_total_is_a_revision_not_a_silent_refund(cs, seeded):
    """The preview showed the order total before and after the refund; a manual refund of
    $10 since (the discount and the payment's balance still fit) makes both untrue: approving
    refuses to run, and nothing reaches the provider."""
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)
    card = cs.cards.card(proposal_id, AVA)
    assert (
        card.preview["current_order_total_cents"],
        card.preview["resulting_order_total_cents"],
    ) == (34500, 29700)
    cs.club.refund_manually("granite", order_id, AVA, "P1", 1000)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required"
    assert report.outcome["reason"] == {
        "code": "order_total_changed",
        "params": {"approved_cents": 34500, "current_cents": 33500, "currency": "CAD"},
    }
    assert "The order total changed from $345.00 CAD to $335.00 CAD" in report.message
    assert provider_requests(cs, proposal_id) == 0
    french = cs.cards.card(proposal_id, AVA, language="fr")
    assert "Le total de la commande est passé de 345,00" in french.message


def test_a_refund_frozen_before_its_order_total_was_kept_is_not_compared(cs, seeded):
    contract = REGISTRY[REFUND]
    proposal_id = propose(cs, seeded, "refund-ok")
    facts = _load_facts(cs, contract, proposal_id)
    stored = _stored_arguments(cs, proposal_id)
    assert stored.pop("order_total_cents") == 34500
    checked = contract.revalidate(contract.decode_arguments(stored), facts)
    assert checked["order_total_cents"] == 34500


def test_a_changed_amount_is_a_revision_not_a_silent_update(cs, seeded):
    contract = REGISTRY[REFUND]
    proposal_id = propose(cs, seeded, "refund-ok")
    facts = _load_facts(cs, contract, proposal_id)
    stored = {**_stored_arguments(cs, proposal_id), "amount_cents": 5000}

    with pytest.raises(RevisionNeededError) as stale:
        contract.revalidate(contract.decode_arguments(stored), facts)

    assert stale.value.reason.code == "amount_changed"
    assert stale.value.reason.params == {
        "approved_cents": 5000,
        "current_cents": 4800,
        "currency": "CAD",
    }
    assert cs.cards.card(proposal_id, AVA).status == "pending"


def test_a_declining_card_requires_revision_and_releases_the_attempt(cs, seeded):
    order_id = seeded["orders"]["refund-declined"]
    proposal_id = propose_on(cs, order_id)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome["reason"]["code"] == "refund_declined_by_provider"
    order = cs.club.investigate("granite", order_id)
    assert order["unresolved_refund_attempts"] == 0
    assert order["refunds"] == []
    # The order can take a new proposal now.
    assert propose_on(cs, order_id, TO_ACCOUNT_CREDIT)


def test_a_lost_response_needs_reconciliation_and_the_reconciler_settles_it(cs, seeded):
    order_id = seeded["orders"]["refund-lost-response"]
    proposal_id = propose_on(cs, order_id)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome == {"kind": "needs_reconciliation", "cause": "response_lost"}
    assert cs.proposals.approve(proposal_id, AVA).outcome == report.outcome
    assert provider_requests(cs, proposal_id) == 1
    # While the refund is uncertain, no other refund on the order may be proposed.
    order = cs.club.investigate("granite", order_id)
    assert order["unresolved_refund_attempts"] == 1

    swept = cs.sweepers.reconcile()

    assert [(s.proposal_id, s.action, s.status) for s in swept] == [
        (proposal_id, "settled", "succeeded")
    ]
    assert provider_requests(cs, proposal_id) == 1
    settled = cs.proposals.approve(proposal_id, AVA)
    assert settled.result == "already_completed"
    assert settled.outcome["kind"] == "succeeded"
    assert cs.club.investigate("granite", order_id)["total_cents"] == 29700
    assert cs.sweepers.reconcile() == []


def test_an_answer_that_cannot_be_recorded_is_left_to_the_reconciler_not_a_500(
    cs, seeded, monkeypatch, caplog
):
    """The provider refunded, and recording its answer raised (a contract's bug, here
    ``finish_external``): the approver is told the effect is uncertain, not an error, and
    the proposal is not left executing; once the contract records again, the reconciler
    records the provider's answer under the same key: one refund, never a second call."""
    contract = REGISTRY[REFUND]
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id)
    finish = type(contract).finish_external

    def broken(self: Any, *args: Any) -> Any:
        raise RuntimeError("a bug in recording the refund")

    monkeypatch.setattr(type(contract), "finish_external", broken)
    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome == {"kind": "needs_reconciliation", "cause": "response_lost"}
    assert "a bug in recording" not in str(report.to_json())
    assert any("left to the reconciler" in r.getMessage() for r in caplog.records)
    assert provider_requests(cs, proposal_id) == 1
    assert cs.proposals.approve(proposal_id, AVA).outcome == report.outcome

    monkeypatch.setattr(type(contract), "finish_external", finish)
    swept = cs.sweepers.reconcile()

    assert [(s.action, s.status) for s in swept] == [("settled", "succeeded")]
    assert provider_requests(cs, proposal_id) == 1
    assert cs.club.investigate("granite", order_id)["total_cents"] == 29700


def test_an_outage_is_reconciled_by_replaying_the_same_key_once_it_recovers(cs, seeded):
    order_id = seeded["orders"]["provider-outage"]
    proposal_id = propose_on(cs, order_id)

    report = cs.proposals.approve(proposal_id, AVA)
    assert report.outcome["kind"] == "needs_reconciliation"
    assert cs.sandbox.refunds() == []  # the 503 came before anything was applied

    swept = cs.sweepers.reconcile()

    assert [(s.action, s.status) for s in swept] == [("replayed", "succeeded")]
    assert provider_requests(cs, proposal_id) == 1
    assert cs.club.investigate("granite", order_id)["total_cents"] == 29700
    assert cs.sweepers.reconcile() == []


def test_the_audit_trail_tells_an_outage_from_a_lost_answer(cs, seeded):
    """An outage applied nothing; a lost answer may have moved the money: the trail said
    "the provider's response was lost" of both (an auditor's finding)."""
    outage = propose_on(cs, seeded["orders"]["provider-outage"])
    lost = propose(cs, seeded, "refund-lost-response")
    cs.proposals.approve(outage, AVA)
    cs.proposals.approve(lost, AVA)
    cs.projection_runners(["audit_trail"])[0].catch_up()

    said = {
        row["proposal_id"]: row["summary"]
        for row in cs.read_models.audit_trail()
        if row["event_type"] == "Reconciling"
    }
    assert said == {
        outage: "needs reconciliation: the provider was unavailable and applied nothing",
        lost: "needs reconciliation: the provider's response was lost",
    }


def test_an_expired_proposal_records_expired_and_executes_nothing(cs, seeded, clock: FakeClock):
    proposal_id = propose(cs, seeded, "refund-ok")
    clock.advance(days=1, seconds=1)

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.result, report.reason, report.status) == ("not_approvable", "expired", "expired")
    assert cs.sandbox.refunds() == []
    assert cs.audit.history(proposal_id)["events"][-1]["type"] == "Expired"
    assert cs.proposals.approve(proposal_id, AVA).reason == "expired"


def test_the_sweeper_expires_only_overdue_pending_proposals(cs, seeded, clock: FakeClock):
    overdue = propose(cs, seeded, "refund-ok")
    clock.advance(hours=20)
    fresh = propose(cs, seeded, "refund-stale")
    clock.advance(hours=5)

    swept = cs.sweepers.expire_due()

    assert [s.proposal_id for s in swept] == [overdue]
    assert cs.cards.card(fresh, AVA).status == "pending"
    assert cs.sweepers.expire_due() == []


def test_a_second_refund_proposal_for_the_same_discount_supersedes_the_first(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    first = propose_on(cs, order_id)
    second = propose_on(cs, order_id)  # the same discount: the newer proposal replaces the older

    stale = cs.proposals.approve(first, AVA)
    fresh = cs.proposals.approve(second, AVA)

    assert (stale.result, stale.reason, stale.superseded_by) == (
        "not_approvable",
        "superseded",
        second,
    )
    assert fresh.outcome["kind"] == "succeeded"
    assert (provider_requests(cs, first), provider_requests(cs, second)) == (0, 1)


def _stored_arguments(cs: Countersign, proposal_id: str) -> dict[str, Any]:
    return cs.audit.history(proposal_id)["events"][0]["arguments"]


def _load_facts(cs: Countersign, contract: Any, proposal_id: str) -> Any:
    from uuid import UUID

    from countersign.domain.proposal import Proposal

    proposal = cs.store.get(UUID(proposal_id), Proposal)
    return contract.load(proposal.scope, cs.store)


@pytest.mark.parametrize("approved_first", ["held_before", "proposed_since"])
def test_the_same_discount_refunded_by_another_proposal_needs_nothing_more(
    cs, seeded, monkeypatch, approved_first
):
    """Two refunds of the same missed discount both pending (one held under a subject an
    earlier release gave it): whichever is approved first refunds it, and the other finds
    nothing owed. It changes nothing, says so, and needs nobody's attention, in either
    order."""
    from tests.test_projections import catch_up_all

    order_id = seeded["orders"]["account-credit"]
    with monkeypatch.context() as last_release:
        last_release.setattr(type(REGISTRY[REFUND]), "subject", lambda self, arguments: "")
        held = propose_on(cs, order_id, TO_ACCOUNT_CREDIT)
    since = propose_on(cs, order_id, TO_ACCOUNT_CREDIT)
    first, second = (held, since) if approved_first == "held_before" else (since, held)

    assert cs.proposals.approve(first, AVA).status == "succeeded"
    report = cs.proposals.approve(second, AVA)

    assert report.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "discount_already_refunded",
            "params": {"discount": "Early-bird 15% discount"},
        },
        "already_so": True,
    }
    assert report.message == (
        "Nothing was changed. The Early-bird 15% discount has already been refunded. That is "
        "already what this proposal asked for, so nothing is left to do."
    )
    order = cs.club.order("granite", order_id)
    assert len(order.refunds) == 1
    catch_up_all(cs)
    assert cs.read_models.needs_attention(cs.club.organization_id("granite"))["total"] == 0
