"""The proposal service: propose, approve, decline, expire and reconcile.

``approve`` follows DESIGN.md's approve path step by step. The model is never involved:
approval is an authenticated command carrying only the proposal's id.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from application.authorization import member_of, membership, organization_by_slug, require
from application.errors import UnknownOperationError, new_correlation_id, parse_id
from application.ports import AggregateStore, OpenWorkIndex, StoredEventView
from application.reports import ApprovalReport, ProposalCard, ProposalCreated, SweepReport
from domain.club.organization import Organization
from domain.contracts import REGISTRY, AnyContract
from domain.contracts.base import (
    ExternalCall,
    Facts,
    RevisionNeededError,
    UndecodableContractError,
)
from domain.errors import (
    ConcurrencyConflictError,
    CountersignError,
    NotFoundError,
    OrderRuleError,
    StaleReadError,
)
from domain.messages import outcome_message
from domain.outcomes import (
    AlreadyCompleted,
    Claimed,
    ExecutionContract,
    NeedsReconciliation,
    NotApprovable,
    NotApprovableReason,
    RevisionReason,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from domain.ports import (
    A,
    Clock,
    PaymentProvider,
    ProviderRefund,
    ProviderResponseLostError,
)
from domain.proposal import Proposal, ProposalStatus, contract_digest
from domain.scope import Scope

log = logging.getLogger("countersign.proposals")


class _ReadAgain:
    """An approval round's answer: "decide that again on fresh reads"."""


_READ_AGAIN = _ReadAgain()


@dataclass(frozen=True)
class _ClaimedExternal:
    """An approval round's answer: "claimed; now call the provider" - outside the read blocks,
    since once the claim has committed, nothing read before it may stop its outcome."""

    proposal: Proposal
    contract: AnyContract
    execution: ExecutionContract[Any]
    call: ExternalCall
    facts: Facts


_RoundAnswer = ApprovalReport | _ReadAgain | _ClaimedExternal | None

STATUS_PATH = "/api/v1/proposals/{proposal_id}/status"
_SETTLE_ATTEMPTS = 5
_CLAIM_ROUNDS = 12
_PROPOSE_ATTEMPTS = 8
_REMEMBERED_SCOPES = 10_000


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


