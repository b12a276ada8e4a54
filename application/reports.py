"""What use cases answer: plain, JSON-ready records for the CLI, an HTTP handler or a test,
and how an approval's answer is built from a proposal's stored state."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from typing import Any, Literal

from countersign.domain.contracts import REGISTRY
from countersign.domain.frozen_records import direct_init
from countersign.domain.handback import not_enabled_text
from countersign.domain.messages import outcome_message
from countersign.domain.outcomes import AlreadyCompleted, NotApprovable, NotApprovableReason
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.domain.uuids import id_text

#: Each report class's field names, in order (``dataclasses.fields`` builds them anew per call).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _jsonable(value: Any) -> Any:
    """A JSON-ready copy: new dicts and lists (tuples become lists), times as ISO text,
    dataclasses as dicts of their fields; other values, immutable, as they are. One walk,
    where ``asdict`` and a second walk over its copy took two and deep-copied every value."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if is_dataclass(value) and not isinstance(value, type):
        return {name: _jsonable(getattr(value, name)) for name in _field_names(type(value))}
    return value


class Report:
    """Base of every report: ``to_json()`` gives the CLI's and the API's document."""

    def to_json(self) -> dict[str, Any]:
        return {name: _jsonable(getattr(self, name)) for name in _field_names(type(self))}


@direct_init
@dataclass(frozen=True)
class ProposalCreated(Report):
    """A validated request became a pending proposal."""

    proposal_id: str
    status: str
    operation: str
    preview: dict[str, Any]
    expires_at: datetime
    supersedes: list[str] = field(default_factory=list)
    """The pending proposals this one replaced (each now ``superseded``)."""
    revision_of: str | None = None
    approvals_required: int = 1


@direct_init
@dataclass(frozen=True)
class ApprovalReport(Report):
    """What an approve (or decline) command did."""

    result: Literal[
        "executed", "already_completed", "not_approvable", "declined", "awaiting_approvals"
    ]
    proposal_id: str
    status: str | None
    outcome: dict[str, Any] | None
    reason: str | None
    message: str | None
    approvals: int | None = None
    """For awaiting_approvals: how many distinct people have approved so far."""
    required: int | None = None
    """For awaiting_approvals: how many its policy requires."""
    superseded_by: str | None = None
    """For not_approvable because superseded: the proposal that replaced it."""
    superseded_reason: str | None = None
    """For not_approvable because superseded: why (``revised``, ``replaced``, ``withdrawn``;
    left out of the document when unknown, as for one superseded before reasons were
    recorded)."""
    no_longer_counting: list[dict[str, str]] | None = None
    """For awaiting_approvals: earlier approvals the recheck found no longer count
    (``approved_by``, ``reason``: removed, lost_permission, rejoined, requester_barred); the
    key is left out of the document when there are none."""

    def to_json(self) -> dict[str, Any]:
        document = super().to_json()
        for optional in ("no_longer_counting", "superseded_reason"):
            if document.get(optional) is None:
                document.pop(optional, None)
        return document


