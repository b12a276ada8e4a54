"""A service relays an approver's passkey assertion through the JSON API, and ``audit
verify`` re-verifies every stored assertion from the event stream: a tampered signature, a
swapped digest and another member's key are each named, though the hash chain was forged to
hold. Real assertions, from the software authenticator, on both databases."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from countersign.domain.club.passkeys import approval_challenge
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, count_events
from tests.passkey_authenticator import b64url
from tests.test_audit_verify import _forge
from tests.test_http_api import ALL
from tests.test_passkeys import NOAH, approvals, propose, register, require_passkey, signed


@pytest.fixture
def client(cs: Countersign, seeded: dict[str, Any]) -> Any:
    with TestClient(create_app(cs), raise_server_exceptions=False) as test_client:
        yield test_client


def _bearer(cs: Countersign, email: str) -> dict[str, str]:
    token = issue_token(
        cs, "granite", email.split("@")[0] + "-service", ALL, issued_by=email, kind="approver"
    ).token
    return {"Authorization": f"Bearer {token}"}


def test_a_service_relays_an_assertion_through_the_api(cs, seeded, client):
    headers = _bearer(cs, AVA)
    put = client.put(
        "/api/v1/policies/order.refund_missing_discount",
        headers=headers,
        json={"approvals": 1, "above_cents": None, "require_passkey": True},
    )
    assert put.status_code == 200, put.text
    assert put.json()["require_passkey"] is True
    key = register(cs, AVA, "Ava's laptop")
    proposal_id = propose(cs, seeded)
    before = count_events(cs)

    plain = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=headers)
    assert (plain.status_code, plain.json()["reason"]) == (200, "passkey_required")
    assert count_events(cs) == before

    challenge = client.get(f"/api/v1/proposals/{proposal_id}/approval-challenge", headers=headers)
    assert challenge.status_code == 200, challenge.text
    document = challenge.json()
    assert document["passkeys"] == 1
    assert document["options"]["userVerification"] == "required"
    assert document["options"]["allowCredentials"] == [{"id": key.id, "type": "public-key"}]
    assertion = {"nonce": document["nonce"], "credential": key.sign(document["options"])}

    nonce = document["nonce"]  # changed, whatever it ends with (it may end in "AA")
    tampered = {**assertion, "nonce": nonce[:-2] + ("BB" if nonce.endswith("AA") else "AA")}
    refused = client.post(
        f"/api/v1/proposals/{proposal_id}/approve",
        headers=headers,
        json={"passkey_assertion": tampered},
    )
    assert refused.json()["reason"] == "passkey_rejected"
    approved = client.post(
        f"/api/v1/proposals/{proposal_id}/approve",
        headers=headers,
        json={"passkey_assertion": assertion},
    )
    assert approved.status_code == 200, approved.text
    assert approved.json()["result"] == "executed"
    card = client.get(f"/api/v1/proposals/{proposal_id}", headers=headers).json()
    assert card["approval_passkeys"] == [{"approved_by": AVA, "passkey": "Ava's laptop"}]


def test_bad_relays_get_a_clear_safe_answer(cs, seeded, client):
    require_passkey(cs)
    headers = _bearer(cs, AVA)
    proposal_id = propose(cs, seeded)
    path = f"/api/v1/proposals/{proposal_id}/approve"
    for body in (
        {"passkey_assertion": "yes"},
        {"passkey_assertion": {"nonce": "n"}},
        {"passkey_assertion": {"nonce": "n", "credential": {}, "extra": 1}},
    ):
        answer = client.post(path, headers=headers, json=body)
        assert answer.status_code == 422, answer.text
        assert "Traceback" not in answer.text
        assert "webauthn" not in answer.text
    garbage = {"nonce": "n", "credential": {"id": "x", "response": {"signature": "!!"}}}
    answer = client.post(path, headers=headers, json={"passkey_assertion": garbage})
    assert answer.json()["reason"] == "passkey_rejected"
    foreign = client.get(
        "/api/v1/proposals/00000000-0000-0000-0000-000000000000/approval-challenge",
        headers=headers,
    )
    assert foreign.status_code == 404


def _approved_with_passkeys(cs: Countersign, seeded: dict[str, Any]) -> tuple[str, str]:
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    first = propose(cs, seeded)
    second = propose(cs, seeded, "refund-stale")
    for proposal_id in (first, second):
        report = cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key))
        assert report.result == "executed"
    return first, second


def _approved_version(cs: Countersign, proposal_id: str) -> int:
    [approved] = approvals(cs, proposal_id)
    return int(approved["version"])


def _flip_signature(state: dict[str, Any]) -> None:
    signature = bytearray(base64.urlsafe_b64decode(state["passkey"]["signature"] + "=="))
    signature[-1] ^= 0x01
    state["passkey"] = {
        **state["passkey"],
        "signature": base64.urlsafe_b64encode(bytes(signature)).rstrip(b"=").decode(),
    }


def test_audit_verify_holds_for_untouched_passkey_approvals_even_after_removal(cs, seeded):
    _approved_with_passkeys(cs, seeded)
    cs.passkeys.remove("granite", AVA, cs.passkeys.passkeys("granite", AVA)[0]["credential_id"])

    report = verify(cs.app, cs.sql)

    assert report.ok, report.to_json()


def test_audit_verify_names_a_tampered_assertion_though_the_chain_was_forged(cs, seeded):
    _, second = _approved_with_passkeys(cs, seeded)
    _forge(cs, second, _approved_version(cs, second), _flip_signature, through_the_end=True)

    found = verify(cs.app, cs.sql).to_json()["first_broken_link"]

    assert found == {
        "proposal_id": second,
        "version": _approved_version(cs, second),
        "code": "signature_invalid",
        "problem": "the passkey signature does not verify against the registered key",
    }


def test_audit_verify_names_a_swapped_digest(cs, seeded):
    first, _ = _approved_with_passkeys(cs, seeded)

    def swap_digest(state: dict[str, Any]) -> None:
        state["digest"] = "0" * 64  # an insider re-froze other arguments under this approval

    _forge(cs, first, 1, swap_digest, through_the_end=True)
    found = verify(cs.app, cs.sql).to_json()["first_broken_link"]

    assert found["proposal_id"] == first
    assert found["problem"] == "the passkey assertion does not bind this proposal's digest"


def test_audit_verify_names_an_approval_signed_with_another_members_key(cs, seeded):
    first, _ = _approved_with_passkeys(cs, seeded)
    noah = register(cs, NOAH, "Noah's phone")
    [approved] = approvals(cs, first)
    digest = cs.audit.history(first)["events"][0]["digest"]
    # A forger holding Noah's passkey signs exactly the challenge of Ava's approval.
    bound = approval_challenge(digest, first, AVA, approved["passkey"]["nonce"])
    noahs = noah.sign({"challenge": b64url(bound), "rpId": "localhost"})

    def signed_by_noah(credential_id: str) -> Any:
        def change(state: dict[str, Any]) -> None:
            state["passkey"] = {
                **state["passkey"],
                "credential_id": credential_id,
                "authenticator_data": noahs["response"]["authenticatorData"],
                "client_data_json": noahs["response"]["clientDataJSON"],
                "signature": noahs["response"]["signature"],
            }

        return change

    version = _approved_version(cs, first)
    avas_id = approved["passkey"]["credential_id"]
    _forge(cs, first, version, signed_by_noah(avas_id), through_the_end=True)
    found = verify(cs.app, cs.sql).to_json()["first_broken_link"]
    assert (found["proposal_id"], found["problem"]) == (
        first,
        "the passkey signature does not verify against the registered key",
    )

    _forge(cs, first, version, signed_by_noah(noah.id), through_the_end=True)
    found = verify(cs.app, cs.sql).to_json()["first_broken_link"]
    assert (found["proposal_id"], found["problem"]) == (
        first,
        "approved with a passkey the approver never registered",
    )


def test_audit_verify_names_a_required_passkey_stripped_from_an_approval(cs, seeded):
    first, _ = _approved_with_passkeys(cs, seeded)

    def strip(state: dict[str, Any]) -> None:
        state["passkey"] = None  # an insider makes it look like a plain approval

    _forge(cs, first, _approved_version(cs, first), strip, through_the_end=True)
    found = verify(cs.app, cs.sql).to_json()["first_broken_link"]

    assert found == {
        "proposal_id": first,
        "version": _approved_version(cs, first),
        "code": "passkey_missing",
        "problem": "approved without the passkey its policy required",
    }


def test_audit_verify_refuses_a_key_added_to_the_approvers_ring_after_the_approval(
    cs, seeded, clock
):
    first, _ = _approved_with_passkeys(cs, seeded)
    clock.advance(minutes=5)
    # An insider adds their own key to Ava's ring, then re-signs her approval with it.
    insider = register(cs, AVA, "insider's key")
    [approved] = approvals(cs, first)
    digest = cs.audit.history(first)["events"][0]["digest"]
    bound = approval_challenge(digest, first, AVA, approved["passkey"]["nonce"])
    signed_later = insider.sign({"challenge": b64url(bound), "rpId": "localhost"})

    def resigned(state: dict[str, Any]) -> None:
        state["passkey"] = {
            **state["passkey"],
            "credential_id": insider.id,
            "authenticator_data": signed_later["response"]["authenticatorData"],
            "client_data_json": signed_later["response"]["clientDataJSON"],
            "signature": signed_later["response"]["signature"],
        }

    _forge(cs, first, _approved_version(cs, first), resigned, through_the_end=True)
    found = verify(cs.app, cs.sql).to_json()["first_broken_link"]

    assert found["proposal_id"] == first
    assert found["problem"] == "approved with a passkey registered only after the approval"


def test_audit_verify_names_each_passkey_problem_in_french(cs, seeded, database_url, capsys):
    """``--language fr``: an approval whose stored assertion does not hold is named in French
    (a signature that does not verify, a digest it does not bind, a key the approver never
    registered, an assertion that cannot be read); ``--json`` keeps the English words."""
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    orders = ("refund-ok", "refund-stale", "refund-lost-response", "refund-two-approvers")
    first, second, third, fourth = (propose(cs, seeded, order) for order in orders)
    for proposal_id in (first, second, third, fourth):
        cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key))
    _forge(cs, second, _approved_version(cs, second), _flip_signature, through_the_end=True)

    def swap_digest(state: dict[str, Any]) -> None:
        state["digest"] = "0" * 64

    def unregistered(state: dict[str, Any]) -> None:
        state["passkey"] = {**state["passkey"], "credential_id": "never-registered"}

    def unreadable(state: dict[str, Any]) -> None:
        state["passkey"] = {**state["passkey"], "client_data_json": "not json"}

    _forge(cs, first, 1, swap_digest, through_the_end=True)
    _forge(cs, third, _approved_version(cs, third), unregistered, through_the_end=True)
    _forge(cs, fourth, _approved_version(cs, fourth), unreadable, through_the_end=True)
    capsys.readouterr()

    assert main(["audit", "verify", "--language", "fr", "--database", database_url]) == 5
    said = capsys.readouterr().err.splitlines()

    assert said[0] == (
        "audit verify : ROMPUE : 4 propositions touchées, chacune à son premier maillon rompu :"
    )
    problems = {
        first: "l'assertion de la clé d'accès ne lie pas l'empreinte de cette proposition",
        second: "la signature de la clé d'accès ne se vérifie pas avec la clé enregistrée",
        third: "approuvée avec une clé d'accès que l'approbateur n'a jamais enregistrée",
        fourth: "l'assertion de la clé d'accès est illisible",
    }
    assert said[-1].startswith("  Que faire : ")  # then what to do (test_audit_verify_report)
    assert sorted(said[1:-1]) == sorted(
        f"  proposition {proposal_id} version {_approved_version(cs, proposal_id)} : {problem}"
        for proposal_id, problem in problems.items()
    )
