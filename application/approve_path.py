"""The approve path's steps up to its claim commit (docs/design.md, "The approve path"):
one approval's decision, taken on what the store reads, of what to commit or answer.

``ApprovePath`` is ``ProposalService``'s base (proposals.py): the service's ``approve`` hands
the store this decision (``_claim``), and its ``decline`` answers a proposal that is no
longer pending as an approval would (``_decided``). A local operation executes here, in the
claim's commit; an external one records its attempt here and is called out once the claim is
committed (``Settlement.call_out``, settlement.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

from countersign.application.authorization import (
    Caller,
    membership,
    require_decider,
    undecidable,
)
from countersign.application.passkeys import PasskeyRefusal, PasskeyStep, SignedApproval
from countersign.application.policy_recheck import policy_refusal
from countersign.application.ports import Answer, Clock, Commit
from countersign.application.quorum import Approval, lapse_reason, recheck
from countersign.application.reports import (
    ApprovalReport,
    approval_report,
    awaiting_approvals,
    executed_report,
)
from countersign.application.seal_check import (
    KeyNotHeld,
    Unverified,
    not_verifiable_here,
    seal_problem,
    set_aside,
)
from countersign.application.settlement import (
    CallOut,
    Failed,
    Settlement,
    failed,
    revision_required,
    succeeded,
)
from countersign.application.supersession import retire
from countersign.domain.club.organization import Member, Organization
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.base import RevisionNeededError, UndecodableContractError
from countersign.domain.contracts.frozen_models import FROZEN_MODELS
from countersign.domain.errors import NotFoundError
from countersign.domain.hash_chain import contract_digest
from countersign.domain.messages import success_message
from countersign.domain.outcomes import (
    AlreadyCompleted,
    ExecutionContract,
    NotApprovable,
    NotApprovableReason,
    RevisionReason,
)
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal
from countersign.domain.proposal_status import DECLINED, EXECUTING, EXPIRED, PENDING, SUPERSEDED
from countersign.domain.seals import SealKeys
from countersign.domain.uuids import new_id

_Decided = ApprovalReport | CallOut | Failed | Unverified | KeyNotHeld
_Claim = Commit[_Decided] | Answer[_Decided]


def claim_reads(seen: Proposal | None) -> list[UUID]:
    """What claiming ``seen`` reads besides it, fetched with it in one round trip: its
    organization, its resource and the resource's pending slot, which a success reads to
    withdraw what it made stale (an external operation's settlement then finds the slot
    held, instead of querying it after the provider's answer). Only for a pending proposal
    this approval may be the last one needed for: any other approval reads the proposal
    and the organization alone, which the request's own checks hold already."""
    if seen is None or seen.status != PENDING:
        return []
    if len(seen.approvals) + 1 < seen.approvals_required:
        return []
    organization_id, resource_id = seen.organization_id, seen.resource_id
    return [organization_id, resource_id, PendingSlot.create_id(organization_id, resource_id)]


def _decoded(contract: AnyContract, proposal: Proposal, sealed: list[str]) -> tuple[Any, str] | str:
    """Step 6: the stored arguments decoded and the contract digest recomputed from the
    stored values, or why the claim fails (undecodable arguments; a digest that is not the
    proposal's). Stored values that hash to the proposal's digest and to models this process
    froze are those models' dump: the models are taken as they are, not validated again
    (``frozen_models``). ``sealed``: the digest the seal check recomputed, if it ran."""
    digest = (
        sealed[0]
        if sealed
        else contract_digest(
            proposal.kind, proposal.contract_version, proposal.arguments, proposal.preview
        )
    )
    verified = digest == proposal.digest
    arguments = FROZEN_MODELS.arguments(digest, contract.Arguments) if verified else None
    if arguments is None:
        try:
            arguments = contract.decode_arguments(proposal.arguments)
        except UndecodableContractError:
            return "UndecodableContractError"
        if not verified:
            return "ContractDigestMismatch"
    return arguments, digest


class ApprovePath:
    """An approval's steps up to its claim commit, on the service's contracts, settlement,
    passkey check, seal keys and clock (set by ``ProposalService.__init__``)."""

    registry: Mapping[str, AnyContract]
    settlement: Settlement
    passkeys: PasskeyStep | None
    #: None: no seal keys, nothing sealed nor checked (the service sets it).
    seals: SealKeys | None = None
    clock: Clock

    def _claim(
        self, store: Repository, pid: UUID, caller: Caller, passkey: Mapping[str, Any] | None
    ) -> _Claim:
        """The approve path up to its claim commit, decided on what ``store`` reads; a
        passkey's new signature counter goes into whatever it commits."""
        signed: list[SignedApproval] = []
        decided = self._claim_steps(store, pid, caller, passkey, signed, [])
        if signed and isinstance(decided, Commit):
            return Commit([*decided.aggregates, signed[0].ring], decided.answer)
        return decided

    def _claim_steps(
        self,
        store: Repository,
        pid: UUID,
        caller: Caller,
        passkey: Mapping[str, Any] | None,
        signed: list[SignedApproval],
        sealed: list[str],
    ) -> _Claim:
        """The approve path's steps up to its claim commit (``sealed``: the contract digest
        the seal check recomputed, for step 6).

        A local operation executes here, in the claim's commit; an external one records its
        attempt here and is called out once the claim is committed (``Settlement.call_out``).
        """
        # 1. Load the proposal (NotFoundError: an unknown id).
        proposal = store.get(pid, Proposal)
        contract = self.registry.get(proposal.kind)
        # 2. Check the caller: still a member (NotFoundError otherwise: another tenant's
        #    proposal answers like an unknown one), still holding the operation's permission,
        #    with a credential that may decide (an agent token never does).
        #    An unknown kind fails closed: its operation is not enabled here (a plug-in
        #    turned off), and nobody may decide it.
        org = store.read(proposal.organization_id, Organization)
        if caller.organization is not None and caller.organization.strip().lower() != org.slug:
            # Acting in another club (a token's, a session's): this one's proposal is not
            # found, whatever the person's membership here. The entry points check it first
            # (ProposalAccess); the service holds it too, for any that would not.
            raise NotFoundError("proposal")
        member = membership(org, caller.email)
        refused = undecidable(contract, caller, member)
        if refused is not None:
            return Answer(approval_report(proposal, NotApprovable(refused)))
        assert contract is not None  # undecidable: an unknown kind is refused
        require_decider(caller)
        # 3. Check that it is pending and not expired (recording Expired if it is).
        now = self.clock.now()
        if proposal.status != PENDING or proposal.is_expired_at(now):
            return self._closed_to_approval(proposal, now)
        # 4. With seal keys, check that what is stored of it is what was sealed when it was
        #    proposed, before its policy decides anything (one that is not is set aside:
        #    seal_check.py). Check the approval policy it was frozen under: whether the
        #    requester may approve it; whether the club's policy in force asks more of it
        #    (then it fails closed, to be proposed again: policy_recheck.py); whether it
        #    takes a passkey, and this approval was signed with one of the approver's over
        #    this proposal's digest; and whether this approval is the last one its quorum
        #    needs, counting only earlier approvers who may still approve (rechecked now). An
        #    earlier one is recorded alone; approving twice changes nothing.
        approval = Approval(member, caller.recorded_credential)
        not_yet = self._policy_short_of_claim(
            store, proposal, org, contract, approval, now, passkey, signed, sealed
        )
        if not_yet is not None:
            return not_yet
        assertion = signed[0].assertion if signed else None
        # 5. Claim: the last Approved and Claimed, in the one commit this decision makes.
        attempt_id = new_id()
        proposal.approve_and_claim(  # Approval.fields, named without a dict of them
            member.email,
            now,
            attempt_id,
            member.role,
            assertion,
            credential=approval.credential,
            membership_id=member.membership_id,
        )
        # 6. Decode the arguments and check the digest: what runs is what the approver saw.
        decoded = _decoded(contract, proposal, sealed)
        if isinstance(decoded, str):
            return Commit([proposal], failed(proposal, decoded))
        arguments, digest = decoded
        # What the claim yields, the only thing that executes: proposal_id, kind, scope,
        # arguments, approved_by, approved_at, attempt_id (by position: keywords build a dict).
        execution = ExecutionContract(
            proposal.id, proposal.kind, proposal.scope, arguments, member.email, now, attempt_id
        )
        # 7. Revalidate against the facts as they are now; a changed one fails closed.
        try:
            loaded = contract.load(execution.scope, store)
            checked = contract.revalidate(arguments, loaded)
        except NotFoundError:
            return self._revise(proposal, RevisionReason(code="resource_unavailable"))
        except RevisionNeededError as stale:
            return self._revise(proposal, stale.reason, already_so=stale.already_so)
        proposal.record_revalidated(checked)
        # 8. Execute a local operation; 9. record its outcome: the effect and Succeeded go
        #    into the claim's commit, with the pending proposals it made stale superseded.
        if not contract.is_external(arguments):
            try:
                result = contract.execute(execution, loaded)
            except Exception:
                return Commit([proposal], failed(proposal, "ExecutionError", exc_info=True))
            proposal.succeed(succeeded(result))
            retired = retire(store, contract, proposal, arguments, result, loaded)
            text = success_message(contract, proposal.preview, result, digest=digest)
            report = executed_report(proposal, text)
            return Commit([proposal, *loaded.aggregates(), *retired], report)
        #    Or record an external operation's attempt with the claim, and call out once the
        #    claim is committed.
        try:
            effect = contract.start_external(execution, loaded)
        except Exception:
            return Commit([proposal], failed(proposal, "ExecutionError", exc_info=True))
        if effect.provider not in self.settlement.providers:
            return Commit([proposal], failed(proposal, "UnknownEffectProvider"))
        return Commit([proposal, *loaded.aggregates()], CallOut(contract, execution, effect))

    def _closed_to_approval(
        self, proposal: Proposal, now: datetime
    ) -> Commit[ApprovalReport] | Answer[ApprovalReport]:
        """Step 3: the answer of a proposal that is no longer pending (its stored outcome, or
        why not), or of one past its expiry (recording Expired)."""
        decided = self._decided(proposal)
        if decided is not None:
            return Answer(approval_report(proposal, decided))
        proposal.expire(now)  # pending, so past its expiry
        expired = NotApprovable(NotApprovableReason.EXPIRED)
        return Commit([proposal], approval_report(proposal, expired))

    def _policy_short_of_claim(
        self,
        store: Repository,
        proposal: Proposal,
        org: Organization,
        contract: AnyContract,
        approval: Approval,
        now: datetime,
        passkey: Mapping[str, Any] | None,
        signed: list[SignedApproval],
        sealed: list[str],
    ) -> _Claim | None:
        """Step 4: the answer when this approval may not claim the proposal (the requester
        may not approve it, by the frozen policy or the one in force; the policy in force
        asks more of whoever approves than the frozen one, which records RevisionRequired,
        ``policy_raised``; this member already has; its passkey is
        missing or does not verify; more approvals are needed, this one recorded alone), or
        None when it is the last one needed. A verified passkey is appended to ``signed``.
        A requester barred since it was frozen: an earlier approval of theirs is marked as no
        longer counting (``ApprovalLapsed``, ``requester_barred``) in this decision's commit.

        Before an approval may complete the quorum, every earlier one is rechecked: its
        approver must still be the same member (not gone, nor gone and back) holding the
        operation's permission. One that is not stays recorded and is marked as no longer
        counting (``ApprovalLapsed``), in this decision's commit.

        With seal keys, first of all: a proposal whose stored record is not what was sealed
        when it was proposed, or with an event after that its seal does not vouch for (a
        forged approval, which must not count), is set aside (``set_aside``), nothing
        approved nor claimed; one sealed with a key this process does not hold is refused
        with nothing recorded (``not_verifiable_here``); the digest a verified seal's check
        recomputed is appended to ``sealed``."""
        if self.seals is not None:
            problem = seal_problem(self.seals, proposal, sealed)
            if problem is not None and problem.kind == "unknown_key":
                return not_verifiable_here(proposal, problem)
            if problem is not None:
                return set_aside(proposal, problem)
        email = approval.member.email
        refused = policy_refusal(proposal, org, contract, email)
        if refused is not None:
            return refused
        if proposal.has_approved(email):
            # Their own earlier approval counts only if given by this same membership.
            if lapse_reason(proposal, org, contract, email) is None:
                return Answer(awaiting_approvals(proposal, again=True))
            proposal.lapse_approval(email, "rejoined")
        # Most approvals: no passkey given and none required, which every check answers None.
        checked = (
            None
            if passkey is None and not proposal.requires_passkey
            else self._passkey_check(store, proposal, approval.member, passkey)
        )
        if isinstance(checked, PasskeyRefusal):
            refusal = NotApprovable(NotApprovableReason(checked.reason))
            return Answer(approval_report(proposal, refusal))
        if checked is not None:
            signed.append(checked)
        required = proposal.approvals_required
        if proposal.approvals and len(proposal.approvals) + 1 >= required:
            recheck(proposal, org, contract)  # none to recheck for a first approval
        if len(proposal.approvals) + 1 < required:
            assertion = None if checked is None else checked.assertion
            proposal.approve(email, now, passkey=assertion, **approval.fields)
            return Commit([proposal], awaiting_approvals(proposal))
        return None  # any lapses travel in the claim's commit, with Approved and Claimed

    def _passkey_check(
        self,
        store: Repository,
        proposal: Proposal,
        member: Member,
        submitted: Mapping[str, Any] | None,
    ) -> SignedApproval | PasskeyRefusal | None:
        """Step 4's passkey: the verified assertion, why it does not count, or None (none
        needed, none given). Without a configured check a required passkey fails closed."""
        if self.passkeys is None:
            needed = proposal.requires_passkey or submitted is not None
            return PasskeyRefusal("passkey_required") if needed else None
        return self.passkeys.check(store, proposal, member, submitted)

    def _revise(
        self, proposal: Proposal, reason: RevisionReason, *, already_so: bool = False
    ) -> Commit[ApprovalReport | CallOut | Failed]:
        """The claim's commit records RevisionRequired: nothing executes (``already_so``:
        because what it asked for already holds)."""
        proposal.require_revision(revision_required(reason, already_so=already_so))
        return Commit([proposal], approval_report(proposal))

    @staticmethod
    def _decided(proposal: Proposal) -> AlreadyCompleted | NotApprovable | None:
        """The answer a non-pending proposal gives to an approval, from its stored state."""
        if proposal.status == PENDING:
            return None
        if proposal.status == EXECUTING:
            return NotApprovable(NotApprovableReason.IN_PROGRESS)
        if proposal.status == EXPIRED:
            return NotApprovable(NotApprovableReason.EXPIRED)
        if proposal.status == DECLINED:
            return NotApprovable(NotApprovableReason.NOT_PENDING)
        if proposal.status == SUPERSEDED:
            return NotApprovable(NotApprovableReason.SUPERSEDED)
        assert proposal.outcome is not None
        return AlreadyCompleted(proposal.outcome)


def challenge_refusal(proposal: Proposal, now: datetime) -> ApprovalReport | None:
    """Why a passkey challenge for ``proposal`` is refused at ``now``: the ``not_approvable``
    answer approving it gives at step 3 (``_closed_to_approval``), or None while it is open
    to approval. Read only, so nothing is recorded (the status of one past its expiry is
    ``expired``, as its readers are told). A proposal already carried out, which an approval
    answers ``already_completed``, is ``not_pending`` here: nobody is to sign for it."""
    if proposal.status == PENDING and not proposal.is_expired_at(now):
        return None
    decided = ApprovePath._decided(proposal) or NotApprovable(NotApprovableReason.EXPIRED)
    if isinstance(decided, AlreadyCompleted):
        report = approval_report(proposal, NotApprovable(NotApprovableReason.NOT_PENDING))
        return replace(report, outcome=None, message=None, status=proposal.status_at(now))
    return replace(approval_report(proposal, decided), status=proposal.status_at(now))
