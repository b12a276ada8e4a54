"""The Proposal aggregate: one operation's whole lifecycle as an immutable event stream."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from countersign.domain.club.passkeys import PasskeyAssertion
from countersign.domain.errors import IllegalTransitionError
from countersign.domain.hash_chain import chain_link, proposed_digest_and_link
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate, event


class ProposalStatus(StrEnum):
    """Where a proposal is in its lifecycle."""

    PENDING = "pending"
    EXECUTING = "executing"
    RECONCILING = "reconciling"
    SUCCEEDED = "succeeded"
    REVISION_REQUIRED = "revision_required"
    FAILED = "failed"
    DECLINED = "declined"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"


class SupersessionReason(StrEnum):
    """Why a pending proposal was retired (``Superseded.reason``)."""

    REVISED = "revised"
    """An edit of it took its place (the new proposal's ``revision_of`` names it)."""
    REPLACED = "replaced"
    """A newer proposal for the same thing took its place."""
    WITHDRAWN = "withdrawn"
    """Another proposal was carried out and changed what this one relied on (a refund
    changed the order's balance a cancellation was computed from)."""


FINISHED = frozenset(
    {
        ProposalStatus.SUCCEEDED,
        ProposalStatus.REVISION_REQUIRED,
        ProposalStatus.FAILED,
        ProposalStatus.DECLINED,
        ProposalStatus.SUPERSEDED,
    }
)


class Proposal(Aggregate):
    """A frozen operation contract awaiting, or past, a person's approval."""

    @event("Proposed")
    def __init__(
        self,
        *,
        id: UUID,
        organization_id: UUID,
        section: str,
        resource_id: UUID,
        requested_by: str,
        interaction_id: str,
        kind: str,
        contract_version: int,
        arguments: dict[str, Any],
        preview: dict[str, Any],
        expires_at: datetime,
        digest: str,
        chain: str,
        request: dict[str, Any] | None = None,
        revision_of: UUID | None = None,
        policy: dict[str, Any] | None = None,
        origin: dict[str, str] | None = None,
        resource_key: str | None = None,
    ) -> None:
        # The last four are absent from events stored before revisions, policies and
        # origins: a decoded old event keeps what it stored, and its chain link covers only
        # that.
        self.chain = chain
        self.organization_id = organization_id
        self.section = section
        self.resource_id = resource_id
        self.requested_by = requested_by
        self.interaction_id = interaction_id
        self.kind = kind
        self.contract_version = contract_version
        self.arguments = arguments
        self.preview = preview
        self.expires_at = expires_at
        self.digest = digest
        self.status = ProposalStatus.PENDING
        self.approved_by: str | None = None
        self.approved_at: datetime | None = None
        self.attempt_id: UUID | None = None
        self.claimed_at: datetime | None = None
        self.revalidated_facts: dict[str, Any] | None = None
        self.outcome: dict[str, Any] | None = None
        self.idempotency_key: str | None = None
        self.declined_by: str | None = None
        self.decline_note: str | None = None
        #: What the decliner presented (``person``, ``approver_token:<name>``; ``unknown``
        #: for a decline recorded before this was).
        self.declined_credential: str | None = None
        self.expired_at: datetime | None = None
        self.request = request
        self.revision_of = revision_of
        self.policy = policy
        #: Where the request came from when not from countersign's own assistants, CLI or
        #: API: {"channel": "mcp", "client": ..., "client_version": ...}.
        self.origin = origin
        #: The resource's own key when the contract maps keys to ids (``Scope.key``); None
        #: when its id is its own, and in events stored before keys were.
        self.resource_key = resource_key
        #: Who has approved so far and still counts, in order (a quorum policy asks for
        #: several people); an approval that no longer counts moves to ``lapsed_approvals``.
        self.approvals: tuple[str, ...] = ()
        #: Each approver's role in the club as they approved (None: recorded before roles were).
        self.approver_roles: tuple[str | None, ...] = ()
        #: What each approver presented (``person``, ``approver_token:<name>``).
        self.approver_credentials: tuple[str, ...] = ()
        #: Each approver's membership as they approved (None: recorded before it was).
        self.approver_memberships: tuple[str | None, ...] = ()
        #: Approvals that no longer count, in order: {"approved_by", "reason"}.
        self.lapsed_approvals: tuple[dict[str, str], ...] = ()
        #: Each approval's passkey assertion, in the order of ``approvals`` (None: without).
        self.approval_passkeys: tuple[PasskeyAssertion | None, ...] = ()
        self.superseded_by: UUID | None = None
        #: Why it was superseded (a SupersessionReason's value); None when it was recorded
        #: before reasons were, or while it is not superseded.
        self.superseded_reason: str | None = None

    @classmethod
    def propose(cls, **fields: Any) -> Proposal:
        """Create a proposal whose first event opens its hash chain. Without a ``digest``,
        its contract digest is computed here, with the first link, from the same walk of
        its arguments and preview."""
        # eventsourcing 9.5.6 asks for every keyword-only argument of an event-decorated
        # __init__, defaults or not, when the aggregate is created.
        fields = {
            "request": None,
            "revision_of": None,
            "policy": None,
            "origin": None,
            "resource_key": None,
            **fields,
        }
        # ``_create`` with the created event class is what ``cls(**fields)`` comes to, without
        # the library matching every field against ``__init__``'s signature first (about
        # 36,000 instructions): every field is given here, and the event's ``__init__``
        # refuses a missing or an unknown one as ever.
        proposed = cls.Proposed  # type: ignore[attr-defined]  # made by @event("Proposed")
        if "digest" not in fields:
            digest, chain = proposed_digest_and_link(fields)
            return cls._create(proposed, **fields, digest=digest, chain=chain)
        content = {key: value for key, value in fields.items() if key != "id"}
        return cls._create(proposed, **fields, chain=chain_link("", 1, "Proposed", content))

    def _link(self, event_type: str, **fields: Any) -> str:
        return chain_link(self.chain, self.version + 1, event_type, fields)

    @property
    def scope(self) -> Scope:
        section = Section(self.section)
        return Scope(self.organization_id, section, self.resource_id, key=self.resource_key)

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    def is_expired_at(self, now: datetime) -> bool:
        return now >= self.expires_at

    @property
    def approvals_required(self) -> int:
        """How many distinct people must approve: the policy frozen with it, else one."""
        return int((self.policy or {}).get("approvals_required", 1))

    @property
    def requester_may_approve(self) -> bool:
        return bool((self.policy or {}).get("requester_may_approve", True))

    @property
    def requires_passkey(self) -> bool:
        """Whether each approval must be signed with the approver's passkey."""
        return bool((self.policy or {}).get("require_passkey", False))

    def has_approved(self, email: str) -> bool:
        return email in self.approvals

    # -- guards ---------------------------------------------------------------------------

    def check_is(self, action: str, *allowed: ProposalStatus) -> None:
        if self.status not in allowed:
            raise IllegalTransitionError(action, self.status)

    # -- commands -------------------------------------------------------------------------

    def approve(
        self,
        approved_by: str,
        at: datetime,
        role: str | None = None,
        passkey: PasskeyAssertion | None = None,
        *,
        credential: str = "person",
        membership_id: str | None = None,
    ) -> None:
        """One approval of several a policy requires; the last one is ``approve_and_claim``.
        ``role``: the approver's role in the club as they approve (manager, staff...);
        ``passkey``: the verified assertion it was signed with, if any; ``credential``: what
        they presented; ``membership_id``: which membership approved."""
        self.check_is("approve", ProposalStatus.PENDING)
        if self.has_approved(approved_by):
            raise IllegalTransitionError("approve twice", self.status)
        fields: dict[str, Any] = {
            "approved_by": approved_by,
            "approved_at": at,
            "role": role,
            "credential": credential,
            "membership_id": membership_id,
            "passkey": passkey,
        }
        self.trigger_event(self.Approved, **fields, chain=self._link("Approved", **fields))

    def approve_and_claim(
        self,
        approved_by: str,
        at: datetime,
        attempt_id: UUID,
        role: str | None = None,
        passkey: PasskeyAssertion | None = None,
        *,
        credential: str = "person",
        membership_id: str | None = None,
    ) -> None:
        """The last required approval and the claim always travel together, in one commit."""
        self.approve(
            approved_by, at, role, passkey, credential=credential, membership_id=membership_id
        )
        fields: dict[str, Any] = {"attempt_id": attempt_id, "claimed_at": at}
        self.trigger_event(self.Claimed, **fields, chain=self._link("Claimed", **fields))

    def lapse_approval(self, approved_by: str, reason: str) -> None:
        """An earlier approval no longer counts towards the quorum (its approver left the
        club, lost the permission, or left and came back): it stays recorded, as lapsed.
        ``reason``: ``removed``, ``lost_permission`` or ``rejoined``."""
        self.check_is("recheck", ProposalStatus.PENDING)
        if not self.has_approved(approved_by):
            raise IllegalTransitionError("lapse an approval never given", self.status)
        fields: dict[str, Any] = {"approved_by": approved_by, "reason": reason}
        self.trigger_event(
            self.ApprovalLapsed, **fields, chain=self._link("ApprovalLapsed", **fields)
        )

    def supersede(self, by: UUID, reason: SupersessionReason) -> None:
        """A newer proposal (a revision, or a fresh one for the same thing), or an execution
        that made this preview stale, retires it: it can no longer be approved. ``reason``
        says which of these it was."""
        self.check_is("supersede", ProposalStatus.PENDING)
        fields: dict[str, Any] = {"by": by, "reason": str(reason)}
        self.trigger_event(self.Superseded, **fields, chain=self._link("Superseded", **fields))

    def record_revalidated(self, facts: dict[str, Any]) -> None:
        self.check_is("revalidate", ProposalStatus.EXECUTING)
        self.trigger_event(
            self.Revalidated, facts=facts, chain=self._link("Revalidated", facts=facts)
        )

    def succeed(self, outcome: dict[str, Any]) -> None:
        self.check_is("complete", ProposalStatus.EXECUTING, ProposalStatus.RECONCILING)
        self.trigger_event(
            self.Succeeded, outcome=outcome, chain=self._link("Succeeded", outcome=outcome)
        )

    def require_revision(self, outcome: dict[str, Any]) -> None:
        self.check_is("require revision of", ProposalStatus.EXECUTING, ProposalStatus.RECONCILING)
        self._require_revision(outcome)

    def start_reconciling(self, outcome: dict[str, Any], idempotency_key: str) -> None:
        self.check_is("reconcile", ProposalStatus.EXECUTING)
        fields: dict[str, Any] = {"outcome": outcome, "idempotency_key": idempotency_key}
        self.trigger_event(self.Reconciling, **fields, chain=self._link("Reconciling", **fields))

    def fail(self, outcome: dict[str, Any], error_class: str) -> None:
        self.check_is("fail", ProposalStatus.EXECUTING, ProposalStatus.RECONCILING)
        fields: dict[str, Any] = {"outcome": outcome, "error_class": error_class}
        self.trigger_event(self.Failed, **fields, chain=self._link("Failed", **fields))

    def decline(
        self,
        declined_by: str,
        note: str | None,
        outcome: dict[str, Any],
        *,
        credential: str = "person",
    ) -> None:
        """Declined and its RevisionRequired(declined_by_manager) travel together."""
        self.check_is("decline", ProposalStatus.PENDING)
        fields: dict[str, Any] = {
            "declined_by": declined_by,
            "note": note,
            "credential": credential,
        }
        self.trigger_event(self.Declined, **fields, chain=self._link("Declined", **fields))
        self._require_revision(outcome)

    def expire(self, at: datetime) -> None:
        self.check_is("expire", ProposalStatus.PENDING)
        self.trigger_event(self.Expired, at=at, chain=self._link("Expired", at=at))

    def _require_revision(self, outcome: dict[str, Any]) -> None:
        self.trigger_event(
            self.RevisionRequired,
            outcome=outcome,
            chain=self._link("RevisionRequired", outcome=outcome),
        )

    # -- events (replayed on load: they never raise and never look outside) -----------------
    #
    # Each event class applies itself (``apply``), and a command triggers it with
    # ``trigger_event``: the library's explicit style, which costs less than half of its
    # ``@event`` decorator's path per event (about 18 us against 42 on the 2-core machine), and
    # a cycle writes six of them. Their topics are the decorator's (``Proposal.Claimed``).

    class Approved(Aggregate.Event):
        """A permitted member approved it. Version 2 records the approver's role in the club
        as they approved: an auditor reads in what capacity each of a quorum's approvals was
        given, though roles change and people leave afterwards. Version 3 records what the
        approver presented (``credential``: ``person``, or ``approver_token:<token name>``)
        and which membership approved (``membership_id``), so that a quorum's final approval
        can tell whether an earlier approver is still the same member.

        Version 3 also adds ``passkey``: the WebAuthn assertion the approval was signed with
        (credential id, authenticator data, client data, signature and the nonce of its
        challenge), which ``audit verify`` checks against the key the approver registered.

        Events change shape only through a new ``class_version`` and an upcaster from the
        one before (docs/proof.md): the chain link of an upcast event still covers the fields
        as they were written, which ``audit verify`` hashes."""

        class_version = 3
        approved_by: str
        approved_at: datetime
        role: str | None
        credential: str
        membership_id: str | None
        passkey: PasskeyAssertion | None
        chain: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 (up to a41ffac) did not record the role: it is unknown, not guessed
            from the approver's role today."""
            state["role"] = None

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Version 2 (up to 417270c) did not record the credential: it was ``unknown``
            then (a person, or a token that could approve), and the membership unknown. Nor
            did it record a passkey: every approval before version 3 was given without one."""
            state["credential"] = "unknown"
            state["membership_id"] = None
            state["passkey"] = None

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.approved_by = self.approved_by
            aggregate.approved_at = self.approved_at
            aggregate.approvals = (*aggregate.approvals, self.approved_by)
            aggregate.approver_roles = (*aggregate.approver_roles, self.role)
            aggregate.approver_credentials = (*aggregate.approver_credentials, self.credential)
            aggregate.approver_memberships = (
                *aggregate.approver_memberships,
                self.membership_id,
            )
            aggregate.approval_passkeys = (*aggregate.approval_passkeys, self.passkey)

    class ApprovalLapsed(Aggregate.Event):
        """An earlier approval stopped counting towards the quorum when a later approval
        rechecked it (``reason``: ``removed``, ``lost_permission``, ``rejoined``). The
        ``Approved`` it names stays in the stream."""

        approved_by: str
        reason: str
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            index = aggregate.approvals.index(self.approved_by)
            keep = [i for i in range(len(aggregate.approvals)) if i != index]
            aggregate.approvals = tuple(aggregate.approvals[i] for i in keep)
            aggregate.approver_roles = tuple(aggregate.approver_roles[i] for i in keep)
            aggregate.approver_credentials = tuple(aggregate.approver_credentials[i] for i in keep)
            aggregate.approver_memberships = tuple(aggregate.approver_memberships[i] for i in keep)
            aggregate.approval_passkeys = tuple(aggregate.approval_passkeys[i] for i in keep)
            aggregate.lapsed_approvals = (
                *aggregate.lapsed_approvals,
                {"approved_by": self.approved_by, "reason": self.reason},
            )

    class Claimed(Aggregate.Event):
        """pending -> executing, with a fresh attempt id."""

        attempt_id: UUID
        claimed_at: datetime
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.attempt_id = self.attempt_id
            aggregate.claimed_at = self.claimed_at
            aggregate.status = ProposalStatus.EXECUTING

    class Revalidated(Aggregate.Event):
        """Current state still proves the preview: the facts rechecked."""

        facts: dict[str, Any]
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.revalidated_facts = self.facts

    class Succeeded(Aggregate.Event):
        """The effect is recorded: the typed result."""

        outcome: dict[str, Any]
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.outcome = self.outcome
            aggregate.status = ProposalStatus.SUCCEEDED

    class RevisionRequired(Aggregate.Event):
        """A material fact changed, the provider refused, or the manager declined."""

        outcome: dict[str, Any]
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.outcome = self.outcome
            if aggregate.status != ProposalStatus.DECLINED:
                aggregate.status = ProposalStatus.REVISION_REQUIRED

    class Reconciling(Aggregate.Event):
        """The provider's answer is unknown: the reconciler settles it under
        ``idempotency_key``. Version 2 stores a ``NeedsReconciliation`` outcome without the
        JSON API's route to the proposal's status (``status_path``): an event records facts,
        and the entry points build the route from the proposal's id."""

        class_version = 2
        outcome: dict[str, Any]
        idempotency_key: str
        chain: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 (up to d724e0b) stored the route in the outcome; it named the
            proposal's own status resource, which the entry points now build the same way."""
            outcome = state["outcome"]
            state["outcome"] = {
                key: value for key, value in outcome.items() if key != "status_path"
            }

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.outcome = self.outcome
            aggregate.idempotency_key = self.idempotency_key
            aggregate.status = ProposalStatus.RECONCILING

    class Failed(Aggregate.Event):
        """A terminal internal failure: the correlation id is in the outcome."""

        outcome: dict[str, Any]
        error_class: str
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.outcome = self.outcome
            aggregate.status = ProposalStatus.FAILED

    class Declined(Aggregate.Event):
        """A permitted member declined it. Version 2 records what they presented
        (``credential``: ``person``, or ``approver_token:<token name>``)."""

        class_version = 2
        declined_by: str
        note: str | None
        credential: str
        chain: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 (up to 417270c) did not record the credential: ``unknown`` (a person,
            or a token that could decline then)."""
            state["credential"] = "unknown"

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.declined_by = self.declined_by
            aggregate.decline_note = self.note
            aggregate.declined_credential = self.credential
            aggregate.status = ProposalStatus.DECLINED

    class Expired(Aggregate.Event):
        """Approval was attempted, or the sweeper ran, after the expiry."""

        at: datetime
        chain: str

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.expired_at = self.at
            aggregate.status = ProposalStatus.EXPIRED

    class Superseded(Aggregate.Event):
        """Something took its place while it was pending: ``by`` names the proposal.
        Version 2 records why (``reason``, a SupersessionReason): an edit of it, a newer
        proposal for the same thing, or another proposal carried out, which withdrew it."""

        class_version = 2
        by: UUID
        reason: str | None
        chain: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 (up to bf728c4) did not record why: unknown, not guessed from what
            the proposal that took its place did afterwards."""
            state["reason"] = None

        def apply(self, aggregate: Proposal) -> None:
            aggregate.chain = self.chain
            aggregate.superseded_by = self.by
            aggregate.superseded_reason = self.reason
            aggregate.status = ProposalStatus.SUPERSEDED
