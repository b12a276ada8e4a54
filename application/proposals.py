"""The proposal service: propose, revise, approve and decline.

``approve`` follows the article's approve path step by step (docs/design.md, "The approve
path"): its steps up to the claim commit are approve_path.py's, the service's base. The model
is never involved: approval is an authenticated command carrying only the proposal's id.
What follows a committed claim of an external operation (the provider call,
and recording its answer) is settlement.py's; the sweepers that expire and reconcile are in
sweepers.py, and the read side (the reviewer's card) in cards.py.

Each step that reads facts and records what it decided on them is one *decision*: a function
of what it reads that returns the commit to make (``Commit``) or the answer to give without
one (``Answer``), carried out by the store's unit of work (``decide``, application/ports.py).
How the reads are served and checked, and when a decision is taken again, is the unit of
work's business (docs/concurrency.md): a decision only says what it decides.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from uuid import UUID

from countersign.application.approve_path import ApprovePath, challenge_refusal, claim_reads
from countersign.application.authorization import (
    Caller,
    damaged_or_unknown,
    member_of,
    membership,
    require_all,
    require_decider,
    require_scope,
    undecidable,
)
from countersign.application.errors import (
    CorruptRecordError,
    NotApprovableError,
    NotRevisableError,
    UnknownOperationError,
    parse_id,
)
from countersign.application.freezing import clean_origin, freeze, freezing_reads
from countersign.application.passkeys import PasskeyStep
from countersign.application.policy_recheck import challenge_refused
from countersign.application.ports import (
    AggregateStore,
    Answer,
    Clock,
    Commit,
    Reads,
)
from countersign.application.reports import (
    ApprovalReport,
    ProposalCreated,
    approval_report,
    not_found,
    outcome_text,
)
from countersign.application.revision_problems import every_problem
from countersign.application.seal_check import KeyNotHeld, Unverified
from countersign.application.settlement import (
    CallOut,
    Failed,
    Settlement,
    revision_required,
)
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import (
    NotApprovable,
    RevisionReason,
)
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal
from countersign.domain.proposal_status import PENDING
from countersign.domain.seals import SealKeys
from countersign.domain.visible_text import visible_only

log = logging.getLogger("countersign.proposals")


class ProposalService(ApprovePath):
    """Turns validated requests into proposals, and approvals into exactly-once executions."""

    def __init__(
        self,
        store: AggregateStore,
        settlement: Settlement,
        clock: Clock,
        *,
        registry: Mapping[str, AnyContract] = REGISTRY,
        ttl: timedelta = timedelta(days=1),
        passkeys: PasskeyStep | None = None,
        seals: SealKeys | None = None,
    ) -> None:
        self.store = store
        #: Calls a claimed external operation's provider and records how it ends.
        self.settlement = settlement
        #: Checks the passkey a proposal's policy may require (None: no passkey can be
        #: checked, so a proposal that requires one cannot be approved).
        self.passkeys = passkeys
        #: The seal keys held outside the database (COUNTERSIGN_SEAL_KEYS): new proposals
        #: are sealed, and one is approved only if its seal verifies (seal_check.py). None:
        #: neither, the chain alone (docs/design.md, "Seals").
        self.seals = seals
        self.clock = clock
        self.registry = registry
        self.ttl = ttl

    # -- propose ------------------------------------------------------------------------------

    def propose(
        self,
        *,
        organization: str,
        actor: str | Caller,
        operation: str,
        resource_id: str,
        request: Any,
        interaction_id: str | None = None,
        origin: Mapping[str, str] | None = None,
    ) -> ProposalCreated:
        """Validate the model's request and freeze it as a pending proposal; the pending one
        for the same thing, if any, is superseded in the same commit. ``actor``: the
        requester's email, or the Caller with the token (and its scopes) they presented.

        Raises UnknownOperationError, NotFoundError (unknown or foreign organization or
        resource, or a non-member), ForbiddenError, or InvalidRequestError with problems.
        """
        caller = Caller.of(actor)
        contract = self.registry.get(operation)
        if contract is None:
            raise UnknownOperationError(operation)
        require_scope(caller, contract.permission)
        parsed = contract.parse_request(request)
        organization_id = Organization.create_id(organization.strip().lower())
        scope = contract.scope(organization_id, resource_id)
        now = self.clock.now()
        return self.store.decide(
            freezing_reads(contract, scope),
            lambda store: freeze(
                store,
                contract,
                parsed,
                scope,
                caller,
                interaction_id=interaction_id,
                expires_at=now + self.ttl,
                now=now,
                origin=clean_origin(origin),
                seals=self.seals,
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
        pid = parse_id(proposal_id, "proposal")
        original = self.store.get(pid, Proposal)
        if not caller.acts_in(original.organization_id):
            raise NotFoundError("proposal")  # another club's is unknown, as for approve
        member = member_of(self.store, original.organization_id, caller.email)
        require_decider(caller)
        contract = self.registry.get(original.kind)
        if contract is None:
            raise NotRevisableError(str(original.status))
        try:
            parsed = contract.parse_request(request)
        except InvalidRequestError:
            # Its fields' problems, and what the valid ones name that the facts lack: at once
            # (the facts told only to whom freezing it would tell them).
            require_all(caller, member, contract.permission)
            problems = every_problem(self.store, contract, original, request)
            raise InvalidRequestError(problems) from None
        reads = freezing_reads(contract, original.scope)
        now = self.clock.now()
        return self.store.decide(
            Reads([*reads.ids, pid], targets=reads.targets),
            lambda store: freeze(
                store,
                contract,
                parsed,
                original.scope,
                caller,
                interaction_id=original.interaction_id,
                expires_at=now + self.ttl,
                now=now,
                revision_of=store.get(pid, Proposal),
                seals=self.seals,
            ),
        )

    # -- approve ------------------------------------------------------------------------------

    def approve(
        self,
        proposal_id: str,
        actor: str | Caller,
        passkey_assertion: Mapping[str, Any] | None = None,
        *,
        seen: Proposal | None = None,
    ) -> ApprovalReport:
        """Claim the proposal exactly once, revalidate, execute, and record the outcome.

        ``actor``: the approver's email (a person), or the Caller with the credential they
        presented. ``passkey_assertion``: ``{"nonce", "credential"}``, the answer of the
        approver's authenticator to ``approval_challenge`` (needed where the proposal's
        policy requires a passkey). ``seen``: the proposal as the caller's checks just read
        it, if they did: only a hint of what the claim will read (``claim_reads``), never
        what it decides on.

        Raises AgentCannotDecideError for an agent token, and ConcurrencyConflictError only
        if the claim kept losing races on shared facts
        (another proposal kept changing the same record): nothing was claimed; try again.
        """
        caller = Caller.of(actor)
        try:
            pid = parse_id(proposal_id, "proposal")
            claimed = self.store.decide(
                Reads([pid] if seen is None else [pid, *claim_reads(seen)]),
                lambda store: self._claim(store, pid, caller, passkey_assertion),
            )
        except NotFoundError:
            # An unknown id, and another tenant's proposal, get the same answer, echo included.
            return not_found(proposal_id)
        except CorruptRecordError as damaged:
            return self._damaged(proposal_id, pid, caller, damaged)
        if isinstance(claimed, CallOut):
            return self.settlement.call_out(claimed)
        if isinstance(claimed, (Failed, Unverified, KeyNotHeld)):
            claimed.log()  # once its commit stands (a refused one has none): its id is stored
            return claimed.report
        return claimed

    def approval_challenge(self, proposal_id: str, actor: str | Caller) -> dict[str, Any]:
        """What an approver's authenticator signs to approve this proposal (``PasskeyStep``).
        NotFoundError for an unknown id, another club's, or a non-member (and where no
        passkey check is wired). NotApprovableError, with the ``not_approvable`` answer
        approving it gives, for one no longer open to approval (decided, being carried out,
        superseded, or past its expiry), or one this approver's approval cannot count for:
        its requester, whom the frozen policy or the one in force bars
        (``requester_may_not_approve``), or anyone when the policy in force asks more of it
        than the one it was frozen under (``policy_raised``: approving it sends it back, with
        no passkey), so nobody signs for nothing; nothing is recorded."""
        try:
            proposal = self.store.get(parse_id(proposal_id, "proposal"), Proposal)
        except NotFoundError:
            proposal = None
        caller = Caller.of(actor)
        if (
            proposal is None
            or self.passkeys is None
            or not caller.acts_in(proposal.organization_id)
        ):
            raise NotFoundError("proposal")
        club = self.store.read(proposal.organization_id, Organization)
        member = membership(club, caller.email)
        refused = challenge_refusal(proposal, self.clock.now()) or challenge_refused(
            proposal, club, self.registry.get(proposal.kind), member.email
        )
        if refused is not None:
            raise NotApprovableError(refused)
        return self.passkeys.challenge(self.store, proposal, member)

    # -- decline ------------------------------------------------------------------------------

    def decline(
        self, proposal_id: str, actor: str | Caller, note: str | None = None
    ) -> ApprovalReport:
        """Decline a pending proposal; the outcome is RevisionRequired(declined_by_manager).
        One past its expiry is recorded Expired and answered ``not_approvable`` ``expired``,
        as an approve of it is, whether or not the sweeper got there first.

        Of two declines racing (the same member's too), one answers ``declined``; the other
        lost to it and answers like any repeat, from the stored state. AgentCannotDecideError
        for an agent token.
        """
        caller = Caller.of(actor)
        try:
            pid = parse_id(proposal_id, "proposal")
            return self.store.decide(
                Reads([pid]), lambda store: self._decline(store, pid, caller, note)
            )
        except NotFoundError:
            # An unknown id, and another tenant's proposal, get the same answer, echo included.
            return not_found(proposal_id)
        except CorruptRecordError as damaged:
            return self._damaged(proposal_id, pid, caller, damaged)

    def _damaged(
        self, proposal_id: str, pid: UUID, caller: Caller, damaged: CorruptRecordError
    ) -> ApprovalReport:
        """The answer to deciding a proposal whose record does not read: its own club is
        told of the damage (CorruptRecordError, with its reference); anyone else gets the
        unknown id's answer (``damaged_or_unknown``)."""
        told = damaged_or_unknown(self.store, caller, pid, damaged)
        if isinstance(told, NotFoundError):
            return not_found(proposal_id)
        raise told

    def _decline(
        self, store: Repository, pid: UUID, caller: Caller, note: str | None
    ) -> Commit[ApprovalReport] | Answer[ApprovalReport]:
        proposal = store.get(pid, Proposal)
        if not caller.acts_in(proposal.organization_id):
            raise NotFoundError("proposal")  # as the approve path: another club's is unknown
        member = member_of(store, proposal.organization_id, caller.email)
        contract = self.registry.get(proposal.kind)
        refused = undecidable(contract, caller, member)
        if refused is not None:
            return Answer(approval_report(proposal, NotApprovable(refused)))
        assert contract is not None  # undecidable: an unknown kind is refused
        require_decider(caller)
        now = self.clock.now()
        if proposal.status != PENDING or proposal.is_expired_at(now):
            # As an approve's step 3: a decided one answers from its stored state, and one
            # past its expiry lapsed, whether or not the sweeper recorded it yet (Expired is
            # recorded now, and the answer is an approve's, not a decline).
            return self._closed_to_approval(proposal, now)
        note = visible_only(note).strip() if note else None
        clean_note = note[:500] if note else None
        proposal.decline(
            member.email,
            clean_note,
            revision_required(RevisionReason(code="declined_by_manager")),
            credential=caller.recorded_credential,
        )
        declined = ApprovalReport(
            result="declined",
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            outcome=proposal.outcome,
            reason=None,
            message=outcome_text(proposal),
        )
        return Commit([proposal], declined)
