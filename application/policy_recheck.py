"""Step 4's policy recheck: a proposal is approved only while the club's policy in force asks
no more of it than the policy it was frozen under (docs/design.md, "Separation of duties and
quorum").

A club raises a policy because something went wrong: refunds above $100 now need two
approvers, a passkey, or someone other than the requester. Every approval of a pending
proposal compares the two (``ApprovePath._policy_short_of_claim``); if the policy in force
would ask more of whoever approves (more approvals, a passkey), the approval fails closed:
``RevisionRequired(policy_raised)``, nothing approved, claimed or executed, and the requester
proposes it again, frozen under today's policy. Approvals it already had stay recorded and
count for nothing: they were given under the old rule. A lowered policy changes nothing: the
frozen, stricter rule still decides.

A requester barred since is judged by who approves: the new rule forbids only the
requester's own approval. The requester's is refused as a frozen bar refuses it
(``requester_may_not_approve``, nothing recorded), an earlier approval of theirs no longer
counts (``ApprovalLapsed``, ``requester_barred``), and anyone else's goes ahead under the rest
of the frozen policy. What each reader says beforehand is what approving does for the person
reading (``sends_back``).

The organization is read at step 2 already (its members and permissions), so the policy in
force costs no read; a club that never set a policy for the operation costs one lookup, and
one whose policy is the frozen one a comparison of four settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from countersign.application.ports import Answer, Commit
from countersign.application.reports import ApprovalReport, approval_report
from countersign.application.settlement import revision_required
from countersign.domain.approval_policy import asks_more, bars_requester, same_rule
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.base import UndecodableContractError
from countersign.domain.outcomes import NotApprovable, NotApprovableReason, RevisionReason
from countersign.domain.proposal import Proposal

#: The revision reason a proposal records when the policy in force asks more of it (its
#: sentences are domain/handback.py's SHARED_REASONS).
POLICY_RAISED = "policy_raised"


#: The lapse reason of a requester's approval that a policy barring the requester, set since
#: it was given, no longer counts (``ApprovalLapsed``).
REQUESTER_BARRED = "requester_barred"


@dataclass(frozen=True)
class Raised:
    """What the club's policy in force asks of a pending proposal beyond the policy it was
    frozen under."""

    more: bool = False
    """More approvals, or a passkey on each, for its amount (a threshold now covering it
    included): whoever approves it, it is sent back (``policy_raised``)."""
    requester_barred: bool = False
    """The requester may no longer approve it (the frozen policy let them): their own
    approval is refused and an earlier one no longer counts; anyone else's goes ahead."""


NOT_RAISED = Raised()


@dataclass(frozen=True)
class OwnBarred:
    """Which of ``requester``'s pending proposals a policy bars them from approving
    (``barred``), as a query selects them: those frozen under a policy that bars the
    requester, and those of an operation in ``in_force`` above its amount (None: any
    amount), whose policy in force bars the requester. They decide none of them, and an
    approval of theirs there no longer counts."""

    requester: str
    in_force: Mapping[str, int | None]


def own_barred(org: Organization, requester: str) -> OwnBarred:
    """``OwnBarred`` for ``requester`` under ``org``'s policies in force: ``barred`` for
    every pending proposal of theirs, without reading one (a rule that does not bar the
    requester asks nothing of them; one that does bars whatever it covers, frozen or not)."""
    bars = {
        kind: entry["above_cents"]
        for kind, entry in org.policies.items()
        if not entry["requester_may_approve"]
    }
    return OwnBarred(requester.strip().lower(), bars)


def raised(proposal: Proposal, org: Organization, contract: AnyContract) -> Raised:
    """What the policy ``org`` has in force for the proposal's operation asks of it beyond
    the policy it was frozen under."""
    return raised_over(proposal.kind, proposal.policy, org, lambda: _amount(contract, proposal))


