"""roster.move_member: move one member from one league of the club's roster to another.

The model names the member by email and both leagues by name. The application finds the
member's name, checks that they play in the first league and not in the second and that the
second has room, and shows each league's member count before and after. Approval checks the
same three rules again (any of them broken fails closed) and moves the member in the commit
that records the outcome. A member already moved (out of the first league, in the second)
fails closed too, saying that what the move asked for already holds.

The counts are not rechecked, on purpose: they are what the reviewer reads around the move, not
a condition of it (the room the destination needs is one, and is rechecked). Another move
approved meanwhile changes them; failing this one for that would withdraw every pending move
into or out of a league as soon as one of them is approved. The success sentence reports the
counts as the move left them.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from countersign.domain.club.roster import Roster
from countersign.domain.contracts.base import (
    ContractRequest,
    Frozen,
    OperationContract,
    Prepared,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.move_member_texts import MoveMemberTexts
from countersign.domain.contracts.roster_facts import RosterFacts, load_roster
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from pydantic import Field

MAX_LEAGUE_NAME = 100
MAX_EMAIL = 254

# -- Request: what the model supplies ------------------------------------------------------------


class MoveMemberRequest(ContractRequest):
    """Propose moving one club member from one league to another. Name the member by the email
    the member search gave you, and both leagues exactly as the league list shows them. The
    member leaves the first league and joins the second; the application checks that the
    second league has room."""

    email: str = Field(
        description="The member's email, exactly as the member search shows it.",
        min_length=3,
        max_length=MAX_EMAIL,
    )
    from_league: str = Field(
        description="The league the member leaves: one they play in now.",
        min_length=1,
        max_length=MAX_LEAGUE_NAME,
    )
    to_league: str = Field(
        description="The league the member joins: one they do not play in yet.",
        min_length=1,
        max_length=MAX_LEAGUE_NAME,
    )


# -- Arguments: what execution needs, frozen ------------------------------------------------------


class MoveMemberArguments(Frozen):
    """The exact move to make."""

    roster_id: UUID
    email: str
    member_name: str
    from_league: str
    to_league: str


# -- Preview: what the manager needs to see ------------------------------------------------------


class MoveMemberPreview(Frozen):
    """The fixed review presentation of one move: who, where from, where to, and how many
    members each league holds before and after."""

    member_name: str
    email: str
    from_league: str
    to_league: str
    from_league_members_before: int
    from_league_members_after: int
    to_league_members_before: int
    to_league_members_after: int


# -- Result ---------------------------------------------------------------------------------------


class MoveMemberResult(Frozen):
    """What the move did: each league's member count after it."""

    email: str
    from_league: str
    to_league: str
    from_league_members: int
    to_league_members: int


