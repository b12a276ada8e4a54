"""The Proposal aggregate's lifecycle: legal transitions, and named errors for illegal ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from countersign.domain.errors import IllegalTransitionError
from countersign.domain.hash_chain import contract_digest
from countersign.domain.proposal import Proposal, ProposalStatus

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
OUTCOME = {"kind": "succeeded", "result": {}}
REVISION = {"kind": "revision_required", "reason": {"code": "amount_changed", "params": {}}}
RECONCILE = {"kind": "needs_reconciliation", "cause": "response_lost"}
FAILURE = {"kind": "terminal_failure", "correlation_id": "cs-1"}


def pending() -> Proposal:
    return Proposal.propose(
        id=uuid4(),
        organization_id=uuid4(),
        section="orders",
        resource_id=uuid4(),
        requested_by="ava@granite.example",
        interaction_id="int-1",
        kind="order.refund_missing_discount",
        contract_version=1,
        arguments={"a": 1},
        preview={"p": 1},
        expires_at=NOW + timedelta(days=1),
        digest=contract_digest("order.refund_missing_discount", 1, {"a": 1}, {"p": 1}),
    )


def executing() -> Proposal:
    proposal = pending()
    proposal.approve_and_claim("ava@granite.example", NOW, uuid4())
    return proposal


def event_names(proposal: Proposal) -> list[str]:
    return [type(e).__name__ for e in proposal.collect_events()]


def test_approval_and_claim_travel_together():
    proposal = executing()
    assert proposal.status == ProposalStatus.EXECUTING
    assert event_names(proposal) == ["Proposed", "Approved", "Claimed"]


@pytest.mark.parametrize(
    ("finish", "status"),
    [
        (lambda p: p.succeed(OUTCOME), ProposalStatus.SUCCEEDED),
        (lambda p: p.require_revision(REVISION), ProposalStatus.REVISION_REQUIRED),
        (lambda p: p.fail(FAILURE, "X"), ProposalStatus.FAILED),
        (lambda p: p.start_reconciling(RECONCILE, "key"), ProposalStatus.RECONCILING),
    ],
)
def test_an_executing_proposal_can_reach_each_outcome(finish, status):
    proposal = executing()
    finish(proposal)
    assert proposal.status == status
    assert proposal.outcome is not None


def test_reconciling_settles_to_success_or_revision_but_never_back_to_pending():
    proposal = executing()
    proposal.start_reconciling(RECONCILE, "key")
    proposal.succeed(OUTCOME)
    assert proposal.status == ProposalStatus.SUCCEEDED
    with pytest.raises(IllegalTransitionError):
        proposal.approve_and_claim("ava@granite.example", NOW, uuid4())


@pytest.mark.parametrize(
    "illegal",
    [
        lambda p: p.succeed(OUTCOME),
        lambda p: p.require_revision(REVISION),
        lambda p: p.start_reconciling(RECONCILE, "k"),
        lambda p: p.record_revalidated({}),
        lambda p: p.fail(FAILURE, "X"),
    ],
)
def test_a_pending_proposal_cannot_skip_the_claim(illegal):
    with pytest.raises(IllegalTransitionError) as error:
        illegal(pending())
    assert error.value.status == ProposalStatus.PENDING


def test_finished_proposals_cannot_be_approved_declined_or_expired_again():
    for finish in (
        lambda p: p.succeed(OUTCOME),
        lambda p: p.require_revision(REVISION),
        lambda p: p.fail(FAILURE, "X"),
    ):
        proposal = executing()
        finish(proposal)
        for action in (
            lambda p: p.approve_and_claim("x", NOW, uuid4()),
            lambda p: p.decline("x", None, REVISION),
            lambda p: p.expire(NOW),
            lambda p: p.succeed(OUTCOME),
        ):
            with pytest.raises(IllegalTransitionError):
                action(proposal)


def test_declined_and_expired_are_final():
    declined = pending()
    declined.decline("ava@granite.example", "no", REVISION)
    assert declined.status == ProposalStatus.DECLINED
    assert declined.outcome == REVISION
    expired = pending()
    expired.expire(NOW)
    for proposal in (declined, expired):
        with pytest.raises(IllegalTransitionError):
            proposal.approve_and_claim("x", NOW, uuid4())


def test_replaying_the_events_rebuilds_the_same_state():
    proposal = executing()
    proposal.record_revalidated({"amount_cents": 10})
    proposal.succeed(OUTCOME)
    events = proposal.collect_events()
    copy = None
    for event in events:
        copy = event.mutate(copy)
    assert copy is not None
    assert vars(copy) == vars(proposal)


def test_the_digest_covers_kind_version_arguments_and_preview():
    base = contract_digest("k", 1, {"a": 1}, {"p": 1})
    assert base == contract_digest("k", 1, {"a": 1}, {"p": 1})
    assert (
        len(
            {
                base,
                contract_digest("k2", 1, {"a": 1}, {"p": 1}),
                contract_digest("k", 2, {"a": 1}, {"p": 1}),
                contract_digest("k", 1, {"a": 2}, {"p": 1}),
                contract_digest("k", 1, {"a": 1}, {"p": 2}),
            }
        )
        == 5
    )