def raised_over(
    kind: str, frozen: Mapping[str, Any] | None, org: Organization, amount: Callable[[], Any]
) -> Raised:
    """``raised`` from a proposal's operation and the policy record it was frozen with (as a
    projection's card keeps it). ``amount``: the money it moves, asked for only when it was
    frozen under no policy and the one in force has a threshold."""
    entry = org.policies.get(kind)
    if entry is None:
        return NOT_RAISED  # none set: one approval by anyone permitted, the least any rule asks
    if frozen is not None and same_rule(frozen["rule"], entry):
        return NOT_RAISED
    if entry["above_cents"] is None:
        cents = None  # covers every proposal, whatever its amount
    elif frozen is not None:
        cents = frozen.get("amount_cents")
    else:
        cents = amount()
    in_force = org.approval_policy(kind).frozen_for(cents)
    more, barred = asks_more(in_force, frozen), bars_requester(in_force, frozen)
    return Raised(more, barred) if more or barred else NOT_RAISED


def barred(
    requested_by: str, frozen: Mapping[str, Any] | None, found: Raised, approver: str
) -> bool:
    """Whether ``approver`` requested the proposal (``requested_by``, frozen with ``frozen``)
    and may not approve it: the frozen policy bars them, or the one in force does now."""
    if approver.strip().lower() != requested_by.strip().lower():
        return False
    return found.requester_barred or not bool((frozen or {}).get("requester_may_approve", True))


def sends_back(
    requested_by: str, frozen: Mapping[str, Any] | None, found: Raised, approver: str
) -> bool:
    """Whether approving it as ``approver`` sends it back (``policy_raised``): the policy in
    force asks more of whoever approves, and ``approver`` is not a barred requester, whose
    approval is refused before that."""
    return found.more and not barred(requested_by, frozen, found, approver)


def challenge_refused(
    proposal: Proposal, org: Organization, contract: AnyContract | None, approver: str
) -> ApprovalReport | None:
    """The ``not_approvable`` answer to ``approver``'s passkey challenge for a pending
    ``proposal`` their approval cannot count for, as approving answers it: its requester,
    barred by the frozen policy or the one in force (``requester_may_not_approve``); anyone
    else when the policy in force asks more of it (``policy_raised``: approving it sends it
    back, with no passkey). Nobody is asked to sign for nothing. None otherwise."""
    if contract is None:
        return None
    found = raised(proposal, org, contract)
    if barred(proposal.requested_by, proposal.policy, found, approver):
        reason = NotApprovableReason.REQUESTER_MAY_NOT_APPROVE
    elif found.more:
        reason = NotApprovableReason.POLICY_RAISED
    else:
        return None
    return approval_report(proposal, NotApprovable(reason))


def policy_refusal(
    proposal: Proposal, org: Organization, contract: AnyContract, approver: str
) -> Answer[ApprovalReport] | Commit[ApprovalReport] | None:
    """Step 4's policy check of ``approver``'s approval: their own, as its requester barred
    by the frozen policy or the one in force, is refused (``requester_may_not_approve``,
    nothing recorded); anyone's, when the policy in force asks more of whoever approves,
    sends it back (``require_proposing_again``). None when it may go on; then an earlier
    approval by a requester barred since is marked as no longer counting (``ApprovalLapsed``,
    ``requester_barred``), to travel in whatever this approval commits."""
    found = raised(proposal, org, contract)
    if barred(proposal.requested_by, proposal.policy, found, approver):
        refused = NotApprovable(NotApprovableReason.REQUESTER_MAY_NOT_APPROVE)
        return Answer(approval_report(proposal, refused))
    if found.more:
        return require_proposing_again(proposal)
    if found.requester_barred and proposal.has_approved(proposal.requested_by):
        # Given under the frozen rule, it counts for nothing under the one in force.
        proposal.lapse_approval(proposal.requested_by, REQUESTER_BARRED)
    return None


def require_proposing_again(proposal: Proposal) -> Commit[ApprovalReport]:
    """Record that ``proposal`` needs proposing again under the policy in force
    (RevisionRequired, ``policy_raised``): nothing approved, claimed or executed."""
    proposal.require_revision_unapproved(revision_required(RevisionReason(code=POLICY_RAISED)))
    return Commit([proposal], approval_report(proposal))


def _amount(contract: AnyContract, proposal: Proposal) -> Any:
    """The money a proposal frozen without a policy moves (no amount was recorded then).
    Arguments that no longer decode have none: such a proposal's claim fails at step 6, so
    nothing of it ever runs."""
    try:
        return contract.amount_cents(contract.decode_arguments(proposal.arguments))
    except UndecodableContractError:
        return None
