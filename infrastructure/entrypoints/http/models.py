"""The API's request bodies and the documents it answers, as they appear in the OpenAPI schema.

Handlers answer the application's own report documents (``Report.to_json()``), the very
documents the CLI prints with ``--json``; these models describe them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.approval_policy import MAX_APPROVALS
from countersign.domain.contracts import REGISTRY
from pydantic import BaseModel, ConfigDict, Field

SECTIONS = ", ".join(ASSISTANTS)
"""Every section with an assistant, as the API names them."""
SECTION_PATTERN = "^(" + "|".join(ASSISTANTS) + ")$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(_Body):
    """One manager message for a section assistant."""

    message: str = Field(min_length=1, max_length=2000, description="What the manager wrote.")
    interaction_id: str | None = Field(
        default=None,
        max_length=64,
        description="Continue this conversation (from an earlier answer); omit to start one.",
    )
    language: Literal["en", "fr"] = Field(
        default="en",
        description="The language of the application's own words in the answer (its "
        "messages and what a refusal tells the manager): en or fr.",
    )


class ProposeIn(_Body):
    """A model-facing request to turn into a proposal."""

    operation: str = Field(
        max_length=100,
        description="The operation kind: " + ", ".join(sorted(REGISTRY)) + ".",
    )
    resource_id: str = Field(
        max_length=64, description="The order id or broadcast form id the operation applies to."
    )
    request: dict[str, Any] = Field(
        description=(
            "The operation's model-facing request (for a refund: payment, line_item, discount, "
            "destination). Validated by the operation's contract."
        )
    )


class DeclineIn(_Body):
    """An optional note for declining."""

    note: str | None = Field(default=None, max_length=500, description="Why, for the requester.")


class PasskeyAssertionIn(_Body):
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


class ApproveIn(_Body):
    """An approval's optional passkey assertion (required where the proposal's policy asks
    for a passkey)."""

    passkey_assertion: PasskeyAssertionIn | None = None


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


class RevisionIn(_Body):
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
    reason: Literal["removed", "lost_permission", "rejoined"] = Field(
        description=(
            "removed (no longer a member), lost_permission (no longer holds the operation's "
            "permission), rejoined (left the club and joined again since approving)."
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
            "kind: succeeded | needs_reconciliation | revision_required | terminal_failure."
        )
    )
    reason: str | None = Field(
        description=(
            "For not_approvable: not_pending, expired, in_progress, superseded (see "
            "'superseded_by') or requester_may_not_approve (its policy does not let the "
            "person who requested it approve it, whichever token acts for them), "
            "passkey_required (its policy asks each approval to be signed with the "
            "approver's passkey: see approval-challenge) or passkey_rejected (the assertion "
            "given does not verify). For "
            "awaiting_approvals: already_approved_by_you when the same person approves again "
            "(nothing changes), else null."
        )
    )
    message: str | None = Field(description="The application's text for the outcome.")
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


class PolicyRuleOut(BaseModel):
    """An approval policy: how many distinct people approve an operation's proposals."""

    operation: str = Field(description="The operation kind it governs.")
    approvals: int = Field(description="How many distinct people must approve.")
    above_cents: int | None = Field(
        description=(
            "It applies to proposals whose amount is above this, in cents (null: to every "
            "proposal; an operation that moves no money is covered only without a threshold)."
        )
    )
    requester_may_approve: bool = Field(
        description="Whether the person who requested a proposal may approve it."
    )
    require_passkey: bool = Field(
        default=False,
        description="Whether each approval must be signed with the approver's passkey.",
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


class ProposalCardOut(BaseModel):
    """Everything a reviewer sees about one proposal."""

    proposal_id: str
    operation: str
    section: str
    resource_id: str
    requested_by: str
    interaction_id: str
    status: str = Field(
        description=(
            "pending, executing, reconciling, succeeded, revision_required, failed, "
            "declined, expired or superseded."
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


class ProposalStatusOut(BaseModel):
    """Where an execution stands: the outcome's ``status_path`` serves this."""

    proposal_id: str
    status: str = Field(
        description=(
            "pending, executing, reconciling, succeeded, revision_required, failed, declined "
            "or expired."
        )
    )
    outcome_kind: str | None = Field(
        description="succeeded, needs_reconciliation, revision_required or terminal_failure."
    )
    reconciliation_pending: bool = Field(
        description="True while the external effect is uncertain and the reconciler owes an answer."
    )
    message: str | None = Field(description="The application's text for the outcome.")


class PolicyIn(_Body):
    """The approval policy to put in force for an operation's new proposals."""

    approvals: int = Field(
        strict=True,
        ge=1,
        le=MAX_APPROVALS,
        description=f"How many distinct people must approve (1 to {MAX_APPROVALS}).",
    )
    above_cents: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=10**15,
        description="Only proposals above this amount in cents (null: every proposal).",
    )
    requester_may_approve: bool = Field(
        default=True,
        strict=True,
        description="Whether the person who requested a proposal may approve it.",
    )
    require_passkey: bool | None = Field(
        default=None,
        strict=True,
        description=(
            "Whether each approval (above above_cents, like the quorum) must be signed with "
            "the approver's passkey, bound to the proposal's contract digest (omitted: as the "
            "policy in force asks)."
        ),
    )


class PolicyOut(PolicyRuleOut):
    """One operation's policy in force."""

    set_by: str | None = Field(
        description=(
            "Who set it: a member's email, 'operator' (the command line), 'seed', or null "
            "where none was set (one approval by anyone permitted)."
        )
    )


class PoliciesOut(BaseModel):
    """Every operation's approval policy in force in the token's organization."""

    policies: list[PolicyOut]


class PolicySetOut(PolicyRuleOut):
    """The policy now in force for the operation's new proposals."""

    changed: bool = Field(description="False when the same policy was already in force.")


class TurnMessageOut(BaseModel):
    author: str
    text: str


class TurnOut(BaseModel):
    """What one assistant turn produced."""

    interaction_id: str
    ended: Literal["proposal", "reply", "round_limit", "model_unavailable", "rate_limited"]
    messages: list[TurnMessageOut]
    proposal: ProposalCreatedOut | None
    model_calls: int
    context_chars: int
    app_seconds: float


class InboxOut(BaseModel):
    """Pending, unexpired proposals, newest first."""

    items: list[dict[str, Any]] = Field(
        description="Proposal cards as the browser view holds them."
    )
    page: int
    page_size: int
    total: int


class HistoryEventOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    version: int
    type: str
    at: datetime


class HistoryAsOfOut(BaseModel):
    version: int
    status: str
    preview: dict[str, Any]
    approved_by: str | None
    outcome: dict[str, Any] | None


class HistoryOut(BaseModel):
    """Every event of one proposal, as stored (the auditor's replay)."""

    proposal_id: str
    events: list[HistoryEventOut]
    as_of: HistoryAsOfOut | None = None


class WebhookIn(_Body):
    """An endpoint the organization's notifications are POSTed to."""

    url: str = Field(
        min_length=1,
        max_length=2000,
        description="An absolute https:// (or http://) URL, without credentials or #fragment.",
    )


class WebhookEndpointOut(BaseModel):
    endpoint_id: str
    url: str
    added_by: str = Field(description="Who registered it: a member's email, or operator.")


class WebhookAddedOut(BaseModel):
    """A registered endpoint and its signing secret, shown this once."""

    endpoint_id: str
    url: str
    organization: str
    secret: str = Field(
        description="The Standard Webhooks signing secret (whsec_...): verify each request's "
        "webhook-signature with it. Shown once."
    )


class WebhookListOut(BaseModel):
    items: list[WebhookEndpointOut]


class WebhookRemovedOut(BaseModel):
    endpoint_id: str
    removed: bool


class DeliveryAttemptOut(BaseModel):
    attempt: int
    started_at: datetime
    status_code: int | None = Field(description="The receiver's HTTP status (250: mail accepted).")
    result: str = Field(
        description=(
            "How it went: 'delivered', 'failed: the endpoint answered 500',"
            " 'failed: could not connect', 'failed: the endpoint was removed' or 'not sent: the"
            " proposal no longer awaits approval'."
        )
    )
    result_key: Literal["delivered", "answered", "could_not_connect", "endpoint_removed", "skipped"]
    outcome: Literal["delivered", "retry", "dead", "skipped"]
    next_attempt_at: datetime | None


class DeliveryOut(BaseModel):
    """One notification to one target, and every attempt at it."""

    delivery_id: str
    event_id: str = Field(description="The notification's stable id (the webhook-id header).")
    type: str = Field(description="proposal.awaiting_approval, .needs_reconciliation or .failed.")
    proposal_id: str
    operation: str
    channel: Literal["webhook", "email"]
    target: str = Field(description="The endpoint id, or the recipient's address.")
    status: Literal["pending", "delivered", "dead", "skipped"] = Field(
        description="skipped: not sent, the proposal no longer awaited approval when it was due."
    )
    attempts: int
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    last_error: str | None = Field(description="The last attempt's result, unless delivered.")
    attempt_log: list[DeliveryAttemptOut]


class DeliveriesOut(BaseModel):
    items: list[DeliveryOut]


class RedeliveredOut(BaseModel):
    redelivered: list[str] = Field(description="The dead letters put back in line.")
