"""The Proposal aggregate's events: ``Proposed``, which creates it (its ``__init__`` applies
it), and the events after it, what each records and how it applies itself (replayed on load:
they never raise and never look outside).

Each event class applies itself (``apply``), and a command of the aggregate triggers it with
``trigger_event``: the library's explicit style, which costs less than half of its ``@event``
decorator's path per event (about 18 us against 42 on the 2-core machine), and a cycle writes
six of them.

They are defined here and named in ``Proposal``'s body (``Approved = proposal_events.Approved``).
The aggregate's metaclass (eventsourcing 9.5.6's ``MetaAggregate``) then defines, for each,
the subclass that is the aggregate's event (of it and ``Proposal.Event``), in
``countersign.domain.proposal`` with the qualified name ``Proposal.<Name>``, as it did when
they were written inside the class: so ``Proposal.Claimed`` is stored, and resolved, under
``countersign.domain.proposal:Proposal.Claimed`` as before (tests/test_proposal_topics.py).
The classes here are its bases, never stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from countersign.domain.club.passkeys import PasskeyAssertion
from countersign.domain.proposal_status import (
    DECLINED,
    EXECUTING,
    EXPIRED,
    FAILED,
    RECONCILING,
    REVISION_REQUIRED,
    SUCCEEDED,
    SUPERSEDED,
)
from eventsourcing.domain import Aggregate

if TYPE_CHECKING:
    from countersign.domain.proposal import Proposal


def _no_seal(state: dict[str, Any]) -> None:
    """The upcaster to the version that adds ``seal`` to an event after ``Proposed``: one
    written before it, or written since without seal keys, has none, and reads ``seal`` as
    None (the class's), with nothing added to what it stored.

    With seal keys configured, every event after ``Proposed`` carries the seal of its own
    chain link (``{"key_id", "mac"}``, domain/seals.py), outside that link, as ``chain``
    is; it is made as the event is stored, and is then the event's own ``seal``. Without
    keys an event has none (its class's None, no field of its own), and the mapper stores it
    as its ``unsealed_version`` was stored (infrastructure/persistence/stored_events.py): the
    same bytes as before seals were, which a release before them still reads, at no cost to
    a cycle without keys. A sealed event is stored at the class's version, which such a
    release refuses (a version from its future), so it never acts on one unchecked."""


class Proposed(Aggregate.Created):
    """A proposal frozen for people to approve: the operation, its arguments and preview,
    their contract digest, the policy and expiry it was frozen under, and the first link of
    its hash chain. Its fields are ``Proposal.__init__``'s, in its order (the fields added
    after the first release default to None there: events stored before them lack them).

    Version 2 adds ``seal``: the HMAC of the first link and the proposal's id under a key
    held outside the database, with that key's id (``{"key_id", "mac"}``, domain/seals.py),
    or None when no key is configured. The seal is outside the link it seals, like
    ``chain`` itself. Version 2 is an explicit class (version 1 was made by
    ``@event("Proposed")`` on ``__init__``, which cannot carry a version), stored under the
    same topic, ``countersign.domain.proposal:Proposal.Proposed``."""

    class_version = 2
    organization_id: UUID
    section: str
    resource_id: UUID
    requested_by: str
    interaction_id: str
    kind: str
    contract_version: int
    arguments: dict[str, Any]
    preview: dict[str, Any]
    expires_at: datetime
    digest: str
    chain: str
    request: dict[str, Any] | None
    revision_of: UUID | None
    policy: dict[str, Any] | None
    origin: dict[str, str] | None
    resource_key: str | None
    requested_through: str | None
    seal: dict[str, str] | None

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Version 1 (up to 257e0cd) had no seal: every proposal before version 2 was made
        without one, which a deployment holding seal keys refuses to approve."""
        state["seal"] = None


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

    class_version = 4
    approved_by: str
    approved_at: datetime
    role: str | None
    credential: str
    membership_id: str | None
    passkey: PasskeyAssertion | None
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 3 was, byte for byte (``_no_seal``).
    unsealed_version = 3
    upcast_v3_v4 = staticmethod(_no_seal)

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
    rechecked it (``reason``: ``removed``, ``lost_permission``, ``rejoined``,
    ``requester_barred``). The
    ``Approved`` it names stays in the stream."""

    class_version = 2

    approved_by: str
    reason: str
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 1 was, byte for byte (``_no_seal``).
    unsealed_version = 1
    upcast_v1_v2 = staticmethod(_no_seal)

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

    class_version = 2

    attempt_id: UUID
    claimed_at: datetime
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 1 was, byte for byte (``_no_seal``).
    unsealed_version = 1
    upcast_v1_v2 = staticmethod(_no_seal)

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.attempt_id = self.attempt_id
        aggregate.claimed_at = self.claimed_at
        aggregate.status = EXECUTING


class Revalidated(Aggregate.Event):
    """Current state still proves the preview: the facts rechecked."""

    class_version = 2

    facts: dict[str, Any]
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 1 was, byte for byte (``_no_seal``).
    unsealed_version = 1
    upcast_v1_v2 = staticmethod(_no_seal)

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.revalidated_facts = self.facts


class Succeeded(Aggregate.Event):
    """The effect is recorded: the typed result."""

    class_version = 2

    outcome: dict[str, Any]
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 1 was, byte for byte (``_no_seal``).
    unsealed_version = 1
    upcast_v1_v2 = staticmethod(_no_seal)

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.outcome = self.outcome
        aggregate.status = SUCCEEDED


class RevisionRequired(Aggregate.Event):
    """A material fact changed, the provider refused, or the manager declined. Version 2's
    outcome may say that the fact that changed is that what the proposal asked for already
    holds (``"already_so": true``, ``domain.outcomes.RevisionRequired``): a release before
    it would read such an outcome as something it is not, and refuses it instead (a
    ``class_version`` newer than its own)."""

    class_version = 3
    outcome: dict[str, Any]
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 2 was, byte for byte (``_no_seal``).
    unsealed_version = 2
    upcast_v2_v3 = staticmethod(_no_seal)

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Version 1 (up to 257e0cd) had no way to say it: no recheck told that what a
        proposal asked for already held. Its outcome is read as it was written, which
        version 2 reads as not already so (the key is stored only when true); nothing is
        added, so every answer shows it as before."""

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.outcome = self.outcome
        if aggregate.status != DECLINED:
            aggregate.status = REVISION_REQUIRED


class Reconciling(Aggregate.Event):
    """The provider's answer is unknown: the reconciler settles it under
    ``idempotency_key``. Version 2 stores a ``NeedsReconciliation`` outcome without the
    JSON API's route to the proposal's status (``status_path``): an event records facts,
    and the entry points build the route from the proposal's id."""

    class_version = 3
    outcome: dict[str, Any]
    idempotency_key: str
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 2 was, byte for byte (``_no_seal``).
    unsealed_version = 2
    upcast_v2_v3 = staticmethod(_no_seal)

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Version 1 (up to d724e0b) stored the route in the outcome; it named the
        proposal's own status resource, which the entry points now build the same way."""
        outcome = state["outcome"]
        state["outcome"] = {key: value for key, value in outcome.items() if key != "status_path"}

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.outcome = self.outcome
        aggregate.idempotency_key = self.idempotency_key
        aggregate.status = RECONCILING


class Failed(Aggregate.Event):
    """A terminal internal failure: the correlation id is in the outcome."""

    class_version = 2

    outcome: dict[str, Any]
    error_class: str
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 1 was, byte for byte (``_no_seal``).
    unsealed_version = 1
    upcast_v1_v2 = staticmethod(_no_seal)

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.outcome = self.outcome
        aggregate.status = FAILED


class Declined(Aggregate.Event):
    """A permitted member declined it. Version 2 records what they presented
    (``credential``: ``person``, or ``approver_token:<token name>``)."""

    class_version = 3
    declined_by: str
    note: str | None
    credential: str
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 2 was, byte for byte (``_no_seal``).
    unsealed_version = 2
    upcast_v2_v3 = staticmethod(_no_seal)

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
        aggregate.status = DECLINED


class Expired(Aggregate.Event):
    """Approval was attempted, or the sweeper ran, after the expiry."""

    class_version = 2

    at: datetime
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 1 was, byte for byte (``_no_seal``).
    unsealed_version = 1
    upcast_v1_v2 = staticmethod(_no_seal)

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.expired_at = self.at
        aggregate.status = EXPIRED


class Superseded(Aggregate.Event):
    """Something took its place while it was pending: ``by`` names the proposal.
    Version 2 records why (``reason``, a SupersessionReason): an edit of it, a newer
    proposal for the same thing, or another proposal carried out, which withdrew it."""

    class_version = 3
    by: UUID
    reason: str | None
    chain: str
    seal: ClassVar[dict[str, str] | None] = None
    #: Stored without a seal (no keys) as version 2 was, byte for byte (``_no_seal``).
    unsealed_version = 2
    upcast_v2_v3 = staticmethod(_no_seal)

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Version 1 (up to bf728c4) did not record why: unknown, not guessed from what
        the proposal that took its place did afterwards."""
        state["reason"] = None

    def apply(self, aggregate: Proposal) -> None:
        aggregate.chain = self.chain
        aggregate.superseded_by = self.by
        aggregate.superseded_reason = self.reason
        aggregate.status = SUPERSEDED
