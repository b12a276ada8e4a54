"""Passkey-bound approvals, without a browser: a software authenticator (an EC P-256 key and
the responses a platform authenticator gives) registers passkeys and signs approvals, and the
server's ``webauthn`` library verifies them, on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.domain.club.passkeys import PasskeyError
from countersign.domain.errors import NotFoundError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA, BEN, REFUND, count_events
from tests.passkey_authenticator import Authenticator
from tests.support.proposing import propose
from tests.test_governance_cli import row
from tests.test_projections import projected

NOAH = "noah@granite.example"


def register(
    cs: Countersign, email: str, name: str, key: Authenticator | None = None
) -> Authenticator:
    key = key or Authenticator()
    begun = cs.passkeys.begin_registration("granite", email)
    cs.passkeys.finish_registration(
        "granite", email, name, begun["nonce"], key.register(begun["options"])
    )
    return key


def signed(cs: Countersign, proposal_id: str, email: str, key: Authenticator) -> dict[str, Any]:
    challenge = cs.access.approval_challenge(proposal_id, email)
    return {"nonce": challenge["nonce"], "credential": key.sign(challenge["options"])}


def require_passkey(cs: Countersign, approvals: int = 1, above_cents: int | None = None) -> None:
    cs.policies.set("granite", REFUND, approvals, above_cents=above_cents, require_passkey=True)


def approvals(cs: Countersign, proposal_id: str) -> list[dict[str, Any]]:
    return [e for e in cs.audit.history(proposal_id)["events"] if e["type"] == "Approved"]


def test_without_a_passkey_there_is_no_approval_and_nothing_is_written(cs, seeded):
    require_passkey(cs)
    proposal_id = propose(cs, seeded)
    before = count_events(cs)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.result == "not_approvable"
    assert report.reason == "passkey_required"
    assert report.status == "pending"
    assert count_events(cs) == before
    assert cs.sandbox.refunds() == []


def test_a_registered_passkey_approves_and_its_assertion_is_stored(cs, seeded):
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    proposal_id = propose(cs, seeded)

    report = cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key))

    assert report.result == "executed", report
    assert report.outcome["kind"] == "succeeded"
    [approved] = approvals(cs, proposal_id)
    stored = approved["passkey"]
    assert stored["credential_id"] == key.id
    assert stored["name"] == "Ava's laptop"
    assert set(stored) == {
        "credential_id",
        "name",
        "nonce",
        "authenticator_data",
        "client_data_json",
        "signature",
    }
    assert cs.cards.card(proposal_id, AVA).to_json()["approval_passkeys"] == [
        {"approved_by": AVA, "passkey": "Ava's laptop"}
    ]


def test_the_policy_is_frozen_and_applies_above_its_amount(cs, seeded):
    require_passkey(cs, above_cents=1_000_000)
    below = propose(cs, seeded)
    assert cs.proposals.approve(below, AVA).result == "executed"

    require_passkey(cs)
    frozen = propose(cs, seeded, "refund-stale")
    cs.policies.set("granite", REFUND, 1, require_passkey=False)
    assert cs.proposals.approve(frozen, AVA).reason == "passkey_required"
    assert cs.cards.card(frozen, AVA).to_json()["policy"]["require_passkey"] is True


def test_an_assertion_counts_once_for_its_own_proposal_and_approver(cs, seeded):
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    first = propose(cs, seeded)
    second = propose(cs, seeded, "refund-stale")
    for_first = signed(cs, first, AVA, key)

    # Signed for another proposal: its challenge binds the other digest and id.
    assert cs.proposals.approve(second, AVA, for_first).reason == "passkey_rejected"
    # Relayed for another approver: Noah has no such passkey, and the challenge names Ava.
    assert cs.proposals.approve(first, NOAH, for_first).reason == "passkey_rejected"
    assert cs.proposals.approve(first, AVA, for_first).result == "executed"


@pytest.mark.parametrize(
    "forged",
    [{"origin": "https://evil.example"}, {"rp_id": "evil.example"}],
    ids=["another origin", "another RP id"],
)
def test_an_assertion_made_for_another_site_is_refused(cs, seeded, forged):
    """A phishing page, or another relying party, gets a real signature from Ava's real key:
    the server checks the origin in the client data and the RP id hash in the authenticator
    data, so it approves nothing."""
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    proposal_id = propose(cs, seeded)
    challenge = cs.access.approval_challenge(proposal_id, AVA)
    before = count_events(cs)

    credential = key.sign(challenge["options"], **forged)
    report = cs.proposals.approve(
        proposal_id, AVA, {"nonce": challenge["nonce"], "credential": credential}
    )

    assert (report.result, report.reason, report.status) == (
        "not_approvable",
        "passkey_rejected",
        "pending",
    )
    assert count_events(cs) == before
    assert cs.sandbox.refunds() == []
    # The same key, signing for this site, approves.
    assert (
        cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key)).result
        == "executed"
    )


def test_an_approval_with_a_passkey_reads_as_the_card_says_in_the_trail_and_the_terminal(
    cs, seeded, database_url, capsys
):
    """'Approved with a passkey ("Ava's laptop")' on the card, in English and in French, and in
    the audit trail (which is in English, like all its summaries)."""
    require_passkey(cs, approvals=2)
    key = register(cs, AVA, "Ava's laptop")
    proposal_id = propose(cs, seeded)
    cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key))

    shown = {}
    for language in ("en", "fr"):
        argv = ["--database", database_url, "show", proposal_id, "--as", AVA]
        assert main([*argv, "--language", language]) == 0
        shown[language] = capsys.readouterr().out
    assert row(shown["en"], "Approvals") == (
        f'1 of 2 ({AVA}, Approved with a passkey ("Ava\'s laptop"))'
    )
    assert row(shown["fr"], "Approbations") == (
        f"1 sur 2 ({AVA}, Approuvée avec une clé d'accès (« Ava's laptop »))"
    )

    trail = projected(
        cs,
        "SELECT actor, summary FROM audit_events WHERE proposal_id = ? AND event_type = 'Approved'",
        (proposal_id,),
    )
    assert trail == [(AVA, 'Approved with a passkey ("Ava\'s laptop") (1 of 2)')]


def test_a_stale_nonce_a_replayed_counter_and_no_user_verification_are_refused(cs, seeded, clock):
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    proposal_id = propose(cs, seeded)

    old = signed(cs, proposal_id, AVA, key)
    clock.advance(minutes=6)
    assert cs.proposals.approve(proposal_id, AVA, old).reason == "passkey_rejected"

    key.user_verified = False
    assert (
        cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key)).reason
        == "passkey_rejected"
    )

    assert cs.proposals.approve(proposal_id, AVA, {"nonce": 3, "credential": []}).reason == (
        "passkey_rejected"
    )
    assert cs.sandbox.refunds() == []

    # A cloned authenticator whose counter went back, once the real one has signed.
    key.user_verified = True
    assert (
        cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key)).result
        == "executed"
    )
    second = propose(cs, seeded, "refund-stale")
    key.sign_count = 0
    assert (
        cs.proposals.approve(second, AVA, signed(cs, second, AVA, key)).reason == "passkey_rejected"
    )
    assert len(cs.sandbox.refunds()) == 1


def test_a_removed_passkey_no_longer_approves_and_names_stay_in_history(cs, seeded):
    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop")
    spare = register(cs, AVA, "Ava's phone")
    cs.passkeys.rename("granite", AVA, spare.id, "Ava's old phone")
    assert [p["name"] for p in cs.passkeys.passkeys("granite", AVA)] == [
        "Ava's laptop",
        "Ava's old phone",
    ]
    proposal_id = propose(cs, seeded)
    cs.passkeys.remove("granite", AVA, key.id)

    assert (
        cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, key)).reason
        == "passkey_rejected"
    )
    assert (
        cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, spare)).result
        == "executed"
    )
    with pytest.raises(NotFoundError):
        cs.passkeys.remove("granite", AVA, key.id)


def test_registration_refuses_a_bad_name_a_foreign_challenge_and_a_second_copy(cs, seeded):
    key = Authenticator()
    begun = cs.passkeys.begin_registration("granite", AVA)
    with pytest.raises(PasskeyError, match="name"):
        cs.passkeys.finish_registration(
            "granite", AVA, "  ", begun["nonce"], key.register(begun["options"])
        )
    bens = cs.passkeys.begin_registration("granite", BEN)
    with pytest.raises(PasskeyError, match="expired"):
        cs.passkeys.finish_registration(
            "granite", AVA, "x", bens["nonce"], key.register(bens["options"])
        )
    forged = key.register(begun["options"], origin="https://evil.example")
    with pytest.raises(PasskeyError, match="could not be verified"):
        cs.passkeys.finish_registration("granite", AVA, "x", begun["nonce"], forged)
    register(cs, AVA, "Ava's laptop", key)
    with pytest.raises(Exception, match="already registered"):
        register(cs, AVA, "again", key)
    with pytest.raises(NotFoundError):
        cs.passkeys.begin_registration("granite", "nobody@granite.example")


def test_each_approval_of_a_quorum_needs_its_own_assertion(cs, seeded):
    require_passkey(cs, approvals=2)
    ava = register(cs, AVA, "Ava's laptop")
    noah = register(cs, NOAH, "Noah's phone")
    proposal_id = propose(cs, seeded)

    first = cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, ava))
    assert (first.result, first.approvals, first.required) == ("awaiting_approvals", 1, 2)
    assert cs.proposals.approve(proposal_id, NOAH).reason == "passkey_required"
    # Ava's key cannot sign for Noah.
    assert (
        cs.proposals.approve(proposal_id, NOAH, signed(cs, proposal_id, NOAH, ava)).reason
        == "passkey_rejected"
    )
    last = cs.proposals.approve(proposal_id, NOAH, signed(cs, proposal_id, NOAH, noah))

    assert last.result == "executed"
    assert [a["passkey"]["name"] for a in approvals(cs, proposal_id)] == [
        "Ava's laptop",
        "Noah's phone",
    ]


class SyncedPasskey(Authenticator):
    """A passkey whose signature counter is always 0, as many synced passkeys report: the
    counter then cannot tell a replayed assertion from a new one."""

    def sign(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.sign_count = -1  # sign() counts it up to the 0 it reports
        return super().sign(*args, **kwargs)


def test_an_assertion_used_once_is_refused_again_even_when_its_counter_cannot_tell(cs, seeded):
    """Noah signs an approval of a two-manager refund with a synced passkey; his permission is
    taken away, so when Ava's approval comes his no longer counts; it is given back. The
    service that relayed his first approval sends the same assertion again, minutes later:
    it must not count for a decision Noah did not sign again."""
    from countersign.domain.club.organization import Organization, Permission

    require_passkey(cs, approvals=2)
    noah_key = register(cs, NOAH, "Noah's phone", SyncedPasskey())
    ava_key = register(cs, AVA, "Ava's laptop")
    proposal_id = propose(cs, seeded)
    noahs = signed(cs, proposal_id, NOAH, noah_key)
    first = cs.proposals.approve(proposal_id, NOAH, noahs)
    assert (first.result, first.approvals) == ("awaiting_approvals", 1)

    def permissions(of: list[Permission]) -> None:
        org = cs.store.get(Organization.create_id("granite"), Organization)
        org.change_permissions(NOAH, of)
        cs.store.save(org)

    permissions([Permission.READ_AUDIT])
    second = cs.proposals.approve(proposal_id, AVA, signed(cs, proposal_id, AVA, ava_key))
    assert (second.result, second.approvals) == ("awaiting_approvals", 1)
    permissions([Permission.REFUND_ORDERS, Permission.READ_AUDIT])

    replayed = cs.proposals.approve(proposal_id, NOAH, noahs)

    assert (replayed.result, replayed.reason) == ("not_approvable", "passkey_rejected")
    assert cs.sandbox.refunds() == []
    # Signed anew, it counts.
    again = cs.proposals.approve(proposal_id, NOAH, signed(cs, proposal_id, NOAH, noah_key))
    assert again.result == "executed", again
    assert len(cs.sandbox.refunds()) == 1


def test_a_ring_remembers_a_nonce_for_longer_than_the_server_accepts_it():
    from datetime import timedelta

    from countersign.domain.club.passkeys import NONCE_MEMORY
    from countersign.infrastructure.identity import passkeys

    accepted = timedelta(seconds=passkeys.NONCE_SECONDS + passkeys._CLOCK_SKEW)
    assert accepted < NONCE_MEMORY


def test_a_ring_with_the_nonces_it_signed_is_snapshotted_and_loaded_the_same(cs, seeded):
    """A ring's history grows with use, so it is snapshotted: the nonces it remembers go into
    the snapshot and come back from it, and a replay is refused after a cold load too."""
    from uuid import UUID

    from countersign.domain.club.organization import Organization
    from countersign.domain.club.passkeys import PasskeyRing
    from countersign.infrastructure.persistence import stored_snapshots
    from countersign.infrastructure.persistence.event_store import EventSourcedStore

    require_passkey(cs)
    key = register(cs, AVA, "Ava's laptop", SyncedPasskey())
    proposal_id = propose(cs, seeded)
    used = signed(cs, proposal_id, AVA, key)
    assert cs.proposals.approve(proposal_id, AVA, used).result == "executed"
    ring_id = PasskeyRing.create_id(Organization.create_id("granite"), AVA)
    ring = cs.app.repository.get(ring_id)
    assert ring.nonce_used(used["nonce"])

    cs.app.snapshot_recorder.insert_events([stored_snapshots.take(cs.app.mapper, ring)])
    loaded = EventSourcedStore(cs.app).get(UUID(str(ring_id)), PasskeyRing)

    assert loaded.used_nonces == ring.used_nonces
    assert loaded.nonce_used(used["nonce"])
