"""What the proposals' routes take and answer: a request to propose, a decision, an edit;
a proposal's card, status and approval report (its history: ``history``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.entrypoints.http.models import Body
from countersign.infrastructure.entrypoints.http.models.policies import PolicyRuleOut
from pydantic import BaseModel, Field


class ProposeIn(Body):
    """A model-facing request to turn into a proposal."""

    operation: str = Field(
        max_length=100,
        description="The operation kind: " + ", ".join(sorted(REGISTRY)) + ".",
    )
    resource_id: str = Field(
        max_length=64,
        description=(
            "The id of the resource the operation acts on, as its contract names it (an order, "
            "a broadcast form, a roster)."
        ),
    )
    request: dict[str, Any] = Field(
        description=(
            "The operation's model-facing request (for a refund: payment, line_item, discount, "
            "destination). Validated by the operation's contract."
        )
    )


class DeclineIn(Body):
    """An optional note for declining."""

    note: str | None = Field(default=None, max_length=500, description="Why, for the requester.")


class PasskeyAssertionIn(Body):
    """An approver's passkey assertion, relayed by a service from its own interface."""

    nonce: str = Field(
        max_length=200,
        description="The nonce GET /proposals/{id}/approval-challenge answered with.",
    )
    credential: dict[str, Any] = Field(
        description=(
            "What navigator.credentials.get() gave for that challenge's options, as JSON "
            "(PublicKeyCredential.toJSON(): id, rawId, type, response with clientDataJSON, "
            "authenticatorData, signature and userHandle, base64url)."
        )
    )


class ApproveIn(Body):
    """An approval's optional passkey assertion (required where the proposal's policy asks
    for a passkey)."""

    passkey_assertion: PasskeyAssertionIn | None = None
    unverified: bool = Field(
        default=False,
        description="Send true when the card the approver read said 'unverified' (its seals "
        "do not vouch for it). Behind several server processes, one that holds the pending "
        "proposal as it was sealed (or holds no seal keys) would otherwise carry out what "
        "the approver never read: it approves nothing and answers 409 unverified-elsewhere "
        "(read the card again). Where the record is not vouched for here either, approving "
        "sets it aside, as the card said; a decided proposal answers as always.",
    )


class ApprovalChallengeOut(BaseModel):
    """What the approver's authenticator signs to approve one proposal."""

    proposal_id: str
    digest: str = Field(description="The contract digest the challenge binds.")
    nonce: str = Field(description="Send it back with the assertion; valid for 5 minutes.")
    passkeys: int = Field(description="How many passkeys the approver may sign with.")
    options: dict[str, Any] = Field(
        description=(
            "PublicKeyCredentialRequestOptions for navigator.credentials.get(), base64url: "
            "challenge = SHA-256 of the digest, the proposal's id, the approver and the "
            "nonce; user verification required."
        )
    )


class RevisionIn(Body):
    """An edit of a proposal: the whole model-facing request again, with the edits."""

    request: dict[str, Any] = Field(
        description=(
            "The operation's model-facing request, edited (as for proposing: the operation's "
            "contract validates it, resolves its defaults and computes every derived value "
            "again). Frozen arguments are never changed in place."
        )
    )


class ProposalCreatedOut(BaseModel):
    """A validated request became a pending proposal."""

    proposal_id: str
    status: str
    operation: str
    preview: dict[str, Any] = Field(description="Exactly what approval will do.")
    expires_at: datetime
    supersedes: list[str] = Field(
        default_factory=list,
        description=(
            "The pending proposals for the same thing this one replaced: each is now "
            "'superseded' and can no longer be approved."
        ),
    )
    revision_of: str | None = Field(
        default=None, description="For an edit: the proposal it revises (else null)."
    )
    approvals_required: int = Field(
        default=1,
        description=(
            "How many distinct people must approve it, by the organization's policy for the "
            "operation in force when it was frozen."
        ),
    )