@dataclass(frozen=True)
class ProposalCard(Report):
    """Everything a reviewer sees about one proposal."""

    proposal_id: str
    operation: str
    section: str
    resource_id: str
    requested_by: str
    interaction_id: str
    status: str
    preview: dict[str, Any]
    expires_at: datetime
    approved_by: str | None
    approved_at: datetime | None
    declined_by: str | None
    outcome: dict[str, Any] | None
    message: str | None
    time_zone: str = "UTC"
    """The club's time zone, where its people read the card's times."""
    approvals: list[str] = field(default_factory=list)
    """Who has approved so far."""
    approvals_required: int = 1
    policy: dict[str, Any] | None = None
    """The approval policy in force when it was frozen (None: one approval by anyone
    permitted)."""
    revision_of: str | None = None
    superseded_by: str | None = None
    superseded_reason: str | None = None
    """Why it was superseded: ``revised`` (an edit of it), ``replaced`` (a newer proposal for
    the same thing) or ``withdrawn`` (another proposal was carried out and changed what it
    relied on); None when not superseded, or superseded before reasons were recorded."""
    withdraws: list[dict[str, str | None]] = field(default_factory=list)
    """For a pending proposal: the pending proposals on the same resource that approving it
    would withdraw, were it carried out now (``proposal_id``, ``operation``, ``headline`` in
    the card's language)."""
    changes: list[dict[str, str]] = field(default_factory=list)
    """For a revision: what it changed against the proposal it revised, field by field
    (``field``, ``label``, ``before``, ``after``)."""
    origin: dict[str, str] | None = None
    """Where the request came from when not from countersign itself (an MCP client)."""
    requested_through: str | None = None
    """What the requester presented to propose it: ``person`` (their own sign-in),
    ``assistant`` (a model's tool call for them), ``agent_token:<name>`` or
    ``approver_token:<name>``; None when proposed before this was recorded."""
    approval_passkeys: list[dict[str, str]] = field(default_factory=list)
    """The approvals given with a passkey: who, and the passkey's name as it approved."""
    approval_credentials: list[str] = field(default_factory=list)
    """What each counting approver presented, as ``approvals`` lists them: ``person``,
    ``approver_token:<name>``, or ``unknown`` (recorded before credentials were)."""
    no_longer_counting: list[dict[str, str]] = field(default_factory=list)
    """Approvals that no longer count towards the quorum: ``approved_by``, ``reason``
    (removed, lost_permission, rejoined, requester_barred) and ``message`` in the card's
    language."""
    declined_credential: str | None = None
    """What the decliner presented, as ``approval_credentials`` says it."""
    decline_note: str | None = None
    """The decliner's note to the requester, if they wrote one."""
    proposed_at: datetime | None = None
    """When it was proposed (its first event)."""
    unverified: dict[str, Any] | None = None
    """With seal keys configured: why its seals do not vouch for what is stored of it
    (``reason``, ``event_version``, ``event_type``, ``message`` in the card's language;
    application/shown_seals.py); None when they do, or no keys are held."""
    policy_changed: bool = False
    """Pending, and the club's approval policy now asks more of it than the one it was frozen
    under (application/policy_recheck.py): approving it executes nothing, it goes back to be
    proposed again (RevisionRequired, ``policy_raised``), and no passkey is asked for."""
    requester_barred: str | None = None
    """Said of the reader: pending, and they requested it and its policy, frozen or the
    club's in force, does not let them approve it (approving answers
    ``requester_may_not_approve``): the sentence that says so, in the card's language, as
    the review page says it. None otherwise."""


@dataclass(frozen=True)
class ProposalStatusReport(Report):
    """Where a proposal's execution stands (what an outcome's ``status_path`` points to)."""

    proposal_id: str
    status: str
    outcome_kind: str | None
    reconciliation_pending: bool
    message: str | None
    #: While executing or reconciling: when it was claimed (the approval that ran it).
    waiting_since: str | None = None
    #: While executing or reconciling: ``waiting`` within the lease and one reconciler pass,
    #: ``provider_silent`` past it with a reconciler running, ``unattended`` past it with
    #: none: an operator must start the worker (``message`` then says so).
    settling: str | None = None
    #: Pending, and the club's policy now asks more of it than the one it was frozen under:
    #: approving it sends it back (``ProposalCard.policy_changed``).
    policy_changed: bool = False
    #: The reader requested it and may not approve it (``ProposalCard.requester_barred``).
    requester_barred: str | None = None


@dataclass(frozen=True)
class SweepReport(Report):
    """One proposal that a reconcile or expire pass settled (or left)."""

    proposal_id: str
    action: str
    status: str
    outcome: dict[str, Any] | None


# -- an approval's answer, from the proposal's stored state ----------------------------------


