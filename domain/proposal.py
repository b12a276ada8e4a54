"""The Proposal aggregate: one operation's whole lifecycle as an immutable event stream.

Its commands and state are here; its statuses are in proposal_status.py and its events
after ``Proposed`` in proposal_events.py (the topics they are stored under stay this
module's: ``countersign.domain.proposal:Proposal.Claimed``). The statuses are importable
from here as before.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import eventsourcing.domain
from countersign.domain import proposal_events
from countersign.domain.club.passkeys import PasskeyAssertion
from countersign.domain.errors import IllegalTransitionError
from countersign.domain.hash_chain import chain_link, proposed_digest_and_link
from countersign.domain.proposal_status import (
    EXECUTING,
    FINISHED,
    PENDING,
    RECONCILING,
    ProposalStatus,
    SupersessionReason,
    status_at,
)
from countersign.domain.scope import Scope, Section
from countersign.domain.seals import SealKeys, SealProblem
from eventsourcing.domain import Aggregate

__all__ = ["FINISHED", "Proposal", "ProposalStatus", "SupersessionReason"]

#: The ``Proposed`` fields that events stored before them lack, each None when not given.
_DEFAULTED: dict[str, Any] = {
    "request": None,
    "revision_of": None,
    "policy": None,
    "origin": None,
    "resource_key": None,
    "requested_through": None,
}


def _now() -> datetime:
    """An event's time, as the library would give it (``create_timestamp``): taken here,
    before the event, so that its chain link covers it (hash_chain.py)."""
    return datetime.now(eventsourcing.domain.TZINFO)


class Proposal(Aggregate):
    """A frozen operation contract awaiting, or past, a person's approval."""

    #: Read as None from a proposal's state taken before it was recorded (``__init__``).
    requested_through: str | None = None
    #: Read as None from a proposal's state taken before seals were recorded (``__init__``).
    seal: dict[str, str] | None = None
    #: Set only by a store holding seal keys, as it reads the events after ``Proposed``
    #: (``seals.event_problem``): the first one its seal does not vouch for, named; None
    #: while every one read is (or without keys, when nothing is checked).
    unvouched: SealProblem | None = None
    #: Whether an event after ``Proposed`` is sealed, as read or stored under seal keys: from
    #: then on, every later one must be (``seals.event_problem``).
    later_sealed: bool = False
    #: True only on the object ``propose`` made under seal keys (its contract digest made there
    #: too, not given), and on this process's copies of it: its digest, first link and seal
    #: were made here from the very fields it holds, so its seal needs no check
    #: (application/seal_check.py). Never stored: a proposal read from the database, in this
    #: process or any other, has False, and is checked.
    sealed_here: bool = False

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
        requested_through: str | None = None,
        seal: dict[str, str] | None = None,
    ) -> None:
        # Applies ``Proposed`` (proposal_events.py), whose fields these are. The last six
        # before ``seal`` are absent from events stored before revisions, policies, origins,
        # keys and credentials: a decoded old event keeps what it stored, and its chain link
        # covers only that. ``seal`` is None in version 1 events (its upcaster).
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
        self.status = PENDING
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
        #: What the requester presented (``Caller.recorded_credential``): ``person`` (their
        #: own sign-in), ``assistant`` (a model's tool call for them: a section assistant, the
        #: MCP server over stdio, an agent framework), ``agent_token:<name>`` or
        #: ``approver_token:<name>``; None in events stored before it was recorded.
        self.requested_through = requested_through
        #: The seal of its first link under a key held outside the database
        #: (``{"key_id", "mac"}``, domain/seals.py); None when made without seal keys.
        self.seal = seal
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
    def propose(cls, *, seals: SealKeys | None = None, **fields: Any) -> Proposal:
        """Create a proposal whose first event opens its hash chain. Without a ``digest``,
        its contract digest is computed here, with the first link, from the same walk of
        its arguments and preview. With ``seals``, the first link is sealed under the
        sealing key (one HMAC, domain/seals.py)."""
        # eventsourcing 9.5.6 asks for every keyword-only argument of an event-decorated
        # __init__, defaults or not, when the aggregate is created. (Tested first, in C:
        # freezing gives them all, and a dict made again of twenty fields costs about 5,700
        # instructions.)
        if not _DEFAULTED.keys() <= fields.keys():
            fields = {**_DEFAULTED, **fields}
        # ``_create`` with the created event class is what ``cls(**fields)`` comes to, without
        # the library matching every field against ``__init__``'s signature first (about
        # 36,000 instructions): every field is given here, and the event's ``__init__``
        # refuses a missing or an unknown one as ever.
        proposed = cls.Proposed
        at = _now()
        if "digest" not in fields:
            digest, chain = proposed_digest_and_link(fields, at)
            seal = None if seals is None else seals.seal(fields["id"], chain)
            made = cls._create(
                proposed, **fields, digest=digest, chain=chain, seal=seal, timestamp=at
            )
            if seal is not None:
                # Its digest and link made here from its fields: vouched for (``sealed_here``).
                made.__dict__["sealed_here"] = True
            return made
        # A digest given (a tool, a benchmark) is not hashed here: its approval checks it.
        content = {key: value for key, value in fields.items() if key != "id"}
        chain = chain_link("", 1, "Proposed", content, at)
        seal = None if seals is None else seals.seal(fields["id"], chain)
        return cls._create(proposed, **fields, chain=chain, seal=seal, timestamp=at)

    def proposed_digest_and_link(self) -> tuple[str, str]:
        """Its contract digest and the first link of its chain made again from its state,
        which is what its ``Proposed`` event stored, read back (or a snapshot of it): the
        digest from its arguments and preview, and the link over its fields with that
        digest, from one walk of them, as ``propose`` made them. A proposal made since seals
        were recorded stored every field, so these are exactly the fields its link covered,
        and the link is its stored one when nothing was changed."""
        fields: dict[str, Any] = {
            "organization_id": self.organization_id,
            "section": self.section,
            "resource_id": self.resource_id,
            "requested_by": self.requested_by,
            "interaction_id": self.interaction_id,
            "kind": self.kind,
            "contract_version": self.contract_version,
            "arguments": self.arguments,
            "preview": self.preview,
            "expires_at": self.expires_at,
            "request": self.request,
            "revision_of": self.revision_of,
            "policy": self.policy,
            "origin": self.origin,
            "resource_key": self.resource_key,
            "requested_through": self.requested_through,
        }
        return proposed_digest_and_link(fields, self.created_on)

    def _trigger(self, event_class: type[Any], event_type: str, fields: dict[str, Any]) -> None:
        """Trigger the next event of ``fields``, linked to the chain with its time."""
        at = datetime.now(eventsourcing.domain.TZINFO)  # _now(), without its call
        # ``_version``: what the library's ``version`` property returns, without its call.
        link = chain_link(self.chain, self._version + 1, event_type, fields, at)
        self.trigger_event(event_class, **fields, chain=link, timestamp=at)

    @property
    def scope(self) -> Scope:
        section = Section(self.section)
        # By position (keywords build a dict): organization_id, section, resource_id, key.
        return Scope(self.organization_id, section, self.resource_id, self.resource_key)

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    def is_expired_at(self, now: datetime) -> bool:
        return now >= self.expires_at

    def status_at(self, now: datetime) -> str:
        """Its status as a reader is told it at ``now`` (``proposal_status.status_at``): a
        pending one past its expiry is expired before anything records it."""
        return status_at(self.status, self.expires_at, now)

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
        self._approve(approved_by, at, role, passkey, credential, membership_id)

    def _approve(
        self,
        approved_by: str,
        at: datetime,
        role: str | None,
        passkey: PasskeyAssertion | None,
        credential: str,
        membership_id: str | None,
    ) -> None:
        """``approve``, its arguments by position (a call with keywords builds a dict)."""
        if self.status != PENDING:  # check_is, inline: a call fewer on the approve path
            raise IllegalTransitionError("approve", self.status)
        if approved_by in self.approvals:
            raise IllegalTransitionError("approve twice", self.status)
        fields: dict[str, Any] = {
            "approved_by": approved_by,
            "approved_at": at,
            "role": role,
            "credential": credential,
            "membership_id": membership_id,
            "passkey": passkey,
        }
        self._trigger(self.Approved, "Approved", fields)

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
        self._approve(approved_by, at, role, passkey, credential, membership_id)
        self._trigger(self.Claimed, "Claimed", {"attempt_id": attempt_id, "claimed_at": at})

    def lapse_approval(self, approved_by: str, reason: str) -> None:
        """An earlier approval no longer counts towards the quorum (its approver left the
        club, lost the permission, or left and came back): it stays recorded, as lapsed.
        ``reason``: ``removed``, ``lost_permission``, ``rejoined`` or ``requester_barred``
        (a policy set since bars the requester, whose approval it was)."""
        self.check_is("recheck", PENDING)
        if not self.has_approved(approved_by):
            raise IllegalTransitionError("lapse an approval never given", self.status)
        fields: dict[str, Any] = {"approved_by": approved_by, "reason": reason}
        self._trigger(self.ApprovalLapsed, "ApprovalLapsed", fields)

    def supersede(self, by: UUID, reason: SupersessionReason) -> None:
        """A newer proposal (a revision, or a fresh one for the same thing), or an execution
        that made this preview stale, retires it: it can no longer be approved. ``reason``
        says which of these it was."""
        self.check_is("supersede", PENDING)
        self._trigger(self.Superseded, "Superseded", {"by": by, "reason": str(reason)})

    def record_revalidated(self, facts: dict[str, Any]) -> None:
        if self.status != EXECUTING:  # check_is, inline (the approve path's every claim)
            raise IllegalTransitionError("revalidate", self.status)
        self._trigger(self.Revalidated, "Revalidated", {"facts": facts})

    def succeed(self, outcome: dict[str, Any]) -> None:
        status = self.status
        if status != EXECUTING and status != RECONCILING:  # check_is, inline
            raise IllegalTransitionError("complete", status)
        self._trigger(self.Succeeded, "Succeeded", {"outcome": outcome})

    def require_revision(self, outcome: dict[str, Any]) -> None:
        self.check_is("require revision of", EXECUTING, RECONCILING)
        self._require_revision(outcome)

    def start_reconciling(self, outcome: dict[str, Any], idempotency_key: str) -> None:
        self.check_is("reconcile", EXECUTING)
        fields: dict[str, Any] = {"outcome": outcome, "idempotency_key": idempotency_key}
        self._trigger(self.Reconciling, "Reconciling", fields)

    def fail(self, outcome: dict[str, Any], error_class: str) -> None:
        self.check_is("fail", EXECUTING, RECONCILING)
        self._trigger(self.Failed, "Failed", {"outcome": outcome, "error_class": error_class})

    def decline(
        self,
        declined_by: str,
        note: str | None,
        outcome: dict[str, Any],
        *,
        credential: str = "person",
    ) -> None:
        """Declined and its RevisionRequired(declined_by_manager) travel together."""
        self.check_is("decline", PENDING)
        fields: dict[str, Any] = {
            "declined_by": declined_by,
            "note": note,
            "credential": credential,
        }
        self._trigger(self.Declined, "Declined", fields)
        self._require_revision(outcome)

    def set_aside_unverified(self, outcome: dict[str, Any]) -> None:
        """pending -> revision_required, nothing approved nor claimed: its stored record
        does not verify against its seal (application/seal_check.py), so nothing it says,
        its policy, quorum or expiry included, may decide an approval."""
        self.check_is("approve", PENDING)
        self._require_revision(outcome)

    def require_revision_unapproved(self, outcome: dict[str, Any]) -> None:
        """pending -> revision_required, nothing approved nor claimed: the club's approval
        policy now asks more of it than the one it was frozen under, so no approval may
        decide it under the old one (application/policy_recheck.py)."""
        self.check_is("approve", PENDING)
        self._require_revision(outcome)

    def expire(self, at: datetime) -> None:
        self.check_is("expire", PENDING)
        self._trigger(self.Expired, "Expired", {"at": at})

    def _require_revision(self, outcome: dict[str, Any]) -> None:
        self._trigger(self.RevisionRequired, "RevisionRequired", {"outcome": outcome})

    # -- events (replayed on load: they never raise and never look outside) -----------------
    #
    # Defined in proposal_events.py, and the library makes each here the aggregate's own
    # subclass, ``Proposal.<Name>`` in this module: the topics they are stored under, as ever
    # (``Proposed``, the "created" event, is applied by ``__init__``).

    Proposed = proposal_events.Proposed
    Approved = proposal_events.Approved
    ApprovalLapsed = proposal_events.ApprovalLapsed
    Claimed = proposal_events.Claimed
    Revalidated = proposal_events.Revalidated
    Succeeded = proposal_events.Succeeded
    RevisionRequired = proposal_events.RevisionRequired
    Reconciling = proposal_events.Reconciling
    Failed = proposal_events.Failed
    Declined = proposal_events.Declined
    Expired = proposal_events.Expired
    Superseded = proposal_events.Superseded
