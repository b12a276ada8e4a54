"""How many assistant turns may wait on the model at once (in the process, and per club), and
how many one member may start in a while.

A turn waits on the model for seconds, and one whose endpoint answers slowly holds a thread
of the server all that time, so a process lets at most ``MAX_CONCURRENT_TURNS`` wait at once.
Within that bound each club holds at most its share (``COUNTERSIGN_TURNS_PER_CLUB``, half by
default): one club's agents sending many messages at once fill their own share and leave the
other clubs' turns room. A turn refused either way ends at once, recorded, as an unavailable
model does, the model not asked and nothing changed; one refused for its club's share says
its club's assistants are busy. The slots are the process's own, as its threads are; the
approval cycle never takes one.

A member may start ``COUNTERSIGN_TURN_LIMIT`` turns in a while (20 a minute by default),
through the API, the web chat and the command line together (``TurnLimiter``): counted like
the proposal limit, in one step of counts every process shares (their own table), so a burst
from any number of processes never gets past it. Past it, ``TooManyTurnsError`` says when to
try again, and nothing of the turn is recorded: the manager's message is not heard, the
model not asked. Only turns begun count; one refused for another reason (not found, not
allowed) counts nothing.
"""

from __future__ import annotations

import threading
from collections import Counter
from enum import StrEnum

from countersign.application.ports import Clock, ProposalCounts
from countersign.application.proposal_limit import RateLimit, member_key, take
from countersign.domain.errors import CountersignError

#: Turns of one process waiting for the model at once, at most: a model endpoint that answers
#: slowly (a byte every few seconds keeps each read within its timeout) would otherwise hold
#: every thread of a web server's pool, and no page of any club would answer. A turn past
#: the bound ends at once as an unavailable model does, nothing asked and nothing changed.
MAX_CONCURRENT_TURNS = 8
#: Of those, the most one club's turns may hold (``COUNTERSIGN_TURNS_PER_CLUB``): half, so
#: that a club flooding its assistants leaves the others as many as it holds.
DEFAULT_TURNS_PER_CLUB = MAX_CONCURRENT_TURNS // 2


class Busy(StrEnum):
    """Why a turn got no slot."""

    PROCESS = "process"  # the process's turns all wait on the model
    CLUB = "club"  # the turn's club holds its whole share


class TurnSlots:
    """The turns of this process waiting on the model, in all and by club (thread-safe)."""

    def __init__(
        self, per_club: int = DEFAULT_TURNS_PER_CLUB, total: int = MAX_CONCURRENT_TURNS
    ) -> None:
        if not 1 <= per_club <= total:
            raise ValueError(f"a club's share is 1 to {total} turns, not {per_club}")
        self.per_club = per_club
        self.total = total
        self._lock = threading.Lock()
        self._clubs: Counter[str] = Counter()

    def take(self, club: str) -> Busy | None:
        """A slot for one turn of ``club``, taken (None) if its club's share and the process
        leave one; else why not, and nothing is taken."""
        with self._lock:
            if self._clubs[club] >= self.per_club:
                return Busy.CLUB
            if self._clubs.total() >= self.total:
                return Busy.PROCESS
            self._clubs[club] += 1
            return None

    def give_back(self, club: str) -> None:
        """The turn that took a slot for ``club`` no longer waits on the model."""
        with self._lock:
            self._clubs[club] -= 1
            if self._clubs[club] <= 0:
                del self._clubs[club]

    def held(self) -> dict[str, int]:
        """The slots each club holds now (what an operator, or a test, may look at)."""
        with self._lock:
            return dict(self._clubs)


DEFAULT_TURN_LIMIT = RateLimit(20, 60)
"""Generous for a person (one message every three seconds, for a minute), and a flood of
one agent token's messages stops at the twentieth."""


class TooManyTurnsError(CountersignError):
    """The member started as many assistant turns as the limit allows for now."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            "too many messages to the assistants in a short time; try again in "
            f"{retry_after} seconds"
        )


class TurnLimiter:
    """Admits a member's assistant turn if their recent ones leave room for it, and counts
    it."""

    def __init__(self, counts: ProposalCounts, limit: RateLimit, clock: Clock) -> None:
        self.counts = counts
        self.limit = limit
        self.clock = clock

    def admit(self, organization: str, member: str) -> None:
        """Count one turn of ``member`` of ``organization`` begun now, checked and counted in
        one step of the shared counts; TooManyTurnsError, counting nothing, if the limit
        leaves no room."""
        wait = take(self.counts, member_key(organization, member), self.limit, self.clock.now())
        if wait is not None:
            raise TooManyTurnsError(wait)
