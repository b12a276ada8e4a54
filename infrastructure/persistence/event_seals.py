"""The store's side of event seals (docs/design.md, "Seals"): with seal keys, every event
after ``Proposed`` that a commit stores is sealed as it is stored, and every one a read
takes from the database is checked against its seal before it is applied.

A read that finds an event its seal does not vouch for still applies it (the proposal is
read as it is stored, for people to see), and marks the proposal with the problem
(``Proposal.unvouched``, the first one): whatever would act on it (the approve path, the
reconciler) sets it aside or fails it instead (application/seal_check.py). What this process
itself stored is vouched for by the process that made it: its snapshot is caught up from the
database, one read event at a time, each checked over the link before it.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.proposal import Proposal
from countersign.domain.seals import SealKeys, SealProblem, event_problem, event_topic, seal_event

#: Each event class met -> whether it may carry a seal (an event after ``Proposed``: its class
#: has ``unsealed_version``), asked once: ``getattr`` with a default raises and clears a
#: formatted AttributeError for every other class (a commit's club events, ``Proposed``).
_SEALABLE: dict[type, bool] = {}


def _sealable(cls: type) -> bool:
    sealable = _SEALABLE.get(cls)
    if sealable is None:
        sealable = _SEALABLE[cls] = getattr(cls, "unsealed_version", None) is not None
    return sealable


def seal_new(seals: SealKeys, pending: Any) -> None:
    """Seal each event after ``Proposed`` of a commit's ``pending`` (aggregate, events) pairs
    that has no seal yet (a decision run again stores the same events once)."""
    for aggregate, events in pending:
        for event in events:
            if _sealable(type(event)) and event.seal is None:
                seal_event(seals, event)
                aggregate.__dict__["later_sealed"] = True


def applied(seals: SealKeys, base: Any, event: Any) -> Any:
    """``event``, read from the database, applied to ``base`` (a private copy, or None for a
    stream's first event), checked first against its seal if it may carry one: the first
    event of the stream its seal does not vouch for is recorded on the aggregate. An event
    of a proposal that can carry none (a plug-in's: stored_events.applied lets no other
    through) is vouched for by nothing: after a sealed one, it is that first event."""
    if base is None:
        return event.mutate(base)
    if not _sealable(type(event)):
        if isinstance(base, Proposal) and base.unvouched is None and _sealed(base):
            cls = type(event)
            unvouched = SealProblem(
                "unsealed", None, event.originator_version, cls.__name__, event_topic(cls)
            )
            aggregate = event.mutate(base)
            aggregate.__dict__["unvouched"] = unvouched
            return aggregate
        return event.mutate(base)
    problem = None
    if base.unvouched is None:
        problem = event_problem(seals, base.chain, event, _sealed(base))
    aggregate = event.mutate(base)
    state = aggregate.__dict__
    if problem is not None:
        state["unvouched"] = problem
    if event.seal:
        state["later_sealed"] = True
    return aggregate


def _sealed(proposal: Any) -> bool:
    """Whether an event of ``proposal`` so far is sealed (``Proposed`` included): from then
    on, every later one must be (``seals.event_problem``)."""
    return proposal.seal is not None or bool(proposal.later_sealed)
