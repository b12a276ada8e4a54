"""Settlement: how an approved proposal's execution ends, and how its wait for that stands.

The approve path claims a proposal and, for an external operation, calls its provider once
the claim is committed (``call_out``). The provider's authoritative answer is recorded with
the domain change in one commit (``settle``); when the answer is unknown, that is recorded
instead (``start_reconciling``), and the reconciler (application/sweepers.py) settles it
later under the same idempotency key, with the same ``settle``.

A lost provider answer (``Reconciling``), or a claim whose process died before recording
one, is settled by the reconciler: the ``reconcile`` sweeper of ``countersign worker``, or of
``countersign serve`` on the embedded database. It takes a reconciling proposal at its next
pass, and an executing one once the lease has passed, so by the lease plus one pass after
the claim a running reconciler has had its chance. Past that the proposal is *overdue*
(``Settling``): either the provider has still not answered (the reconciler runs and asks
again at every pass), or no reconciler runs and an operator must start one. The sweepers'
schedules record their passes (``SweeperPasses``), which tells the two apart.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from countersign.application.errors import new_correlation_id
from countersign.application.ports import (
    AggregateStore,
    Answer,
    Commit,
    EffectProvider,
    EffectResponseLostError,
    FaultPoints,
    ProviderUnavailableError,
    Reads,
    SweeperPass,
)
from countersign.application.reports import ApprovalReport, approval_report, executed_report
from countersign.application.supersession import retire
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.base import Effect, RevisionNeededError
from countersign.domain.contracts.model_calls import dumped
from countersign.domain.errors import ConcurrencyConflictError, EffectAlreadyRecordedError
from countersign.domain.messages import success_message
from countersign.domain.outcomes import (
    ExecutionContract,
    NeedsReconciliation,
    ReconciliationCause,
    RevisionReason,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.proposal import Proposal, ProposalStatus
from pydantic import BaseModel

log = logging.getLogger("countersign.proposals")

_Report = Commit[ApprovalReport] | Answer[ApprovalReport]


def stored(
    outcome: Succeeded | NeedsReconciliation | RevisionRequired | TerminalFailure,
) -> dict[str, Any]:
    """An outcome as a proposal's event stores it."""
    return outcome.model_dump(mode="json")


def succeeded(result: BaseModel) -> dict[str, Any]:
    """``stored(Succeeded(result=result.model_dump(mode="json")))``, the stored outcome of a
    success, without validating again the dict ``model_dump`` has just made and dumping it a
    second time: the same keys, in the same order (tests/test_settlement_outcomes.py)."""
    return {"kind": "succeeded", "result": dumped(result)}


def revision_required(reason: RevisionReason, *, already_so: bool = False) -> dict[str, Any]:
    """The stored outcome of a proposal that executed nothing, for this reason; ``already_so``
    when the reason is that what it asked for already holds (stored only then)."""
    return stored(RevisionRequired(reason=reason, already_so=already_so))


@dataclass(frozen=True)
class CallOut:
    """A committed claim of an external operation: the provider is called next, outside any
    decision, since once the claim is committed nothing read before it may stop it."""

    contract: AnyContract
    execution: ExecutionContract[Any]
    effect: Effect


@dataclass(frozen=True)
class Failed:
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


def failed(
    proposal: Proposal,
    error_class: str,
    *,
    exc_info: bool = False,
    cause: Literal["unverified_record"] | None = None,
) -> Failed:
    """Record a terminal failure on a claimed proposal, with a correlation id to log once
    its commit stands (``Failed.log``), never from inside the decision; ``cause`` as
    ``TerminalFailure`` says."""
    correlation_id = new_correlation_id()
    outcome = TerminalFailure(correlation_id=correlation_id, cause=cause)
    proposal.fail(stored(outcome), error_class)
    return Failed(
        approval_report(proposal),
        proposal.id,
        error_class,
        correlation_id,
        sys.exc_info() if exc_info else None,
    )


