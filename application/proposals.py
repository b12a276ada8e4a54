"""The proposal service: propose, approve, decline, expire and reconcile.

``approve`` follows DESIGN.md's approve path step by step. The model is never involved:
approval is an authenticated command carrying only the proposal's id.

Each step that reads facts and records what it decided on them is one *decision*: a function
of what it reads that returns the commit to make (``Commit``) or the answer to give without
one (``Answer``), carried out by the store's unit of work (``decide``, application/ports.py).
How the reads are served and checked, and when a decision is taken again, is the unit of
work's business (docs/concurrency.md): a decision only says what it decides.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID, uuid4

from countersign.application.access import Caller, require_decider
from countersign.application.authorization import (
    member_of,
    membership,
    require,
)
from countersign.application.errors import (
    NotRevisableError,
    UnknownOperationError,
    new_correlation_id,
    parse_id,
)
from countersign.application.passkeys import PasskeyRefusal, PasskeyStep, SignedApproval
from countersign.application.ports import (
    AggregateStore,
    Answer,
    Clock,
    Commit,
    EffectProvider,
    EffectResponseLostError,
    FaultPoints,
    NoFaults,
    OpenWorkIndex,
    ProviderUnavailableError,
    Reads,
    SweeperPass,
    SweeperPasses,
)
from countersign.application.quorum import Approval, display_name, lapse_reason, recheck
from countersign.application.reports import (
    ApprovalReport,
    ProposalCard,
    ProposalCreated,
    SweepReport,
)
from countersign.application.settling import (
    DEFAULT_EVERY,
    RECONCILE,
    Settling,
    settling_of,
)
from countersign.domain.club.organization import Member, Organization
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.base import (
    Effect,
    RevisionNeededError,
    Siblings,
    UndecodableContractError,
)
from countersign.domain.contracts.presentation import preview_changes
from countersign.domain.errors import (
    ConcurrencyConflictError,
    CountersignError,
    EffectAlreadyRecordedError,
    NotFoundError,
)
from countersign.domain.messages import (
    lapsed_approval_message,
    outcome_message,
    proposal_headline,
)
from countersign.domain.outcomes import (
    AlreadyCompleted,
    ExecutionContract,
    NeedsReconciliation,
    NotApprovable,
    NotApprovableReason,
    ReconciliationCause,
    RevisionReason,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.ports import A, EffectResponse, Repository
from countersign.domain.proposal import (
    Proposal,
    ProposalStatus,
    SupersessionReason,
    contract_digest,
)
from countersign.domain.scope import Scope

log = logging.getLogger("countersign.proposals")


@dataclass(frozen=True)
class _CallOut:
    """A committed claim of an external operation: the provider is called next, outside any
    decision, since once the claim is committed nothing read before it may stop it."""

    contract: AnyContract
    execution: ExecutionContract[Any]
    effect: Effect


@dataclass(frozen=True)
class _Failed:
    """A claim committed as a terminal failure, and what to log once that commit stands (a
    decision may run again, and only its last run's correlation id is stored)."""

    report: ApprovalReport
    proposal_id: UUID
    error_class: str
    correlation_id: str
    exc_info: Any = None  # sys.exc_info() of the failure, for the log's traceback

    def log(self) -> None:
        log.error(
            "terminal failure for proposal %s (%s), correlation id %s",
            self.proposal_id,
            self.error_class,
            self.correlation_id,
            exc_info=self.exc_info,
        )


_Claim = Commit[ApprovalReport | _CallOut | _Failed] | Answer[ApprovalReport | _CallOut | _Failed]
_Report = Commit[ApprovalReport] | Answer[ApprovalReport]

STATUS_PATH = "/api/v1/proposals/{proposal_id}/status"


def _dump(
    outcome: Succeeded | NeedsReconciliation | RevisionRequired | TerminalFailure,
) -> dict[str, Any]:
    return outcome.model_dump(mode="json")


def _revision(reason: RevisionReason) -> dict[str, Any]:
    return _dump(RevisionRequired(reason=reason))


def _own(value: Any) -> Any:
    """The caller's own copy of a proposal's JSON-ready state (a preview, an outcome): the
    proposal may be a shared snapshot, which every later reader copies."""
    if type(value) is dict:
        return {key: _own(item) for key, item in value.items()}
    if type(value) is list:
        return [_own(item) for item in value]
    return value


_ORIGIN_KEYS = ("channel", "client", "client_version")


def clean_origin(origin: Mapping[str, str] | None) -> dict[str, str] | None:
    """Where a request came from, as recorded: only the known keys, each a short line of
    printable text (an MCP client names itself; nothing it says is trusted beyond that)."""
    if not origin:
        return None
    cleaned = {}
    for key in _ORIGIN_KEYS:
        value = origin.get(key)
        if isinstance(value, str):
            text = "".join(ch for ch in value if ch.isprintable()).strip()[:80]
            if text:
                cleaned[key] = text
    return cleaned or None


_REVISABLE = frozenset(
    {
        ProposalStatus.PENDING,
        ProposalStatus.DECLINED,
        ProposalStatus.EXPIRED,
        ProposalStatus.REVISION_REQUIRED,
    }
)
"""What an edit may start from: nothing that ran, or is running, and nothing already
replaced (the newer proposal is the one to edit)."""


def _slot(facts: Repository, scope: Scope) -> PendingSlot:
    """The pending-proposal slot of the scope's resource, opened if new."""
    slot_id = PendingSlot.create_id(scope.organization_id, scope.resource_id)
    try:
        return facts.get(slot_id, PendingSlot)
    except NotFoundError:
        return PendingSlot(organization_id=scope.organization_id, resource_id=scope.resource_id)


def _pending(facts: Repository, proposal_id: UUID | None) -> list[Proposal]:
    """The proposal, if there is one and it is still pending."""
    if proposal_id is None:
        return []
    # Read first: most often it has long left pending, and is not worth a private copy.
    if facts.read(proposal_id, Proposal).status != ProposalStatus.PENDING:
        return []
    return [facts.get(proposal_id, Proposal)]


def _supersede(proposals: list[tuple[Proposal, SupersessionReason]], by: UUID) -> list[Proposal]:
    """Record ``Superseded{by, reason}`` on each still pending one (each once, with the first
    reason given for it); the ones changed."""
    changed: dict[UUID, Proposal] = {}
    for proposal, reason in proposals:
        if proposal.status == ProposalStatus.PENDING and proposal.id not in changed:
            proposal.supersede(by, reason)
            changed[proposal.id] = proposal
    return list(changed.values())


def _siblings(facts: Repository, proposal: Proposal, retired: frozenset[Siblings]) -> list[UUID]:
    """The latest proposals on ``proposal``'s resource of the kinds of sibling ``retired``
    names (its own operation's other subjects, other operations): the ones a success of it
    retires, if they are still pending."""
    if not retired:
        return []
    slot_id = PendingSlot.create_id(proposal.organization_id, proposal.resource_id)
    try:
        slot = facts.read(slot_id, PendingSlot)
    except NotFoundError:
        return []  # frozen before supersession existed: nothing was ever held
    found: list[UUID] = []
    for kind in sorted(slot.latest):
        same = kind == proposal.kind
        if (Siblings.SAME_OPERATION if same else Siblings.OTHER_OPERATIONS) in retired:
            found.extend(other for other in slot.latest_of(kind) if other != proposal.id)
    return found


class ProposalService:
    """Turns validated requests into proposals, and approvals into exactly-once executions."""

    def __init__(
        self,
        store: AggregateStore,
        providers: Mapping[str, EffectProvider],
        clock: Clock,
        *,
        registry: Mapping[str, AnyContract] = REGISTRY,
        ttl: timedelta = timedelta(days=1),
        lease: timedelta = timedelta(seconds=60),
        open_work: OpenWorkIndex | None = None,
        faults: FaultPoints | None = None,
        passkeys: PasskeyStep | None = None,
        passes: SweeperPasses | None = None,
    ) -> None:
        self.store = store
        #: Where the sweepers' schedules record their passes (None: nobody records them, so
        #: no reconciler is known to run).
        self.passes = passes
        #: Checks the passkey a proposal's policy may require (None: no passkey can be
        #: checked, so a proposal that requires one cannot be approved).
        self.passkeys = passkeys
        self.faults = faults or NoFaults()  # where a test may kill the process (faults.md)
        self.open_work = open_work or ScanOpenWork(store)
        self.providers = providers
        self.clock = clock
        self.registry = registry
        self.ttl = ttl
        self.lease = lease

    # -- propose ------------------------------------------------------------------------------

    def propose(
        self,
        *,
        organization: str,
        actor: str,
        operation: str,
        resource_id: str,
        request: Any,
        interaction_id: str | None = None,
        origin: Mapping[str, str] | None = None,
    ) -> ProposalCreated:
        """Validate the model's request and freeze it as a pending proposal; the pending one
        for the same thing, if any, is superseded in the same commit.

        Raises UnknownOperationError, NotFoundError (unknown or foreign organization or
        resource, or a non-member), ForbiddenError, or InvalidRequestError with problems.
        """
        contract = self.registry.get(operation)
        if contract is None:
            raise UnknownOperationError(operation)
        parsed = contract.parse_request(request)
        organization_id = Organization.create_id(organization.strip().lower())
        scope = Scope(organization_id, contract.section, parse_id(resource_id, "resource"))
        return self.store.decide(
            self._freezing_reads(contract, scope),
            lambda facts: self._freeze(
                facts,
                contract,
                parsed,
                scope,
                actor,
                interaction_id,
                revision_of=None,
                origin=clean_origin(origin),
            ),
        )

    def revise(self, proposal_id: str, actor: str | Caller, request: Any) -> ProposalCreated:
        """Edit a proposal: run the whole contract again on the edited request (validation,
        defaults, derived values, preview) and freeze the result as a new pending proposal
        with ``revision_of`` set; a pending original is superseded in the same commit. Frozen
        arguments are never changed in place.

        Raises NotFoundError (unknown or another organization's id, or a non-member),
        ForbiddenError (AgentCannotDecideError for an agent token: an edit decides what
        people are asked to approve), NotRevisableError, or InvalidRequestError with problems.
        """
        caller = Caller.of(actor)
        actor = caller.email
        pid = parse_id(proposal_id, "proposal")
        original = self.store.get(pid, Proposal)
        member_of(self.store, original.organization_id, actor)
        require_decider(caller)
        contract = self.registry.get(original.kind)
        if contract is None:
            raise NotRevisableError(str(original.status))
        parsed = contract.parse_request(request)
        reads = self._freezing_reads(contract, original.scope)
        return self.store.decide(
            Reads([*reads.ids, pid], targets=reads.targets),
            lambda facts: self._freeze(
                facts,
                contract,
                parsed,
                original.scope,
                actor,
                original.interaction_id,
                revision_of=facts.get(pid, Proposal),
            ),
        )

    @staticmethod
    def _freezing_reads(contract: AnyContract, scope: Scope) -> Reads:
        slot = PendingSlot.create_id(scope.organization_id, scope.resource_id)
        return Reads([scope.organization_id, scope.resource_id, slot], targets=contract.targets)

    def _freeze(
        self,
        facts: Repository,
        contract: AnyContract,
        parsed: Any,
        scope: Scope,
        actor: str,
        interaction_id: str | None,
        *,
        revision_of: Proposal | None,
        origin: dict[str, str] | None = None,
    ) -> Commit[ProposalCreated]:
        """Check the requester, resolve the contract against the facts, freeze the proposal
        under the policy in force, and supersede what it replaces."""
        org = facts.read(scope.organization_id, Organization)
        member = membership(org, actor)
        require(member, contract.permission)
        if revision_of is not None and revision_of.status not in _REVISABLE:
            raise NotRevisableError(str(revision_of.status), revision_of.superseded_by)
        # Read-only: nothing here changes them, so the contract reads the shared state.
        prepared = contract.prepare(parsed, contract.load(scope, _ReadOnlyFacts(facts)))
        arguments = prepared.arguments.model_dump(mode="json")
        preview = prepared.preview.model_dump(mode="json")
        policy = None
        if contract.kind in org.policies:
            amount = contract.amount_cents(prepared.arguments)
            policy = org.approval_policy(contract.kind).frozen_for(amount)
        proposal = Proposal.propose(
            id=uuid4(),
            organization_id=org.id,
            section=str(contract.section),
            resource_id=scope.resource_id,
            requested_by=member.email,
            interaction_id=interaction_id or f"int-{uuid4().hex[:16]}",
            kind=contract.kind,
            contract_version=contract.contract_version,
            arguments=arguments,
            preview=preview,
            expires_at=self.clock.now() + self.ttl,
            digest=contract_digest(contract.kind, contract.contract_version, arguments, preview),
            request=parsed.model_dump(mode="json"),
            revision_of=None if revision_of is None else revision_of.id,
            policy=policy,
            origin=origin,
        )
        slot = _slot(facts, scope)
        subject = contract.subject(prepared.arguments)
        # The edited proposal first: when it is also the slot's latest, it was revised.
        replaced = [
            *([(revision_of, SupersessionReason.REVISED)] if revision_of is not None else []),
            *(
                (pending, SupersessionReason.REPLACED)
                for pending in _pending(facts, slot.latest_for(contract.kind, subject))
            ),
        ]
        superseded = _supersede(replaced, proposal.id)
        slot.hold(contract.kind, subject, proposal.id)
        created = ProposalCreated(
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            operation=proposal.kind,
            # The caller's own copy: once committed, the proposal is the shared snapshot.
            preview=_own(proposal.preview),
            expires_at=proposal.expires_at,
            supersedes=[str(old.id) for old in superseded],
            revision_of=None if revision_of is None else str(revision_of.id),
            approvals_required=proposal.approvals_required,
        )
        return Commit([proposal, slot, *superseded], created)

    # -- read ---------------------------------------------------------------------------------

    def card(self, proposal_id: str, actor: str, language: str = "en") -> ProposalCard:
        """The reviewer's card. NotFoundError for an unknown id or another tenant's."""
        proposal = self._load(proposal_id)
        if proposal is None:
            raise NotFoundError("proposal")
        member_of(self.store, proposal.organization_id, actor)
        club = self.store.read(proposal.organization_id, Organization)
        return ProposalCard(
            proposal_id=str(proposal.id),
            operation=proposal.kind,
            section=proposal.section,
            resource_id=str(proposal.resource_id),
            requested_by=proposal.requested_by,
            interaction_id=proposal.interaction_id,
            status=str(proposal.status),
            preview=proposal.preview,
            expires_at=proposal.expires_at,
            approved_by=proposal.approved_by,
            approved_at=proposal.approved_at,
            declined_by=proposal.declined_by,
            declined_credential=proposal.declined_credential,
            outcome=proposal.outcome,
            message=self.message(proposal, language),
            time_zone=club.time_zone,
            approvals=list(proposal.approvals),
            approvals_required=proposal.approvals_required,
            approval_credentials=list(proposal.approver_credentials),
            no_longer_counting=[
                {
                    **lapsed,
                    "message": lapsed_approval_message(
                        proposal.kind,
                        display_name(club, lapsed["approved_by"]),
                        lapsed["reason"],
                        language,
                    ),
                }
                for lapsed in proposal.lapsed_approvals
            ],
            policy=proposal.policy,
            revision_of=str(proposal.revision_of) if proposal.revision_of else None,
            superseded_by=str(proposal.superseded_by) if proposal.superseded_by else None,
            superseded_reason=proposal.superseded_reason,
            withdraws=[
                {
                    "proposal_id": str(withdrawn.id),
                    "operation": withdrawn.kind,
                    "headline": proposal_headline(withdrawn.kind, withdrawn.preview, language),
                }
                for withdrawn in self.withdrawn_by_approving(proposal)
            ],
            changes=self.changes(proposal, language),
            origin=proposal.origin,
            approval_passkeys=[
                {"approved_by": email, "passkey": passkey["name"]}
                for email, passkey in zip(
                    proposal.approvals, proposal.approval_passkeys, strict=True
                )
                if passkey is not None
            ],
        )

    def changes(self, proposal: Proposal, language: str = "en") -> list[dict[str, str]]:
        """What a revision changed against the proposal it revised, field by field, as
        people read it (none for a proposal that revised nothing)."""
        if proposal.revision_of is None:
            return []
        contract = self.registry.get(proposal.kind)
        original = self._load(str(proposal.revision_of))
        if contract is None or original is None:
            return []
        return [
            {"field": c.key, "label": c.label, "before": c.before, "after": c.after}
            for c in preview_changes(
                contract.preview_fields, original.preview, proposal.preview, language
            )
        ]

    def message(self, proposal: Proposal, language: str = "en") -> str | None:
        """The app-authored text for the proposal's outcome, if it has one."""
        if proposal.outcome is None:
            return None
        return outcome_message(proposal.kind, proposal.preview, proposal.outcome, language)

    # -- approve ------------------------------------------------------------------------------

    def approve(
        self,
        proposal_id: str,
        actor: str | Caller,
        passkey_assertion: Mapping[str, Any] | None = None,
    ) -> ApprovalReport:
        """Claim the proposal exactly once, revalidate, execute, and record the outcome.

        ``actor``: the approver's email (a person), or the Caller with the credential they
        presented. ``passkey_assertion``: ``{"nonce", "credential"}``, the answer of the
        approver's authenticator to ``approval_challenge`` (needed where the proposal's
        policy requires a passkey).

        Raises AgentCannotDecideError for an agent token, and ConcurrencyConflictError only
        if the claim kept losing races on shared facts
        (another proposal kept changing the same record): nothing was claimed; try again.
        """
        caller = Caller.of(actor)
        try:
            pid = parse_id(proposal_id, "proposal")
            claimed = self.store.decide(
                Reads([pid]), lambda facts: self._claim(facts, pid, caller, passkey_assertion)
            )
        except NotFoundError:
            # An unknown id, and another tenant's proposal, get the same answer, echo included.
            return self._not_approvable(proposal_id, None, NotApprovableReason.NOT_FOUND)
        if isinstance(claimed, _CallOut):
            return self._call_out(claimed)
        if isinstance(claimed, _Failed):
            claimed.log()  # the commit stands: its correlation id is the stored one
            return claimed.report
        return claimed

    def _claim(
        self, facts: Repository, pid: UUID, caller: Caller, passkey: Mapping[str, Any] | None
    ) -> _Claim:
        """The approve path up to its claim commit, decided on ``facts``; a passkey's new
        signature counter goes into whatever it commits."""
        signed: list[SignedApproval] = []
        decided = self._claim_steps(facts, pid, caller, passkey, signed)
        if signed and isinstance(decided, Commit):
            return Commit([*decided.aggregates, signed[0].ring], decided.answer)
        return decided

    def _claim_steps(
        self,
        facts: Repository,
        pid: UUID,
        caller: Caller,
        passkey: Mapping[str, Any] | None,
        signed: list[SignedApproval],
    ) -> _Claim:
        """The approve path's steps up to its claim commit.

        A local operation executes here, in the claim's commit; an external one records its
        attempt here and is called out once the claim is committed (``_call_out``).
        """
        # 1. Load the proposal (NotFoundError: an unknown id).
        proposal = facts.get(pid, Proposal)
        contract = self.registry.get(proposal.kind)
        # 2. Check the caller: still a member (NotFoundError otherwise: another tenant's
        #    proposal answers like an unknown one), still holding the operation's permission,
        #    with a credential that may decide (an agent token never does).
        #    An unknown kind fails closed: nobody holds the permission it would need.
        org = facts.read(proposal.organization_id, Organization)
        member = membership(org, caller.email)
        if contract is None or not member.may(contract.permission):
            return Answer(self._report(proposal, NotApprovable(NotApprovableReason.FORBIDDEN)))
        require_decider(caller)
        # 3. Check that it is pending and not expired (recording Expired if it is).
        now = self.clock.now()
        closed = self._closed_to_approval(proposal, now)
        if closed is not None:
            return closed
        # 4. Check the approval policy it was frozen under: whether the requester may approve
        #    it; whether it takes a passkey, and this approval was signed with one of the
        #    approver's over this proposal's digest; and whether this approval is the last one
        #    its quorum needs, counting only earlier approvers who may still approve (rechecked
        #    now). An earlier one is recorded alone; approving twice changes nothing.
        approval = Approval(member, caller.recorded_credential)
        not_yet = self._policy_short_of_claim(
            facts, proposal, org, contract, approval, now, passkey, signed
        )
        if not_yet is not None:
            return not_yet
        assertion = signed[0].assertion if signed else None
        # 5. Claim: the last Approved and Claimed, in the one commit this decision makes.
        attempt_id = uuid4()
        proposal.approve_and_claim(
            member.email, now, attempt_id, passkey=assertion, **approval.fields
        )
        # 6. Decode the arguments and check the digest: what runs is what the approver saw.
        try:
            arguments = contract.decode_arguments(proposal.arguments)
        except UndecodableContractError:
            return self._fail(proposal, "UndecodableContractError")
        digest = contract_digest(
            proposal.kind, proposal.contract_version, proposal.arguments, proposal.preview
        )
        if digest != proposal.digest:
            return self._fail(proposal, "ContractDigestMismatch")
        execution = ExecutionContract(  # what the claim yields: the only thing that executes
            proposal_id=proposal.id,
            kind=proposal.kind,
            scope=proposal.scope,
            arguments=arguments,
            approved_by=member.email,
            approved_at=now,
            attempt_id=attempt_id,
        )
        # 7. Revalidate against the facts as they are now; a changed one fails closed.
        try:
            loaded = contract.load(execution.scope, facts)
            checked = contract.revalidate(arguments, loaded)
        except NotFoundError:
            return self._revise(proposal, RevisionReason(code="resource_unavailable"))
        except RevisionNeededError as stale:
            return self._revise(proposal, stale.reason)
        proposal.record_revalidated(checked)
        # 8. Execute a local operation; 9. record its outcome: the effect and Succeeded go
        #    into the claim's commit, with the pending proposals it made stale superseded.
        if not contract.is_external(arguments):
            try:
                result = contract.execute(execution, loaded)
            except Exception:
                return self._fail(proposal, "ExecutionError", exc_info=True)
            proposal.succeed(_dump(Succeeded(result=result.model_dump(mode="json"))))
            retired = self._retire(facts, contract, proposal, arguments, result, loaded)
            return Commit([proposal, *loaded.aggregates(), *retired], self._report(proposal, None))
        #    Or record an external operation's attempt with the claim, and call out once the
        #    claim is committed.
        try:
            effect = contract.start_external(execution, loaded)
        except Exception:
            return self._fail(proposal, "ExecutionError", exc_info=True)
        if effect.provider not in self.providers:
            return self._fail(proposal, "UnknownEffectProvider")
        return Commit([proposal, *loaded.aggregates()], _CallOut(contract, execution, effect))

    def _closed_to_approval(self, proposal: Proposal, now: datetime) -> _Claim | None:
        """Step 3: the answer of a proposal that is no longer pending (its stored outcome, or
        why not), or of one past its expiry (recording Expired); None if it is open."""
        decided = self._decided(proposal)
        if decided is not None:
            return Answer(self._report(proposal, decided))
        if proposal.is_expired_at(now):
            proposal.expire(now)
            expired = NotApprovable(NotApprovableReason.EXPIRED)
            return Commit([proposal], self._report(proposal, expired))
        return None

    def _policy_short_of_claim(
        self,
        facts: Repository,
        proposal: Proposal,
        org: Organization,
        contract: AnyContract,
        approval: Approval,
        now: datetime,
        passkey: Mapping[str, Any] | None,
        signed: list[SignedApproval],
    ) -> _Claim | None:
        """Step 4: the answer when this approval may not claim the proposal (the requester
        may not approve it; this member already has; its passkey is missing or does not
        verify; more approvals are needed, this one recorded alone), or None when it is the
        last one needed. A verified passkey is appended to ``signed``.

        Before an approval may complete the quorum, every earlier one is rechecked: its
        approver must still be the same member (not gone, nor gone and back) holding the
        operation's permission. One that is not stays recorded and is marked as no longer
        counting (``ApprovalLapsed``), in this decision's commit."""
        email = approval.member.email
        if email == proposal.requested_by and not proposal.requester_may_approve:
            refused = NotApprovable(NotApprovableReason.REQUESTER_MAY_NOT_APPROVE)
            return Answer(self._report(proposal, refused))
        if proposal.has_approved(email):
            # Their own earlier approval counts only if given by this same membership.
            if lapse_reason(proposal, org, contract, email) is None:
                return Answer(self._awaiting(proposal, again=True))
            proposal.lapse_approval(email, "rejoined")
        checked = self._passkey_check(facts, proposal, approval.member, passkey)
        if isinstance(checked, PasskeyRefusal):
            refusal = NotApprovable(NotApprovableReason(checked.reason))
            return Answer(self._report(proposal, refusal))
        if checked is not None:
            signed.append(checked)
        if len(proposal.approvals) + 1 >= proposal.approvals_required:
            recheck(proposal, org, contract)
        if len(proposal.approvals) + 1 < proposal.approvals_required:
            assertion = None if checked is None else checked.assertion
            proposal.approve(email, now, passkey=assertion, **approval.fields)
            return Commit([proposal], self._awaiting(proposal))
        return None  # any lapses travel in the claim's commit, with Approved and Claimed

    def _passkey_check(
        self,
        facts: Repository,
        proposal: Proposal,
        member: Member,
        submitted: Mapping[str, Any] | None,
    ) -> SignedApproval | PasskeyRefusal | None:
        """Step 4's passkey: the verified assertion, why it does not count, or None (none
        needed, none given). Without a configured check a required passkey fails closed."""
        if self.passkeys is None:
            needed = proposal.requires_passkey or submitted is not None
            return PasskeyRefusal("passkey_required") if needed else None
        return self.passkeys.check(facts, proposal, member, submitted)

    def approval_challenge(self, proposal_id: str, actor: str) -> dict[str, Any]:
        """What an approver's authenticator signs to approve this proposal (``PasskeyStep``).
        NotFoundError for an unknown id, another club's, or a non-member (and where no
        passkey check is wired). A proposal no longer pending gets one too: approving it
        answers from its stored state, as always."""
        proposal = self._load(proposal_id)
        if proposal is None or self.passkeys is None:
            raise NotFoundError("proposal")
        member = member_of(self.store, proposal.organization_id, actor)
        return self.passkeys.challenge(self.store, proposal, member)

    def _call_out(self, claimed: _CallOut) -> ApprovalReport:
        """Steps 8 and 9 of an external operation whose claim is committed."""
        effect = claimed.effect
        proposal_id = claimed.execution.proposal_id
        self.faults.reached("after_claim_commit")
        # 8. Call the provider under the proposal's idempotency key. Whatever goes wrong is
        #    left to the reconciler, under the same key; only the cause told differs.
        self.faults.reached("before_provider_call")
        try:
            response = self.providers[effect.provider].perform(
                effect.idempotency_key, effect.payload()
            )
        except ProviderUnavailableError:
            # The provider said it applied nothing: people may be told nothing happened yet.
            return self._start_reconciling(
                proposal_id, effect.idempotency_key, "provider_unavailable"
            )
        except EffectResponseLostError:
            return self._start_reconciling(proposal_id, effect.idempotency_key)
        except Exception:
            # Anything unexpected once a request may have left is uncertain, never a retry.
            log.exception("provider call for proposal %s ended unexpectedly", proposal_id)
            return self._start_reconciling(proposal_id, effect.idempotency_key)
        self.faults.reached("after_provider_call")
        # 9. Record its authoritative answer.
        return self._settle(claimed.contract, claimed.execution, response)

    def _start_reconciling(
        self, proposal_id: UUID, key: str, cause: ReconciliationCause = "response_lost"
    ) -> ApprovalReport:
        """Record that the provider's answer is unknown: the reconciler will settle it."""

        def reconciling(facts: Repository) -> _Report:
            proposal = facts.get(proposal_id, Proposal)
            if proposal.status != ProposalStatus.EXECUTING:
                return Answer(self._report(proposal, None))  # settled meanwhile
            status_path = STATUS_PATH.format(proposal_id=proposal.id)
            uncertain = NeedsReconciliation(status_path=status_path, cause=cause)
            proposal.start_reconciling(_dump(uncertain), key)
            return Commit([proposal], self._report(proposal, None))

        return self.store.decide(Reads([proposal_id]), reconciling)

    def _settle(
        self,
        contract: AnyContract,
        execution: ExecutionContract[Any],
        response: EffectResponse,
    ) -> ApprovalReport:
        """Record the provider's authoritative answer with the domain change, in one commit."""

        def settlement(facts: Repository) -> _Report:
            proposal = facts.get(execution.proposal_id, Proposal)
            if proposal.status not in (ProposalStatus.EXECUTING, ProposalStatus.RECONCILING):
                return Answer(self._report(proposal, None))  # recorded by another process
            loaded = contract.load(execution.scope, facts)
            retired: list[Proposal] = []
            try:
                result = contract.finish_external(execution, loaded, response)
                proposal.succeed(_dump(Succeeded(result=result.model_dump(mode="json"))))
                retired = self._retire(
                    facts, contract, proposal, execution.arguments, result, loaded
                )
            except RevisionNeededError as refused:
                proposal.require_revision(_revision(refused.reason))
            except EffectAlreadyRecordedError:
                # Another process (an approver that woke up, or the reconciler) already
                # recorded this same provider answer.
                return Answer(self._report(proposal, None))
            self.faults.reached("before_outcome_commit")
            return Commit([proposal, *loaded.aggregates(), *retired], self._report(proposal, None))

        try:
            settled = self.store.decide(Reads([execution.proposal_id]), settlement)
        except ConcurrencyConflictError:
            log.error(
                "could not record provider answer for %s; the reconciler will",
                execution.proposal_id,
            )
            return self._report(self._reload(execution.proposal_id), None)
        self.faults.reached("after_outcome_commit")
        return settled

    @staticmethod
    def _retire(
        facts: Repository,
        contract: AnyContract,
        proposal: Proposal,
        arguments: Any,
        result: Any,
        loaded: Any,
    ) -> list[Proposal]:
        """Supersede the pending proposals on the same resource whose previews this success
        made stale (those of the operations the contract says it retires): withdrawn."""
        siblings = _siblings(facts, proposal, contract.retires(arguments, result, loaded))
        stale = [pending for sibling in siblings for pending in _pending(facts, sibling)]
        withdrawn = [(pending, SupersessionReason.WITHDRAWN) for pending in stale]
        return _supersede(withdrawn, proposal.id)

    def withdrawn_by_approving(self, proposal: Proposal) -> list[Proposal]:
        """The pending proposals that approving ``proposal`` would withdraw, were it carried
        out now: what its contract says a success would retire (``would_retire``), judged on
        the facts as they are. The review warns of them before anyone approves. None for a
        proposal that is not pending, nor expired ones, which nobody can approve anyway."""
        contract = self.registry.get(proposal.kind)
        if proposal.status != ProposalStatus.PENDING or contract is None:
            return []
        facts = _ReadOnlyFacts(self.store)
        try:
            arguments = contract.decode_arguments(proposal.arguments)
            retired = contract.would_retire(arguments, contract.load(proposal.scope, facts))
        except CountersignError:
            return []  # approving it fails closed, and withdraws nothing
        now = self.clock.now()
        withdrawn = []
        for sibling_id in _siblings(facts, proposal, retired):
            with contextlib.suppress(NotFoundError):
                sibling = self.store.read(sibling_id, Proposal)
                if sibling.status == ProposalStatus.PENDING and not sibling.is_expired_at(now):
                    withdrawn.append(sibling)
        return withdrawn

    def _revise(
        self, proposal: Proposal, reason: RevisionReason
    ) -> Commit[ApprovalReport | _CallOut | _Failed]:
        """The claim's commit records RevisionRequired: nothing executes."""
        proposal.require_revision(_revision(reason))
        return Commit([proposal], self._report(proposal, None))

    def _fail(
        self, proposal: Proposal, error_class: str, *, exc_info: bool = False
    ) -> Commit[ApprovalReport | _CallOut | _Failed]:
        """The claim's commit records a terminal failure, with a correlation id that is logged
        once the commit stands (``approve``), never from inside the decision."""
        correlation_id = new_correlation_id()
        proposal.fail(_dump(TerminalFailure(correlation_id=correlation_id)), error_class)
        failed = _Failed(
            self._report(proposal, None),
            proposal.id,
            error_class,
            correlation_id,
            sys.exc_info() if exc_info else None,
        )
        return Commit([proposal], failed)

    # -- decline ------------------------------------------------------------------------------

    def decline(
        self, proposal_id: str, actor: str | Caller, note: str | None = None
    ) -> ApprovalReport:
        """Decline a pending proposal; the outcome is RevisionRequired(declined_by_manager).

        Of two declines racing (the same member's too), one answers ``declined``; the other
        lost to it and answers like any repeat, from the stored state. AgentCannotDecideError
        for an agent token.
        """
        caller = Caller.of(actor)
        try:
            pid = parse_id(proposal_id, "proposal")
            return self.store.decide(
                Reads([pid]), lambda facts: self._decline(facts, pid, caller, note)
            )
        except NotFoundError:
            # An unknown id, and another tenant's proposal, get the same answer, echo included.
            return self._not_approvable(proposal_id, None, NotApprovableReason.NOT_FOUND)

    def _decline(
        self, facts: Repository, pid: UUID, caller: Caller, note: str | None
    ) -> Commit[ApprovalReport] | Answer[ApprovalReport]:
        proposal = facts.get(pid, Proposal)
        member = member_of(facts, proposal.organization_id, caller.email)
        contract = self.registry.get(proposal.kind)
        if contract is None or not member.may(contract.permission):
            return Answer(self._report(proposal, NotApprovable(NotApprovableReason.FORBIDDEN)))
        require_decider(caller)
        decided = self._decided(proposal)
        if decided is not None:
            return Answer(self._report(proposal, decided))
        clean_note = note.strip()[:500] if note and note.strip() else None
        proposal.decline(
            member.email,
            clean_note,
            _revision(RevisionReason(code="declined_by_manager")),
            credential=caller.recorded_credential,
        )
        declined = ApprovalReport(
            result="declined",
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            outcome=proposal.outcome,
            reason=None,
            message=self.message(proposal),
        )
        return Commit([proposal], declined)

    # -- sweepers -----------------------------------------------------------------------------

    def expire_due(self) -> list[SweepReport]:
        """Record Expired for every pending proposal past its expiry."""
        reports = []
        now = self.clock.now()
        for proposal_id in self.open_work.expiry_candidates(now):
            with contextlib.suppress(NotFoundError):
                expired = self.store.decide(
                    Reads([proposal_id]), partial(self._expire_if_due, proposal_id, now)
                )
                if expired is not None:
                    reports.append(expired)
        return reports

    @staticmethod
    def _expire_if_due(
        proposal_id: UUID, now: datetime, facts: Repository
    ) -> Commit[SweepReport | None] | Answer[SweepReport | None]:
        """Expire the proposal if it is pending and past its expiry; else nothing to do."""
        proposal = facts.get(proposal_id, Proposal)
        if proposal.status != ProposalStatus.PENDING or not proposal.is_expired_at(now):
            return Answer(None)
        proposal.expire(now)
        return Commit(
            [proposal], SweepReport(str(proposal.id), "expired", str(proposal.status), None)
        )

    def reconcile(self) -> list[SweepReport]:
        """Settle uncertain external effects under their original idempotency keys.

        Candidates: proposals that are Reconciling, and proposals Claimed longer than the
        lease without an outcome (a crash between commits). The contract describes the request
        again, under the stored key, and the provider is asked what it holds for the key. Only
        if it holds nothing is that request replayed, unchanged and under the same key, so an
        original that arrives late (a paused process) cannot pay twice. Never a new request
        under a new key.
        """
        reports = []
        now = self.clock.now()
        for proposal_id in self.open_work.reconciliation_candidates(now - self.lease):
            proposal = self._load(str(proposal_id))
            if proposal is None:
                continue
            stuck = (
                proposal.status == ProposalStatus.EXECUTING
                and proposal.claimed_at is not None
                and proposal.claimed_at + self.lease <= now
            )
            if proposal.status == ProposalStatus.RECONCILING or stuck:
                try:
                    reports.append(self._reconcile_one(proposal))
                except Exception:
                    # One unreadable or misbehaving candidate must not block all the others.
                    correlation_id = new_correlation_id()
                    log.exception(
                        "reconciling %s failed, correlation id %s", proposal.id, correlation_id
                    )
                    reports.append(
                        SweepReport(
                            str(proposal.id), f"error {correlation_id}", str(proposal.status), None
                        )
                    )
        return reports

    def _reconcile_one(self, proposal: Proposal) -> SweepReport:
        contract = self.registry[proposal.kind]
        execution = ExecutionContract(
            proposal_id=proposal.id,
            kind=proposal.kind,
            scope=proposal.scope,
            arguments=contract.decode_arguments(proposal.arguments),
            approved_by=proposal.approved_by or "",
            approved_at=proposal.approved_at or self.clock.now(),
            attempt_id=proposal.attempt_id or uuid4(),
        )
        key = proposal.idempotency_key or contract.idempotency_key(proposal.id)
        uncertain = SweepReport(str(proposal.id), "still_uncertain", str(proposal.status), None)
        # The request the approval sent, or was about to send, described again: a contract
        # describes the same request every time, under the same key.
        facts = contract.load(execution.scope, _ReadOnlyFacts(self.store))
        effect = contract.describe_external(execution, facts)
        if effect.idempotency_key != key:
            log.error("proposal %s: stored key differs from the contract's", proposal.id)
            return uncertain
        provider = self.providers[effect.provider]
        try:
            response = provider.lookup(key)
        except EffectResponseLostError:
            return uncertain
        action = "settled"
        if response is None:
            action = "replayed"
            self.faults.reached("reconcile_before_replay")
            try:
                response = provider.perform(key, effect.payload())
            except Exception:
                if proposal.status == ProposalStatus.EXECUTING:
                    self._start_reconciling(proposal.id, key)
                current = self._reload(proposal.id)
                return SweepReport(str(current.id), "still_uncertain", str(current.status), None)
            self.faults.reached("reconcile_after_replay")
        report = self._settle(contract, execution, response)
        return SweepReport(report.proposal_id, action, report.status or "", report.outcome)

    def settling(self, status: str, claimed_at: datetime | None) -> Settling | None:
        """How an executing or reconciling proposal's wait for its provider's answer stands
        (since when, whether it is overdue, whether a reconciler runs); None for any other."""
        if status not in (ProposalStatus.EXECUTING, ProposalStatus.RECONCILING):
            return None
        if claimed_at is None:
            return None
        return settling_of(claimed_at, self.clock.now(), self.lease, self._last_reconcile())

    def overdue_claims_before(self) -> datetime:
        """Proposals claimed by this moment and still executing or reconciling are overdue
        (``settling``): they need someone's attention."""
        last = self._last_reconcile()
        every = last.every if last is not None else DEFAULT_EVERY
        return self.clock.now() - self.lease - every

    def _last_reconcile(self) -> SweeperPass | None:
        return self.passes.last(RECONCILE) if self.passes is not None else None

    # -- helpers ------------------------------------------------------------------------------

    def _load(self, proposal_id: str) -> Proposal | None:
        try:
            return self.store.get(parse_id(proposal_id, "proposal"), Proposal)
        except NotFoundError:
            return None

    def _reload(self, proposal_id: UUID) -> Proposal:
        return self.store.get(proposal_id, Proposal)

    @staticmethod
    def _decided(proposal: Proposal) -> AlreadyCompleted | NotApprovable | None:
        """The answer a non-pending proposal gives to an approval, from its stored state."""
        if proposal.status == ProposalStatus.PENDING:
            return None
        if proposal.status == ProposalStatus.EXECUTING:
            return NotApprovable(NotApprovableReason.IN_PROGRESS)
        if proposal.status == ProposalStatus.EXPIRED:
            return NotApprovable(NotApprovableReason.EXPIRED)
        if proposal.status == ProposalStatus.DECLINED:
            return NotApprovable(NotApprovableReason.NOT_PENDING)
        if proposal.status == ProposalStatus.SUPERSEDED:
            return NotApprovable(NotApprovableReason.SUPERSEDED)
        assert proposal.outcome is not None
        return AlreadyCompleted(proposal.outcome)

    def _report(
        self, proposal: Proposal, answer: AlreadyCompleted | NotApprovable | None
    ) -> ApprovalReport:
        if isinstance(answer, NotApprovable):
            superseded = answer.reason == NotApprovableReason.SUPERSEDED
            return ApprovalReport(
                result="not_approvable",
                proposal_id=str(proposal.id),
                status=str(proposal.status),
                outcome=None,
                reason=str(answer.reason),
                message=None,
                superseded_by=str(proposal.superseded_by) if superseded else None,
                superseded_reason=proposal.superseded_reason if superseded else None,
            )
        return ApprovalReport(
            result="already_completed" if answer else "executed",
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            # The caller's own copy: a finished proposal may be the shared snapshot.
            outcome=_own(proposal.outcome),
            reason=None,
            message=self.message(proposal),
        )

    @staticmethod
    def _awaiting(proposal: Proposal, *, again: bool = False) -> ApprovalReport:
        """A pending proposal's answer to an approval its quorum still needs more than."""
        return ApprovalReport(
            result="awaiting_approvals",
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            outcome=None,
            reason="already_approved_by_you" if again else None,
            message=None,
            approvals=len(proposal.approvals),
            required=proposal.approvals_required,
            no_longer_counting=[dict(lapsed) for lapsed in proposal.lapsed_approvals] or None,
        )

    @staticmethod
    def _not_approvable(
        proposal_id: str, status: str | None, reason: NotApprovableReason
    ) -> ApprovalReport:
        return ApprovalReport(
            result="not_approvable",
            proposal_id=proposal_id,
            status=status,
            outcome=None,
            reason=str(reason),
            message=None,
        )


class ScanOpenWork:
    """The OpenWorkIndex port by scanning the log: no read model needed, O(proposals).

    Production wiring uses the ``open_work`` projection instead; this serves services built
    without one. The sweepers re-check every candidate's state, so a superset is fine.
    """

    def __init__(self, store: AggregateStore) -> None:
        self.store = store

    def expiry_candidates(self, now: datetime) -> list[UUID]:
        return list(self.store.ids_with_events(Proposal, ["Proposed"]))

    def reconciliation_candidates(self, claimed_before: datetime) -> list[UUID]:
        return list(self.store.ids_with_events(Proposal, ["Claimed"]))


class _ReadOnlyFacts:
    """The facts a proposal is prepared from: nothing preparing does changes them, so the
    contract reads the shared state itself, not a private copy of it."""

    def __init__(self, facts: Repository) -> None:
        self._facts = facts

    def get(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self._facts.read(aggregate_id, as_type)

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self._facts.read(aggregate_id, as_type)
