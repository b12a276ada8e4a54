"""order.cancel_registration: the refundable balance and the league spot the application
computes, the card path through the payment sandbox (the order cancelled and the spot released
only with the provider's answer), account credit in one local commit, and every way approval
fails closed."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.club.accounts import MemberAccount
from countersign.domain.club.orders import Order
from countersign.domain.club.roster import Roster
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.domain.messages import outcome_title, preview_rows_of, proposal_headline
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD
from tests.support.proposing import BACK_TO_CARD, CANCEL, propose_on
from tests.test_projections import catch_up_all

TO_ACCOUNT = {"destination": "account_credit"}
MONDAY = "Monday Night Open"


def order_of(cs: Countersign, order_id: str, organization: str = "granite") -> Order:
    return cs.club.order(organization, order_id)


def plays_in(cs: Countersign, league: str, email: str, organization: str = "granite") -> bool:
    organization_id = UUID(cs.club.organization_id(organization))
    roster = cs.store.read(Roster.create_id(organization_id), Roster)
    return roster.plays_in(league, email)


def provider_requests(cs: Countersign, proposal_id: str) -> list[tuple[int, int]]:
    """(amount, requests) of every refund the sandbox holds for the proposal."""
    return [
        (int(r["amount_cents"]), int(r["requests"]))  # type: ignore[call-overload]
        for r in cs.sandbox.refunds()
        if r["metadata"]["proposal_id"] == proposal_id  # type: ignore[index]
    ]


def commits(cs: Countersign, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every commit from now on, as the event types it stored (``Order.Cancelled``)."""
    recorded: list[list[str]] = []
    insert_events = cs.app.recorder.insert_events

    def recording(stored: Any, **kwargs: Any) -> Any:
        recorded.append([event.topic.rsplit(":", 1)[1] for event in stored])
        return insert_events(stored, **kwargs)

    monkeypatch.setattr(cs.app.recorder, "insert_events", recording)
    return recorded


# -- the preview ----------------------------------------------------------------------------


def test_the_preview_shows_what_is_left_after_a_manual_refund_where_it_goes_and_the_spot(
    cs, seeded
):
    order_id = seeded["orders"]["refund-ok"]
    cs.club.refund_manually("granite", order_id, AVA, "P1", 5000)

    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=CANCEL,
        resource_id=order_id,
        request=BACK_TO_CARD,
    )

    assert created.status == "pending"
    assert created.preview == {
        "participant_name": "Olivia Chen",
        "amount_cents": 29500,
        "currency": "CAD",
        "paid_cents": 34500,
        "refunded_before_cents": 5000,
        "to_account_credit": False,
        "refund_destination": "Visa •••• 4242",
        "league_spot_released": MONDAY,
    }
    assert proposal_headline(CANCEL, created.preview) == (
        "Cancel Olivia Chen's registration and refund $295.00 CAD"
    )
    assert proposal_headline(CANCEL, created.preview, "fr") == (
        "Olivia Chen : annuler l'inscription et rembourser 295,00\u00a0$\u00a0CA"
    )


def test_account_credit_names_the_participants_account(cs, seeded):
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=CANCEL,
        resource_id=seeded["orders"]["account-credit"],
        request=TO_ACCOUNT,
    )
    assert created.preview["to_account_credit"] is True
    assert created.preview["refund_destination"] == "Sophie Martin"
    assert created.preview["amount_cents"] == 34500
    rows = preview_rows_of(CANCEL, created.preview, "fr")
    assert [(row.label, row.value) for row in rows][2:4] == [
        ("Mode de remboursement", "Crédit au compte du club"),
        ("Remboursé vers", "Sophie Martin"),
    ]


def test_a_cash_payment_cannot_go_back_to_its_original_method(cs, seeded):
    with pytest.raises(InvalidRequestError) as refused:
        propose_on(cs, seeded["orders"]["account-credit"], BACK_TO_CARD, operation=CANCEL)
    [problem] = refused.value.problems
    assert problem.field == "destination"
    assert "use account_credit" in problem.message


