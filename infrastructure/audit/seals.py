"""``audit verify``'s seal check: each proposal's seal against its first link, which the
verifier has made again from the stored ``Proposed`` event (docs/design.md, "Seals").

Three outcomes are told apart. A sealed proposal whose seal is its link's under a key held
here is proved by the key, as well as by the chain. An *unsealed* one (no seal: made before
keys were configured, or its seal removed, which nothing in the stream tells apart) is
proved by the chain alone: counted and listed, not a failure, since every proposal made
before the keys were set is one (``--json``'s ``seals.unsealed``; the approve path refuses to
approve one), unless every proposal must be sealed (``--require-seals``, for a deployment
that held its keys from its start), where it fails the check. A *badly sealed* one (a key
not held here, named, or a seal that is not its link's) was altered, or sealed by a
deployment whose key is missing here: it fails the check.
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
    #: Every badly sealed proposal: its id and the problem, in words.
    badly_sealed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.badly_sealed and not (self.required and self.unsealed)

    def check(self, proposal_id: UUID, first_link: str, proposed: dict[str, Any]) -> None:
        """Check one proposal's seal (``proposed``: its ``Proposed`` event's stored state)
        against ``first_link``, the link made again from that state."""
        problem = self.keys.problem(proposal_id, first_link, proposed.get("seal"))
        if problem is None:
            self.sealed += 1
        elif problem.kind == "unsealed":
            self.unsealed += 1
            if len(self.unsealed_listed) < LISTED:
                at = proposed.get("timestamp")
                when = at.isoformat() if isinstance(at, datetime) else None
                self.unsealed_listed.append({"proposal_id": str(proposal_id), "proposed_at": when})
        else:
            self.badly_sealed.append(
                {
                    "proposal_id": str(proposal_id),
                    "key_id": problem.key_id,
                    "problem": f"the proposal {problem.text}",
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
            "badly_sealed_proposals": len(self.badly_sealed),
            "badly_sealed": self.badly_sealed[:LISTED],
        }
