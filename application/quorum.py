"""The quorum's recheck: an approval counts only while its approver may still approve.

Step 4 of the approve path (``ApprovePath._policy_short_of_claim``) calls ``recheck``
before an approval may complete a proposal's quorum: each earlier approval's approver must
still be the same member of the club (the membership that approved, not a later one after
leaving and coming back) and hold the operation's permission. One that is not is marked
``ApprovalLapsed`` on the proposal, in the same decision: it stays recorded, and no longer
counts. See docs/design.md, "Who may decide".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from countersign.domain.club.organization import Member, Organization
from countersign.domain.contracts import AnyContract
from countersign.domain.frozen_records import direct_init
from countersign.domain.proposal import Proposal


@direct_init
@dataclass(frozen=True)
class Approval:
    """Who approves, as the ``Approved`` event records them: their role, what they presented
    (``credential``) and the membership that approves."""

    member: Member
    credential: str

    @property
    def fields(self) -> dict[str, Any]:
        return {
            "role": self.member.role,
            "credential": self.credential,
            "membership_id": self.member.membership_id,
        }


def lapse_reason(
    proposal: Proposal, org: Organization, contract: AnyContract, email: str
) -> str | None:
    """Why ``email``'s approval of the proposal no longer counts, or None if it does: they
    left the club (``removed``), left and joined again since (``rejoined``: another
    membership), or no longer hold the operation's permission (``lost_permission``). An
    approval recorded before memberships were (None) is judged by the member of today."""
    member = org.member(email)
    if member is None:
        return "removed"
    recorded = proposal.approver_memberships[proposal.approvals.index(email)]
    if recorded is not None and recorded != member.membership_id:
        return "rejoined"
    if not member.may(contract.permission):
        return "lost_permission"
    return None


def recheck(proposal: Proposal, org: Organization, contract: AnyContract) -> None:
    """Mark every earlier approval that no longer counts (``ApprovalLapsed``)."""
    for earlier in list(proposal.approvals):
        reason = lapse_reason(proposal, org, contract, earlier)
        if reason is not None:
            proposal.lapse_approval(earlier, reason)


def display_name(club: Organization, email: str) -> str:
    """How the club calls a person: their name while a member, else their address."""
    member = club.member(email)
    return member.name if member is not None and member.name else email
