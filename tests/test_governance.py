"""Governance: supersession, edits as new revisions, separation of duties and quorum.

Each is a lifecycle event in the proposal's own stream (``Superseded``, a ``Proposed`` with
``revision_of``, ``Approved`` alone) and an organization event (``ApprovalPolicySet``); these
tests drive them through the services every entry point calls, on both databases.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from uuid import UUID

import pytest
from countersign.application.authorization import Caller
from countersign.application.errors import MissingPermissionError, NotRevisableError
from countersign.domain.approval_policy import PolicyError
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD
from tests.support.proposing import propose_on

NOAH = "noah@granite.example"
TO_ACCOUNT = {**TO_CARD, "destination": "account_credit"}


def _types(cs: Countersign, proposal_id: str) -> list[str]:
    return [event["type"] for event in cs.audit.history(proposal_id)["events"]]


def _card_refunds(cs: Countersign, proposal_id: str) -> int:
    return sum(
        int(r["requests"])  # type: ignore[call-overload]
        for r in cs.sandbox.refunds()
        if r["metadata"]["proposal_id"] == proposal_id  # type: ignore[index]
    )


# -- supersession --------------------------------------------------------------------------------


def test_a_new_proposal_for_the_same_thing_supersedes_the_pending_one(cs, seeded):
    order_id = seeded["orders"]["refund-ok"]
    first = cs.proposals.propose(
        organization="granite", actor=AVA, operation=REFUND, resource_id=order_id, request=TO_CARD
    )
    second = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=order_id,
        request=TO_ACCOUNT,
    )

    assert first.supersedes == []
    assert second.supersedes == [first.proposal_id]
    assert _types(cs, first.proposal_id) == ["Proposed", "Superseded"]
    superseded = cs.audit.history(first.proposal_id)["events"][1]
    assert (str(superseded["by"]), superseded["reason"]) == (second.proposal_id, "replaced")
    for answer in (
        cs.proposals.approve(first.proposal_id, AVA),
        cs.proposals.decline(first.proposal_id, AVA),
    ):
        assert answer.to_json() | {"status": None} == {
            "result": "not_approvable",
            "proposal_id": first.proposal_id,
            "status": None,
            "outcome": None,
            "reason": "superseded",
            "message": None,
            "approvals": None,
            "required": None,
            "superseded_by": second.proposal_id,
            "superseded_reason": "replaced",
        }
    card = cs.cards.card(first.proposal_id, AVA)
    assert (card.status, card.superseded_by, card.superseded_reason) == (
        "superseded",
        second.proposal_id,
        "replaced",
    )
    assert cs.proposals.approve(second.proposal_id, AVA).status == "succeeded"
    assert _card_refunds(cs, first.proposal_id) == 0


def test_proposals_about_different_things_do_not_supersede_each_other(cs, seeded):
    refund_ok = propose_on(cs, seeded["orders"]["refund-ok"])
    refund_stale = propose_on(cs, seeded["orders"]["refund-stale"])
    roster = seeded["rosters"]["granite"]

    def move(email: str, name_from: str, to: str) -> str:
        return cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation="roster.move_member",
            resource_id=roster,
            request={"email": email, "from_league": name_from, "to_league": to},
        ).proposal_id

    olivia = move("olivia.chen@example.com", "Sunday Mixed Doubles", "Thursday Seniors")
    lucas = move("lucas.roy@example.com", "Sunday Mixed Doubles", "Thursday Seniors")

    # Two orders are two resources; on one roster, two members are two subjects.
    for proposal_id in (refund_ok, refund_stale, olivia, lucas):
        assert cs.cards.card(proposal_id, AVA).status == "pending"


def test_proposals_frozen_at_once_for_the_same_thing_leave_exactly_one_pending(cs, other, seeded):
    order_id = seeded["orders"]["refund-ok"]
    services = [cs, other] * 4

    with ThreadPoolExecutor(max_workers=len(services)) as pool:
        created = list(pool.map(lambda wired: propose_on(wired, order_id), services))

    statuses = [cs.cards.card(proposal_id, AVA).status for proposal_id in created]
    assert sorted(statuses) == ["pending"] + ["superseded"] * (len(created) - 1)
    pending = created[statuses.index("pending")]
    assert cs.proposals.approve(pending, AVA).status == "succeeded"
    assert [len(cs.sandbox.refunds())] == [1]


# -- edits are new revisions ------------------------------------------------------------------


def test_an_edit_reruns_the_contract_and_supersedes_the_original(cs, seeded):
    original = propose_on(cs, seeded["orders"]["refund-ok"])

    revised = cs.access.revise(original, Caller(AVA, "granite"), TO_ACCOUNT)

    assert revised.revision_of == original
    assert revised.supersedes == [original]
    assert revised.preview["amount_cents"] == 4800  # computed again, never sent
    assert cs.cards.card(original, AVA).status == "superseded"
    card = cs.cards.card(revised.proposal_id, AVA)
    assert card.revision_of == original
    assert [(c["field"], c["label"]) for c in card.changes] == [("refund_destination", "Refund to")]
    assert "4242" in card.changes[0]["before"]
    assert "account" in card.changes[0]["after"].lower()
    # The edit's own request is frozen with it, like any proposal's.
    assert cs.access.record(revised.proposal_id, AVA)["request"] == TO_ACCOUNT
    assert cs.proposals.approve(revised.proposal_id, AVA).status == "succeeded"


def test_an_invalid_edit_is_refused_and_changes_nothing(cs, seeded):
    original = propose_on(cs, seeded["orders"]["refund-ok"])

    with pytest.raises(InvalidRequestError) as refused:
        cs.access.revise(original, AVA, {**TO_CARD, "amount_cents": 1})

    assert [p.field for p in refused.value.problems] == ["amount_cents"]
    assert _types(cs, original) == ["Proposed"]
    assert cs.cards.card(original, AVA).status == "pending"


def test_only_what_never_ran_can_be_edited(cs, seeded):
    executed = propose_on(cs, seeded["orders"]["refund-ok"])
    cs.proposals.approve(executed, AVA)
    with pytest.raises(NotRevisableError, match="succeeded"):
        cs.access.revise(executed, AVA, TO_ACCOUNT)

    declined = propose_on(cs, seeded["orders"]["refund-stale"])
    cs.proposals.decline(declined, AVA, "wrong card")
    again = cs.access.revise(declined, AVA, TO_ACCOUNT)
    assert (again.revision_of, again.supersedes) == (declined, [])
    assert cs.cards.card(declined, AVA).status == "declined"
    # A superseded proposal names the newer one to edit instead.
    newer = cs.access.revise(again.proposal_id, AVA, TO_CARD)
    with pytest.raises(NotRevisableError, match=newer.proposal_id):
        cs.access.revise(again.proposal_id, AVA, TO_ACCOUNT)


def test_nobody_outside_the_club_or_without_the_permission_can_edit(cs, seeded):
    original = propose_on(cs, seeded["orders"]["refund-ok"])

    with pytest.raises(NotFoundError):
        cs.access.revise(original, Caller(MIA, "maple"), TO_ACCOUNT)
    with pytest.raises(NotFoundError):
        cs.access.revise(original, MIA, TO_ACCOUNT)
    with pytest.raises(MissingPermissionError):
        cs.access.revise(original, BEN, TO_ACCOUNT)
    with pytest.raises(NotFoundError):
        cs.access.revise("not-an-id", AVA, TO_ACCOUNT)
    assert _types(cs, original) == ["Proposed"]


# -- separation of duties and quorum ------------------------------------------------------------


def test_a_refund_above_the_threshold_needs_two_distinct_managers(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    card = cs.cards.card(proposal_id, AVA)
    assert card.preview["amount_cents"] == 12800
    assert card.approvals_required == 2
    assert card.policy == {
        "rule": {
            "operation": REFUND,
            "approvals": 2,
            "above_cents": 10000,
            "requester_may_approve": True,
        },
        "amount_cents": 12800,
        "approvals_required": 2,
        "requester_may_approve": True,
    }

    first = cs.proposals.approve(proposal_id, AVA)
    again = cs.proposals.approve(proposal_id, AVA)

    assert (first.result, first.status, first.approvals, first.required) == (
        "awaiting_approvals",
        "pending",
        1,
        2,
    )
    assert (again.result, again.reason, again.approvals) == (
        "awaiting_approvals",
        "already_approved_by_you",
        1,
    )
    assert _types(cs, proposal_id) == ["Proposed", "Approved"]
    assert _card_refunds(cs, proposal_id) == 0

    last = cs.proposals.approve(proposal_id, NOAH)

    assert (last.result, last.status) == ("executed", "succeeded")
    assert _types(cs, proposal_id) == [
        "Proposed",
        "Approved",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
    ]
    assert cs.cards.card(proposal_id, AVA).approvals == [AVA, NOAH]
    assert _card_refunds(cs, proposal_id) == 1
    assert cs.proposals.approve(proposal_id, AVA).result == "already_completed"


def test_below_the_threshold_one_approval_runs_it(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])  # $48.00

    assert cs.cards.card(proposal_id, AVA).approvals_required == 1
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"


def test_the_last_approvals_given_at_once_execute_exactly_once(cs, other, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    cs.proposals.approve(proposal_id, AVA)

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(
            pool.map(lambda wired: wired.proposals.approve(proposal_id, NOAH), [cs, other] * 2)
        )

    assert sorted(a.result for a in answers).count("executed") == 1
    assert _card_refunds(cs, proposal_id) == 1
    assert _types(cs, proposal_id).count("Claimed") == 1


def test_one_decline_ends_a_proposal_that_had_an_approval(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    cs.proposals.approve(proposal_id, AVA)

    declined = cs.proposals.decline(proposal_id, NOAH, "not this season")

    assert (declined.result, declined.status) == ("declined", "declined")
    assert cs.proposals.approve(proposal_id, NOAH).reason == "not_pending"
    assert _card_refunds(cs, proposal_id) == 0


def test_a_requester_may_be_barred_from_approving_their_own_proposal(cs, seeded):
    cs.policies.set("granite", REFUND, 1, above_cents=None, requester_may_approve=False)
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])

    own = cs.proposals.approve(proposal_id, AVA)

    assert (own.result, own.reason) == ("not_approvable", "requester_may_not_approve")
    assert _types(cs, proposal_id) == ["Proposed"]
    assert cs.proposals.approve(proposal_id, NOAH).status == "succeeded"


def test_a_proposal_keeps_the_policy_it_was_frozen_under(cs, seeded):
    before = propose_on(cs, seeded["orders"]["refund-two-approvers"])

    changed = cs.policies.set("granite", REFUND, 1, above_cents=None, by=Caller(NOAH, "granite"))

    assert changed == {
        "operation": REFUND,
        "approvals": 1,
        "above_cents": None,
        "requester_may_approve": True,
        "require_passkey": False,
        "changed": True,
    }
    assert cs.proposals.approve(before, AVA).result == "awaiting_approvals"
    after = cs.access.revise(before, AVA, TO_CARD)  # frozen again: under today's policy
    assert after.approvals_required == 1
    assert cs.proposals.approve(after.proposal_id, AVA).status == "succeeded"
    club = cs.store.history(UUID(cs.club.organization_id("granite")))
    changes = [(e.type, e.fields.get("set_by")) for e in club if e.type == "ApprovalPolicySet"]
    assert changes == [("ApprovalPolicySet", "seed"), ("ApprovalPolicySet", NOAH)]


def test_policy_changes_are_recorded_and_checked(cs, seeded):
    assert cs.policies.set("granite", REFUND, 2, above_cents=10_000)["changed"] is False  # seeded
    with pytest.raises(PolicyError):
        cs.policies.set("granite", REFUND, 0)
    with pytest.raises(PolicyError):
        cs.policies.set("granite", REFUND, 2, above_cents=-1)
    with pytest.raises(MissingPermissionError):
        cs.policies.set("granite", REFUND, 1, by=Caller(BEN, "granite"))
    with pytest.raises(NotFoundError):
        cs.policies.set("granite", REFUND, 1, by=Caller(MIA, "maple"))
    with pytest.raises(NotFoundError):
        cs.policies.set("granite", REFUND, 1, by=Caller(MIA))

    in_force = {p["operation"]: p for p in cs.policies.in_force("granite")}
    assert in_force[REFUND] == {
        "operation": REFUND,
        "approvals": 2,
        "above_cents": 10000,
        "requester_may_approve": True,
        "require_passkey": False,
        "set_by": "seed",
    }
    assert in_force["roster.move_member"]["approvals"] == 1


# -- where a request came from ------------------------------------------------------------------


def test_a_proposal_records_where_its_request_came_from_cleaned(cs, seeded):
    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
        origin={
            "channel": "mcp",
            "client": "desk-agent\x1b[31m" + "x" * 200,
            "client_version": "1.2.0",
            "token": "never recorded",
        },
    )

    origin = cs.access.record(created.proposal_id, AVA)["origin"]
    assert origin == {
        "channel": "mcp",
        "client": ("desk-agent31m" + "x" * 200)[:40],
        "client_version": "1.2.0",
    }
    assert cs.cards.card(created.proposal_id, AVA).origin == origin
    plain = propose_on(cs, seeded["orders"]["refund-stale"])
    assert cs.access.record(plain, AVA)["origin"] is None