class Settlement:
    """Calls a claimed external operation's provider, and records how the execution ends."""

    def __init__(
        self,
        store: AggregateStore,
        providers: Mapping[str, EffectProvider],
        faults: FaultPoints,
    ) -> None:
        self.store = store
        self.providers = providers
        self.faults = faults  # where a test may kill the process (faults.md)

    def call_out(self, claimed: CallOut) -> ApprovalReport:
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
            return self.start_reconciling(
                proposal_id, effect.idempotency_key, "provider_unavailable"
            )
        except EffectResponseLostError:
            return self.start_reconciling(proposal_id, effect.idempotency_key)
        except Exception:
            # Anything unexpected once a request may have left is uncertain, never a retry.
            log.exception("provider call for proposal %s ended unexpectedly", proposal_id)
            return self.start_reconciling(proposal_id, effect.idempotency_key)
        self.faults.reached("after_provider_call")
        # 9. Record its authoritative answer.
        try:
            return self.settle(claimed.contract, claimed.execution, response)
        except Exception:
            # The provider answered, and recording its answer failed (a contract's
            # ``finish_external`` raising, say): the effect is the provider's, countersign's
            # record of it is not made. The approver is told what any uncertain effect tells
            # (never "failed": the money may have moved), and the reconciler records the
            # provider's answer under the same key once it can; never another call.
            correlation_id = new_correlation_id()
            log.exception(
                "recording the provider's answer for proposal %s failed, correlation id %s; "
                "left to the reconciler",
                proposal_id,
                correlation_id,
            )
            return self.start_reconciling(proposal_id, effect.idempotency_key)

    def start_reconciling(
        self, proposal_id: UUID, key: str, cause: ReconciliationCause = "response_lost"
    ) -> ApprovalReport:
        """Record that the provider's answer is unknown: the reconciler will settle it."""

        def reconciling(store: Repository) -> _Report:
            proposal = store.get(proposal_id, Proposal)
            if proposal.status != ProposalStatus.EXECUTING:
                return Answer(approval_report(proposal))  # settled meanwhile
            proposal.start_reconciling(stored(NeedsReconciliation(cause=cause)), key)
            return Commit([proposal], approval_report(proposal))

        return self.store.decide(Reads([proposal_id]), reconciling)

    def settle(
        self,
        contract: AnyContract,
        execution: ExecutionContract[Any],
        response: EffectResponse,
    ) -> ApprovalReport:
        """Record the provider's authoritative answer with the domain change, in one commit."""

        def settlement(store: Repository) -> _Report:
            proposal = store.get(execution.proposal_id, Proposal)
            if proposal.status not in (ProposalStatus.EXECUTING, ProposalStatus.RECONCILING):
                return Answer(approval_report(proposal))  # recorded by another process
            loaded = contract.settlement_facts(execution.scope, store)
            retired: list[Proposal] = []
            try:
                result = contract.finish_external(execution, loaded, response)
                proposal.succeed(succeeded(result))
                retired = retire(store, contract, proposal, execution.arguments, result, loaded)
                # Its text from the typed result in hand, as a local operation's success is.
                message = success_message(contract, proposal.preview, result)
                report = executed_report(proposal, message)
            except RevisionNeededError as refused:
                proposal.require_revision(
                    revision_required(refused.reason, already_so=refused.already_so)
                )
                report = approval_report(proposal)
            except EffectAlreadyRecordedError:
                # Another process (an approver that woke up, or the reconciler) already
                # recorded this same provider answer.
                return Answer(approval_report(proposal))
            self.faults.reached("before_outcome_commit")
            return Commit([proposal, *loaded.aggregates(), *retired], report)

        try:
            settled = self.store.decide(Reads([execution.proposal_id]), settlement)
        except ConcurrencyConflictError:
            log.error(
                "could not record provider answer for %s; the reconciler will",
                execution.proposal_id,
            )
            return approval_report(self.store.get(execution.proposal_id, Proposal))
        self.faults.reached("after_outcome_commit")
        return settled


# -- how the wait for a settlement stands -----------------------------------------------------

RECONCILE = "reconcile"
"""The reconciler's name among the sweepers."""
DEFAULT_EVERY = timedelta(seconds=10)
"""How often a schedule runs a pass when none has said (``countersign worker``'s default)."""
ALIVE_GRACE = timedelta(seconds=60)
"""How late a schedule's next pass may be (a long pass, a slow provider) before it no longer
counts as running: two of its intervals, and this."""


@dataclass(frozen=True)
class Settling:
    """An executing or reconciling proposal's wait for its provider's answer."""

    since: datetime
    """When it was claimed: the approval that ran it."""
    waited: timedelta
    overdue: bool
    """Past the lease plus one reconciler pass: a running reconciler would have settled it,
    unless the provider itself has not answered."""
    reconciler_running: bool
    """Whether a reconciler's pass was recorded recently, in any process."""
    every: timedelta
    """How often the reconciler passes (its schedule's interval)."""

    @property
    def unattended(self) -> bool:
        """Overdue, and nothing is settling it: an operator must start the worker."""
        return self.overdue and not self.reconciler_running


def settling_of(
    claimed_at: datetime, now: datetime, lease: timedelta, last_pass: SweeperPass | None
) -> Settling:
    """How a claim made at ``claimed_at`` stands at ``now``, given the reconciler's latest
    recorded pass (None: no reconciler ever recorded one)."""
    every = last_pass.every if last_pass is not None else DEFAULT_EVERY
    running = last_pass is not None and now - last_pass.finished_at <= 2 * every + ALIVE_GRACE
    return Settling(
        since=claimed_at,
        waited=max(now - claimed_at, timedelta(0)),
        overdue=now >= overdue_at(claimed_at, lease, every),
        reconciler_running=running,
        every=every,
    )


def overdue_at(claimed_at: datetime, lease: timedelta, every: timedelta) -> datetime:
    """When a claim made at ``claimed_at`` becomes overdue: the lease and one pass later."""
    return claimed_at + lease + every
