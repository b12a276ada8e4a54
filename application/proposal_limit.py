"""How many proposals a member may make in a while, whatever the entry point.

The API, MCP, the section assistants and the pages all propose (and revise) through
``ProposalAccess`` or the assistant, and both propose inside the one ``ProposalLimiter``'s
``admitted``: past ``COUNTERSIGN_PROPOSAL_LIMIT`` (for example ``30/minute``) the member is
refused with ``TooManyProposalsError``, which says when to try again. A member is counted as
themselves (the pages, the command line, their own chat with an assistant) and, apart, through
each API token of theirs (``proposal_budget``), as the turn limit counts them: an agent token
that floods proposals stops at its own limit and never holds back its person's own proposals
and edits, which only people may make. The check and the count
are one step, so concurrent proposals cannot overshoot the limit; only proposals actually made
count (a proposal refused for another reason gives its room back).
The counts live behind the ``ProposalCounts`` port, in the database every process shares, so
the limit holds across API workers and the MCP server alike. Application services calling
``ProposalService`` directly are trusted code and are not limited.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from countersign.domain.errors import CountersignError
from countersign.domain.times import seconds_wait

if TYPE_CHECKING:  # annotations only: the ports (and the event-sourcing library) load with
    # what runs them, not with the settings that read the limits
    from countersign.application.ports import Clock, ProposalCounts

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_SHAPE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour|day)s?\s*$", re.IGNORECASE)


class TooManyProposalsError(CountersignError):
    """The member made as many proposals as the limit allows for now."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        wait = seconds_wait(retry_after)
        super().__init__(f"too many proposals in a short time; try again in {wait}")


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
    """Admits a member's proposal if their recent ones leave room for it, and counts it."""

    def __init__(self, counts: ProposalCounts, limit: RateLimit, clock: Clock) -> None:
        self.counts = counts
        self.limit = limit
        self.clock = clock

    @contextmanager
    def admitted(self, organization: str, member: str, token: str | None = None) -> Iterator[None]:
        """Room for one more proposal by ``member`` of ``organization`` through ``token`` (an
        API token's name; None: the member as themselves), taken now: checked
        and counted in one step of the shared counts, so a burst of concurrent proposals (in
        any number of processes) never gets past the limit. TooManyProposalsError, counting
        nothing, if there is none. The body makes the proposal; if it raises, no proposal was
        made and the room is given back."""
        now = self.clock.now()
        key = proposal_budget(organization, member, token)
        wait = take(self.counts, key, self.limit, now)
        if wait is not None:
            raise TooManyProposalsError(wait)
        try:
            yield
        except BaseException:
            self.counts.give_back(key, now)
            raise


def limited(
    limiter: ProposalLimiter | None, organization: str, member: str, token: str | None = None
) -> AbstractContextManager[None]:
    """``limiter.admitted(organization, member, token)``, or no limit at all without a
    limiter."""
    if limiter is None:
        return nullcontext()
    return limiter.admitted(organization, member, token)


def take(counts: ProposalCounts, key: str, limit: RateLimit, now: datetime) -> int | None:
    """One more under ``key`` at ``now``, counted (None) if ``limit`` leaves room for it, in
    one step of the shared ``counts``; else nothing counted, and the seconds until there is
    room: when the limit-th newest leaves the window (at least 1)."""
    window = timedelta(seconds=limit.seconds)
    oldest = counts.take(key, now, now - window, limit.count)
    if oldest is None:
        return None
    return max(1, math.ceil((oldest + window - now).total_seconds()))


def member_key(organization: str, member: str) -> str:
    """Whose counts: one member in one organization."""
    return f"{organization.strip().lower()}/{member.strip().lower()}"


def proposal_budget(organization: str, member: str, token: str | None = None) -> str:
    """Whose proposals are counted together: a member as themselves, or one API token of
    theirs (``token``, its name), each apart from the others."""
    key = member_key(organization, member)
    return key if token is None else f"{key}/token:{token}"
