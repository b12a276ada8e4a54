"""How many proposals a member may make in a while, whatever the entry point.

The API, MCP, the section assistants and the pages all propose (and revise) through
``ProposalAccess`` or the assistant, and both ask the one ``ProposalLimiter`` first: past
``COUNTERSIGN_PROPOSAL_LIMIT`` (for example ``30/minute``) the member is refused with
``TooManyProposalsError``, which says when to try again. Only proposals actually made count.
The counts live behind the ``ProposalCounts`` port, in the database every process shares, so
the limit holds across API workers and the MCP server alike. Application services calling
``ProposalService`` directly are trusted code and are not limited.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta

from countersign.application.ports import Clock, ProposalCounts
from countersign.domain.errors import CountersignError

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_SHAPE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour|day)s?\s*$", re.IGNORECASE)


class TooManyProposalsError(CountersignError):
    """The member made as many proposals as the limit allows for now."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"too many proposals in a short time; try again in {retry_after} seconds")


@dataclass(frozen=True)
class RateLimit:
    """``count`` proposals per ``seconds``."""

    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """``"30/minute"``, ``"500/hour"``...; ValueError saying the expected shape."""
        found = _SHAPE.match(text)
        if found is None or int(found.group(1)) <= 0:
            raise ValueError(
                f"{text!r} is not a limit such as 30/minute (a positive number per second, "
                "minute, hour or day)"
            )
        return cls(int(found.group(1)), _UNITS[found.group(2).lower()])

    def __str__(self) -> str:
        unit = next(name for name, seconds in _UNITS.items() if seconds == self.seconds)
        return f"{self.count}/{unit}"


DEFAULT_LIMIT = RateLimit(30, 60)


class ProposalLimiter:
    """Checks a member's recent proposals before they propose, and counts the ones made."""

    def __init__(self, counts: ProposalCounts, limit: RateLimit, clock: Clock) -> None:
        self.counts = counts
        self.limit = limit
        self.clock = clock

    def check(self, organization: str, member: str) -> None:
        """TooManyProposalsError if ``member`` of ``organization`` is at the limit now."""
        now = self.clock.now()
        window = timedelta(seconds=self.limit.seconds)
        made = self.counts.newest(_key(organization, member), now - window, self.limit.count)
        if len(made) < self.limit.count:
            return
        # The refusal ends when the limit-th newest proposal leaves the window.
        wait = (made[-1] + window - now).total_seconds()
        raise TooManyProposalsError(max(1, math.ceil(wait)))

    def count(self, organization: str, member: str) -> None:
        """One more proposal made by the member, now."""
        now = self.clock.now()
        forget_before = now - timedelta(seconds=self.limit.seconds)
        self.counts.add(_key(organization, member), now, forget_before)


def _key(organization: str, member: str) -> str:
    return f"{organization.strip().lower()}/{member.strip().lower()}"