class LapsedApprovalOut(BaseModel):
    """An approval that no longer counts towards its proposal's quorum; it stays recorded."""

    approved_by: str = Field(description="Who gave it.")
    reason: Literal["removed", "lost_permission", "rejoined", "requester_barred"] = Field(
        description=(
            "removed (no longer a member), lost_permission (no longer holds the operation's "
            "permission), rejoined (left the club and joined again since approving), "
            "requester_barred (the requester's own, which the club's policy, changed since "
            "it was proposed, no longer lets count)."
        )
    )
    message: str | None = Field(
        default=None, description="On a card: the sentence people read, in its language."
    )


class ApprovalReportOut(BaseModel):
    """What an approve or decline command did: the CLI's ``approve --json`` document."""

    result: Literal[
        "executed", "already_completed", "not_approvable", "declined", "awaiting_approvals"
    ] = Field(
        description=(
            "executed (this call claimed and ran it), already_completed (its stored outcome), "
            "declined, awaiting_approvals (this approval is recorded; its policy needs more "
            "distinct approvers before it runs), or not_approvable (see 'reason')."
        )
    )
    proposal_id: str
    status: str | None
    outcome: dict[str, Any] | None = Field(
        description=(
            "kind: succeeded | needs_reconciliation | revision_required | terminal_failure. "
            "A revision_required one with already_so: true executed nothing because what it "
            "asked for already holds: nothing is left to do. A terminal_failure with cause: "
            "unverified_record is a record that failed an integrity check (set aside, nothing "
            "executed from it). "
            "Also on not_approvable for a declined or expired proposal: its stored outcome "
            "(with 'message')."
        )
    )
    reason: str | None = Field(
        description=(
            "For not_approvable: not_pending, expired, in_progress, superseded (see "
            "'superseded_by') or requester_may_not_approve (its policy, or the club's policy "
            "set since, does not let the person who requested it approve it, whichever token "
            "acts for them; approval-challenge answers it too), "
            "passkey_required (its policy asks each approval to be signed with the "
            "approver's passkey: see approval-challenge), passkey_rejected (the assertion "
            "given does not verify) or not_verifiable_here (sealed with a key this server "
            "does not hold yet: nothing recorded; try again once every server holds it), "
            "operation_not_enabled (the plug-in that adds its operation is not enabled on "
            "this server: nothing recorded); from "
            "approval-challenge alone, policy_raised (the club's policy now asks more of it: "
            "approve it with no passkey to send it back to be proposed again). For "
            "awaiting_approvals: already_approved_by_you when the same person approves again "
            "(nothing changes), else null."
        )
    )
    message: str | None = Field(
        description=(
            "The application's text for the outcome, in English. On not_approvable: the "
            "stored outcome's text (a declined proposal), or else what happened and what to "
            "do next (never null)."
        )
    )
    approvals: int | None = Field(
        default=None,
        description="For awaiting_approvals: how many distinct people have approved so far.",
    )
    required: int | None = Field(
        default=None, description="For awaiting_approvals: how many its policy requires."
    )
    superseded_by: str | None = Field(
        default=None,
        description="For not_approvable because superseded: the newer proposal to review.",
    )
    superseded_reason: str | None = Field(
        default=None,
        description=(
            "For not_approvable because superseded: why. revised (an edit of it), replaced (a "
            "newer proposal for the same thing) or withdrawn (the proposal in "
            "'superseded_by' was carried out and changed what this one relied on)."
        ),
    )
    no_longer_counting: list[LapsedApprovalOut] | None = Field(
        default=None,
        description=(
            "For awaiting_approvals: earlier approvals that no longer count (their approver "
            "left the club, left and came back, or lost the operation's permission); "
            "'approvals' is the count after this recheck."
        ),
    )


