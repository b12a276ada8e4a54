"""A member's passkeys, and what binds a passkey approval to one proposal.

Each member of a club has one ``PasskeyRing``: the passkeys they registered there, by
credential id, with each credential's public key (COSE, base64url) in the
``PasskeyRegistered`` event itself. An auditor therefore verifies an approval's assertion
from the event stream alone, long after the passkey was removed: ``registered`` keeps every
key the ring ever held, ``passkeys`` only those in use.

``registered`` is not bounded, on purpose: retiring keys from it, as the ring is made, is not safe.
Every ``Approved`` event stays in the log for ever, and ``audit verify`` checks each passkey
approval against the approver's ring (infrastructure/audit/verify.py ``_ring_keys``): a key
that signed one and was retired turns that approval into "approved with a passkey the
approver never registered", a false tampering alarm on the auditor's check. ``register`` also
refuses a credential id the ring ever held, so that one id never names two keys in an audit.
And what a recorded event does to the state is fixed: making ``PasskeyRemoved`` drop a key
from ``registered`` would replay every existing ring to another state than its stored
snapshots hold, which ``audit verify`` reports as a changed snapshot. The only keys safe to
retire are removed ones that never signed (no ``PasskeyUsed``, recorded in the commit of
every passkey approval since approvals carried one), by an event of its own, with the
credential id still refused; not done, for what it saves: the ring is bounded by the change
budget (``COUNTERSIGN_PASSKEY_CHANGE_LIMIT``, 20 an hour by default) and ``MAX_PASSKEYS`` in
use. A member adding and removing passkeys all day, every day, retires at most 10 an hour,
240 a day; an entry is about 450 bytes at most (a 64-byte credential id, a 77-byte ES256 key,
a 60-character name), some 100 KB a day of that member's ring and of its snapshot (one every
100 events, the older ones deleted), where members register a handful in a membership.
The ``PasskeyRegistered`` events stay in the log whatever the state keeps.

An approval signed with a passkey signs ``approval_challenge``: a hash of the proposal's
contract digest, its id, the approver and a fresh nonce. The assertion therefore covers
exactly what the person was shown, and nothing else can reuse it (WebAuthn's dynamic linking,
as PSD2's strong customer authentication binds a code to the amount and the payee). Nor can
the same assertion count twice: the ring remembers the nonces its passkeys signed for
``NONCE_MEMORY`` (longer than a nonce lives), since many synced passkeys report a signature
counter of 0 for ever, which cannot tell a replayed assertion from a new one.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any, TypedDict
from uuid import UUID

from countersign.domain.club.ids import stable_id
from countersign.domain.errors import CountersignError, DuplicateError, NotFoundError
from eventsourcing.domain import Aggregate, event

MAX_NAME = 60
MAX_PASSKEYS = 10
#: How long a ring remembers a nonce one of its passkeys signed: at least as long as the server
#: accepts a nonce (``infrastructure.identity.passkeys.NONCE_SECONDS`` and its clock skew), so
#: no assertion can be used again while its nonce still holds.
NONCE_MEMORY = timedelta(minutes=15)
_CHALLENGE_PURPOSE = "countersign.approval.v1"


class PasskeyError(CountersignError):
    """A passkey that cannot be registered, named or used, with a sentence saying why."""


class PasskeyAssertion(TypedDict):
    """What an approval with a passkey stores in its ``Approved`` event: enough for anyone
    holding the event stream to verify the signature again (all bytes base64url)."""

    credential_id: str
    name: str
    """The passkey's name when it approved ("Ava's laptop")."""
    nonce: str
    authenticator_data: str
    client_data_json: str
    signature: str