def test_the_model_cannot_name_an_amount_or_a_league(cs, seeded):
    with pytest.raises(InvalidRequestError) as refused:
        propose_on(
            cs,
            seeded["orders"]["refund-ok"],
            {**BACK_TO_CARD, "amount_cents": 100, "league": "Junior Program"},
            operation=CANCEL,
        )
    assert {(p.field, p.message) for p in refused.value.problems} == {
        ("amount_cents", "unknown field; remove it"),
        ("league", "unknown field; remove it"),
    }


def test_a_participant_who_left_the_league_has_no_spot_to_release(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    _leave(cs, MONDAY, "olivia.chen@example.com")

    with pytest.raises(InvalidRequestError) as refused:
        propose_on(cs, order_id, operation=CANCEL)

    assert "no longer plays in Monday Night Open" in str(refused.value)


# -- the card path ----------------------------------------------------------------------------


def test_a_card_cancellation_refunds_once_and_cancels_only_with_the_providers_answer(
    cs, seeded, monkeypatch
):
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)
    during_the_call: dict[str, Any] = {}
    perform = cs.sandbox.perform

    def watching(key: str, request: Any) -> Any:
        order = order_of(cs, order_id)
        during_the_call.update(
            active=order.is_active,
            settling=len(order.unresolved_attempts()),
            plays=plays_in(cs, MONDAY, "olivia.chen@example.com"),
        )
        return perform(key, request)

    monkeypatch.setattr(cs.sandbox, "perform", watching)
    stored = commits(cs, monkeypatch)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.result == "executed"
    assert report.outcome == {
        "kind": "succeeded",
        "result": {
            "refund_refs": ["R1"],
            "amount_cents": 34500,
            "currency": "CAD",
            "to_account_credit": False,
            "destination": "Visa •••• 4242",
            "league": MONDAY,
            "spot_released": True,
        },
    }
    assert report.message == (
        "Cancelled Olivia Chen's registration: refunded $345.00 CAD to Visa •••• 4242, and "
        "their spot in Monday Night Open is released."
    )
    # While the provider was asked, the claim held the refund and nothing else had changed.
    assert during_the_call == {"active": True, "settling": 1, "plays": True}
    # The claim, then the provider's answer with every domain change, in one commit.
    assert stored == [
        ["Proposal.Approved", "Proposal.Claimed", "Proposal.Revalidated",
         "Order.RefundAttemptStarted"],
        ["Proposal.Succeeded", "Order.RefundAttemptSucceeded", "Order.Cancelled",
         "Roster.MemberLeft"],
    ]  # fmt: skip
    assert provider_requests(cs, proposal_id) == [(34500, 1)]
    order = order_of(cs, order_id)
    assert (order.status, order.refundable_balance_cents) == ("cancelled", 0)
    assert not plays_in(cs, MONDAY, "olivia.chen@example.com")
    assert plays_in(cs, "Sunday Mixed Doubles", "olivia.chen@example.com")


def test_approving_twice_answers_from_the_stored_outcome(cs, seeded, other):
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)
    first = cs.proposals.approve(proposal_id, AVA)

    again = cs.proposals.approve(proposal_id, AVA)
    elsewhere = other.proposals.approve(proposal_id, AVA)

    assert (again.result, elsewhere.result) == ("already_completed", "already_completed")
    assert again.outcome == elsewhere.outcome == first.outcome
    assert again.message == first.message
    assert provider_requests(cs, proposal_id) == [(34500, 1)]
    assert [e.type for e in cs.store.history(UUID(order_id))].count("Cancelled") == 1


