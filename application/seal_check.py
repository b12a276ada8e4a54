"""The approve path's seal check (docs/design.md, "Seals"): with seal keys configured, a
proposal is approved only if its seal is the seal of what is stored.

Every event after ``Proposed`` must be vouched for by its own seal, as the store checked it
when it read the stream (``Proposal.unvouched``, infrastructure/persistence/event_seals.py):
a forged approval never counts towards a quorum. The first link of its chain is made again
from its state, which is what its ``Proposed`` event stored (or a snapshot of it): its
arguments, preview, policy, expiry and time, with its contract digest made again from its
arguments and preview in the same walk (which step 6 then takes instead of its own). A
proposal with no seal, a digest that is not its arguments', or a seal that is not the link's,
is set aside before anything of its record decides the approval: its RevisionRequired
outcome says why and asks for a new proposal, which is frozen again from the request under
the policy in force, and sealed. Nothing is approved, claimed or executed; the log has the
correlation id the outcome shows. A seal under a key not held here (the proposal's own, or an
event's) is no sign of tampering: during a rotation the new key seals on the processes
restarted first. That approval is refused (``not_verifiable_here``) with nothing recorded:
the proposal stays pending for a process that holds the key, as the reconciler leaves such
a claim.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from uuid import UUID

from countersign.application.errors import new_correlation_id
from countersign.application.ports import Answer, Commit
from countersign.application.reports import ApprovalReport, approval_report
from countersign.application.settlement import revision_required
from countersign.domain.outcomes import (
    NotApprovable,
    NotApprovableReason,
    ReasonParam,
    RevisionReason,
)
from countersign.domain.proposal import Proposal
from countersign.domain.seals import SealKeys, SealProblem, plain_key_id

log = logging.getLogger("countersign.proposals")

#: The revision reason a proposal set aside records, by its seal's problem (their sentences
#: are domain/handback.py's SHARED_REASONS).
REASONS = {
    "unsealed": "proposal_unsealed",
    "unknown_key": "proposal_seal_key_unknown",
    "mismatch": "proposal_seal_invalid",
}


def seal_problem(seals: SealKeys, proposal: Proposal, verified: list[str]) -> SealProblem | None:
    """Why ``proposal``'s seal does not prove what is stored of it, or None when it does,
    its contract digest then appended to ``verified`` (step 6 takes it instead of hashing
    the arguments and preview again). A stored digest that is not its arguments' and
    preview's is a mismatch: the link covers it, and the approver's passkey signs it.

    An event after ``Proposed`` that its seal does not vouch for, as the store found when it
    read it (``Proposal.unvouched``: a forged approval, say), is a problem first: nothing
    of the stream may count towards the quorum then."""
    if proposal.unvouched is not None:
        return proposal.unvouched
    if proposal.sealed_here:
        # Sealed by this process from the fields it still holds (``Proposal.sealed_here``):
        # a changed stored record cannot reach this object; events others appended since
        # were checked as they were read (``unvouched``, above).
        verified.append(proposal.digest)
        return None
    seal = proposal.seal
    if not seal:
        return SealProblem("unsealed")
    digest, link = proposal.proposed_digest_and_link()
    if digest != proposal.digest:
        return SealProblem("mismatch", plain_key_id(seal.get("key_id")))
    problem = seals.problem(proposal.id, link, seal)
    if problem is None:
        verified.append(digest)
    return problem


def reason_code(problem: SealProblem) -> str:
    """The revision reason of a proposal set aside for ``problem``: an event after
    ``Proposed`` without a seal, after a sealed one, is a record that is not the one
    sealed (its seal removed, or the event made up)."""
    if problem.version is not None and problem.kind == "unsealed":
        return REASONS["mismatch"]
    return REASONS[problem.kind]


@dataclass(frozen=True)
class Unverified:
    """A proposal set aside as unverified, and what to log once that commit stands (a
    decision may run again, and only its last run's correlation id is stored)."""

    report: ApprovalReport
    proposal_id: UUID
    problem: SealProblem
    correlation_id: str

    def log(self) -> None:
        log.error(
            "proposal %s not approved: it %s; set aside for a new proposal, correlation id %s",
            self.proposal_id,
            self.problem.text,
            self.correlation_id,
        )


@dataclass(frozen=True)
class KeyNotHeld:
    """An approval refused because the proposal's record is sealed with a key this process
    does not hold: nothing recorded, the proposal left for a process that holds the key."""

    report: ApprovalReport
    problem: SealProblem

    def log(self) -> None:
        log.error(
            "proposal %s not approved here: it %s in this process; nothing was recorded, "
            "and a process holding the key may approve it (list the key on every process)",
            self.report.proposal_id,
            self.problem.text,
        )


def not_verifiable_here(proposal: Proposal, problem: SealProblem) -> Answer[KeyNotHeld]:
    """The answer to approving ``proposal`` whose ``problem`` is a key not held here (a
    rotation's new key, put first on the processes restarted already): not tampering, as
    far as anyone here can tell, so it is not set aside; nothing is approved, claimed or
    recorded, and approving it on a process that holds the key proceeds as ever."""
    refused = NotApprovable(NotApprovableReason.NOT_VERIFIABLE_HERE)
    return Answer(KeyNotHeld(approval_report(proposal, refused), problem))


def set_aside(proposal: Proposal, problem: SealProblem) -> Commit[Unverified]:
    """Record that ``proposal`` does not verify against its seal (RevisionRequired, for the
    reason ``REASONS`` names), with a correlation id to log once its commit stands."""
    correlation_id = new_correlation_id()
    params: dict[str, ReasonParam] = {"reference": correlation_id}
    if problem.kind == "unknown_key":
        params["key_id"] = problem.key_id or "?"
    reason = RevisionReason(code=reason_code(problem), params=params)
    proposal.set_aside_unverified(revision_required(reason))
    unverified = Unverified(approval_report(proposal), proposal.id, problem, correlation_id)
    return Commit([proposal], unverified)