def approval_challenge(digest: str, proposal_id: UUID | str, approver: str, nonce: str) -> bytes:
    """The WebAuthn challenge an approval of this proposal by this approver signs: SHA-256
    over the contract digest, the proposal's id, the approver and the nonce."""
    bound = json.dumps(
        {
            "purpose": _CHALLENGE_PURPOSE,
            "digest": digest,
            "proposal_id": str(proposal_id),
            "approver": approver.strip().lower(),
            "nonce": nonce,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(bound.encode()).digest()


def passkey_name(name: str) -> str:
    """A passkey's name as people read it: printable, 1 to 60 characters."""
    cleaned = " ".join("".join(ch for ch in str(name) if ch.isprintable()).split())
    if not cleaned:
        raise PasskeyError("give the passkey a name, such as “Ava's laptop”")
    if len(cleaned) > MAX_NAME:
        raise PasskeyError(f"a passkey's name has at most {MAX_NAME} characters")
    return cleaned


class PasskeyRing(Aggregate):
    """One member's passkeys in one club."""

    @staticmethod
    def create_id(organization_id: UUID, email: str) -> UUID:
        return stable_id("passkeys", organization_id, email.strip().lower())

    @event("Opened")
    def __init__(self, organization_id: UUID, email: str) -> None:
        self.organization_id = organization_id
        self.email = email.strip().lower()
        #: In use, by credential id: name, public_key, rp_id, sign_count, membership_id.
        self.passkeys: dict[str, dict[str, Any]] = {}
        #: Every key this ring ever held, removed ones included: what an auditor verifies with.
        self.registered: dict[str, dict[str, Any]] = {}
        #: Nonces its passkeys signed in the last ``NONCE_MEMORY``, with when (``_nonces``).
        self.used_nonces: dict[str, datetime] = {}

    def usable(self, credential_id: str, membership_id: str | None) -> dict[str, Any] | None:
        """The passkey in use under this id, registered during the member's present
        membership (one registered before they left and came back does not count)."""
        entry = self.passkeys.get(credential_id)
        if entry is None or entry.get("membership_id") != membership_id:
            return None
        return entry

    def register(
        self,
        *,
        credential_id: str,
        public_key: str,
        name: str,
        rp_id: str,
        sign_count: int,
        membership_id: str | None,
        at: datetime,
    ) -> None:
        name = passkey_name(name)
        if credential_id in self.registered:
            raise DuplicateError("this passkey is already registered")
        if len(self.passkeys) >= MAX_PASSKEYS:
            raise PasskeyError(f"a member may register at most {MAX_PASSKEYS} passkeys")
        self._registered(
            credential_id=credential_id,
            public_key=public_key,
            name=name,
            rp_id=rp_id,
            sign_count=sign_count,
            membership_id=membership_id,
            at=at,
        )

    def rename(self, credential_id: str, name: str) -> bool:
        """Name it anew; False when it already had that name (nothing recorded)."""
        name = passkey_name(name)
        if credential_id not in self.passkeys:
            raise NotFoundError("passkey")
        if self.passkeys[credential_id]["name"] == name:
            return False
        self._renamed(credential_id=credential_id, name=name)
        return True

    def remove(self, credential_id: str, at: datetime) -> None:
        if credential_id not in self.passkeys:
            raise NotFoundError("passkey")
        self._removed(credential_id=credential_id, at=at)

    def nonce_used(self, nonce: str) -> bool:
        """Whether one of these passkeys already signed an assertion over ``nonce``."""
        return nonce in self._nonces()

    def _nonces(self) -> dict[str, datetime]:
        """``used_nonces``; none in a ring loaded from a snapshot taken before they were kept."""
        return self.__dict__.get("used_nonces") or {}

    def use(self, credential_id: str, sign_count: int, nonce: str, at: datetime) -> None:
        """Record the authenticator's signature counter after an assertion it signed, and the
        nonce it signed, which no assertion may use again."""
        self._used(credential_id=credential_id, sign_count=sign_count, nonce=nonce, at=at)

    @event("PasskeyRegistered")
    def _registered(
        self,
        credential_id: str,
        public_key: str,
        name: str,
        rp_id: str,
        sign_count: int,
        membership_id: str | None,
        at: datetime,
    ) -> None:
        entry = {
            "name": name,
            "public_key": public_key,
            "rp_id": rp_id,
            "sign_count": sign_count,
            "membership_id": membership_id,
            "registered_at": at,
        }
        self.passkeys = {**self.passkeys, credential_id: entry}
        self.registered = {**self.registered, credential_id: entry}

    @event("PasskeyRenamed")
    def _renamed(self, credential_id: str, name: str) -> None:
        entry = {**self.passkeys[credential_id], "name": name}
        self.passkeys = {**self.passkeys, credential_id: entry}
        self.registered = {**self.registered, credential_id: entry}

    @event("PasskeyRemoved")
    def _removed(self, credential_id: str, at: datetime) -> None:
        self.passkeys = {k: v for k, v in self.passkeys.items() if k != credential_id}

    @event("PasskeyUsed")
    def _used(
        self,
        credential_id: str,
        sign_count: int,
        nonce: str | None = None,  # absent from events stored before nonces were kept
        at: datetime | None = None,
    ) -> None:
        if nonce is not None and at is not None:
            kept = {n: t for n, t in self._nonces().items() if at - t < NONCE_MEMORY}
            self.used_nonces = {**kept, nonce: at}
        if credential_id in self.passkeys:
            entry = {**self.passkeys[credential_id], "sign_count": sign_count}
            self.passkeys = {**self.passkeys, credential_id: entry}
            self.registered = {**self.registered, credential_id: entry}
