"""How many assistant turns may wait on the model at once (in the process, and per club), and
how many one member may start in a while.

A turn waits on the model for seconds, and one whose endpoint answers slowly holds a thread
of the server all that time, so a process lets at most ``MAX_CONCURRENT_TURNS`` (T, 8) wait
at once. Those T slots are shared among the clubs so that no club, nor two, nor a few
flooding together (with their agents' tokens, say), leave another club's members without a
turn (``TurnSlots``):

* a club's turns hold at most its share S (``COUNTERSIGN_TURNS_PER_CLUB``, half by default);
* a club holding no slot may take any free one;
* a club already holding slots may take another only while the turns past each holding
  club's first number fewer than S - 1 in all: the clubs holding turns share S - 1 slots past
  their first ones.

So k clubs holding turns hold at most k + S - 1 slots, whatever they do, and leave T - S + 1
- k free: a member of a club with no turn waiting gets a slot as long as any is free, and one
is free while fewer than T - S + 2 clubs hold turns. With the defaults (8 and 4): a club alone
holds its 4 (its first and 3 more); two flooding clubs hold at most 5 and leave 3; filling all
8 takes five clubs at once (with the share alone, two did it). A lone club still holds its
whole share, and clubs busy at the same moment, each with a turn or two, are not held back
while the extra turns are few: four clubs with a turn each leave a second turn to any of them.
The price is paid by clubs flooding together: past their first turns they share S - 1 slots,
so while granite holds 4, maple's second turn is refused (its club's assistants busy) until
granite's extra turns end. A share of all T lets one club hold every turn, which is for a
deployment serving one club.

A turn refused a slot ends at once, recorded, as an unavailable model does, the model not
asked and nothing changed: ``Busy.CLUB`` when its club holds what it may now (its share, or
its turns while the clubs' extra turns are all taken), saying its club's assistants are busy;
``Busy.PROCESS`` when every slot is taken. The slots are the process's own, as its threads
are; the approval cycle never takes one.

A member may start ``COUNTERSIGN_TURN_LIMIT`` turns in a while (20 a minute by default)
as themselves, through the web chat and the command line together, and as many through each
API token of theirs, each token counted apart (``TurnLimiter``, ``turn_budget``): an agent's
token that floods the assistants stops at its own limit and leaves its person's own chat, and
their other tokens, their turns. Counted like the proposal limit, in one step of counts every
process shares (their own table), so a burst from any number of processes never gets past
it. Past it, ``TooManyTurnsError`` says when to try again, and nothing of the turn is
recorded: the manager's message is not heard, the model not asked. Only turns begun count;
one refused for another reason (not found, not allowed) counts nothing.
"""

from __future__ import annotations

import threading
from collections import Counter
from enum import StrEnum
from typing import TYPE_CHECKING

from countersign.application.proposal_limit import RateLimit, member_key, take
from countersign.domain.errors import CountersignError
from countersign.domain.times import seconds_wait

if TYPE_CHECKING:  # annotations only: the ports (and the event-sourcing library) load with
    # what runs them, not with the settings that read the limits
    from countersign.application.ports import Clock, ProposalCounts

#: Turns of one process waiting for the model at once, at most: a model endpoint that answers
#: slowly (a byte every few seconds keeps each read within its timeout) would otherwise hold
#: every thread of a web server's pool, and no page of any club would answer. A turn past
#: the bound ends at once as an unavailable model does, nothing asked and nothing changed.
MAX_CONCURRENT_TURNS = 8
#: Of those, the most one club's turns may hold (``COUNTERSIGN_TURNS_PER_CLUB``): half, so
#: that a club flooding its assistants alone holds 4, and clubs flooding together leave slots
#: for clubs holding none (``TurnSlots``).
DEFAULT_TURNS_PER_CLUB = MAX_CONCURRENT_TURNS // 2


class Busy(StrEnum):
    """Why a turn got no slot."""

    #: Every slot of the process is taken.
    PROCESS = "process"
    #: Its club holds what it may now: its share, or its turns while the clubs' extra turns
    #: (past each one's first) are all taken.
    CLUB = "club"


class TurnSlots:
    """The turns of this process waiting on the model, in all and by club (thread-safe): at
    most ``total``, at most ``per_club`` of one club, and at most ``per_club - 1`` in all
    past each holding club's first (the module's docstring says why)."""

    def __init__(
        self, per_club: int = DEFAULT_TURNS_PER_CLUB, total: int = MAX_CONCURRENT_TURNS
    ) -> None:
        if not 1 <= per_club <= total:
            raise ValueError(f"a club's share is 1 to {total} turns, not {per_club}")
        self.per_club = per_club
        self.total = total
        self._lock = threading.Lock()
        self._clubs: Counter[str] = Counter()
        self._taken = 0  # the sum of ``_clubs``, kept so that ``take`` is O(1)

    def take(self, club: str) -> Busy | None:
        """A slot for one turn of ``club``, taken (None) if its club's share, the process and
        the clubs' extra turns leave one; else why not, and nothing is taken. O(1), and never
        waits."""
        with self._lock:
            held = self._clubs[club]  # 0, and nothing stored, for a club holding none
            if held >= self.per_club:
                return Busy.CLUB
            if self._taken >= self.total:
                return Busy.PROCESS
            # The turns past each holding club's first (``_clubs`` holds no club at 0).
            if held and self._taken - len(self._clubs) >= self.per_club - 1:
                return Busy.CLUB  # the extra turns are all taken: a first turn still gets one
            self._clubs[club] += 1
            self._taken += 1
            return None

    def give_back(self, club: str) -> None:
        """The turn that took a slot for ``club`` no longer waits on the model."""
        with self._lock:
            if self._clubs[club] <= 0:
                return  # a slot never taken: nothing comes back, the count stays right
            self._clubs[club] -= 1
            self._taken -= 1
            if self._clubs[club] == 0:
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
            f"{seconds_wait(retry_after)}"
        )


class TurnLimiter:
    """Admits a member's assistant turn if their recent ones leave room for it, and counts
    it."""

    def __init__(self, counts: ProposalCounts, limit: RateLimit, clock: Clock) -> None:
        self.counts = counts
        self.limit = limit
        self.clock = clock

    def admit(self, organization: str, member: str, token: str | None = None) -> None:
        """Count one turn of ``member`` of ``organization`` begun now, through ``token`` (an API
        token's name; None: the member as themselves), checked and counted in one step of the
        shared counts; TooManyTurnsError, counting nothing, if the limit leaves no room."""
        key = turn_budget(organization, member, token)
        wait = take(self.counts, key, self.limit, self.clock.now())
        if wait is not None:
            raise TooManyTurnsError(wait)


def turn_budget(organization: str, member: str, token: str | None = None) -> str:
    """Whose turns are counted together: a member as themselves (the web chat, the command
    line), or one API token of theirs (``token``, its name), each apart from the others."""
    key = member_key(organization, member)
    return key if token is None else f"{key}/token:{token}"