class ProposalService:
    """Turns validated requests into proposals, and approvals into exactly-once executions."""

    def __init__(
        self,
        store: AggregateStore,
        provider: PaymentProvider,
        clock: Clock,
        *,
        registry: Mapping[str, AnyContract] = REGISTRY,
        ttl: timedelta = timedelta(days=1),
        lease: timedelta = timedelta(seconds=60),
        open_work: OpenWorkIndex | None = None,
    ) -> None:
        self.store = store
        self.open_work = open_work or ScanOpenWork(store)
        self._scopes: dict[UUID, list[UUID]] = {}  # proposal id -> the ids approve will read
        self.provider = provider
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
    ) -> ProposalCreated:
        """Validate the model's request and freeze it as a pending proposal.

        Raises UnknownOperationError, NotFoundError (unknown or foreign organization or
        resource, or a non-member), ForbiddenError, or InvalidRequestError with problems.
        """
        contract = self.registry.get(operation)
        if contract is None:
            raise UnknownOperationError(operation)
        parsed = contract.parse_request(request)
        organization_id = Organization.create_id(organization.strip().lower())
        scope = Scope(organization_id, contract.section, parse_id(resource_id, "resource"))
        ids = [organization_id, *contract.preload_ids(scope)]
        for attempt in range(_PROPOSE_ATTEMPTS):
            if attempt > 1:
                # Facts it depends on keep changing: back off with jitter, then read again.
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2**attempt)))  # noqa: S311
            try:
                # First on what this process already holds; the commit checks every fact read.
                with self.store.preload(
                    ids, optimistic=attempt == 0, unchecked=contract.targets_only(scope)
                ):
                    proposal = self._freeze(
                        contract, parsed, scope, organization, actor, interaction_id
                    )
                    self._save_new(proposal)
                break
            except StaleReadError:
                continue  # a fact moved on between our read and our commit: decide again
            except CountersignError:
                if attempt == 0:
                    continue  # a refusal is only ever given from fresh reads
                raise
        else:
            raise ConcurrencyConflictError("the facts of this request keep changing; try again")
        self._remember(proposal)
        return ProposalCreated(
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            operation=proposal.kind,
            # The caller's own copy: the proposal object is now the shared snapshot.
            preview=_own(proposal.preview),
            expires_at=proposal.expires_at,
        )

    def _save_new(self, proposal: Proposal) -> None:
        try:
            self.store.save(proposal, final=True)  # read below, never changed
        except StaleReadError as stale:
            # A retried insert (the connection dropped after the first attempt committed) is
            # checked against facts that may have moved on since: ours may be stored already.
            try:
                self._reload(proposal.id)
            except NotFoundError:
                raise stale from None
        except ConcurrencyConflictError:
            # A fresh random id cannot collide with another writer: the conflict is a retried
            # insert reporting our own committed write. Make sure (NotFoundError if not).
            self._reload(proposal.id)

    def _freeze(
        self,
        contract: AnyContract,
        parsed: Any,
        scope: Scope,
        organization: str,
        actor: str,
        interaction_id: str | None,
    ) -> Proposal:
        """Check the requester, resolve the contract against the facts, freeze the proposal."""
        org = organization_by_slug(self.store, organization)
        member = membership(org, actor)
        require(member, contract.permission)
        # Read-only: nothing here changes them, so the contract reads the shared state.
        facts = contract.load(scope, _ReadOnlyFacts(self.store))
        prepared = contract.prepare(parsed, facts)
        arguments = prepared.arguments.model_dump(mode="json")
        preview = prepared.preview.model_dump(mode="json")
        return Proposal.propose(
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
        )

    # -- read ---------------------------------------------------------------------------------

    def card(self, proposal_id: str, actor: str, language: str = "en") -> ProposalCard:
        """The reviewer's card. NotFoundError for an unknown id or another tenant's."""
        proposal = self._load(proposal_id)
        if proposal is None:
            raise NotFoundError("proposal")
        member_of(self.store, proposal.organization_id, actor)
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
            outcome=proposal.outcome,
            message=self.message(proposal, language),
        )

    def message(self, proposal: Proposal, language: str = "en") -> str | None:
        """The app-authored text for the proposal's outcome, if it has one."""
        if proposal.outcome is None:
            return None
        return outcome_message(proposal.kind, proposal.preview, proposal.outcome, language)

    # -- approve ------------------------------------------------------------------------------

    def approve(self, proposal_id: str, actor: str) -> ApprovalReport:
        """Claim the proposal exactly once, revalidate, execute, and record the outcome.

        Raises ConcurrencyConflictError only if every round lost a race on shared facts
        (another proposal kept changing the same record): nothing was claimed; try again.
        """
        # The first reads come from what this process holds (no query), checked by the commit
        # they lead to; an answer that commits nothing is only given from fresh reads.
        optimistic = True
        round_number = 0
        while round_number < _CLAIM_ROUNDS:
            if round_number:
                # Someone else changed a fact we act on; back off with jitter, then re-read.
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2**round_number)))  # noqa: S311
            # A proposal whose scope this process knows is read with its facts in one query.
            with self.store.preload(self._known_ids(proposal_id), optimistic=optimistic):
                proposal = self._load(proposal_id)
                if proposal is None:
                    report: _RoundAnswer = _READ_AGAIN
                    if not optimistic:
                        report = self._not_approvable(
                            proposal_id, None, NotApprovableReason.NOT_FOUND
                        )
                else:
                    self._remember(proposal)
                    contract = self.registry.get(proposal.kind)
                    with self.store.preload(
                        self._facts_ids(proposal, contract), optimistic=optimistic
                    ):
                        report = self._approve_round(
                            proposal, contract, actor, proposal_id, fresh=not optimistic
                        )
            if isinstance(report, _ReadAgain):
                optimistic = False
                continue
            if isinstance(report, _ClaimedExternal):
                claimed = report
                return self._call_provider(
                    claimed.proposal,
                    claimed.contract,
                    claimed.execution,
                    claimed.call,
                    claimed.facts,
                )
            if report is not None:
                return report
            round_number += 1
        log.warning("approval of %s lost %d races on shared facts", proposal_id, _CLAIM_ROUNDS)
        raise ConcurrencyConflictError("the facts this proposal acts on keep changing; try again")

    def _remember(self, proposal: Proposal) -> None:
        """A proposal's scope never changes after Proposed, so it is safe to remember."""
        if proposal.id not in self._scopes:
            if len(self._scopes) >= _REMEMBERED_SCOPES:
                self._scopes.pop(next(iter(self._scopes)), None)
            self._scopes[proposal.id] = self._facts_ids(proposal, self.registry.get(proposal.kind))

    def _known_ids(self, proposal_id: str) -> list[UUID]:
        try:
            pid = parse_id(proposal_id, "proposal")
        except NotFoundError:
            return []
        facts = self._scopes.get(pid)
        return [pid, *facts] if facts is not None else []

    @staticmethod
    def _facts_ids(proposal: Proposal, contract: AnyContract | None) -> list[UUID]:
        """What one approval reads besides the proposal: fetched in a single round trip."""
        ids = [proposal.organization_id]
        if contract is not None:
            with contextlib.suppress(ValueError):  # a corrupt scope is reported later
                ids += contract.preload_ids(proposal.scope)
        return ids

    def _approve_round(
        self,
        proposal: Proposal,
        contract: AnyContract | None,
        actor: str,
        asked_id: str,
        *,
        fresh: bool,
    ) -> _RoundAnswer:
        """One attempt at the approve path; None means "lost a race, start again".

        Unless the reads were ``fresh``, an answer that would commit nothing is not given:
        _READ_AGAIN asks for the same round on fresh reads.
        """
        try:
            member = member_of(self.store, proposal.organization_id, actor)
        except NotFoundError:
            if not fresh:
                return _READ_AGAIN
            # Another tenant's proposal answers exactly like an unknown one, echo included.
            return self._not_approvable(asked_id, None, NotApprovableReason.NOT_FOUND)
        if contract is None or not member.may(contract.permission):
            if not fresh:
                return _READ_AGAIN
            # An unknown kind fails closed: nobody holds the permission it would need.
            return self._report(proposal, NotApprovable(NotApprovableReason.FORBIDDEN))
        decided = self._decided(proposal)
        if decided is not None:
            if not fresh:
                return _READ_AGAIN
            return self._report(proposal, decided)
        now = self.clock.now()
        if proposal.is_expired_at(now):
            proposal.expire(now)
            if self._try_save(proposal):
                return self._report(proposal, NotApprovable(NotApprovableReason.EXPIRED))
            return None
        return self._claim_and_execute(proposal, contract, member.email)

    def _claim_and_execute(
        self, proposal: Proposal, contract: AnyContract | None, actor: str
    ) -> ApprovalReport | _ClaimedExternal | None:
        """One claim commit; None means "lost a race on the facts, start again"."""
        now = self.clock.now()
        attempt_id = uuid4()
        proposal.approve_and_claim(actor, now, attempt_id)
        try:
            if contract is None:
                raise UndecodableContractError(proposal.kind)
            arguments = contract.decode_arguments(proposal.arguments)
        except UndecodableContractError:
            return self._fail_and_commit(proposal, attempt_id, "UndecodableContractError")
        stored_digest = contract_digest(
            proposal.kind, proposal.contract_version, proposal.arguments, proposal.preview
        )
        if stored_digest != proposal.digest:
            # What would run is not what the approver was shown: never execute it.
            return self._fail_and_commit(proposal, attempt_id, "ContractDigestMismatch")
        claim = Claimed(
            ExecutionContract(
                proposal_id=proposal.id,
                kind=proposal.kind,
                scope=proposal.scope,
                arguments=arguments,
                approved_by=actor,
                approved_at=now,
                attempt_id=attempt_id,
            )
        )
        execution = claim.contract
        try:
            facts = contract.load(execution.scope, self.store)
            checked = contract.revalidate(arguments, facts)
        except NotFoundError:
            proposal.require_revision(_revision(RevisionReason(code="resource_unavailable")))
            return self._commit_claim(proposal, [], attempt_id)
        except RevisionNeededError as stale:
            proposal.require_revision(_revision(stale.reason))
            return self._commit_claim(proposal, [], attempt_id)
        proposal.record_revalidated(checked)

        if not contract.is_external(arguments):
            try:
                result = contract.execute(execution, facts)
            except Exception:
                return self._fail_and_commit(proposal, attempt_id, "ExecutionError", exc_info=True)
            proposal.succeed(_dump(Succeeded(result=result.model_dump(mode="json"))))
            return self._commit_claim(proposal, facts.aggregates(), attempt_id)

        call = contract.start_external(execution, facts)
        report = self._commit_claim(proposal, facts.aggregates(), attempt_id)
        if report is None or report.result != "executed":
            return report
        return _ClaimedExternal(proposal, contract, execution, call, facts)

    def _call_provider(
        self,
        proposal: Proposal,
        contract: AnyContract,
        execution: ExecutionContract[Any],
        call: ExternalCall,
        facts: Facts,
    ) -> ApprovalReport:
        try:
            refund = self.provider.refund(
                idempotency_key=call.idempotency_key,
                charge_id=call.charge_id,
                amount_cents=call.amount_cents,
                metadata=call.metadata,
            )
        except ProviderResponseLostError:
            return self._start_reconciling(proposal, call.idempotency_key)
        except Exception:
            # Anything unexpected once a request may have left is uncertain, never a retry.
            log.exception("provider call for proposal %s ended unexpectedly", proposal.id)
            return self._start_reconciling(proposal, call.idempotency_key)
        return self._settle(proposal, contract, execution, refund, facts)

    def _start_reconciling(self, proposal: Proposal, key: str) -> ApprovalReport:
        status_path = STATUS_PATH.format(proposal_id=proposal.id)
        proposal.start_reconciling(_dump(NeedsReconciliation(status_path=status_path)), key)
        if not self._try_save(proposal):
            proposal = self._reload(proposal.id)
        return self._report(proposal, None)

    def _settle(
        self,
        proposal: Proposal,
        contract: AnyContract,
        execution: ExecutionContract[Any],
        refund: ProviderRefund,
        facts: Facts | None = None,
    ) -> ApprovalReport:
        """Record the provider's authoritative answer with the domain change, in one commit.

        ``facts`` are the aggregates as the claim commit left them; they are reused for the
        first try and reloaded only after a conflict.
        """
        for _ in range(_SETTLE_ATTEMPTS):
            if facts is None:
                facts = contract.load(execution.scope, self.store)
            try:
                result = contract.finish_external(execution, facts, refund)
                proposal.succeed(_dump(Succeeded(result=result.model_dump(mode="json"))))
            except RevisionNeededError as refused:
                proposal.require_revision(_revision(refused.reason))
            except OrderRuleError:
                # The attempt is no longer pending: another process (an approver that woke up,
                # or the reconciler) already recorded this same provider answer.
                return self._report(self._reload(proposal.id), None)
            if self._try_save(proposal, *facts.aggregates(), final=True):
                return self._report(proposal, None)
            facts = None
            proposal = self._reload(proposal.id)
            if proposal.is_finished:
                return self._report(proposal, None)
        log.error("could not record provider answer for %s; the reconciler will", proposal.id)
        return self._report(self._reload(proposal.id), None)

    def _fail_and_commit(
        self, proposal: Proposal, attempt_id: UUID, error_class: str, *, exc_info: bool = False
    ) -> ApprovalReport | None:
        correlation_id = new_correlation_id()
        log.error(
            "terminal failure for proposal %s (%s), correlation id %s",
            proposal.id,
            error_class,
            correlation_id,
            exc_info=exc_info,
        )
        proposal.fail(_dump(TerminalFailure(correlation_id=correlation_id)), error_class)
        return self._commit_claim(proposal, [], attempt_id)

    def _commit_claim(
        self, proposal: Proposal, aggregates: list[Any], attempt_id: UUID
    ) -> ApprovalReport | None:
        """Save the claim commit; on a conflict answer from the winner's state, or retry."""
        # A finished proposal (and what its commit changed) is only read from here on; an
        # external operation's claim goes on to the provider call.
        if self._try_save(proposal, *aggregates, final=proposal.is_finished):
            return self._report(proposal, None)
        current = self._reload(proposal.id)
        if current.attempt_id == attempt_id:
            # A retried insert reported a conflict with our own committed write.
            return self._report(current, None)
        decided = self._decided(current)
        if decided is not None:
            return self._report(current, decided)
        return None  # the proposal is still pending: another fact moved; start again

    # -- decline ------------------------------------------------------------------------------

    def decline(self, proposal_id: str, actor: str, note: str | None = None) -> ApprovalReport:
        """Decline a pending proposal; the outcome is RevisionRequired(declined_by_manager)."""
        proposal = self._load(proposal_id)
        if proposal is None:
            return self._not_approvable(proposal_id, None, NotApprovableReason.NOT_FOUND)
        try:
            member = member_of(self.store, proposal.organization_id, actor)
        except NotFoundError:
            return self._not_approvable(proposal_id, None, NotApprovableReason.NOT_FOUND)
        contract = self.registry.get(proposal.kind)
        if contract is None or not member.may(contract.permission):
            return self._report(proposal, NotApprovable(NotApprovableReason.FORBIDDEN))
        decided = self._decided(proposal)
        if decided is not None:
            return self._report(proposal, decided)
        clean_note = note.strip()[:500] if note and note.strip() else None
        outcome = _revision(RevisionReason(code="declined_by_manager"))
        proposal.decline(member.email, clean_note, outcome)
        if not self._try_save(proposal):
            current = self._reload(proposal.id)
            ours = current.status == ProposalStatus.DECLINED and current.declined_by == member.email
            if not ours:  # else a retried insert reported a conflict with our own decline
                return self._report(current, self._decided(current))
            proposal = current
        return ApprovalReport(
            result="declined",
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            outcome=proposal.outcome,
            reason=None,
            message=self.message(proposal),
        )

    # -- sweepers -----------------------------------------------------------------------------

    def expire_due(self) -> list[SweepReport]:
        """Record Expired for every pending proposal past its expiry."""
        reports = []
        now = self.clock.now()
        for proposal_id in self.open_work.expiry_candidates(now):
            proposal = self._load(str(proposal_id))
            if proposal is None or proposal.status != ProposalStatus.PENDING:
                continue
            if not proposal.is_expired_at(now):
                continue
            proposal.expire(now)
            if self._try_save(proposal):
                reports.append(SweepReport(str(proposal.id), "expired", str(proposal.status), None))
        return reports

    def reconcile(self) -> list[SweepReport]:
        """Settle uncertain external effects under their original idempotency keys.

        Candidates: proposals that are Reconciling, and proposals Claimed longer than the
        lease without an outcome (a crash between commits). The provider is first asked what
        it holds for the key. Only if it holds nothing is the original request replayed,
        unchanged and under the same key, so an original that arrives late (a paused process)
        cannot pay twice. Never a new request under a new key.
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
        try:
            refund = self.provider.find_refund(key)
        except ProviderResponseLostError:
            return SweepReport(str(proposal.id), "still_uncertain", str(proposal.status), None)
        action = "settled"
        if refund is None:
            facts = contract.load(execution.scope, self.store)
            call = contract.describe_external(execution, facts)
            if call.idempotency_key != key:
                log.error("proposal %s: stored key differs from the contract's", proposal.id)
                return SweepReport(str(proposal.id), "still_uncertain", str(proposal.status), None)
            action = "replayed"
            try:
                refund = self.provider.refund(
                    idempotency_key=call.idempotency_key,
                    charge_id=call.charge_id,
                    amount_cents=call.amount_cents,
                    metadata=call.metadata,
                )
            except Exception:
                if proposal.status == ProposalStatus.EXECUTING:
                    self._start_reconciling(proposal, key)
                current = self._reload(proposal.id)
                return SweepReport(str(current.id), "still_uncertain", str(current.status), None)
        report = self._settle(proposal, contract, execution, refund)
        return SweepReport(report.proposal_id, action, report.status or "", report.outcome)

    # -- helpers ------------------------------------------------------------------------------

    def _load(self, proposal_id: str) -> Proposal | None:
        try:
            return self.store.get(parse_id(proposal_id, "proposal"), Proposal)
        except NotFoundError:
            return None

    def _reload(self, proposal_id: UUID) -> Proposal:
        return self.store.get(proposal_id, Proposal)

    def _try_save(self, *aggregates: Any, final: bool = False) -> bool:
        """Save; False on a conflict. ``final``: this call is done with these objects."""
        try:
            self.store.save(*aggregates, final=final)
        except ConcurrencyConflictError:
            return False
        return True

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
        assert proposal.outcome is not None
        return AlreadyCompleted(proposal.outcome)

    def _report(
        self, proposal: Proposal, answer: AlreadyCompleted | NotApprovable | None
    ) -> ApprovalReport:
        if isinstance(answer, NotApprovable):
            return ApprovalReport(
                result="not_approvable",
                proposal_id=str(proposal.id),
                status=str(proposal.status),
                outcome=None,
                reason=str(answer.reason),
                message=None,
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
    """The store as a proposal's facts are read through: nothing proposed is saved, and
    what the contract reads is the shared state itself, not a private copy of it."""

    def __init__(self, store: AggregateStore) -> None:
        self._store = store

    def get(self, aggregate_id: UUID, as_type: type[A], version: int | None = None) -> A:
        if version is not None:
            return self._store.get(aggregate_id, as_type, version)
        return self._store.read(aggregate_id, as_type)

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self._store.read(aggregate_id, as_type)

    def preload(
        self,
        aggregate_ids: Sequence[UUID],
        *,
        optimistic: bool = False,
        unchecked: Sequence[UUID] = (),
    ) -> AbstractContextManager[None]:
        return self._store.preload(aggregate_ids, optimistic=optimistic, unchecked=unchecked)

    def save(self, *aggregates: Aggregate, final: bool = False) -> None:
        raise TypeError("a proposal's facts are read, never saved, while it is prepared")

    def history(self, aggregate_id: UUID) -> list[StoredEventView]:
        return self._store.history(aggregate_id)

    def ids_with_events(
        self, aggregate_class: type[Aggregate], event_names: Sequence[str]
    ) -> Iterator[UUID]:
        return self._store.ids_with_events(aggregate_class, event_names)
