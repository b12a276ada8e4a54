"""The approve path's shortcuts (docs/speed.md, "The cycle's cost", session 29): the
proposal's status guards written inline, the approval's event given its fields and link in
one dict, the execution contract and the executed report made by position, the quorum's
recheck skipped when there is no earlier approval, and a draft applied to a form keeping its
sends as they are when every one is pending. Each answers, records and refuses as before."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from countersign.application import approve_path
from countersign.application.authorization import Caller, Credential
from countersign.application.errors import parse_id
from countersign.application.reports import approval_report, executed_report
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization
from countersign.domain.contracts.apply_broadcast_draft import ApplyBroadcastDraft
from countersign.domain.errors import IllegalTransitionError
from countersign.domain.hash_chain import chain_link, contract_digest
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.proposal import Proposal, ProposalStatus

from tests.conftest import AVA, DRAFT
from tests.support.proposing import proposal

NOW = datetime(2026, 12, 5, 1, 30, tzinfo=UTC)
OUTCOME = {"kind": "succeeded", "result": {"n": 1}}
RECONCILE = {"kind": "needs_reconciliation", "cause": "response_lost"}


def _pending() -> Proposal:
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


def _refused(action: Any) -> IllegalTransitionError:
    with pytest.raises(IllegalTransitionError) as refused:
        action()
    return refused.value


def test_the_inline_guards_refuse_with_the_action_and_status_check_is_names():
    approved = _pending()
    approved.approve("mia@granite.example", NOW)
    twice = _refused(lambda: approved.approve("mia@granite.example", NOW))
    assert (twice.action, twice.status) == ("approve twice", ProposalStatus.PENDING)
    assert len([e for e in approved.collect_events() if type(e).__name__ == "Approved"]) == 1

    executing = _pending()
    executing.approve_and_claim("ava@granite.example", NOW, uuid4())
    again = _refused(lambda: executing.approve("mia@granite.example", NOW))
    assert (again.action, again.status) == ("approve", ProposalStatus.EXECUTING)
    assert str(again) == "cannot approve a proposal that is executing"

    pending = _pending()
    early = _refused(lambda: pending.record_revalidated({}))
    assert (early.action, early.status) == ("revalidate", ProposalStatus.PENDING)
    unclaimed = _refused(lambda: pending.succeed(OUTCOME))
    assert (unclaimed.action, unclaimed.status) == ("complete", ProposalStatus.PENDING)

    reconciling = _pending()
    reconciling.approve_and_claim("ava@granite.example", NOW, uuid4())
    reconciling.start_reconciling(RECONCILE, "key")
    late = _refused(lambda: reconciling.record_revalidated({}))
    assert (late.action, late.status) == ("revalidate", ProposalStatus.RECONCILING)
    reconciling.succeed(OUTCOME)  # a reconciling proposal may still succeed
    assert reconciling.status == ProposalStatus.SUCCEEDED
    done = _refused(lambda: reconciling.succeed(OUTCOME))
    assert (done.action, done.status) == ("complete", ProposalStatus.SUCCEEDED)


def test_the_approval_and_claim_record_their_fields_and_links_as_before():
    claimed = _pending()
    attempt = uuid4()
    proposed_chain = claimed.chain
    claimed.approve_and_claim(
        "ava@granite.example", NOW, attempt, "manager", credential="person", membership_id="m1"
    )
    _, approved, claim = claimed.collect_events()
    approval = {
        "approved_by": "ava@granite.example",
        "approved_at": NOW,
        "role": "manager",
        "credential": "person",
        "membership_id": "m1",
        "passkey": None,
    }
    assert {name: getattr(approved, name) for name in approval} == approval
    assert approved.chain == chain_link(proposed_chain, 2, "Approved", approval, approved.timestamp)
    assert (claim.attempt_id, claim.claimed_at) == (attempt, NOW)
    assert claim.chain == chain_link(
        approved.chain, 3, "Claimed", {"attempt_id": attempt, "claimed_at": NOW}, claim.timestamp
    )
    assert claimed.chain == claim.chain


def test_the_execution_contract_carries_each_field_where_it_belongs(cs, seeded, monkeypatch):
    created = proposal(cs, seeded, operation=DRAFT)
    seen: list[ExecutionContract[Any]] = []
    execute = ApplyBroadcastDraft.execute

    def spied(self: ApplyBroadcastDraft, execution: Any, facts: Any) -> Any:
        seen.append(execution)
        return execute(self, execution, facts)

    monkeypatch.setattr(ApplyBroadcastDraft, "execute", spied)
    report = cs.proposals.approve(created.proposal_id, AVA)

    assert report.result == "executed"
    stored = cs.store.get(parse_id(created.proposal_id, "proposal"), Proposal)
    (execution,) = seen
    assert execution == ExecutionContract(
        proposal_id=stored.id,
        kind=DRAFT,
        scope=stored.scope,
        arguments=execution.arguments,
        approved_by=AVA,
        approved_at=stored.approved_at,
        attempt_id=stored.attempt_id,
    )
    assert execution.arguments.subject == created.preview["subject"]


def test_the_executed_report_is_the_stored_outcomes_report_field_for_field(cs, seeded):
    created = proposal(cs, seeded, operation=DRAFT)
    report = cs.proposals.approve(created.proposal_id, AVA)
    stored = cs.store.get(parse_id(created.proposal_id, "proposal"), Proposal)

    written = executed_report(stored, report.message)
    assert written == approval_report(stored)  # the long way: the text from the stored outcome
    assert [f.name for f in fields(written)][:6] == [
        "result",
        "proposal_id",
        "status",
        "outcome",
        "reason",
        "message",
    ]
    assert (written.result, written.status, written.reason) == ("executed", "succeeded", None)
    assert written.proposal_id == created.proposal_id
    assert written.outcome == stored.outcome
    assert written.outcome is not stored.outcome
    assert written.message == report.message
    assert written.approvals is None


def test_a_first_approval_is_not_rechecked_and_a_later_one_is(monkeypatch):
    rechecked: list[Proposal] = []
    monkeypatch.setattr(approve_path, "recheck", lambda p, org, contract: rechecked.append(p))
    # (the club's policy in force is no stricter than the frozen one: policy_recheck's tests)
    monkeypatch.setattr(approve_path, "policy_refusal", lambda p, org, contract, email: None)
    path = approve_path.ApprovePath()
    path.passkeys = None

    class _Member:
        email = "mia@granite.example"

    class _Approval:
        member = _Member()
        fields: dict[str, Any] = {}

    first = _pending()
    assert (
        path._policy_short_of_claim(
            None,  # type: ignore[arg-type]
            first,
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            _Approval(),  # type: ignore[arg-type]
            NOW,
            None,
            [],
            [],
        )
        is None
    )
    assert rechecked == []  # nothing earlier to recheck: the quorum of one is complete

    later = _pending()
    later.approve("noah@granite.example", NOW)  # an earlier approval, on a quorum of one
    path._policy_short_of_claim(
        None,  # type: ignore[arg-type]
        later,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        _Approval(),  # type: ignore[arg-type]
        NOW,
        None,
        [],
        [],
    )
    assert rechecked == [later]


def _form_with_a_send(status: str | None) -> BroadcastForm:
    """A form with its first draft applied and, unless ``status`` is None, one send of it
    left pending, sent or failed."""
    form = BroadcastForm(organization_id=uuid4())
    form.apply_draft({"leagues": ["Monday"]}, "First", "Body", uuid4())
    if status is not None:
        sender = uuid4()
        form.start_send(sender, 1, f"key-{sender}", 3)
        if status == "sent":
            form.settle_send(sender, "ref-1", AVA)
        elif status == "failed":
            form.fail_send(sender, "refused")
    return form


@pytest.mark.parametrize("status", [None, "pending", "sent", "failed"])
def test_applying_a_draft_keeps_the_pending_sends_and_drops_the_settled(status):
    form = _form_with_a_send(status)
    before = {key: dict(send) for key, send in form._sends.items()}
    assert [send["status"] for send in before.values()] == ([status] if status else [])
    form.apply_draft({"leagues": ["Tuesday"]}, "Second", "Body", uuid4())
    pending = {key: send for key, send in before.items() if send["status"] == "pending"}
    assert form._sends == pending
    assert form.draft == 2
    replayed = None
    for event in form.collect_events():
        replayed = event.mutate(replayed)
    assert replayed is not None
    assert vars(replayed)["_sends"] == pending


def test_a_proposal_expires_at_its_expiry_and_not_a_moment_before(cs, seeded, clock):
    due = proposal(cs, seeded, operation=DRAFT)
    clock._now = due.expires_at  # the open test is ``now < expires_at``: at it, expired
    expired = cs.proposals.approve(due.proposal_id, AVA)
    assert (expired.result, expired.reason, expired.status) == (
        "not_approvable",
        "expired",
        "expired",
    )
    events = cs.audit.history(due.proposal_id)["events"]
    assert [e["type"] for e in events] == ["Proposed", "Expired"]
    again = cs.proposals.approve(due.proposal_id, AVA)  # no longer pending: stored state
    assert (again.reason, again.status) == ("expired", "expired")
    assert [e["type"] for e in cs.audit.history(due.proposal_id)["events"]] == [
        "Proposed",
        "Expired",
    ]

    open_ = proposal(cs, seeded, operation=DRAFT)
    clock._now = open_.expires_at - timedelta(microseconds=1)
    assert cs.proposals.approve(open_.proposal_id, AVA).result == "executed"


def test_the_claims_approval_records_the_members_role_membership_and_credential(cs, seeded):
    created = proposal(cs, seeded, operation=DRAFT)
    caller = Caller(AVA, credential=Credential.APPROVER_TOKEN, service="desk")
    assert cs.proposals.approve(created.proposal_id, caller).result == "executed"

    stored = cs.store.get(parse_id(created.proposal_id, "proposal"), Proposal)
    organization = cs.store.get(stored.organization_id, Organization)
    member = organization.member(AVA)
    assert member is not None
    assert stored.approvals == (AVA,)
    assert stored.approver_roles == (member.role,)
    assert stored.approver_memberships == (member.membership_id,)
    assert member.membership_id is not None
    assert stored.approver_credentials == ("approver_token:desk",)
    assert stored.approval_passkeys == (None,)
