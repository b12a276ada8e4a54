"""Proposal seals: an anchor for what people approve, held outside the database.

The hash chain proves a stream was not altered since its links were made, but anyone who can
write the database can change a pending proposal's frozen policy or expiry and make every
link again. A seal is an HMAC-SHA256, under a key the database never holds, over the first
link of a proposal's chain (which covers its frozen arguments, preview, digest, policy,
expiry and time) and its id: a writer without the key can change the proposal, but not make
the seal of what they changed (docs/design.md, "Seals").

Keys have ids so that they can be rotated: the first key seals, and every key held verifies.
A seal is stored with its key's id, on the ``Proposed`` event (version 2), outside its own
link. Every later event of a proposal carries the seal of its own link too, made as it is
stored (``seal_event``), and a store holding keys checks each one it reads
(``event_problem``): a link covers the one before it, so the seals of a stream's events
vouch for every event of it, in order, up to the last.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from countersign.domain.hash_chain import chain_link

#: What a seal's MAC covers before the proposal's id and first link: a fixed label, so that
#: a MAC made with the same key for anything else is never a seal.
_LABEL = b"countersign proposal seal v1\0"

SealProblemKind = Literal["unsealed", "unknown_key", "mismatch"]

#: What a key's id may be: a short label of plain characters (it is named in logs, in
#: ``audit verify``'s report and in the outcome of a proposal sealed with a key not held).
KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")


def plain_key_id(value: object) -> str | None:
    """``value`` if it is a key id as ``KEY_ID`` has them, else None: a stored seal's id is
    named only if it is one (a tampered one may be anything)."""
    return value if isinstance(value, str) and KEY_ID.fullmatch(value) else None


@dataclass(frozen=True)
class SealProblem:
    """Why a proposal's seal does not prove it: it has none (``unsealed``: proposed before
    keys were configured, or its seal was removed), its key is not one held here
    (``unknown_key``, naming it), or it is not the seal of what is stored (``mismatch``)."""

    kind: SealProblemKind
    #: The seal's key id, when it is one (``plain_key_id``; None: none, or not a key id).
    key_id: str | None = None
    #: The event whose seal it is, after ``Proposed``: its version and type (None: the
    #: proposal's own seal, on ``Proposed``).
    version: int | None = None
    event_type: str | None = None
    #: That event's class, as ``module:qualname`` (``event_topic``): what names it to a
    #: reader, since a plug-in's class may have the name of one of countersign's.
    event_topic: str | None = None

    @property
    def text(self) -> str:
        """The problem in a few words, for the logs and ``audit verify``."""
        if self.version is not None:
            return f"has an event {self.version} ({self.event_type}) that {self._text(True)}"
        return self._text(False)

    def _text(self, event: bool) -> str:
        if self.kind == "unsealed":
            return "has no seal, after a sealed one" if event else "has no seal"
        if self.kind == "unknown_key":
            named = "an unreadable key id" if self.key_id is None else f"key {self.key_id!r}"
            return f"is sealed with {named}, which is not configured"
        key = "" if self.key_id is None else f" (key {self.key_id!r})"
        return f"does not match its seal{key}"


class SealKeys:
    """The seal keys held by this process, in order: the first seals, every one verifies.
    Its ``repr`` names the ids alone, never a key."""

    __slots__ = ("_keys", "_sealing_id", "_sealing_key", "required")

    def __init__(self, keys: Sequence[tuple[str, bytes]], *, required: bool = False) -> None:
        """``required``: every proposal of this deployment was sealed (it has had keys since
        it started), so one without a seal had it removed; without it, an unsealed proposal
        no longer pending was most likely made before the keys."""
        if not keys:
            raise ValueError("at least one seal key is needed")
        ids = [key_id for key_id, _ in keys]
        if len(set(ids)) != len(ids):
            raise ValueError("each seal key needs an id of its own")
        # Each key's HMAC, keyed once and copied for each message (``_mac``): hmac.digest
        # looks the hash up in OpenSSL at every call (about 15,000 instructions more).
        self._keys: dict[str, Any] = {
            key_id: hmac.new(key, digestmod=hashlib.sha256) for key_id, key in keys
        }
        self._sealing_id = ids[0]
        self._sealing_key = self._keys[ids[0]]
        self.required = required

    @property
    def sealing_id(self) -> str:
        """The id of the key new proposals are sealed with."""
        return self._sealing_id

    @property
    def ids(self) -> tuple[str, ...]:
        """Every key's id, the sealing key's first."""
        return tuple(self._keys)

    def __repr__(self) -> str:
        required = ", required=True" if self.required else ""
        return f"SealKeys(ids={self.ids!r}{required})"

    def seal(self, proposal_id: UUID, first_link: str) -> dict[str, str]:
        """The seal of a proposal whose chain opens with ``first_link``, under the sealing
        key: what its ``Proposed`` event stores (``seal``)."""
        return {"key_id": self._sealing_id, "mac": _mac(self._sealing_key, proposal_id, first_link)}

    def problem(
        self, proposal_id: UUID, first_link: str, seal: Mapping[str, Any] | None
    ) -> SealProblem | None:
        """Why ``seal`` is not the seal of the proposal ``proposal_id`` whose chain opens with
        ``first_link`` (the link made again from what is stored), or None when it is."""
        if not seal:
            return SealProblem("unsealed")
        if not isinstance(seal, Mapping):  # a tampered one may be anything
            return SealProblem("mismatch")
        key_id = seal.get("key_id")
        key = self._keys.get(key_id) if isinstance(key_id, str) else None
        if key is None:
            return SealProblem("unknown_key", plain_key_id(key_id))
        mac = seal.get("mac")
        if (
            not isinstance(mac, str)
            or not mac.isascii()
            or not hmac.compare_digest(mac, _mac(key, proposal_id, first_link))
        ):
            return SealProblem("mismatch", key_id)
        return None

    def sign_anchor(self, digest: str) -> dict[str, str]:
        """The signature of an anchor (``infrastructure/audit/anchor.py``) whose lines hash to
        ``digest``, under the sealing key: its id and MAC, over a label of its own, so that
        no seal is ever an anchor's signature or the other way round."""
        return {"key_id": self._sealing_id, "mac": _anchor_mac(self._sealing_key, digest)}

    def anchor_problem(self, key_id: object, mac: object, digest: str) -> SealProblem | None:
        """Why ``mac`` under the key ``key_id`` is not the signature of an anchor whose lines
        hash to ``digest`` (a key not held here, named; or not its MAC), or None."""
        key = self._keys.get(key_id) if isinstance(key_id, str) else None
        if key is None:
            return SealProblem("unknown_key", plain_key_id(key_id))
        if (
            not isinstance(mac, str)
            or not mac.isascii()
            or not hmac.compare_digest(mac, _anchor_mac(key, digest))
        ):
            return SealProblem("mismatch", plain_key_id(key_id))
        return None


