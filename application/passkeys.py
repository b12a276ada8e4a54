"""Passkeys: a member registers them, and a policy may require one for every approval.

``PasskeyService`` is the account page's: list, add (a WebAuthn registration ceremony), name
and remove a member's passkeys in their club, each a ``PasskeyRing`` event, the public key
in the registration's event. Each of those writes counts against the member's budget
(``COUNTERSIGN_PASSKEY_CHANGE_LIMIT``, 20 an hour by default), checked and counted in one
step of counts every process shares (their own table), as the proposal and turn limits are:
past it ``TooManyPasskeyChangesError`` says when to try again and nothing is written. A
change that writes nothing (refused, or a rename to the name it has) gives its room back. A
ring is snapshotted (every 100 events), so its load costs the same however long its history;
the budget bounds how fast that history, and the events table, can grow.

``PasskeyStep`` is one step of the approve path (step 4 of docs/design.md): a proposal whose
frozen policy requires a passkey is approved only with an assertion, signed by a passkey the
approver registered during their present membership, over the challenge that binds this
proposal's contract digest, its id, the approver and a nonce this server issued minutes ago.
The verified assertion goes into ``Approved``; the passkey's new signature counter is recorded
on the ring in the same commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.application.authorization import member_of, membership
from countersign.application.passkey_limit import (
    DEFAULT_PASSKEY_CHANGE_LIMIT,
    TooManyPasskeyChangesError,
    passkey_budget,
)
from countersign.application.ports import (
    AggregateStore,
    Answer,
    Clock,
    Commit,
    PasskeyCeremonies,
    PasskeyRejectedError,
    ProposalCounts,
    Reads,
)
from countersign.application.proposal_limit import RateLimit, take
from countersign.domain.club.organization import Member, Organization
from countersign.domain.club.passkeys import (
    PasskeyAssertion,
    PasskeyError,
    PasskeyRing,
    approval_challenge,
)
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal

log = logging.getLogger("countersign.passkeys")


def _ring(store: Repository, organization_id: UUID, email: str) -> PasskeyRing:
    ring_id = PasskeyRing.create_id(organization_id, email)
    try:
        return store.get(ring_id, PasskeyRing)
    except NotFoundError:
        return PasskeyRing(organization_id=organization_id, email=email)


def _listed(ring: PasskeyRing | None) -> list[dict[str, Any]]:
    if ring is None:
        return []
    return [
        {
            "credential_id": credential_id,
            "name": entry["name"],
            "registered_at": entry["registered_at"],
        }
        for credential_id, entry in ring.passkeys.items()
    ]


class PasskeyService:
    """A member's passkeys in one club: the account page's list, add, rename and remove."""

    def __init__(
        self,
        store: AggregateStore,
        ceremonies: PasskeyCeremonies,
        clock: Clock,
        counts: ProposalCounts | None = None,
        limit: RateLimit = DEFAULT_PASSKEY_CHANGE_LIMIT,
    ):
        self.store = store
        self.ceremonies = ceremonies
        self.clock = clock
        #: The shared counts of changes (None: not limited, for trusted code and tools).
        self.counts = counts
        self.limit = limit

    @contextmanager
    def _budgeted(self, organization_id: UUID, member: Member) -> Iterator[Callable[[], None]]:
        """Room for one change of ``member``'s ring, taken now (checked and counted in one
        step of the shared counts); TooManyPasskeyChangesError, counting nothing, if there
        is none. The body makes the change; if it raises, or calls the function it is given
        (it wrote nothing), the room is given back."""
        if self.counts is None:
            yield lambda: None
            return
        counts, now = self.counts, self.clock.now()
        key = passkey_budget(str(organization_id), member.email)
        wait = take(counts, key, self.limit, now)
        if wait is not None:
            raise TooManyPasskeyChangesError(wait)
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            if not given_back:
                given_back = True
                counts.give_back(key, now)

        try:
            yield give_back
        except BaseException:
            give_back()
            raise

    def _member(self, organization: str, email: str) -> tuple[UUID, Member]:
        organization_id = Organization.create_id(organization.strip().lower())
        return organization_id, member_of(self.store, organization_id, email)

    def passkeys(self, organization: str, email: str) -> list[dict[str, Any]]:
        """The member's passkeys in use: id, name, when registered."""
        organization_id, member = self._member(organization, email)
        try:
            ring = self.store.read(
                PasskeyRing.create_id(organization_id, member.email), PasskeyRing
            )
        except NotFoundError:
            return []
        return _listed(ring)

    def begin_registration(self, organization: str, email: str) -> dict[str, Any]:
        """The options for ``navigator.credentials.create`` and the nonce they were made of
        (sent back with the new credential)."""
        organization_id, member = self._member(organization, email)
        nonce = self.ceremonies.issue_nonce(
            self._purpose(organization_id, member), self.clock.now()
        )
        existing = [p["credential_id"] for p in self.passkeys(organization, email)]
        options = self.ceremonies.registration_options(
            user_id=PasskeyRing.create_id(organization_id, member.email).bytes,
            user_name=member.email,
            display_name=member.name,
            challenge=nonce.encode(),
            exclude=existing,
        )
        return {"options": options, "nonce": nonce}

    def finish_registration(
        self, organization: str, email: str, name: str, nonce: str, credential: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Verify the new credential against the registration's challenge and record it.
        PasskeyError (with a sentence for people) when it does not verify or cannot be kept."""
        organization_id, member = self._member(organization, email)
        with self._budgeted(organization_id, member):
            return self._register(organization_id, member, name, nonce, credential)

    def _register(
        self,
        organization_id: UUID,
        member: Member,
        name: str,
        nonce: str,
        credential: Mapping[str, Any],
    ) -> dict[str, Any]:
        now = self.clock.now()
        if not self.ceremonies.nonce_holds(nonce, self._purpose(organization_id, member), now):
            raise PasskeyError("this passkey request has expired; add the passkey again")
        try:
            new = self.ceremonies.verify_registration(credential, nonce.encode())
        except PasskeyRejectedError as rejected:
            log.info("passkey registration refused: %s", rejected)
            raise PasskeyError("the passkey could not be verified; try again") from None

        def registering(store: Repository) -> Commit[dict[str, Any]]:
            current = membership(store.read(organization_id, Organization), member.email)
            ring = _ring(store, organization_id, member.email)
            ring.register(
                credential_id=new.credential_id,
                public_key=new.public_key,
                name=name,
                rp_id=self.ceremonies.rp_id,
                sign_count=new.sign_count,
                membership_id=current.membership_id,
                at=now,
            )
            return Commit(
                [ring],
                {
                    "credential_id": new.credential_id,
                    "name": ring.passkeys[new.credential_id]["name"],
                },
            )

        ring_id = PasskeyRing.create_id(organization_id, member.email)
        return self.store.decide(Reads([organization_id, ring_id]), registering)

    def rename(self, organization: str, email: str, credential_id: str, name: str) -> None:
        self._change(organization, email, lambda ring: ring.rename(credential_id, name))

    def remove(self, organization: str, email: str, credential_id: str) -> None:
        now = self.clock.now()
        self._change(organization, email, lambda ring: ring.remove(credential_id, now))

    def _change(self, organization: str, email: str, change: Any) -> None:
        organization_id, member = self._member(organization, email)
        ring_id = PasskeyRing.create_id(organization_id, member.email)

        def changing(store: Repository) -> Commit[bool] | Answer[bool]:
            try:
                ring = store.get(ring_id, PasskeyRing)
            except NotFoundError:
                raise NotFoundError("passkey") from None
            if change(ring) is False:
                return Answer(False)
            return Commit([ring], True)

        with self._budgeted(organization_id, member) as give_back:
            if not self.store.decide(Reads([ring_id]), changing):
                give_back()  # the name it had: nothing written, nothing counted

    @staticmethod
    def _purpose(organization_id: UUID, member: Member) -> str:
        return f"register:{organization_id}:{member.email}:{member.membership_id}"


@dataclass(frozen=True)
class PasskeyRefusal:
    """Why an approval's passkey does not count: ``passkey_required`` (none was given) or
    ``passkey_rejected`` (one was given, and did not verify)."""

    reason: str


@dataclass(frozen=True)
class SignedApproval:
    """A verified assertion to store in ``Approved``, and the ring whose counter it moved."""

    assertion: PasskeyAssertion
    ring: PasskeyRing


class PasskeyStep:
    """The approve path's passkey check, and the challenges it checks against."""

    def __init__(self, ceremonies: PasskeyCeremonies, clock: Clock) -> None:
        self.ceremonies = ceremonies
        self.clock = clock

    @staticmethod
    def _purpose(proposal: Proposal, email: str) -> str:
        return f"approve:{proposal.id}:{email}"

    def challenge(self, store: Repository, proposal: Proposal, member: Member) -> dict[str, Any]:
        """What ``navigator.credentials.get`` needs to approve ``proposal`` as ``member``:
        the options (the challenge bound to the proposal's digest) and the nonce to send back
        with the assertion."""
        nonce = self.ceremonies.issue_nonce(self._purpose(proposal, member.email), self.clock.now())
        challenge = approval_challenge(proposal.digest, proposal.id, member.email, nonce)
        try:
            ring = store.read(
                PasskeyRing.create_id(proposal.organization_id, member.email), PasskeyRing
            )
            allow = [c for c in ring.passkeys if ring.usable(c, member.membership_id)]
        except NotFoundError:
            allow = []
        return {
            "proposal_id": str(proposal.id),
            "digest": proposal.digest,
            "nonce": nonce,
            "passkeys": len(allow),
            "options": self.ceremonies.assertion_options(challenge, allow),
        }

    def check(
        self,
        store: Repository,
        proposal: Proposal,
        member: Member,
        submitted: Mapping[str, Any] | None,
    ) -> SignedApproval | PasskeyRefusal | None:
        """None when the proposal needs no passkey and none was given; else the verified
        approval, or why it does not count. An assertion given where none is required is
        checked all the same, and recorded."""
        if submitted is None:
            return PasskeyRefusal("passkey_required") if proposal.requires_passkey else None
        nonce = submitted.get("nonce")
        credential = submitted.get("credential")
        if not isinstance(nonce, str) or not isinstance(credential, Mapping):
            return PasskeyRefusal("passkey_rejected")
        if not self.ceremonies.nonce_holds(
            nonce, self._purpose(proposal, member.email), self.clock.now()
        ):
            log.info("passkey approval of %s: the nonce is unknown or expired", proposal.id)
            return PasskeyRefusal("passkey_rejected")
        credential_id = credential.get("id")
        ring_id = PasskeyRing.create_id(proposal.organization_id, member.email)
        try:
            ring = store.get(ring_id, PasskeyRing)
        except NotFoundError:
            return PasskeyRefusal("passkey_rejected")
        entry = (
            ring.usable(credential_id, member.membership_id)
            if isinstance(credential_id, str)
            else None
        )
        if entry is None:
            log.info("passkey approval of %s: not a passkey of the approver", proposal.id)
            return PasskeyRefusal("passkey_rejected")
        if ring.nonce_used(nonce):
            log.info("passkey approval of %s: its assertion was used already", proposal.id)
            return PasskeyRefusal("passkey_rejected")
        challenge = approval_challenge(proposal.digest, proposal.id, member.email, nonce)
        try:
            checked = self.ceremonies.verify_assertion(
                credential,
                challenge,
                public_key=entry["public_key"],
                sign_count=int(entry["sign_count"]),
                rp_id=entry["rp_id"],
            )
        except PasskeyRejectedError as rejected:
            log.info("passkey approval of %s refused: %s", proposal.id, rejected)
            return PasskeyRefusal("passkey_rejected")
        ring.use(checked.credential_id, checked.sign_count, nonce, self.clock.now())
        assertion = PasskeyAssertion(
            credential_id=checked.credential_id,
            name=str(entry["name"]),
            nonce=nonce,
            authenticator_data=checked.authenticator_data,
            client_data_json=checked.client_data_json,
            signature=checked.signature,
        )
        return SignedApproval(assertion, ring)
