"""The payment-provider sandbox behaves like a real provider: idempotency keys and lookups."""

from __future__ import annotations

import pytest
from countersign.application.ports import IdempotencyConflictError
from countersign.infrastructure.adapters.payment_sandbox import (
    CARD_DECLINED,
    CARD_LOST_RESPONSE,
    CARD_OK,
    CARD_OUTAGE,
    ProviderResponseLostError,
)


def _refund(cs, key, charge, amount=1000):
    return cs.sandbox.refund(
        idempotency_key=key, charge_id=charge, amount_cents=amount, metadata={"proposal_id": key}
    )


def _requests(cs, key):
    return next(r["requests"] for r in cs.sandbox.refunds() if r["idempotency_key"] == key)


def test_the_same_key_and_parameters_return_the_stored_response(cs):
    cs.sandbox.create_charge("ch_1", CARD_OK, 5000)
    first = _refund(cs, "k1", "ch_1")
    second = _refund(cs, "k1", "ch_1")
    assert first == second
    assert first.status == "succeeded"
    assert _requests(cs, "k1") == 2
    assert cs.sandbox.find_refund("k1") == first
    assert cs.sandbox.find_refund("nope") is None


def test_the_same_key_with_other_parameters_is_an_error(cs):
    cs.sandbox.create_charge("ch_1", CARD_OK, 5000)
    _refund(cs, "k1", "ch_1", 1000)
    with pytest.raises(IdempotencyConflictError):
        _refund(cs, "k1", "ch_1", 2000)


def test_a_charge_cannot_be_refunded_beyond_its_amount(cs):
    cs.sandbox.create_charge("ch_1", CARD_OK, 1500)
    assert _refund(cs, "k1", "ch_1", 1000).status == "succeeded"
    over = _refund(cs, "k2", "ch_1", 1000)
    assert (over.status, over.failure_code) == ("failed", "insufficient_funds")


def test_test_cards_trigger_lost_responses_declines_and_outages(cs):
    cs.sandbox.create_charge("ch_lost", CARD_LOST_RESPONSE, 5000)
    cs.sandbox.create_charge("ch_declined", CARD_DECLINED, 5000)
    cs.sandbox.create_charge("ch_down", CARD_OUTAGE, 5000)

    with pytest.raises(ProviderResponseLostError):
        _refund(cs, "lost", "ch_lost")
    assert cs.sandbox.find_refund("lost").status == "succeeded"  # applied all the same

    declined = _refund(cs, "declined", "ch_declined")
    assert (declined.status, declined.failure_code) == ("failed", "refund_declined")

    with pytest.raises(ProviderResponseLostError):
        _refund(cs, "down", "ch_down")
    assert cs.sandbox.find_refund("down") is None  # nothing was applied


def test_sandbox_state_is_shared_between_processes_through_the_database(cs):
    from countersign.infrastructure.adapters.payment_sandbox import SandboxPaymentProvider
    from countersign.infrastructure.persistence.sql import SqlDatabase

    cs.sandbox.create_charge("ch_1", CARD_OK, 5000)
    _refund(cs, "k1", "ch_1")
    other = SqlDatabase(cs.database)
    try:
        assert SandboxPaymentProvider(other).find_refund("k1").amount_cents == 1000
    finally:
        other.close()


def test_an_unknown_charge_is_refused_and_the_refusal_is_held_under_its_key(cs):
    refused = _refund(cs, "k1", "ch_missing")
    assert (refused.status, refused.failure_code) == ("failed", "no_such_charge")
    assert _refund(cs, "k1", "ch_missing") == refused
    assert _requests(cs, "k1") == 2


def test_requests_racing_under_one_key_refund_once_and_get_the_same_answer(cs):
    """Each request from its own connection, all at once: one refund is applied, and every
    request is answered with it (the losers of the insert answer as the winner did)."""
    import threading

    from countersign.infrastructure.adapters.payment_sandbox import SandboxPaymentProvider
    from countersign.infrastructure.persistence.sql import SqlDatabase

    cs.sandbox.create_charge("ch_1", CARD_OK, 5000)
    racers = 6
    databases = [SqlDatabase(cs.database) for _ in range(racers)]
    providers = [SandboxPaymentProvider(db) for db in databases]
    start = threading.Barrier(racers)
    answers: list[object] = []
    errors: list[BaseException] = []

    def race(provider: SandboxPaymentProvider) -> None:
        start.wait()
        try:
            answers.append(
                provider.refund(
                    idempotency_key="k1", charge_id="ch_1", amount_cents=1000, metadata={}
                )
            )
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=race, args=(p,)) for p in providers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for db in databases:
            db.close()
    assert errors == []
    assert len(answers) == racers
    assert all(answer == answers[0] for answer in answers)
    assert _requests(cs, "k1") == racers
    # The charge was refunded once: 4,000 left, so a second refund of 4,000 still fits.
    assert _refund(cs, "k2", "ch_1", 4000).status == "succeeded"
    assert _refund(cs, "k3", "ch_1", 1).failure_code == "insufficient_funds"


def _synchronous(cs, cursor):
    if cs.sql.is_postgres:
        return cursor.execute("SHOW synchronous_commit").fetchone()[0]
    return {0: "off", 1: "off", 2: "on", 3: "on"}[
        cursor.execute("PRAGMA synchronous").fetchone()[0]
    ]


def test_a_refund_alone_commits_without_waiting_for_the_disk(cs):
    """The sandbox's refund transaction does not wait for the disk (its durability comes from
    the approver's next commit, payment_sandbox.py); the connection's other transactions
    (sessions, tokens, passkeys share it) keep the database's setting. (The suite's
    PostgreSQL databases themselves have synchronous_commit off.)"""
    cs.sandbox.create_charge("ch_1", CARD_OK, 5000)
    with cs.sql.transaction() as cursor:
        default = _synchronous(cs, cursor)
    with cs.sql.transaction(durable=False) as cursor:
        assert _synchronous(cs, cursor) == "off"
    with cs.sql.transaction() as cursor:
        assert _synchronous(cs, cursor) == default
    _refund(cs, "k1", "ch_1")
    with cs.sql.transaction() as cursor:
        assert _synchronous(cs, cursor) == default
    if cs.sql.is_postgres:  # the refund function turns it off itself, for its transaction
        with cs.sql.transaction() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO on")
            cursor.execute(
                "SELECT * FROM sandbox_refund(?, ?, ?, ?, ?, ?)",
                ("k2", "ch_1", 1000, "{}", False, "re_test"),
            )
            assert _synchronous(cs, cursor) == "off"
        with cs.sql.transaction() as cursor:
            assert _synchronous(cs, cursor) == default