#: What an anchor's signature covers before the digest of its lines.
_ANCHOR_LABEL = b"countersign anchor v1\0"


def _anchor_mac(keyed: Any, digest: str) -> str:
    mac = keyed.copy()
    mac.update(_ANCHOR_LABEL + digest.encode())
    return str(mac.hexdigest())


def _mac(keyed: Any, proposal_id: UUID, first_link: str) -> str:
    """HMAC-SHA256 of the label, the id and the link, from ``keyed``, a key's HMAC with
    nothing in it yet (copied, never updated: it serves every thread)."""
    mac = keyed.copy()
    mac.update(b"%s%s\0%s" % (_LABEL, str(proposal_id).encode(), first_link.encode()))
    return str(mac.hexdigest())


#: What an event's link does not cover of its fields: its envelope (the time is linked, as
#: ``at``), its link and its seal.
_NOT_LINKED = frozenset(
    {"originator_id", "originator_version", "timestamp", "originator_topic", "chain", "seal"}
)


def event_topic(cls: type) -> str:
    """An event class's identity, ``module:qualname`` (as the library's topics name it):
    ``Proposal.Approved`` is countersign's approval, a plug-in's ``Approved`` is not."""
    return f"{cls.__module__}:{cls.__qualname__}"


def seal_event(seals: SealKeys, event: Any) -> None:
    """Seal ``event``, an event after ``Proposed`` made in this process, with the seal of its
    own link (which the event carries, made from the state before it), as it is stored: its
    ``seal``, which is its class's None until then (proposal_events.py)."""
    event.__dict__["seal"] = seals.seal(event.originator_id, event.chain)


def event_problem(
    seals: SealKeys, previous: str, event: Any, sealed_before: bool
) -> SealProblem | None:
    """Why ``event``, an event after ``Proposed`` read from the store, is not vouched for by
    its seal, or None when it is. Its link is made again from its fields and time over
    ``previous`` (the link before it, as the stream holds it): it must be the stored link,
    and its seal that link's under a key held.

    An event without a seal is vouched for by nothing, but is a problem only after a sealed
    one (``sealed_before``, ``Proposed`` included): once a stream is sealed, every later event
    is made by a process holding the keys, so an unsealed one was made up or its seal
    removed. A stream sealed nowhere before it was made before keys were configured (the
    approve path refuses its unsealed ``Proposed``, seal_check.py)."""
    seal = event.seal
    version, event_type = event.originator_version, type(event).__name__
    topic = event_topic(type(event))
    if not seal:
        return SealProblem("unsealed", None, version, event_type, topic) if sealed_before else None
    fields = {key: value for key, value in vars(event).items() if key not in _NOT_LINKED}
    link = chain_link(previous, version, event_type, fields, event.timestamp)
    problem = seals.problem(event.originator_id, link, seal)
    if problem is None and link != event.chain:
        problem = SealProblem("mismatch", plain_key_id(seal.get("key_id")))
    if problem is None:
        return None
    return SealProblem(problem.kind, problem.key_id, version, event_type, topic)
