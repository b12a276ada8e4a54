"""Authorization: staff without permission, foreign tenants and unknown ids."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.club.organization import Organization
from countersign.domain.errors import NotFoundError
from countersign.domain.proposal import Proposal

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD, count_events
from tests.support.proposing import propose


def test_staff_without_the_permission_is_forbidden_and_nothing_runs(cs, seeded):
    proposal_id = propose(cs, seeded)
    before = count_events(cs)

    report = cs.proposals.approve(proposal_id, BEN)

    assert (report.result, report.reason, report.status) == (
        "not_approvable",
        "forbidden",
        "pending",
    )
    assert count_events(cs) == before
    assert cs.proposals.decline(proposal_id, BEN).reason == "forbidden"
    with pytest.raises(ForbiddenError):
        cs.proposals.propose(
            organization="granite",
            actor=BEN,
            operation=REFUND,
            resource_id=seeded["orders"]["refund-stale"],
            request=TO_CARD,
        )


def test_a_foreign_tenants_id_answers_exactly_like_an_unknown_id(cs, seeded):
    proposal_id = propose(cs, seeded)
    before = count_events(cs)

    foreign = cs.proposals.approve(proposal_id, MIA).to_json()
    unknown = cs.proposals.approve(str(uuid.uuid4()), MIA).to_json()
    malformed = cs.proposals.approve("not-an-id", MIA).to_json()

    assert {k: v for k, v in foreign.items() if k != "proposal_id"} == {
        k: v for k, v in unknown.items() if k != "proposal_id"
    }
    assert foreign["reason"] == "not_found"
    assert foreign["status"] is None
    assert malformed["reason"] == "not_found"
    assert count_events(cs) == before  # nothing written to granite's stream
    assert cs.proposals.decline(proposal_id, MIA).reason == "not_found"
    with pytest.raises(NotFoundError):
        cs.cards.card(proposal_id, MIA)


def test_an_expired_foreign_proposal_is_not_touched_by_the_other_tenant(cs, seeded, clock):
    proposal_id = propose(cs, seeded)
    clock.advance(days=2)
    before = count_events(cs)

    assert cs.proposals.approve(proposal_id, MIA).reason == "not_found"

    assert count_events(cs) == before
    # Nothing recorded it expired (its club's reader is told it is: past its expiry).
    assert cs.store.get(uuid.UUID(proposal_id), Proposal).status == "pending"
    assert cs.cards.card(proposal_id, AVA).status == "expired"


def test_proposing_against_another_tenants_order_is_not_found(cs, seeded):
    with pytest.raises(NotFoundError):
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"]["maple-refund"],
            request=TO_CARD,
        )
    with pytest.raises(NotFoundError):
        cs.proposals.propose(
            organization="maple",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"]["maple-refund"],
            request=TO_CARD,
        )
    assert count_events(cs, "Proposal.Proposed") == 0


def test_a_manager_who_lost_membership_can_no_longer_approve(cs, seeded):
    proposal_id = propose(cs, seeded)
    granite = cs.store.get(Organization.create_id("granite"), Organization)
    granite.remove_member(AVA)
    cs.store.save(granite)

    report = cs.proposals.approve(proposal_id, AVA)

    assert report.reason == "not_found"
    assert cs.sandbox.refunds() == []


def test_a_manager_whose_permission_was_revoked_is_forbidden(cs, seeded):
    proposal_id = propose(cs, seeded)
    granite = cs.store.get(Organization.create_id("granite"), Organization)
    granite.change_permissions(AVA, [])
    cs.store.save(granite)

    assert cs.proposals.approve(proposal_id, AVA).reason == "forbidden"


def test_a_foreign_id_is_echoed_exactly_like_an_unknown_one(cs, seeded):
    proposal_id = propose(cs, seeded)
    foreign = cs.proposals.approve(proposal_id.upper(), MIA).to_json()
    unknown = cs.proposals.approve(str(uuid.uuid4()).upper(), MIA).to_json()
    assert foreign["proposal_id"] == proposal_id.upper()  # not the stored, canonical form
    assert {k: v for k, v in foreign.items() if k != "proposal_id"} == {
        k: v for k, v in unknown.items() if k != "proposal_id"
    }


def test_the_service_itself_refuses_a_caller_acting_in_another_club_or_without_the_scope(
    cs, seeded
):
    """The decision services checked the caller's membership of the proposal's club only; the
    entry points (ProposalAccess) also check the club the caller acts in and a token's
    scopes, so a future entry point calling ``cs.proposals`` directly would have lost both (a
    red-team note). Both hold in the services now: acting in maple, granite's proposal is
    unknown even to a granite manager; a token without the operation's scope is forbidden."""
    from countersign.application.authorization import Caller, Credential

    proposal_id = propose(cs, seeded)
    before = count_events(cs)
    in_maple = Caller(AVA, "maple")
    auditing = Caller(AVA, "granite", frozenset({"audit.read"}), Credential.APPROVER_TOKEN, "bot")

    assert cs.proposals.approve(proposal_id, in_maple).reason == "not_found"
    assert cs.proposals.decline(proposal_id, in_maple).reason == "not_found"
    assert cs.proposals.approve(proposal_id, auditing).reason == "forbidden"
    assert cs.proposals.decline(proposal_id, auditing).reason == "forbidden"
    with pytest.raises(NotFoundError):  # an edit, as a review found, and a passkey challenge
        cs.proposals.revise(proposal_id, in_maple, TO_CARD)
    with pytest.raises(NotFoundError):
        cs.proposals.approval_challenge(proposal_id, in_maple)
    assert count_events(cs) == before
    assert cs.sandbox.refunds() == []
    assert cs.proposals.approve(proposal_id, Caller(AVA, "granite")).status == "succeeded"


def test_a_foreign_id_and_an_unknown_one_raise_the_same_words_in_the_python_api(cs, seeded):
    """The exceptions were alike but their text told them apart ("Order" against "order",
    "not a member" against "proposal"): an application service showing ``str(error)`` told
    which ids existed in another club (an integrator's walk)."""
    from countersign.application.authorization import Caller

    maples = propose(cs, seeded, "maple-refund", actor=MIA, organization="maple")
    ava = Caller(AVA, "granite")

    def said(call: Any) -> str:
        with pytest.raises(NotFoundError) as refused:
            call()
        return str(refused.value)

    def refund_on(order: str) -> Any:
        return lambda: cs.proposals.propose(
            organization="granite", actor=AVA, operation=REFUND, resource_id=order, request=TO_CARD
        )

    assert said(refund_on(str(uuid.uuid4()))) == said(refund_on(seeded["orders"]["maple-refund"]))
    assert said(lambda: cs.access.approve(str(uuid.uuid4()), ava)) == said(
        lambda: cs.access.approve(maples, ava)
    )
    assert said(lambda: cs.cards.card(str(uuid.uuid4()), AVA)) == said(
        lambda: cs.cards.card(maples, AVA)
    )
    maple_form = seeded["broadcast_forms"]["maple"]
    assert said(lambda: cs.club.broadcast_form("granite", str(uuid.uuid4()))) == said(
        lambda: cs.club.broadcast_form("granite", maple_form)
    )