class FrozenPolicyOut(BaseModel):
    """The policy a proposal was frozen under, and what it asks of this proposal."""

    rule: PolicyRuleOut
    amount_cents: int | None = Field(description="The proposal's amount the rule was read for.")
    approvals_required: int = Field(description="Distinct approvals this proposal needs.")
    requester_may_approve: bool = Field(
        description="Whether its requester may approve this proposal."
    )


class ChangeOut(BaseModel):
    """One preview field a revision changed, as people read it."""

    field: str = Field(description="The preview field's name.")
    label: str = Field(description="Its label, in the card's language.")
    before: str = Field(description="Its value in the revised proposal's preview.")
    after: str = Field(description="Its value in this one's.")


class WithdrawnOut(BaseModel):
    """A pending proposal that approving another one would withdraw."""

    proposal_id: str
    operation: str
    headline: str | None = Field(
        description="What it does, in the card's language (null: you may not read it)."
    )


class UnverifiedOut(BaseModel):
    """Why a proposal's seals do not vouch for what is stored of it."""

    reason: str = Field(
        description=(
            "What its approval would record: proposal_unsealed, proposal_seal_key_unknown "
            "or proposal_seal_invalid."
        )
    )
    event_version: int | None = Field(
        description="The event no seal vouches for, after Proposed (null: the proposal's own)."
    )
    event_type: str | None = Field(description="That event's type (null: the proposal's own).")
    message: str = Field(description="What a reader is told, in the card's language.")


class PasskeyApprovalOut(BaseModel):
    """An approval given with a passkey."""

    approved_by: str = Field(description="Who approved.")
    passkey: str = Field(description="The passkey's name, as it was when it approved.")