def own(value: Any) -> Any:
    """The caller's own copy of a proposal's JSON-ready state (a preview, an outcome): the
    proposal may be a shared snapshot, which every later reader copies."""
    kind = type(value)
    if kind is dict:
        copied = {}
        for key, item in value.items():  # a loop: a comprehension is a call of its own
            item_kind = type(item)
            copied[key] = own(item) if item_kind is dict or item_kind is list else item
        return copied
    if kind is list:
        return [own(item) if type(item) is dict or type(item) is list else item for item in value]
    return value


def outcome_text(proposal: Proposal, language: str = "en") -> str | None:
    """The app-authored text for the proposal's outcome, if it has one; for a pending one
    whose operation is not enabled here (its plug-in turned off), why nobody can decide it."""
    if proposal.outcome is None:
        pending = proposal.status == ProposalStatus.PENDING
        return not_enabled_text(language) if pending and proposal.kind not in REGISTRY else None
    return outcome_message(proposal.kind, proposal.preview, proposal.outcome, language)


#: The refusals that carry the proposal's stored outcome (a caller without the operation's
#: permission, ``forbidden``, is told nothing of it).
_OUTCOME_SHOWN = frozenset({NotApprovableReason.NOT_PENDING, NotApprovableReason.EXPIRED})


def approval_report(
    proposal: Proposal, answer: AlreadyCompleted | NotApprovable | None = None
) -> ApprovalReport:
    """What an approval answers: it executed (no ``answer``), the stored outcome of one
    already completed, or why it is not approvable."""
    if isinstance(answer, NotApprovable):
        superseded = answer.reason == NotApprovableReason.SUPERSEDED
        # A declined or expired proposal's stored outcome comes back with the refusal, so a
        # service that retries its decline (a timeout) reads what its first one recorded.
        stored = answer.reason in _OUTCOME_SHOWN and proposal.outcome is not None
        return ApprovalReport(
            result="not_approvable",
            proposal_id=str(proposal.id),
            status=str(proposal.status),
            outcome=own(proposal.outcome) if stored else None,
            reason=str(answer.reason),
            message=outcome_text(proposal) if stored else None,
            superseded_by=str(proposal.superseded_by) if superseded else None,
            superseded_reason=proposal.superseded_reason if superseded else None,
        )
    return ApprovalReport(
        result="already_completed" if answer else "executed",
        proposal_id=str(proposal.id),
        status=str(proposal.status),
        # The caller's own copy: a finished proposal may be the shared snapshot.
        outcome=own(proposal.outcome),
        reason=None,
        message=outcome_text(proposal),
    )


def executed_report(proposal: Proposal, message: str | None) -> ApprovalReport:
    """``approval_report`` of a proposal that has just succeeded, with its outcome's text
    written already (``success_message``; None: written from the stored outcome)."""
    if message is None:
        return approval_report(proposal)
    # result, proposal_id, status, outcome, reason, message: by position (keywords build a
    # dict in 3.11), the rest left to their defaults.
    return ApprovalReport(
        "executed", id_text(proposal.id), str(proposal.status), own(proposal.outcome), None, message
    )


def awaiting_approvals(proposal: Proposal, *, again: bool = False) -> ApprovalReport:
    """A pending proposal's answer to an approval its quorum still needs more than."""
    return ApprovalReport(
        result="awaiting_approvals",
        proposal_id=str(proposal.id),
        status=str(proposal.status),
        outcome=None,
        reason="already_approved_by_you" if again else None,
        message=None,
        approvals=len(proposal.approvals),
        required=proposal.approvals_required,
        no_longer_counting=[dict(lapsed) for lapsed in proposal.lapsed_approvals] or None,
    )


def not_found(proposal_id: str) -> ApprovalReport:
    """The answer to an approval or decline of an unknown id, or of another club's proposal:
    the same, the id echoed as given."""
    return ApprovalReport(
        result="not_approvable",
        proposal_id=proposal_id,
        status=None,
        outcome=None,
        reason=str(NotApprovableReason.NOT_FOUND),
        message=None,
    )
