"""The sweepers: expire what nobody approved in time, and reconcile what no answer settled.

Both find their candidates through the ``OpenWorkIndex`` (a superset is fine) and recheck
each one's state in a decision of its own, so they are safe to run in several processes at
once. ``countersign worker`` runs them on a schedule (infrastructure/sweepers.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from functools import partial
from uuid import UUID, uuid4

from countersign.application.errors import CorruptRecordError, new_correlation_id
from countersign.application.ports import (
    AggregateStore,
    Answer,
    Clock,
    Commit,
    EffectResponseLostError,
    OpenWorkIndex,
    Reads,
    SharedSnapshots,
)
from countersign.application.reports import SweepReport
from countersign.application.seal_check import seal_problem
from countersign.application.settlement import Failed, Settlement, failed
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.domain.seals import SealKeys, SealProblem

log = logging.getLogger("countersign.proposals")

#: A claimed proposal failed as unverified (or, sealed with a key not held here, left as
#: it is: no failure): its report, its failure and why.
_Unverified = tuple[SweepReport, Failed | None, SealProblem]


class Sweepers:
    """The expiry sweeper and the reconciler."""

    def __init__(
        self,
        store: AggregateStore,
        settlement: Settlement,
        open_work: OpenWorkIndex,
        clock: Clock,
        *,
        registry: Mapping[str, AnyContract] = REGISTRY,
        lease: timedelta = timedelta(seconds=60),
        stops_the_pass: Callable[[BaseException], bool] = lambda _: False,
        seals: SealKeys | None = None,
    ) -> None:
        self.store = store
        #: With seal keys, the reconciler acts only on a record its seals vouch for.
        self.seals = seals
        #: Whether an error is the store itself out of reach (the database down, its disk
        #: full): not one candidate's, so the pass stops there and its caller says why once,
        #: rather than one error per candidate, each failing alike.
        self.stops_the_pass = stops_the_pass
        self.settlement = settlement
        self.open_work = open_work
        self.clock = clock
        self.registry = registry
        self.lease = lease

    # -- expire -------------------------------------------------------------------------------

    def expire_due(self) -> list[SweepReport]:
        """Record Expired for every pending proposal past its expiry."""
        reports = []
        now = self.clock.now()
        for proposal_id in self.open_work.expiry_candidates(now):
            expired = self._expire_or_log(proposal_id, now)
            if expired is not None:
                reports.append(expired)
        return reports

    def _expire_or_log(self, proposal_id: UUID, now: datetime) -> SweepReport | None:
        """Expire one candidate if it is due. One whose record does not read (or that fails
        otherwise) is logged with a reference and passed over, as the reconciler does: the
        candidates come oldest first, and it stopped every pass, for every club, on it."""
        try:
            return self.store.decide(
                Reads([proposal_id]), partial(self._expire_if_due, proposal_id, now)
            )
        except NotFoundError:
            return None
        except Exception as error:
            if self.stops_the_pass(error):
                raise
            if isinstance(error, CorruptRecordError):  # the store's line names the event
                reference = error.correlation_id
                log.error("expiring %s failed, correlation id %s", proposal_id, reference)
                log.debug("expiring %s failed", proposal_id, exc_info=True)
                return None
            correlation_id = new_correlation_id()
            log.exception("expiring %s failed, correlation id %s", proposal_id, correlation_id)
            return None

    @staticmethod
    def _expire_if_due(
        proposal_id: UUID, now: datetime, store: Repository
    ) -> Commit[SweepReport | None] | Answer[SweepReport | None]:
        """Expire the proposal if it is pending and past its expiry; else nothing to do."""
        proposal = store.get(proposal_id, Proposal)
        if proposal.status != ProposalStatus.PENDING or not proposal.is_expired_at(now):
            return Answer(None)
        proposal.expire(now)
        return Commit(
            [proposal], SweepReport(str(proposal.id), "expired", str(proposal.status), None)
        )

    # -- reconcile ----------------------------------------------------------------------------

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
            try:
                proposal = self.store.get(proposal_id, Proposal)
            except NotFoundError:
                continue
            except CorruptRecordError as damaged:
                # Passed over, as expire passes one (the store's line names the event): it
                # stopped every pass, for every club, on it.
                reference = damaged.correlation_id
                log.error("reconciling %s failed, correlation id %s", proposal_id, reference)
                continue
            stuck = (
                proposal.status == ProposalStatus.EXECUTING
                and proposal.claimed_at is not None
                and proposal.claimed_at + self.lease <= now
            )
            if proposal.status == ProposalStatus.RECONCILING or stuck:
                reports.append(self._reconcile_or_log(proposal))
        return reports

    def _reconcile_or_log(self, proposal: Proposal) -> SweepReport:
        try:
            return self._reconcile_one(proposal)
        except Exception as error:
            if self.stops_the_pass(error):
                raise
            # One unreadable or misbehaving candidate must not block all the others.
            if isinstance(error, CorruptRecordError):  # the store's line names the event
                correlation_id = error.correlation_id
                log.error("reconciling %s failed, correlation id %s", proposal.id, correlation_id)
                log.debug("reconciling %s failed", proposal.id, exc_info=True)
            else:
                correlation_id = new_correlation_id()
                log.exception(
                    "reconciling %s failed, correlation id %s", proposal.id, correlation_id
                )
            return SweepReport(
                str(proposal.id), f"error {correlation_id}", str(proposal.status), None
            )

    def _reconcile_one(self, proposal: Proposal) -> SweepReport:
        if self.seals is not None and (proposal.unvouched is not None or proposal.seal):
            unverified = self.store.decide(
                Reads([proposal.id]), partial(self._fail_unverified, self.seals, proposal.id)
            )
            if unverified is not None:
                swept, ended, problem = unverified
                if ended is None:
                    log.error(
                        "proposal %s not reconciled: it %s in this process; nothing sent or "
                        "recorded. List that key in COUNTERSIGN_SEAL_KEYS (or _FILE) here, as "
                        "on the process that sealed it: every process needs the same keys",
                        proposal.id,
                        problem.text,
                    )
                    return swept
                ended.log()
                log.error(
                    "proposal %s not reconciled: it %s; nothing sent, correlation id %s",
                    proposal.id,
                    problem.text,
                    ended.correlation_id,
                )
                return swept
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
        facts = contract.settlement_facts(execution.scope, SharedSnapshots(self.store))
        effect = contract.describe_external(execution, facts)
        if effect.idempotency_key != key:
            log.error("proposal %s: stored key differs from the contract's", proposal.id)
            return uncertain
        provider = self.settlement.providers[effect.provider]
        try:
            response = provider.lookup(key)
        except EffectResponseLostError:
            return uncertain
        action = "settled"
        if response is None and self.seals is not None and not proposal.seal:
            # Made before the keys (or forged whole, unsealed): what the provider holds is
            # recorded, but nothing is sent on a record no seal vouches for.
            log.error(
                "proposal %s is unsealed: its request is not sent again; a person settles it",
                proposal.id,
            )
            return uncertain
        if response is None:
            action = "replayed"
            self.settlement.faults.reached("reconcile_before_replay")
            try:
                response = provider.perform(key, effect.payload())
            except Exception:
                if proposal.status == ProposalStatus.EXECUTING:
                    self.settlement.start_reconciling(proposal.id, key)
                current = self.store.get(proposal.id, Proposal)
                return SweepReport(str(current.id), "still_uncertain", str(current.status), None)
            self.settlement.faults.reached("reconcile_after_replay")
        report = self.settlement.settle(contract, execution, response)
        return SweepReport(report.proposal_id, action, report.status or "", report.outcome)

    @staticmethod
    def _fail_unverified(
        seals: SealKeys, proposal_id: UUID, store: Repository
    ) -> Commit[_Unverified | None] | Answer[_Unverified | None]:
        """With seal keys: a claimed proposal whose record its seals do not vouch for (an
        event after ``Proposed``, or ``Proposed`` itself once sealed) fails, terminally, with
        a correlation id to log once the commit stands, and nothing is sent to its provider;
        None when it is vouched for (or no longer claimed)."""
        proposal = store.get(proposal_id, Proposal)
        if proposal.status not in (ProposalStatus.EXECUTING, ProposalStatus.RECONCILING):
            return Answer(None)
        problem = proposal.unvouched
        if problem is None and proposal.seal:
            problem = seal_problem(seals, proposal, [])
        if problem is None:
            return Answer(None)
        if problem.kind == "unknown_key":
            # Sealed with a key another process holds (a rotation's new key, put first there
            # before this process had it): its provider may have acted on the claim, so it is
            # not failed ("nothing was changed") but left for a process holding the key.
            status = str(proposal.status)
            return Answer(
                (SweepReport(str(proposal.id), "still_uncertain", status, None), None, problem)
            )
        ended = failed(proposal, "UnverifiedRecord", cause="unverified_record")
        status = str(proposal.status)
        report = SweepReport(str(proposal.id), "failed_unverified", status, proposal.outcome)
        return Commit([proposal], (report, ended, problem))
