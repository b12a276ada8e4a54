"""roster.remove_member: take one member out of one league of the club's roster.

The model names the member as the manager did (by name or by email, as the member search shows
them) and the league by name. The application finds the one member of that league the words
name (a name two members of the league share is refused: name them by email), and shows the
league's member count before and after. Approval checks again that the member, under the
name the manager read, still plays in that league; if not, it fails closed (and, when they no
longer play in it at all, says that what it asked for already holds). The member leaves
the league (the roster's ``leave``, a ``MemberLeft`` event) in the commit that records the
outcome; the other leagues they play in keep them.

As with a move, the count is not rechecked, on purpose: it is what the reviewer reads around
the removal, not a condition of it. Failing a removal for it would withdraw every other
pending removal from the league as soon as one is approved (a manager taking three people out
at the end of a season would approve one and propose two again). The success sentence reports
the count as the removal left it.
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
from countersign.domain.contracts.remove_member_texts import RemoveMemberTexts
from countersign.domain.contracts.roster_facts import RosterFacts, load_roster
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from pydantic import Field

MAX_LEAGUE_NAME = 100
MAX_MEMBER = 254
#: How much of what the model said a sentence for people repeats.
SAID = 60

# -- Request: what the model supplies ------------------------------------------------------------


class RemoveMemberRequest(ContractRequest):
    """Propose taking one club member out of one league. Name the member by their email or
    their full name exactly as the member search shows it, and the league exactly as the
    league list shows it. The member leaves that league only; other leagues keep them."""

    member: str = Field(
        description="The member's email or full name, exactly as the member search shows it.",
        min_length=1,
        max_length=MAX_MEMBER,
    )
    league: str = Field(
        description="The league the member leaves: one they play in now.",
        min_length=1,
        max_length=MAX_LEAGUE_NAME,
    )


# -- Arguments: what execution needs, frozen ------------------------------------------------------


class RemoveMemberArguments(Frozen):
    """The exact removal to make: the member by the roster's key for them, their email."""

    roster_id: UUID
    email: str
    member_name: str
    league: str
    league_members_before: int


# -- Preview: what the manager needs to see ------------------------------------------------------


class RemoveMemberPreview(Frozen):
    """The fixed review presentation of one removal: who, from which league, and how many
    members the league holds before and after."""

    member_name: str
    email: str
    league: str
    league_members_before: int
    league_members_after: int


# -- Result ---------------------------------------------------------------------------------------


class RemoveMemberResult(Frozen):
    """What the removal did: the league's member count after it."""

    email: str
    league: str
    league_members: int


class RemoveMember(
    RemoveMemberTexts,
    OperationContract[
        RemoveMemberRequest,
        RemoveMemberArguments,
        RemoveMemberPreview,
        RemoveMemberResult,
        RosterFacts,
    ],
):
    """Take a member out of one league of the roster."""

    kind = "roster.remove_member"
    contract_version = 1
    section = Section("roster")
    permission = "roster.manage"

    def load(self, scope: Scope, store: Repository) -> RosterFacts:
        return load_roster(scope, store)

    def resolve(
        self, request: RemoveMemberRequest, facts: RosterFacts
    ) -> Prepared[RemoveMemberArguments, RemoveMemberPreview]:
        roster, league = facts.roster, request.league
        check_league_exists(roster, league)
        email, member = find_member(roster, request.member, league)
        before = roster.member_count(league)
        arguments = RemoveMemberArguments(
            roster_id=roster.id,
            email=email,
            member_name=member,
            league=league,
            league_members_before=before,
        )
        preview = RemoveMemberPreview(
            member_name=member,
            email=email,
            league=league,
            league_members_before=before,
            league_members_after=before - 1,
        )
        return Prepared(arguments=arguments, preview=preview)

    # -- governance -----------------------------------------------------------------------------

    def subject(self, arguments: RemoveMemberArguments) -> str:
        """The roster holds many members, and a member may play in several leagues: a
        removal is about one person in one league (at the end of a season a member may leave
        both of theirs). Proposing it again replaces the pending one; the same person out of
        another league, or another person, does not."""
        return f"{arguments.email}/{arguments.league}"

    def recheck(self, arguments: RemoveMemberArguments, facts: RosterFacts) -> dict[str, Any]:
        roster, league = facts.roster, arguments.league
        check_still_plays_in(roster, arguments.email, arguments.member_name, league)
        return {
            "email": arguments.email,
            "league": league,
            "league_members": roster.member_count(league),
        }

    def execute(
        self, execution: ExecutionContract[RemoveMemberArguments], facts: RosterFacts
    ) -> RemoveMemberResult:
        arguments = execution.arguments
        facts.roster.leave(arguments.league, arguments.email)
        return RemoveMemberResult(
            email=arguments.email,
            league=arguments.league,
            league_members=facts.roster.member_count(arguments.league),
        )


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_league_exists(roster: Roster, league: str) -> None:
    if league not in roster.leagues:
        raise RuleBrokenError(
            Finding(
                "no_such_league",
                "league",
                "there is no league of that name; list the leagues",
                name=league[:SAID],
            )
        )


def find_member(roster: Roster, said: str, league: str) -> tuple[str, str]:
    """The one member of the league ``said`` names, by email or by full name (any case and
    spacing): their email and name."""
    members = roster.members_of(league)
    wanted = " ".join(said.split()).casefold()
    if wanted in members:
        return wanted, members[wanted]
    named = [
        email for email, name in members.items() if " ".join(name.split()).casefold() == wanted
    ]
    if len(named) > 1:
        raise RuleBrokenError(
            Finding(
                "member_name_shared",
                "member",
                f"{len(named)} members of {league!r} have this name; name one by email",
                member=said[:SAID],
                league=league,
                count=len(named),
            )
        )
    if not named:
        raise RuleBrokenError(
            Finding(
                "not_in_league",
                "member",
                f"no member of {league!r} has this name or email; search the members",
                member=said[:SAID],
                league=league,
            )
        )
    return named[0], members[named[0]]


def check_still_plays_in(roster: Roster, email: str, member: str, league: str) -> None:
    """The member still plays in the league, under the name the manager read. One who no
    longer plays in it at all (taken out by another removal, moved, or taken out at the
    desk) is already where the removal would leave them: nothing is left to do. One who
    plays in it under another name is not (``already_so`` says which)."""
    playing_as = roster.members_of(league).get(email)
    if playing_as != member:
        raise RuleBrokenError(
            Finding(
                "member_left_league",
                "member",
                f"{member} no longer plays in {league!r}",
                already_so=playing_as is None,
                member=member,
                league=league,
            )
        )