class ProposalCardOut(BaseModel):
    """Everything a reviewer sees about one proposal."""

    proposal_id: str
    operation: str
    section: str
    resource_id: str
    requested_by: str
    requested_through: str | None = Field(
        default=None,
        description=(
            "What the requester presented to propose it: person (their own sign-in), "
            "assistant (a model's tool call made for them: a section assistant, the MCP "
            "server, an agent framework), agent_token:<token name> or approver_token:<token "
            "name>; null when proposed before this was recorded."
        ),
    )
    interaction_id: str
    status: str = Field(
        description=(
            "pending, executing, reconciling, succeeded, revision_required, failed, "
            "declined, expired or superseded. A pending one past its expires_at is expired "
            "(before its history records Expired)."
        )
    )
    preview: dict[str, Any]
    expires_at: datetime
    approved_by: str | None = Field(description="Who gave the approval that claimed it.")
    approved_at: datetime | None
    declined_by: str | None
    outcome: dict[str, Any] | None
    message: str | None
    time_zone: str = Field(
        default="UTC", description="The club's time zone, where its people read the times."
    )
    approvals: list[str] = Field(
        default_factory=list, description="Who has approved it so far, in order."
    )
    approvals_required: int = Field(
        default=1, description="How many distinct people must approve it."
    )
    approval_credentials: list[str] = Field(
        default_factory=list,
        description=(
            "What each approver in 'approvals' presented: person, approver_token:<token "
            "name>, or unknown (approved before this was recorded)."
        ),
    )
    no_longer_counting: list[LapsedApprovalOut] = Field(
        default_factory=list,
        description="Approvals that no longer count towards the quorum, and why.",
    )
    declined_credential: str | None = Field(
        default=None,
        description="What the decliner presented, as 'approval_credentials' says it.",
    )
    policy: FrozenPolicyOut | None = Field(
        default=None,
        description=(
            "The approval policy in force when it was frozen (null: none was set, so one "
            "approval by anyone permitted). A later change of policy never changes it."
        ),
    )
    revision_of: str | None = Field(
        default=None, description="The proposal this one revises (an edit), if any."
    )
    superseded_by: str | None = Field(
        default=None,
        description=("The proposal that took this one's place, if any: see 'superseded_reason'."),
    )
    superseded_reason: str | None = Field(
        default=None,
        description=(
            "Why it was superseded: revised (an edit of it), replaced (a newer proposal for "
            "the same thing) or withdrawn (the proposal in 'superseded_by' was carried out "
            "and changed what this one relied on). Null when it is not superseded, or was "
            "superseded before reasons were recorded."
        ),
    )
    withdraws: list[WithdrawnOut] = Field(
        default_factory=list,
        description=(
            "For a pending proposal: the pending proposals on the same resource that "
            "approving it would withdraw, were it carried out now."
        ),
    )
    changes: list[ChangeOut] = Field(
        default_factory=list,
        description="For a revision: what it changed against the proposal it revises.",
    )
    origin: dict[str, str] | None = Field(
        default=None,
        description=(
            "Where the request came from when not from countersign itself: its 'channel' "
            "(mcp, or an agent framework) and the client's 'client' and 'client_version', "
            "as the client named itself."
        ),
    )
    approval_passkeys: list[PasskeyApprovalOut] = Field(
        default_factory=list, description="The approvals given with a passkey."
    )
    decline_note: str | None = Field(
        default=None, description="The decliner's note to the requester, if they wrote one."
    )
    proposed_at: datetime | None = Field(
        default=None, description="When it was proposed (its first event)."
    )
    unverified: UnverifiedOut | None = Field(
        default=None,
        description=(
            "With seal keys configured: why its seals do not vouch for what is stored of it "
            "(approving it then sets it aside for a new proposal); null when they do, or the "
            "server holds no keys. Lists and history are not checked."
        ),
    )
    policy_changed: bool = Field(
        default=False,
        description=(
            "Pending, and the club's approval policy now asks more of it than the one it was "
            "frozen under (more approvals, or a passkey): approving it as the caller executes "
            "nothing but sends it back to be proposed again (revision_required, "
            "policy_raised), and needs no passkey (approval-challenge answers 409 "
            "not-approvable, reason policy_raised). Said of the caller: false to a requester "
            "the policy bars (frozen, or since), whose approval is refused "
            "(requester_may_not_approve); a policy that now bars the requester alone asks "
            "nothing more of anyone else."
        ),
    )
    requester_barred: str | None = Field(
        default=None,
        description=(
            "Said of the caller: pending, and they requested it and its policy, frozen or "
            "the club's set since, does not let them approve it (approving it answers 409 "
            "not-approvable, reason requester_may_not_approve; they may still decline it): "
            "the sentence saying so, in the card's language, as the review page says it. "
            "Null otherwise."
        ),
    )


class ProposalStatusOut(BaseModel):
    """Where an execution stands: the outcome's ``status_path`` serves this."""

    proposal_id: str
    status: str = Field(
        description=(
            "pending, executing, reconciling, succeeded, revision_required, failed, "
            "declined, expired or superseded (see the card's superseded_by). A pending one "
            "past its expires_at is expired (before its history records Expired)."
        )
    )
    outcome_kind: str | None = Field(
        description="succeeded, needs_reconciliation, revision_required or terminal_failure."
    )
    reconciliation_pending: bool = Field(
        description="True while the external effect is uncertain and the reconciler owes an answer."
    )
    message: str | None = Field(
        description=(
            "The application's text for the outcome; while nothing settles an uncertain "
            "execution (settling unattended), also that an operator must start the worker."
        )
    )
    waiting_since: datetime | None = Field(
        default=None,
        description="While executing or reconciling: when it was claimed (its approval).",
    )
    settling: str | None = Field(
        default=None,
        description=(
            "While executing or reconciling: waiting (within the reconcile lease and one "
            "reconciler pass), provider_silent (past it, a reconciler running: the provider "
            "has not answered), or unattended (past it, no reconciler running: an operator "
            "must start countersign worker)."
        ),
    )
    policy_changed: bool = Field(
        default=False, description="As the card's policy_changed: approving it sends it back."
    )
    requester_barred: str | None = Field(
        default=None,
        description="As the card's requester_barred: the caller may not approve it, and why.",
    )