def test_a_declined_card_requires_revision_and_changes_nothing(cs, seeded):
    order_id = seeded["orders"]["refund-declined"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required"
    assert report.outcome["reason"] == {"code": "cancellation_refund_declined", "params": {}}
    assert report.message == (
        "Nothing was changed. The card provider declined the refund; the registration was not "
        "cancelled. Ask the assistant for a new proposal if it is still needed."
    )
    # Its headline is plain words, the reason included; the API keeps the internal name.
    preview = cs.cards.card(proposal_id, AVA).preview
    assert outcome_title(CANCEL, preview, report.outcome) == "Not cancelled: the card was declined"
    assert outcome_title(CANCEL, preview, report.outcome, "fr") == (
        "Non annulée : la carte a été refusée"
    )
    order = order_of(cs, order_id)
    assert (order.is_active, order.refunds, order.unresolved_attempts()) == (True, [], [])
    assert order.refundable_balance_cents == 34500
    assert plays_in(cs, MONDAY, "emma.singh@example.com")
    # The registration can still be cancelled another way.
    to_account = propose_on(cs, order_id, TO_ACCOUNT, operation=CANCEL)
    assert cs.proposals.approve(to_account, AVA).status == "succeeded"


def test_a_lost_answer_is_reconciled_to_one_refund_and_then_cancels(cs, seeded):
    order_id = seeded["orders"]["refund-lost-response"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome == {"kind": "needs_reconciliation", "cause": "response_lost"}
    assert "cancels the registration once it is confirmed" in str(report.message)
    # Until the answer is known, the registration stands and its money is held.
    order = order_of(cs, order_id)
    assert (order.is_active, len(order.unresolved_attempts())) == (True, 1)
    assert plays_in(cs, MONDAY, "noah.fraser@example.com")
    with pytest.raises(InvalidRequestError, match="still settling"):
        propose_on(cs, order_id, TO_ACCOUNT, operation=CANCEL)

    swept = cs.sweepers.reconcile()

    assert [(s.proposal_id, s.action, s.status) for s in swept] == [
        (proposal_id, "settled", "succeeded")
    ]
    assert provider_requests(cs, proposal_id) == [(34500, 1)]
    assert order_of(cs, order_id).status == "cancelled"
    assert not plays_in(cs, MONDAY, "noah.fraser@example.com")
    assert plays_in(cs, "Thursday Seniors", "noah.fraser@example.com")
    settled = cs.proposals.approve(proposal_id, AVA)
    assert (settled.result, settled.outcome["kind"]) == ("already_completed", "succeeded")
    assert cs.sweepers.reconcile() == []


def test_an_outage_replays_the_same_request_under_the_same_key(cs, seeded):
    order_id = seeded["orders"]["provider-outage"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)
    assert cs.proposals.approve(proposal_id, AVA).outcome["kind"] == "needs_reconciliation"
    assert cs.sandbox.refunds() == []  # the 503 came before anything was applied

    swept = cs.sweepers.reconcile()

    assert [(s.action, s.status) for s in swept] == [("replayed", "succeeded")]
    assert provider_requests(cs, proposal_id) == [(34500, 1)]
    assert order_of(cs, order_id).status == "cancelled"


def test_a_member_who_left_before_the_card_settled_is_not_released_twice(cs, seeded):
    order_id = seeded["orders"]["refund-lost-response"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)
    cs.proposals.approve(proposal_id, AVA)  # the answer is lost: the refund is held
    _leave(cs, MONDAY, "noah.fraser@example.com")

    [swept] = cs.sweepers.reconcile()

    assert swept.status == "succeeded"
    assert swept.outcome is not None
    assert swept.outcome["result"]["spot_released"] is False
    card = cs.cards.card(proposal_id, AVA)
    assert card.message == (
        "Cancelled Noah Fraser's registration: refunded $345.00 CAD to Visa •••• 0259, and "
        "they no longer held a spot in Monday Night Open."
    )
    assert order_of(cs, order_id).status == "cancelled"


# -- account credit ---------------------------------------------------------------------------


def test_account_credit_cancels_credits_and_releases_in_one_local_commit(cs, seeded, monkeypatch):
    order_id = seeded["orders"]["account-credit"]
    proposal_id = propose_on(cs, order_id, TO_ACCOUNT, operation=CANCEL)
    stored = commits(cs, monkeypatch)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome["result"] == {
        "refund_refs": ["R1"],
        "amount_cents": 34500,
        "currency": "CAD",
        "to_account_credit": True,
        "destination": "Sophie Martin",
        "league": MONDAY,
        "spot_released": True,
    }
    assert stored == [
        ["Proposal.Approved", "Proposal.Claimed", "Proposal.Revalidated", "Proposal.Succeeded",
         "Order.RefundRecorded", "Order.Cancelled", "Roster.MemberLeft",
         "MemberAccount.Credited"],
    ]  # fmt: skip
    assert cs.sandbox.refunds() == []  # nothing went to the provider
    order = order_of(cs, order_id)
    assert (order.status, order.refundable_balance_cents) == ("cancelled", 0)
    account = cs.store.read(
        MemberAccount.create_id(order.organization_id, "sophie.martin@example.com"),
        MemberAccount,
    )
    assert account.balance_cents == 34500
    assert not plays_in(cs, MONDAY, "sophie.martin@example.com")
    assert report.message == (
        "Cancelled Sophie Martin's registration: refunded $345.00 CAD as club account credit "
        "for Sophie Martin, and their spot in Monday Night Open is released."
    )
    assert cs.cards.card(proposal_id, AVA, language="fr").message == (
        "Inscription de Sophie Martin annulée : 345,00\u00a0$\u00a0CA remboursés en crédit au "
        "compte du club de Sophie Martin, et sa place dans la ligue Monday Night Open est libérée."
    )


def test_a_card_order_can_be_cancelled_to_account_credit_too(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    cs.club.refund_manually("granite", order_id, AVA, "P1", 5000)

    report = cs.proposals.approve(propose_on(cs, order_id, TO_ACCOUNT, operation=CANCEL), AVA)

    assert report.status == "succeeded"
    assert report.outcome["result"]["amount_cents"] == 29500
    assert cs.sandbox.refunds() == []
    assert [(r.destination, r.amount_cents) for r in order_of(cs, order_id).refunds] == [
        ("manual", 5000),
        ("account_credit", 29500),
    ]


# -- revalidation -----------------------------------------------------------------------------


def test_a_manual_refund_after_proposing_changes_the_balance_and_fails_closed(cs, seeded):
    order_id = seeded["orders"]["refund-stale"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)
    cs.club.refund_manually("granite", order_id, AVA, "P1", 2000)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.status == "revision_required"
    assert report.outcome["reason"] == {
        "code": "refundable_balance_changed",
        "params": {"approved_cents": 34500, "current_cents": 32500, "currency": "CAD"},
    }
    assert "changed from $345.00 CAD to $325.00 CAD" in str(report.message)
    assert cs.sandbox.refunds() == []
    assert order_of(cs, order_id).is_active
    assert plays_in(cs, MONDAY, "lucas.roy@example.com")
    fr = cs.cards.card(proposal_id, AVA, language="fr").message
    assert "est passé de 345,00\u00a0$\u00a0CA à 325,00\u00a0$\u00a0CA" in str(fr)


def test_a_second_cancellation_supersedes_the_first_and_only_it_runs(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    to_card = propose_on(cs, order_id, operation=CANCEL)
    to_account = propose_on(cs, order_id, TO_ACCOUNT, operation=CANCEL)

    first = cs.proposals.approve(to_card, AVA)
    assert (first.result, first.reason, first.superseded_by) == (
        "not_approvable",
        "superseded",
        to_account,
    )
    assert cs.proposals.approve(to_account, AVA).status == "succeeded"
    assert cs.sandbox.refunds() == []
    assert len(order_of(cs, order_id).refunds) == 1
    with pytest.raises(InvalidRequestError, match="already been cancelled"):
        propose_on(cs, order_id, operation=CANCEL)


def test_a_registration_cancelled_elsewhere_after_proposing_fails_closed(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    to_card = propose_on(cs, order_id, operation=CANCEL)
    order = cs.store.get(UUID(order_id), Order)
    order.cancel(None, "office@granite.example")  # at the club's desk, not by a proposal
    cs.store.save(order)

    report = cs.proposals.approve(to_card, AVA)

    assert report.status == "revision_required"
    assert report.outcome["reason"]["code"] == "registration_no_longer_active"
    assert report.message == (
        "Nothing was changed. The registration has already been cancelled. Ask the assistant "
        "for a new proposal if it is still needed."
    )
    assert cs.sandbox.refunds() == []
    # What Olivia paid is still held, and her spot too: the cancellation is not done, so it
    # is no "already so", and it stays under Needs attention.
    assert "already_so" not in report.outcome
    catch_up_all(cs)
    attention = cs.read_models.needs_attention(cs.club.organization_id("granite"))
    assert [card["proposal_id"] for card in attention["items"]] == [to_card]


def test_a_registration_cancelled_refunded_and_released_elsewhere_needs_nothing_more(cs, seeded):
    """At the desk: every cent given back, the registration cancelled and Olivia out of the
    league. What the cancellation asked for already holds: it changes nothing, says so, and
    needs nobody's attention."""
    order_id = seeded["orders"]["refund-ok"]
    to_card = propose_on(cs, order_id, operation=CANCEL)
    cs.club.refund_manually("granite", order_id, AVA, "P1", 34500)
    order = cs.store.get(UUID(order_id), Order)
    order.cancel(None, "office@granite.example")
    cs.store.save(order)
    _leave(cs, MONDAY, "olivia.chen@example.com")

    report = cs.proposals.approve(to_card, AVA)

    assert report.outcome == {
        "kind": "revision_required",
        "reason": {
            "code": "registration_already_cancelled",
            "params": {"participant": "Olivia Chen", "league": MONDAY},
        },
        "already_so": True,
    }
    assert report.message == (
        "Nothing was changed. The registration has already been cancelled, everything paid has "
        "been given back, and Olivia Chen no longer holds a spot in Monday Night Open. That is "
        "already what this proposal asked for, so nothing is left to do."
    )
    assert cs.sandbox.refunds() == []
    catch_up_all(cs)
    assert cs.read_models.needs_attention(cs.club.organization_id("granite"))["total"] == 0


def test_leaving_the_league_after_proposing_fails_closed(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    proposal_id = propose_on(cs, order_id, operation=CANCEL)
    _leave(cs, MONDAY, "olivia.chen@example.com")

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.outcome["reason"] == {
        "code": "league_spot_gone",
        "params": {"participant": "Olivia Chen", "league": MONDAY},
    }
    assert cs.sandbox.refunds() == []
    assert order_of(cs, order_id).is_active


# -- with a missed-discount refund ------------------------------------------------------------


def test_a_settling_discount_refund_holds_off_a_cancellation_until_it_settles(cs, seeded):
    order_id = seeded["orders"]["refund-lost-response"]
    cancellation = propose_on(cs, order_id, operation=CANCEL)
    refund = cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order_id, request=TO_CARD
    ).proposal_id
    assert cs.proposals.approve(refund, AVA).outcome["kind"] == "needs_reconciliation"

    held_off = cs.proposals.approve(cancellation, AVA)

    assert held_off.outcome["reason"]["code"] == "cancellation_refund_settling"
    with pytest.raises(InvalidRequestError, match="still settling"):
        propose_on(cs, order_id, operation=CANCEL)
    # Once the discount refund settles, a new cancellation refunds what is left.
    assert [s.status for s in cs.sweepers.reconcile()] == ["succeeded"]
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=CANCEL,
        resource_id=order_id,
        request=TO_ACCOUNT,
    )
    assert (created.preview["amount_cents"], created.preview["refunded_before_cents"]) == (
        29700,
        4800,
    )
    assert cs.proposals.approve(created.proposal_id, AVA).status == "succeeded"


def test_a_cancellation_supersedes_the_pending_discount_refund_of_its_order(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    refund = cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order_id, request=TO_CARD
    ).proposal_id
    cancellation = propose_on(cs, order_id, operation=CANCEL)
    assert cs.proposals.approve(cancellation, AVA).status == "succeeded"

    late = cs.proposals.approve(refund, AVA)

    # The cancellation refunded the whole balance: the refund's preview is stale, and the
    # success that made it so retired it in the same commit.
    assert (late.result, late.reason, late.superseded_by) == (
        "not_approvable",
        "superseded",
        cancellation,
    )
    assert cs.cards.card(refund, AVA).status == "superseded"
    assert provider_requests(cs, refund) == []


# -- who may ----------------------------------------------------------------------------------


def test_staff_without_the_refund_permission_can_neither_propose_nor_approve(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    with pytest.raises(ForbiddenError):
        propose_on(cs, order_id, actor=BEN, operation=CANCEL)
    proposal_id = propose_on(cs, order_id, operation=CANCEL)

    report = cs.proposals.approve(proposal_id, BEN)

    assert (report.result, report.reason) == ("not_approvable", "forbidden")
    assert order_of(cs, order_id).is_active
    assert cs.sandbox.refunds() == []


def test_another_clubs_order_is_not_found_and_its_own_manager_cancels_it(cs, seeded):
    maple_order = seeded["orders"]["maple-refund"]
    with pytest.raises(NotFoundError):
        propose_on(cs, maple_order, operation=CANCEL)

    proposal_id = propose_on(cs, maple_order, actor=MIA, organization="maple", operation=CANCEL)
    report = cs.proposals.approve(proposal_id, MIA)

    assert report.status == "succeeded"
    assert report.outcome["result"]["league"] == "Tuesday Draw"
    assert not plays_in(cs, "Tuesday Draw", "jack.wilson@example.com", "maple")


# -- the command line -------------------------------------------------------------------------


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_the_command_line_proposes_and_approves_a_cancellation(database_url, capsys):
    def cli(*argv: str, status: int = 0) -> Any:
        assert main([*argv, "--json", "--database", database_url]) == status
        return json.loads(capsys.readouterr().out)

    order_id = cli("seed")["orders"]["account-credit"]
    created = cli(
        "propose", "--org", "granite", "--as", AVA, "--operation", CANCEL,
        "--resource", order_id, "--request", '{"destination": "account_credit"}',
    )  # fmt: skip
    assert created["status"] == "pending"
    assert created["preview"]["amount_cents"] == 34500
    assert created["preview"]["league_spot_released"] == MONDAY

    approved = cli("approve", created["proposal_id"], "--as", AVA)

    assert (approved["result"], approved["status"]) == ("executed", "succeeded")
    assert approved["outcome"]["result"]["spot_released"] is True
    refused = cli(
        "propose", "--org", "granite", "--as", AVA, "--operation", CANCEL,
        "--resource", order_id, "--request", '{"destination": "cash"}', status=4,
    )  # fmt: skip
    assert refused["error"] == "invalid_request"
    assert refused["problems"][0]["field"] == "destination"


# -- the offline stand-in model ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "destination"),
    [
        ("Please cancel Olivia's registration.", "original_payment_method"),
        ("Cancel her registration and refund her card.", "original_payment_method"),
        ("Cancel it, and put the money on her club account.", "account_credit"),
        ("Annule son inscription, en crédit sur son compte.", "account_credit"),
    ],
)
def test_the_stand_in_takes_the_destination_from_the_managers_words(words, destination):
    contract = REGISTRY[CANCEL]
    assert contract.stand_in_cue is not None
    assert contract.stand_in(words, {}) == {"destination": destination}


def test_the_stand_in_proposes_nothing_for_a_cancelled_registration():
    contract = REGISTRY[CANCEL]
    reads = {"get_order_investigation": {"registration": {"status": "cancelled"}}}
    assert contract.stand_in("Cancel her registration.", reads) == (
        "This registration is already cancelled; there is nothing left to cancel."
    )


def test_the_order_assistant_proposes_a_cancellation_from_the_managers_words(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]

    def turn(message: str, interaction_id: str | None = None) -> Any:
        return cs.assistant.turn(
            organization="granite",
            actor=AVA,
            section="orders",
            resource_id=order_id,
            message=message,
            interaction_id=interaction_id,
        )

    first = turn("Olivia moved away: cancel her registration and put it on her club account.")

    assert first.ended == "proposal"
    assert first.proposal is not None
    card = cs.cards.card(first.proposal["proposal_id"], AVA)
    assert card.operation == CANCEL
    assert (card.preview["to_account_credit"], card.preview["refund_destination"]) == (
        True,
        "Olivia Chen",
    )
    assert cs.proposals.approve(card.proposal_id, AVA).status == "succeeded"

    again = turn("Cancel her registration.", first.interaction_id)

    assert again.ended == "reply"
    assert "already cancelled" in again.messages[-1]["text"]


def _leave(cs: Countersign, league: str, email: str) -> None:
    """A member leaves a league through the roster (the club's ordinary interface has no
    command for it yet)."""
    organization_id = UUID(cs.club.organization_id("granite"))
    roster = cs.store.get(Roster.create_id(organization_id), Roster)
    roster.leave(league, email)
    cs.store.save(roster)
