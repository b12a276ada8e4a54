"""The e-mail delivery sandbox behaves like a real delivery service: idempotency keys, lookups,
its test addresses, and `countersign provider deliveries` showing what it holds."""

from __future__ import annotations

import json

import pytest
from countersign.application.ports import IdempotencyConflictError
from countersign.infrastructure.adapters.email_sandbox import (
    LOST_RESPONSE,
    OUTAGE,
    SUPPRESSED,
    DeliveryResponseLostError,
    Message,
    SandboxEmailProvider,
)
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.persistence.sql import SqlDatabase

MEMBERS = ("olivia.chen@example.com", "noah.fraser@example.com")


def _message(*recipients: str, subject: str = "Ice times change") -> Message:
    return Message(
        subject=subject, body="Draws move 30 minutes later.", recipients=recipients or MEMBERS
    )


def _deliver(cs, key, message=None):
    return cs.email_sandbox.deliver(
        idempotency_key=key, message=message or _message(), metadata={"proposal_id": key}
    )


def _held(cs):
    return {d["idempotency_key"]: d for d in cs.email_sandbox.deliveries()}


def test_the_same_key_and_message_return_the_stored_response(cs):
    first = _deliver(cs, "k1")
    second = _deliver(cs, "k1")

    assert first == second
    assert (first.status, first.failure_code) == ("succeeded", None)
    assert first.delivery_id.startswith("msg_")
    assert _held(cs)["k1"]["requests"] == 2
    assert cs.email_sandbox.find_delivery("k1") == first
    assert cs.email_sandbox.find_delivery("nope") is None


def test_the_same_key_with_another_message_is_an_error(cs):
    _deliver(cs, "k1")
    with pytest.raises(IdempotencyConflictError):
        _deliver(cs, "k1", _message(subject="Another subject"))
    with pytest.raises(IdempotencyConflictError):
        _deliver(cs, "k1", _message(MEMBERS[0]))
    assert _held(cs)["k1"]["requests"] == 1
    assert _held(cs)["k1"]["subject"] == "Ice times change"


def test_test_addresses_trigger_lost_responses_refusals_and_outages(cs):
    with pytest.raises(DeliveryResponseLostError):
        _deliver(cs, "lost", _message(*MEMBERS, LOST_RESPONSE))
    assert cs.email_sandbox.find_delivery("lost").status == "succeeded"  # sent all the same

    refused = _deliver(cs, "suppressed", _message(*MEMBERS, SUPPRESSED))
    assert (refused.status, refused.failure_code) == ("failed", "recipient_suppressed")

    with pytest.raises(DeliveryResponseLostError):
        _deliver(cs, "down", _message(*MEMBERS, OUTAGE))
    assert cs.email_sandbox.find_delivery("down") is None  # nothing was sent
    recovered = _deliver(cs, "down", _message(*MEMBERS, OUTAGE))  # the same key, later
    assert recovered.status == "succeeded"
    assert _held(cs)["down"]["requests"] == 1


@pytest.mark.parametrize(
    ("recipients", "failure_code"),
    [
        ((), "no_recipients"),
        (("olivia.chen@example.com", "not an address"), "invalid_recipient"),
        (("@example.com",), "invalid_recipient"),
        (("olivia.chen@localhost",), "invalid_recipient"),
    ],
)
def test_a_delivery_it_cannot_make_is_refused_and_sends_nothing(cs, recipients, failure_code):
    refused = _deliver(cs, "k1", Message(subject="Hi", body="Hello", recipients=recipients))
    assert (refused.status, refused.failure_code) == ("failed", failure_code)
    assert _held(cs)["k1"]["status"] == "failed"


def test_as_an_effect_provider_it_performs_and_looks_up_by_key(cs):
    request = {
        "subject": "Ice times change",
        "body": "Draws move 30 minutes later.",
        "recipients": list(MEMBERS),
        "metadata": {"proposal_id": "p-1"},
    }
    assert cs.email_sandbox.lookup("k1") is None

    done = cs.email_sandbox.perform("k1", request)

    assert (done.idempotency_key, done.status, done.reason) == ("k1", "succeeded", None)
    assert done.details == {"recipients": 2, "metadata": {"proposal_id": "p-1"}}
    assert cs.email_sandbox.lookup("k1") == done
    refused = cs.email_sandbox.perform("k2", {**request, "recipients": [SUPPRESSED]})
    assert (refused.status, refused.reason) == ("refused", "recipient_suppressed")
    with pytest.raises(DeliveryResponseLostError):
        cs.email_sandbox.perform("k3", {**request, "recipients": [LOST_RESPONSE]})
    assert cs.email_sandbox.lookup("k3").status == "succeeded"


def test_sandbox_state_is_shared_between_processes_through_the_database(cs):
    _deliver(cs, "k1")
    other = SqlDatabase(cs.database)
    try:
        found = SandboxEmailProvider(other).find_delivery("k1")
    finally:
        other.close()
    assert found is not None
    assert found.message.recipients == MEMBERS


def test_provider_deliveries_lists_what_the_sandbox_holds(cs, database_url, capsys):
    _deliver(cs, "k1")
    _deliver(cs, "k1")
    _deliver(cs, "k2", _message(SUPPRESSED))

    assert main(["provider", "deliveries", "--json", "--database", database_url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert main(["provider", "deliveries", "--database", database_url]) == 0
    text = capsys.readouterr().out

    assert [
        (d["idempotency_key"], d["requests"], d["status"], d["recipients"], d["metadata"])
        for d in listed
    ] == [
        ("k1", 2, "succeeded", list(MEMBERS), {"proposal_id": "k1"}),
        ("k2", 1, "failed", [SUPPRESSED], {"proposal_id": "k2"}),
    ]
    assert listed[1]["failure_code"] == "recipient_suppressed"
    assert cs.email_sandbox.held() == listed  # what the conformance suite reads
    assert listed[0]["subject"] == "Ice times change"
    assert "k1: succeeded, 2 recipient(s), 2 request(s)" in text
    assert "k2: failed (recipient_suppressed), 1 recipient(s), 1 request(s)" in text


def test_provider_deliveries_says_when_the_sandbox_holds_none(cs, database_url, capsys):
    assert main(["provider", "deliveries", "--database", database_url]) == 0
    assert capsys.readouterr().out.strip() == "The sandbox holds no deliveries."
    assert main(["provider", "deliveries", "--json", "--database", database_url]) == 0
    assert json.loads(capsys.readouterr().out) == []
