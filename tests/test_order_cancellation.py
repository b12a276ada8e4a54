"""An order's registration: the league spot it holds, the refundable balance across its payments,
refunds of that balance (to the card through an attempt, or to account credit), and its
cancellation, which happens once."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
from countersign.application.assistant.sections.orders import order_for_model
from countersign.domain.club.orders import Order, OrderStatus
from countersign.domain.club.roster import Roster
from countersign.domain.errors import OrderRuleError
from countersign.domain.scope import Scope, Section
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli.listings import render_order
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.views import order_view

from tests.conftest import AVA


def _order(**overrides: object) -> Order:
    """A $345.00 registration paid partly by card ($200.00) and partly in cash ($145.00)."""
    fields: dict[str, object] = {
        "organization_id": uuid4(),
        "key": "split-payment",
        "participant_name": "Olivia Chen",
        "participant_email": "olivia.chen@example.com",
        "currency": "CAD",
        "line_items": [
            {
                "ref": "L1",
                "product": "Fall Monday Night League",
                "amount_cents": 34500,
                "configuration": "Full season",
            }
        ],
        "discounts": [],
        "payments": [
            {
                "ref": "P1",
                "method": "card",
                "label": "Visa •••• 4242",
                "amount_cents": 20000,
                "charge_id": "ch_split",
            },
            {
                "ref": "P2",
                "method": "cash",
                "label": "Cash at the front desk",
                "amount_cents": 14500,
                "charge_id": None,
            },
        ],
        "note": "",
        "placed_at": datetime(2026, 9, 3, 18, 30, tzinfo=UTC),
        "league": "Monday Night Open",
    }
    fields.update(overrides)
    return Order(**fields)  # type: ignore[arg-type]


# -- the registration's league ------------------------------------------------------------------


def test_the_seeded_registrations_hold_a_spot_in_their_roster_league(cs: Countersign, seeded):
    olivia = cs.club.order("granite", seeded["orders"]["refund-ok"])
    jack = cs.club.order("maple", seeded["orders"]["maple-refund"])
    granite_roster = cs.store.read(Roster.create_id(olivia.organization_id), Roster)
    maple_roster = cs.store.read(Roster.create_id(jack.organization_id), Roster)

    assert (olivia.league, olivia.status) == ("Monday Night Open", OrderStatus.ACTIVE)
    assert (jack.league, jack.status) == ("Tuesday Draw", OrderStatus.ACTIVE)
    assert granite_roster.plays_in("Monday Night Open", olivia.participant_email)
    assert maple_roster.plays_in("Tuesday Draw", "Jack.Wilson@example.com")
    assert not maple_roster.plays_in("Monday Night Open", "jack.wilson@example.com")


def test_an_order_placed_without_a_league_holds_no_spot():
    assert _order(league=None).league is None
    assert _order(league=None).is_active


# -- the refundable balance ---------------------------------------------------------------------


def test_the_balance_is_what_was_paid_less_refunds_and_held_attempts_across_payments():
    order = _order()
    assert (order.paid_cents, order.refundable_balance_cents) == (34500, 34500)

    order.refund_manually("P2", 4500, recorded_by=AVA)
    assert order.refundable_balance_cents == 30000

    proposal_id = uuid4()
    order.start_refund_attempt(proposal_id, "P1", None, 20000, idempotency_key="k1")
    assert order.refundable_balance_cents == 10000  # the card's value is held

    order.release_refund_attempt(proposal_id, reason="declined")
    assert order.refundable_balance_cents == 30000  # a declined attempt holds nothing


def test_a_balance_refund_to_the_card_settles_as_a_card_refund_of_no_discount():
    order = _order()
    proposal_id = uuid4()
    order.start_refund_attempt(proposal_id, "P1", None, 20000, idempotency_key="k1")
    assert order.attempt(proposal_id).discount is None  # type: ignore[union-attr]

    order.settle_refund_attempt(proposal_id, recorded_by=AVA)

    [refund] = order.refunds
    assert (refund.payment, refund.amount_cents, refund.destination, refund.discount) == (
        "P1",
        20000,
        "card",
        None,
    )
    assert refund.proposal_id == str(proposal_id)
    assert order.refundable_balance_cents == 14500


# -- the balance to account credit --------------------------------------------------------------


def test_the_whole_balance_goes_to_account_credit_one_refund_per_payment():
    order = _order()
    order.refund_manually("P1", 5000, recorded_by=AVA)
    proposal_id = uuid4()

    order.refund_balance_to_account(proposal_id, 29500, recorded_by=AVA)

    credited = [r for r in order.refunds if r.destination == "account_credit"]
    assert [(r.payment, r.amount_cents, r.discount) for r in credited] == [
        ("P1", 15000, None),
        ("P2", 14500, None),
    ]
    assert {r.proposal_id for r in credited} == {str(proposal_id)}
    assert order.refundable_balance_cents == 0
    assert order.total_cents == 0


def test_an_account_credit_of_another_amount_than_the_balance_is_refused():
    order = _order()
    with pytest.raises(OrderRuleError, match="not the amount expected"):
        order.refund_balance_to_account(uuid4(), 34000, recorded_by=AVA)
    order.refund_manually("P1", 20000, recorded_by=AVA)
    order.refund_manually("P2", 14500, recorded_by=AVA)
    with pytest.raises(OrderRuleError, match="positive"):
        order.refund_balance_to_account(uuid4(), 0, recorded_by=AVA)
    assert len(order.refunds) == 2


def test_no_account_credit_while_a_card_refund_is_settling():
    order = _order()
    order.start_refund_attempt(uuid4(), "P1", None, 1000, idempotency_key="k1")
    with pytest.raises(OrderRuleError, match="unresolved"):
        order.refund_balance_to_account(uuid4(), 33500, recorded_by=AVA)


# -- cancellation -------------------------------------------------------------------------------


def test_an_order_is_cancelled_once():
    order = _order()
    proposal_id = uuid4()

    order.cancel(proposal_id, cancelled_by=AVA)

    assert (order.status, order.is_active, order.cancelled_by) == (
        OrderStatus.CANCELLED,
        False,
        AVA,
    )
    with pytest.raises(OrderRuleError, match="already cancelled"):
        order.cancel(uuid4(), cancelled_by=AVA)


def test_an_order_is_not_cancelled_while_a_refund_on_it_is_settling():
    order = _order()
    proposal_id = uuid4()
    order.start_refund_attempt(proposal_id, "P1", None, 20000, idempotency_key="k1")
    with pytest.raises(OrderRuleError, match="still settling"):
        order.cancel(uuid4(), cancelled_by=AVA)

    order.settle_refund_attempt(proposal_id, recorded_by=AVA)
    order.cancel(proposal_id, cancelled_by=AVA)
    assert order.status == OrderStatus.CANCELLED


def test_a_cancelled_order_reads_back_cancelled_in_another_process(cs, seeded, other):
    order_id = seeded["orders"]["refund-ok"]
    order = cs.club.order("granite", order_id)
    proposal_id = uuid4()
    order.start_refund_attempt(proposal_id, "P1", None, 34500, idempotency_key="k1")
    cs.store.save(order)
    order.settle_refund_attempt(proposal_id, recorded_by=AVA)
    order.cancel(proposal_id, cancelled_by=AVA)
    cs.store.save(order)

    seen = other.club.order("granite", order_id)

    assert (seen.status, seen.cancelled_by, seen.league) == (
        OrderStatus.CANCELLED,
        AVA,
        "Monday Night Open",
    )
    assert seen.refundable_balance_cents == 0
    assert [(r.destination, r.discount) for r in seen.refunds] == [("card", None)]
    assert [e.type for e in other.store.history(seen.id)][-3:] == [
        "RefundAttemptStarted",
        "RefundAttemptSucceeded",
        "Cancelled",
    ]


# -- what staff and the order assistant see -----------------------------------------------------


def test_the_investigation_shows_the_registration_to_staff_and_to_the_model(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    order = cs.club.order("granite", order_id)
    scope = Scope(order.organization_id, Section("orders"), order.id)

    shown = cs.club.investigate("granite", order_id)

    assert shown["registration"] == {
        "status": "active",
        "league": "Monday Night Open",
        "refundable_balance_cents": 34500,
    }
    assert "Registration  active, a spot in Monday Night Open" in render_order(shown)
    assert order_view(shown, translator("fr"))["registration"] == (
        "Active · une place dans la ligue Monday Night Open"
    )
    assert order_for_model(None, scope, cs.store)["registration"] == {
        "status": "active",
        "league_spot": "Monday Night Open",
        "refundable_balance_cents": 34500,
    }

    order.refund_balance_to_account(uuid4(), 34500, recorded_by=AVA)
    order.cancel(None, cancelled_by=AVA)
    cs.store.save(order)
    shown = cs.club.investigate("granite", order_id)

    assert shown["registration"]["status"] == "cancelled"
    assert shown["registration"]["refundable_balance_cents"] == 0
    assert "Registration  cancelled" in render_order(shown)
    assert order_view(shown, translator("en"))["registration"] == "Cancelled"
    assert order_view(shown, translator("fr"))["registration"] == "Annulée"
    assert order_for_model(None, scope, cs.store)["registration"]["status"] == "cancelled"
