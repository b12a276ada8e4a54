"""Scripted faults keep the sandboxes' real semantics: one answer per key, counted requests,
lookups. Each request under a key meets the next step of its script, whichever process
sends it; a used-up script leaves the provider working normally."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.application.ports import (
    EffectResponseLostError,
    ProviderUnavailableError,
)
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.bootstrap import Countersign

KEY = "countersign:test:1"
MESSAGE = {"subject": "Ice times", "body": "Later draws.", "recipients": ["a@example.com"]}


def _provider(cs: Countersign, name: str) -> Any:
    return cs.sandbox if name == "payments" else cs.email_sandbox


def _request(cs: Countersign, name: str) -> dict[str, Any]:
    if name == "payments":
        cs.sandbox.create_charge("ch_1", CARD_OK, 5000)
        return {"charge_id": "ch_1", "amount_cents": 1200, "metadata": {"proposal_id": "1"}}
    return MESSAGE


def _requests(cs: Countersign, name: str) -> list[object]:
    return [held["requests"] for held in _provider(cs, name).held()]


@pytest.fixture(params=["payments", "email"])
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_an_outage_then_a_lost_response_then_the_stored_answer(cs, other, name):
    request = _request(cs, name)
    _provider(cs, name).faults.script(KEY, ["outage", "lost_response"])
    approver, reconciler = _provider(cs, name), _provider(other, name)
    reconciler.faults.follow()  # another process's sandbox meets the same script

    with pytest.raises(ProviderUnavailableError):
        approver.perform(KEY, request)
    assert approver.lookup(KEY) is None  # nothing was applied
    with pytest.raises(EffectResponseLostError):
        reconciler.perform(KEY, request)
    held = approver.lookup(KEY)
    assert held is not None
    assert held.status == "succeeded"  # applied all the same

    again = approver.perform(KEY, request)  # the script is used up: normal again
    assert again == held
    assert _requests(cs, name) == [2]
    assert approver.faults.taken() == [(KEY, "outage"), (KEY, "lost_response")]


def test_a_declined_request_is_the_keys_answer_for_ever(cs, name):
    request = _request(cs, name)
    provider = _provider(cs, name)
    provider.faults.script(KEY, ["decline", "ok"])

    declined = provider.perform(KEY, request)
    assert (declined.status, declined.reason) == (
        "refused",
        "refund_declined" if name == "payments" else "delivery_declined",
    )
    assert provider.perform(KEY, request) == declined == provider.lookup(KEY)
    if name == "payments":
        assert cs.sandbox.perform("other-key", request).status == "succeeded"  # nothing moved


def test_a_duplicate_delivery_is_answered_from_the_first_and_counted(cs, name):
    request = _request(cs, name)
    provider = _provider(cs, name)
    provider.faults.script(KEY, ["duplicate", "slow"])

    first = provider.perform(KEY, request)
    assert _requests(cs, name) == [2]
    assert provider.perform(KEY, request) == first  # slow, but the same answer
    assert _requests(cs, name) == [3]
    assert [fault for _, fault in provider.faults.taken()] == ["duplicate", "slow"]


def test_a_sandbox_that_was_never_told_to_follow_scripts_ignores_them(cs, other, name):
    request = _request(cs, name)
    _provider(cs, name).faults.script(KEY, ["outage"])

    assert _provider(other, name).perform(KEY, request).status == "succeeded"
    assert _provider(cs, name).faults.taken() == []


def test_an_unknown_fault_is_refused(cs, name):
    with pytest.raises(ValueError, match="unknown faults \\['crash'\\]"):
        _provider(cs, name).faults.script(KEY, ["ok", "crash"])
