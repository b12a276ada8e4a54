"""The roster: leagues and the members who play in them."""

from __future__ import annotations

from uuid import UUID

from countersign.domain.club.ids import stable_id
from countersign.domain.errors import DuplicateError, RosterRuleError
from eventsourcing.domain import Aggregate, event


class Roster(Aggregate):
    """An organization's leagues and their members."""

    @staticmethod
    def create_id(organization_id: UUID) -> UUID:
        return stable_id("roster", organization_id)

    @event("Started")
    def __init__(self, organization_id: UUID) -> None:
        self.organization_id = organization_id
        # league name -> {member email -> member name}
        self.leagues: dict[str, dict[str, str]] = {}

    def league_names(self) -> list[str]:
        return sorted(self.leagues)

    def members_of(self, league: str) -> dict[str, str]:
        return dict(self.leagues.get(league, {}))

    def plays_in(self, league: str, email: str) -> bool:
        """Whether the member holds a spot in the league."""
        return email.strip().lower() in self.leagues.get(league, {})

    def audience(self, leagues: list[str]) -> set[str]:
        """Distinct member emails across the given leagues."""
        return {email for league in leagues for email in self.leagues.get(league, {})}

    def add_league(self, name: str) -> None:
        name = name.strip()
        if not name:
            raise RosterRuleError("a league needs a name")
        if name in self.leagues:
            raise DuplicateError(f"league {name!r} already exists")
        self._league_added(name=name)

    def join(self, league: str, name: str, email: str) -> None:
        email = email.strip().lower()
        if league not in self.leagues:
            raise RosterRuleError(f"no league named {league!r}")
        if email in self.leagues[league]:
            raise DuplicateError(f"{email} already plays in {league!r}")
        self._member_joined(league=league, name=name.strip(), email=email)

    def leave(self, league: str, email: str) -> None:
        email = email.strip().lower()
        if email not in self.leagues.get(league, {}):
            raise RosterRuleError(f"{email} does not play in {league!r}")
        self._member_left(league=league, email=email)

    @event("LeagueAdded")
    def _league_added(self, name: str) -> None:
        self.leagues[name] = {}

    @event("MemberJoined")
    def _member_joined(self, league: str, name: str, email: str) -> None:
        self.leagues[league][email] = name

    @event("MemberLeft")
    def _member_left(self, league: str, email: str) -> None:
        self.leagues[league].pop(email, None)
