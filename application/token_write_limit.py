"""How many changes to a club's settings one API token, or one person at the pages, may send
in a while: ``COUNTERSIGN_TOKEN_WRITE_LIMIT``, counted per token, and per member as themselves,
as the proposal limit counts proposals (``proposal_limit.take``), in the database every process
shares.

A token's proposals and its assistant messages have their own limits (``proposal_limit``,
``assistant.turn_limits``). The club's settings it may change (a member's permissions, a
policy, a webhook endpoint, a redelivery) go through this one, whether they change anything
or not: a script setting a policy back and forth in a loop stops at the limit instead of
growing the event log and the service log without bound. Decisions are not counted: an
approval or a decline that records anything is bounded by the proposals, which their own
limit bounds, and one that changes nothing (a decision repeated on a decided proposal)
records nothing; counting each would cost the approve path a transaction, and hold back an
application service that relays a club's decisions at the pace its managers make them.

The pages' settings forms (the members page's permissions, the webhooks page's endpoints and
redeliveries) count the person as themselves, apart from each of their tokens: a browser's
session is as scriptable as a token, and a loop posting the members form flipped a permission
243 times in 5 seconds, each an event kept for ever (an attack run's figure, before this
limit). A person setting up their club stays far below a change a second.

Apart from the API so that the settings read the default without importing the application's
services (the command line's help imports neither them nor pydantic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from countersign.application.proposal_limit import RateLimit, proposal_budget, take
from countersign.domain.errors import CountersignError
from countersign.domain.times import seconds_wait

if TYPE_CHECKING:  # annotations only, as in proposal_limit
    from countersign.application.ports import Clock, ProposalCounts

DEFAULT_TOKEN_WRITE_LIMIT = RateLimit(60, 60)
"""A change a second, sustained: more than a service acting for one person sends, and a
loop stops within the minute."""


class TooManyWritesError(CountersignError):
    """The token (or the person at the pages) sent as many changes as the limit allows for
    now."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            f"too many changes in a short time; try again in {seconds_wait(retry_after)}"
        )


class TokenWriteLimiter:
    """Admits one more write by an API token, or by a person at the pages, if their recent
    ones leave room, and counts it."""

    def __init__(self, counts: ProposalCounts, limit: RateLimit, clock: Clock) -> None:
        self.counts = counts
        self.limit = limit
        self.clock = clock

    def admit(self, organization: str, member: str, token: str | None = None) -> None:
        """Count one write by ``token`` (its name) of ``member`` in ``organization``, or by
        the member as themselves (``token`` None: the pages), checked and counted in one step;
        TooManyWritesError, counting nothing, past the limit."""
        key = f"{proposal_budget(organization, member, token)}/writes"
        wait = take(self.counts, key, self.limit, self.clock.now())
        if wait is not None:
            raise TooManyWritesError(wait)
