"""Step 4's policy recheck: a proposal is approved only while the club's policy in force asks
no more of it than the policy it was frozen under (docs/design.md, "Separation of duties and
quorum").

A club raises a policy because something went wrong: refunds above $100 now need two
approvers, a passkey, or someone other than the requester. Every approval of a pending
proposal compares the two (``ApprovePath._policy_short_of_claim``); if the policy in force
would ask more of it, the approval fails closed: ``RevisionRequired(policy_raised)``, nothing
approved, claimed or executed, and the requester proposes it again, frozen under today's
policy. Approvals it already had stay recorded and count for nothing: they were given under
the old rule. A lowered policy changes nothing: the frozen, stricter rule still decides.

The organization is read at step 2 already (its members and permissions), so the policy in
force costs no read; a club that never set a policy for the operation costs one lookup, and
one whose policy is the frozen one a comparison of four settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from countersign.application.ports import Commit
from countersign.application.reports import ApprovalReport, approval_report
from countersign.application.settlement import revision_required
from countersign.domain.approval_policy import asks_more, same_rule
from countersign.domain.club.organization import Organization
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.base import UndecodableContractError
from countersign.domain.outcomes import NotApprovable, NotApprovableReason, RevisionReason
from countersign.domain.proposal import Proposal

#: The revision reason a proposal records when the policy in force asks more of it (its
#: sentences are domain/handback.py's SHARED_REASONS).
POLICY_RAISED = "policy_raised"


def policy_raised(proposal: Proposal, org: Organization, contract: AnyContract) -> bool:
    """Whether the policy ``org`` has in force for the proposal's operation asks more of it
    (more approvals for its amount, a threshold now covering it, a passkey, the requester
    barred) than the policy it was frozen under."""
    return raised_over(proposal.kind, proposal.policy, org, lambda: _amount(contract, proposal))


def raised_over(
    kind: str, frozen: Mapping[str, Any] | None, org: Organization, amount: Callable[[], Any]
) -> bool:
    """``policy_raised`` from a proposal's operation and the policy record it was frozen
    with (as a projection's card keeps it). ``amount``: the money it moves, asked for only
    when it was frozen under no policy and the one in force has a threshold."""
    entry = org.policies.get(kind)
    if entry is None:
        return False  # none set: one approval by anyone permitted, the least any rule asks
    if frozen is not None and same_rule(frozen["rule"], entry):
        return False
    if entry["above_cents"] is None:
        cents = None  # covers every proposal, whatever its amount
    elif frozen is not None:
        cents = frozen.get("amount_cents")
    else:
        cents = amount()
    in_force = org.approval_policy(kind).frozen_for(cents)
    return asks_more(in_force, frozen)


def challenge_refused(
    proposal: Proposal, org: Organization, contract: AnyContract | None
) -> ApprovalReport | None:
    """The ``not_approvable`` answer (``policy_raised``) to a passkey challenge for a pending
    ``proposal`` the policy in force asks more of: approving it sends it back, with no
    passkey, so nobody is asked to sign for it. None when the policy has not been raised."""
    if contract is None or not policy_raised(proposal, org, contract):
        return None
    return approval_report(proposal, NotApprovable(NotApprovableReason.POLICY_RAISED))


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
