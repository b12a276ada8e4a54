"""Deliberate bugs, to show that the property suites still find them at their CI size.

A suite that passes proves little until it has been seen to fail. Each mutant here breaks one
promise of the approve path the way a plausible change could, and ``scripts/mutants`` runs
the property suites (the lifecycle state machine, the crash points, the fault schedules)
once per mutant, expecting each run to FAIL. ``COUNTERSIGN_MUTANT=NAME`` applies a mutant in
the test process (``tests/conftest.py``) and in every worker process it starts
(``tests/workers.py``); unset, nothing here runs.

- ``replay_without_lookup``: the reconciler replays without asking the provider what it
  holds under the key. Breaks: one provider request per key (a lost answer is looked up,
  never sent again).
- ``replay_under_new_key``: the reconciler's replay goes out under a key of its own. Breaks:
  one key per proposal (no provider can deduplicate a second key).
- ``lost_answer_is_failure``: a lost provider answer is recorded as a terminal failure
  instead of being reconciled. Breaks: an effect the provider applied is never "failed".
- ``claim_ignores_executing``: a proposal being executed can be claimed again. Breaks: one
  claim, one attempt (a repeat answers the stored state).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

ENV = "COUNTERSIGN_MUTANT"


class _Provider:
    """A provider as the mutated reconciler sees it."""

    def __init__(self, real: Any, *, lookup: bool = True, key_suffix: str = "") -> None:
        self._real = real
        self._lookup = lookup
        self._suffix = key_suffix

    def perform(self, key: str, request: Mapping[str, Any]) -> Any:
        return self._real.perform(key + self._suffix, request)

    def lookup(self, key: str) -> Any:
        return self._real.lookup(key) if self._lookup else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _reconciler_sees(**mutation: Any) -> None:
    from countersign.application.sweepers import Sweepers

    real = Sweepers._reconcile_one

    def reconcile_one(self: Any, proposal: Any) -> Any:
        settlement = self.settlement
        providers = settlement.providers
        settlement.providers = {name: _Provider(p, **mutation) for name, p in providers.items()}
        try:
            return real(self, proposal)
        finally:
            settlement.providers = providers

    Sweepers._reconcile_one = reconcile_one  # type: ignore[method-assign]


def _replay_without_lookup() -> None:
    _reconciler_sees(lookup=False)


def _replay_under_new_key() -> None:
    _reconciler_sees(key_suffix=":replay")


def _lost_answer_is_failure() -> None:
    from countersign.application.ports import Answer, Commit, Reads
    from countersign.application.reports import approval_report
    from countersign.application.settlement import Settlement, failed
    from countersign.domain.proposal import Proposal, ProposalStatus

    def start_reconciling(self: Any, proposal_id: UUID, key: str, cause: str = "") -> Any:
        def failing(store: Any) -> Any:
            proposal = store.get(proposal_id, Proposal)
            if proposal.status != ProposalStatus.EXECUTING:
                return Answer(approval_report(proposal))
            return Commit([proposal], failed(proposal, "ProviderAnswerLost").report)

        return self.store.decide(Reads([proposal_id]), failing)

    Settlement.start_reconciling = start_reconciling  # type: ignore[method-assign]


def _claim_ignores_executing() -> None:
    from countersign.application.proposals import ProposalService
    from countersign.domain.proposal import ProposalStatus

    real = ProposalService._decided

    def decided(proposal: Any) -> Any:
        if proposal.status == ProposalStatus.EXECUTING:
            return None
        return real(proposal)

    ProposalService._decided = staticmethod(decided)  # type: ignore[method-assign,assignment]


MUTANTS: dict[str, Callable[[], None]] = {
    "replay_without_lookup": _replay_without_lookup,
    "replay_under_new_key": _replay_under_new_key,
    "lost_answer_is_failure": _lost_answer_is_failure,
    "claim_ignores_executing": _claim_ignores_executing,
}


def apply_from_environment() -> str | None:
    """Apply the mutant ``COUNTERSIGN_MUTANT`` names, if any; an unknown name is an error."""
    name = os.environ.get(ENV, "").strip()
    if not name:
        return None
    if name not in MUTANTS:
        raise SystemExit(f"{ENV}={name!r} names no mutant; known: {', '.join(sorted(MUTANTS))}")
    MUTANTS[name]()
    return name
