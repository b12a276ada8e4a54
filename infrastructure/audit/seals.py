"""``audit verify``'s seal check: each proposal's seal against its first link, which the
verifier has made again from the stored ``Proposed`` event, and each later event's seal
against its own link, made again from it (docs/design.md, "Seals").

Three outcomes are told apart. A sealed proposal whose seal is its link's under a key held
here is proved by the key, as well as by the chain. An *unsealed* one (no seal: made before
keys were configured, or its seal removed, which nothing in the stream tells apart) is
proved by the chain alone: counted and listed, not a failure, since every proposal made
before the keys were set is one (``--json``'s ``seals.unsealed``; the approve path refuses to
approve one), unless every proposal must be sealed (``--require-seals``, for a deployment
that held its keys from its start), where it fails the check. A *badly sealed* one (a key
not held here, named, or a seal that is not its link's) was altered, or sealed by a
deployment whose key is missing here: it fails the check. So does a proposal with a badly
sealed event after ``Proposed`` (listed once, naming its first such event), where an event
without a seal after a sealed one is badly sealed too: once a stream is sealed, every later
event is made by a process holding the keys. An unsealed event in a stream sealed nowhere
before it was made before the keys, and counted (``unsealed_events``); with
``--require-seals``, its proposal is unsealed, or has a sealed event before it, and fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from countersign.domain.seals import SealKeys

#: How many unsealed and badly sealed proposals a report lists (each list's first).
LISTED = 100


@dataclass
class SealReport:
    """What the seals showed."""

    keys: SealKeys
    #: Every proposal must be sealed (``audit verify --require-seals``, for a deployment that
    #: held its keys from its start): an unsealed one fails the check too.
    required: bool = False
    sealed: int = 0
    unsealed: int = 0
    #: The first ``LISTED`` unsealed proposals: their ids and when they were proposed.
    unsealed_listed: list[dict[str, Any]] = field(default_factory=list)
    #: Every badly sealed proposal: its id, the event (its version and type) whose seal does
    #: not vouch for it (the first, ``Proposed`` included), and the problem: its ``code``
    #: (``mismatch``, ``unknown_key``, or ``unsealed`` after a sealed event) and, in words.
    badly_sealed: list[dict[str, Any]] = field(default_factory=list)
    #: The events after ``Proposed`` sealed and verified, and those without a seal in a
    #: stream sealed nowhere before them (made before keys were configured).
    sealed_events: int = 0
    unsealed_events: int = 0
    #: Whether the proposal being checked has a sealed event yet, and a badly sealed one.
    _stream_sealed: bool = False
    _stream_bad: bool = False

    @property
    def ok(self) -> bool:
        return not self.badly_sealed and not (self.required and self.unsealed)

    def check_link(
        self, proposal_id: UUID, version: int, event_type: str, link: str, written: dict[str, Any]
    ) -> None:
        """Check the seal of an event of a proposal, whose link the chain's check made again
        from its stored state (``written``): the proposal's own, then each later event's."""
        if version == 1:
            self.check(proposal_id, link, written)
        else:
            self.check_event(proposal_id, version, event_type, link, written)

    def check(self, proposal_id: UUID, first_link: str, proposed: dict[str, Any]) -> None:
        """Check one proposal's seal (``proposed``: its ``Proposed`` event's stored state)
        against ``first_link``, the link made again from that state."""
        seal = proposed.get("seal")
        self._stream_sealed, self._stream_bad = bool(seal), False
        problem = self.keys.problem(proposal_id, first_link, seal)
        if problem is None:
            self.sealed += 1
        elif problem.kind == "unsealed":
            self.unsealed += 1
            if len(self.unsealed_listed) < LISTED:
                at = proposed.get("timestamp")
                when = at.isoformat() if isinstance(at, datetime) else None
                self.unsealed_listed.append({"proposal_id": str(proposal_id), "proposed_at": when})
        else:
            said = f"the proposal {problem.text}"
            self._bad(proposal_id, 1, "Proposed", problem.kind, problem.key_id, said)

    def check_event(
        self, proposal_id: UUID, version: int, event_type: str, link: str, written: dict[str, Any]
    ) -> None:
        """Check the seal of one event after ``Proposed`` (``written``: its stored state)
        against ``link``, its link, which the chain's check made again from that state. One
        without a seal is a fault after a sealed event of its stream (its seal removed, or
        the event made up); before any, it was made before keys were configured."""
        seal = written.get("seal")
        if not seal:
            if self._stream_sealed:
                said = "has no seal, after a sealed one"
                self._bad(proposal_id, version, event_type, "unsealed", None, said)
            else:
                self.unsealed_events += 1
            return
        self._stream_sealed = True
        problem = self.keys.problem(proposal_id, link, seal)
        if problem is None:
            self.sealed_events += 1
        else:
            self._bad(proposal_id, version, event_type, problem.kind, problem.key_id, problem.text)

    def _bad(
        self,
        proposal_id: UUID,
        version: int,
        event_type: str,
        code: str,
        key_id: str | None,
        text: str,
    ) -> None:
        """One badly sealed event; a proposal is listed once, at its first one."""
        if self._stream_bad:
            return
        self._stream_bad = True
        problem = text if version == 1 else f"event {version} ({event_type}) {text}"
        self.badly_sealed.append(
            {
                "proposal_id": str(proposal_id),
                "version": version,
                "event": event_type,
                "key_id": key_id,
                "code": code,
                "problem": problem,
            }
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "keys": list(self.keys.ids),
            "required": self.required,
            "sealed_proposals": self.sealed,
            "unsealed_proposals": self.unsealed,
            "unsealed": self.unsealed_listed,
            "sealed_events": self.sealed_events,
            "unsealed_events": self.unsealed_events,
            "badly_sealed_proposals": len(self.badly_sealed),
            "badly_sealed": self.badly_sealed[:LISTED],
        }
