"""The roster: leagues, how many members each may hold, and the members who play in them."""

from __future__ import annotations

from uuid import UUID

from countersign.domain.club.ids import stable_id
from countersign.domain.errors import (
    AlreadyInLeagueError,
    DuplicateError,
    LeagueFullError,
    NotInLeagueError,
    RosterRuleError,
)
from countersign.domain.visible_text import plain_line
from eventsourcing.domain import Aggregate, event


class Roster(Aggregate):
    """An organization's leagues and their members.

    A league's capacity is the most members it may hold. ``None`` means no limit: leagues
    added before leagues had a capacity (their ``LeagueAdded`` event carries none) keep
    taking members as they always did.
    """

    @staticmethod
    def create_id(organization_id: UUID) -> UUID:
        return stable_id("roster", organization_id)

    @event("Started")
    def __init__(self, organization_id: UUID) -> None:
        self.organization_id = organization_id
        # league name -> {member email -> member name}
        self.leagues: dict[str, dict[str, str]] = {}
        # league name -> the most members it may hold (None: no limit)
        self.capacities: dict[str, int | None] = {}

    def league_names(self) -> list[str]:
        return sorted(self.leagues)

    def members_of(self, league: str) -> dict[str, str]:
        return dict(self.leagues.get(league, {}))

    def member_count(self, league: str) -> int:
        """How many members play in the league (0 for an unknown league)."""
        return len(self.leagues.get(league, {}))

    def capacity_of(self, league: str) -> int | None:
        """The most members the league may hold; None when it has no limit."""
        return self.capacities.get(league)

    def room_in(self, league: str) -> int | None:
        """How many more members the league may take; None when it has no limit."""
        capacity = self.capacity_of(league)
        if capacity is None:
            return None
        return max(0, capacity - self.member_count(league))

    def is_full(self, league: str) -> bool:
        """Whether the league is at (or, after a lowered limit, past) its capacity."""
        return self.room_in(league) == 0

    def leagues_of(self, email: str) -> list[str]:
        """The leagues the member (by email) plays in, by name."""
        email = email.strip().lower()
        return [name for name in self.league_names() if email in self.leagues[name]]

    def plays_in(self, league: str, email: str) -> bool:
        """Whether the member holds a spot in the league."""
        return email.strip().lower() in self.leagues.get(league, {})

    def audience(self, leagues: list[str]) -> set[str]:
        """Distinct member emails across the given leagues."""
        return {email for league in leagues for email in self.leagues.get(league, {})}

    def add_league(self, name: str, capacity: int | None = None) -> None:
        """Add an empty league; ``capacity`` is the most members it may hold (None: no limit)."""
        name = name.strip()
        if not name:
            raise RosterRuleError("a league needs a name")
        _readable(name, "league's name")
        if name in self.leagues:
            raise DuplicateError(f"league {name!r} already exists")
        if capacity is not None and (type(capacity) is not int or capacity < 1):
            raise RosterRuleError("a league's capacity is a whole number of members, at least 1")
        self._league_added(name=name, capacity=capacity)

    def join(self, league: str, name: str, email: str) -> None:
        email = email.strip().lower()
        if league not in self.leagues:
            raise RosterRuleError(f"no league named {league!r}")
        if email in self.leagues[league]:
            raise DuplicateError(f"{email} already plays in {league!r}")
        if self.is_full(league):
            raise LeagueFullError(f"{league!r} is full ({self.capacity_of(league)} members)")
        self._member_joined(league=league, name=_readable(name.strip(), "name"), email=email)

    def leave(self, league: str, email: str) -> None:
        email = email.strip().lower()
        if email not in self.leagues.get(league, {}):
            raise RosterRuleError(f"{email} does not play in {league!r}")
        self._member_left(league=league, email=email)

    def move(self, email: str, from_league: str, to_league: str) -> None:
        """Move a member from one league to another, keeping their name: they leave the
        first and join the second in one event."""
        email = email.strip().lower()
        for league in (from_league, to_league):
            if league not in self.leagues:
                raise RosterRuleError(f"no league named {league!r}")
        if from_league == to_league:
            raise RosterRuleError("a member moves between two different leagues")
        if email not in self.leagues[from_league]:
            raise NotInLeagueError(f"{email} does not play in {from_league!r}")
        if email in self.leagues[to_league]:
            raise AlreadyInLeagueError(f"{email} already plays in {to_league!r}")
        if self.is_full(to_league):
            raise LeagueFullError(f"{to_league!r} is full ({self.capacity_of(to_league)} members)")
        self._member_moved(
            email=email,
            name=self.leagues[from_league][email],
            from_league=from_league,
            to_league=to_league,
        )

    @event("LeagueAdded")
    def _league_added(self, name: str, capacity: int | None = None) -> None:
        self.leagues[name] = {}
        self.capacities[name] = capacity

    @event("MemberJoined")
    def _member_joined(self, league: str, name: str, email: str) -> None:
        self.leagues[league][email] = name

    @event("MemberLeft")
    def _member_left(self, league: str, email: str) -> None:
        self.leagues[league].pop(email, None)

    @event("MemberMoved")
    def _member_moved(self, email: str, name: str, from_league: str, to_league: str) -> None:
        self.leagues[from_league].pop(email, None)
        self.leagues[to_league][email] = name


def _readable(text: str, what: str) -> str:
    """``text`` if a person reads it as it is (``visible_text.plain_line``); RosterRuleError
    otherwise: a participant's name reaches every card about them, where a right-to-left
    override in it would make "refund $345.00" read "00.543$"."""
    if not plain_line(text):
        raise RosterRuleError(
            f"a {what} must not hold control characters or invisible formatting characters"
        )
    return text