class MoveMember(
    MoveMemberTexts,
    OperationContract[
        MoveMemberRequest, MoveMemberArguments, MoveMemberPreview, MoveMemberResult, RosterFacts
    ],
):
    """Move a member from one league of the roster to another."""

    kind = "roster.move_member"
    contract_version = 1
    section = Section("roster")
    permission = "roster.manage"

    def load(self, scope: Scope, store: Repository) -> RosterFacts:
        return load_roster(scope, store)

    def resolve(
        self, request: MoveMemberRequest, facts: RosterFacts
    ) -> Prepared[MoveMemberArguments, MoveMemberPreview]:
        roster = facts.roster
        email = request.email.lower()
        source, destination = request.from_league, request.to_league
        check_leagues_exist(roster, source, destination)
        check_leagues_differ(source, destination)
        member = roster.members_of(source).get(email, email)
        check_plays_in(roster, email, member, source)
        check_not_in(roster, email, member, destination)
        check_has_room(roster, destination)
        arguments = MoveMemberArguments(
            roster_id=roster.id,
            email=email,
            member_name=member,
            from_league=source,
            to_league=destination,
        )
        from_count, to_count = roster.member_count(source), roster.member_count(destination)
        preview = MoveMemberPreview(
            member_name=member,
            email=email,
            from_league=source,
            to_league=destination,
            from_league_members_before=from_count,
            from_league_members_after=from_count - 1,
            to_league_members_before=to_count,
            to_league_members_after=to_count + 1,
        )
        return Prepared(arguments=arguments, preview=preview)

    # -- governance -----------------------------------------------------------------------------

    def subject(self, arguments: MoveMemberArguments) -> str:
        """A move is about one person leaving one league: a member may play in several, and
        moving them out of each is a change of its own. Two moves out of the same league
        conflict (the member leaves it once), so a new one replaces the pending one, whatever
        its destination; a move out of another league, or of another person, does not.

        Not the destination too: two moves of a member out of the same league to different
        leagues would then both stay pending, alternatives of which approving one makes the
        other fail closed. Not the member alone: moving them out of one league would
        withdraw their pending move out of another. Two moves into the same league from two
        of the member's leagues do conflict and replace nothing: once one runs, the other
        fails closed at its recheck (they already play there), changing nothing."""
        return f"{arguments.email}/{arguments.from_league}"

    def recheck(self, arguments: MoveMemberArguments, facts: RosterFacts) -> dict[str, Any]:
        roster = facts.roster
        member, email = arguments.member_name, arguments.email
        source, destination = arguments.from_league, arguments.to_league
        check_not_moved_already(roster, email, member, source, destination)
        check_plays_in(roster, email, member, source)
        check_not_in(roster, email, member, destination)
        check_has_room(roster, destination)
        return {
            "email": email,
            "from_league_members": roster.member_count(source),
            "to_league_members": roster.member_count(destination),
            "to_league_capacity": roster.capacity_of(destination),
        }

    def execute(
        self, execution: ExecutionContract[MoveMemberArguments], facts: RosterFacts
    ) -> MoveMemberResult:
        arguments = execution.arguments
        facts.roster.move(arguments.email, arguments.from_league, arguments.to_league)
        return MoveMemberResult(
            email=arguments.email,
            from_league=arguments.from_league,
            to_league=arguments.to_league,
            from_league_members=facts.roster.member_count(arguments.from_league),
            to_league_members=facts.roster.member_count(arguments.to_league),
        )


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_leagues_exist(roster: Roster, source: str, destination: str) -> None:
    unknown = [
        Finding(
            "unknown_league",
            field,
            "there is no league of that name; list the leagues",
            name=name[:60],
        )
        for field, name in (("from_league", source), ("to_league", destination))
        if name not in roster.leagues
    ]
    if unknown:
        raise RuleBrokenError(*unknown)


def check_leagues_differ(source: str, destination: str) -> None:
    if source == destination:
        raise RuleBrokenError(
            Finding("same_league", "to_league", "must be another league than from_league")
        )


def check_not_moved_already(
    roster: Roster, email: str, member: str, source: str, destination: str
) -> None:
    """At approval: the member is not already where the move would leave them (out of the
    league they were to leave, in the other under the name the manager read: the same move
    run already, or made at the desk). Then nothing is left to do. One still in both
    leagues, or in neither, is not there: the other rules say why."""
    if email not in roster.members_of(source) and (
        roster.members_of(destination).get(email) == member
    ):
        raise RuleBrokenError(
            Finding(
                "member_already_moved",
                "email",
                f"{member} already plays in {destination!r} and no longer in {source!r}",
                already_so=True,
                member=member,
                league=destination,
                left_league=source,
            )
        )


def check_plays_in(roster: Roster, email: str, member: str, league: str) -> None:
    if email not in roster.members_of(league):
        raise RuleBrokenError(
            Finding(
                "member_left_source_league",
                "email",
                f"no member with this email plays in {league!r}; search the members",
                member=member,
                league=league,
            )
        )


def check_not_in(roster: Roster, email: str, member: str, league: str) -> None:
    if email in roster.members_of(league):
        raise RuleBrokenError(
            Finding(
                "member_already_in_destination",
                "to_league",
                f"{member} already plays in {league!r}",
                member=member,
                league=league,
            )
        )


def check_has_room(roster: Roster, league: str) -> None:
    if roster.is_full(league):
        capacity = roster.capacity_of(league) or 0
        raise RuleBrokenError(
            Finding(
                "destination_league_full",
                "to_league",
                f"{league!r} is full ({capacity} members)",
                league=league,
                capacity=capacity,
            )
        )
