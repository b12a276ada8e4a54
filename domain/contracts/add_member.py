"""roster.add_member: add one person to one league of the club's roster.

The model names the league and the person's email, and their name when they are new to the
club. The application finds the name the club already knows them by (a member of another
league needs no name, and one given must be that one), checks that they do not play in the
league yet and that it has room, and shows the leagues they already play in, the league's
member count before and after and the spots it has left. Approval checks the same rules again
(any of them broken fails closed) and adds them in the commit that records the outcome.

The counts, the spots left and the other leagues are not rechecked, on purpose: they are what
the reviewer reads around the addition, not a condition of it (the room the league needs is
one, and is rechecked). Another addition approved meanwhile changes them; failing this one for
that would withdraw every pending addition to the league as soon as one of them is approved.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from countersign.domain.club.roster import Roster
from countersign.domain.contracts.add_member_texts import AddMemberTexts
from countersign.domain.contracts.base import (
    ContractRequest,
    Frozen,
    OperationContract,
    Prepared,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.roster_facts import RosterFacts, load_roster
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from pydantic import Field

MAX_LEAGUE_NAME = 100
MAX_EMAIL = 254
MAX_NAME = 100
#: An address with one @, something before it and a dotted domain after it, no spaces. Checked
#: by a rule, not by the request's ``pattern``: a request's pattern is for the record's
#: references (P1, L2), and its refusal says "not one of this record's references".
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")

# -- Request: what the model supplies ------------------------------------------------------------


class AddMemberRequest(ContractRequest):
    """Propose adding one person to one league of the club. Name the league exactly as the
    league list shows it and the person by their email. Give their full name only when the
    member search does not find them: a member of another league keeps the name the club
    knows them by. The application checks that the league has room."""

    email: str = Field(
        description="The person's email address; for a member, as the member search shows it.",
        min_length=3,
        max_length=MAX_EMAIL,
    )
    league: str = Field(
        description="The league they join, exactly as the league list shows it.",
        min_length=1,
        max_length=MAX_LEAGUE_NAME,
    )
    name: str | None = Field(
        default=None,
        description=(
            "Their full name, for a person the member search does not find; null for a member "
            "of another league (the club's name for them is used)."
        ),
        min_length=1,
        max_length=MAX_NAME,
    )


# -- Arguments: what execution needs, frozen ------------------------------------------------------


class AddMemberArguments(Frozen):
    """The exact addition to make."""

    roster_id: UUID
    email: str
    member_name: str
    league: str


# -- Preview: what the manager needs to see ------------------------------------------------------


class AddMemberPreview(Frozen):
    """The fixed review presentation of one addition: who, to which league, whether the club
    knows them already (and where they play), and the league's count and room."""

    member_name: str
    email: str
    league: str
    new_to_club: bool
    other_leagues: str
    league_members_before: int
    league_members_after: int
    spots_left_after: int | None


# -- Result ---------------------------------------------------------------------------------------


class AddMemberResult(Frozen):
    """What the addition did: the league's member count after it."""

    email: str
    league: str
    league_members: int


class AddMember(
    AddMemberTexts,
    OperationContract[
        AddMemberRequest, AddMemberArguments, AddMemberPreview, AddMemberResult, RosterFacts
    ],
):
    """Add a person to one league of the roster."""

    kind = "roster.add_member"
    contract_version = 1
    section = Section("roster")
    permission = "roster.manage"

    def load(self, scope: Scope, store: Repository) -> RosterFacts:
        return load_roster(scope, store)

    def resolve(
        self, request: AddMemberRequest, facts: RosterFacts
    ) -> Prepared[AddMemberArguments, AddMemberPreview]:
        roster = facts.roster
        email, league = request.email.lower(), request.league
        check_is_address(email)
        check_league_exists(roster, league)
        known = known_name(roster, email)
        name = " ".join(request.name.split()) if request.name else known
        if name is None:
            raise RuleBrokenError(
                Finding(
                    "new_member_needs_name",
                    "name",
                    "this email is new to the club: give the person's full name",
                    email=email,
                )
            )
        check_known_as(roster, email, name)
        name = known or name  # a member keeps the name the club knows, whatever its case
        check_not_in(roster, email, name, league)
        check_has_room(roster, league)
        before, room = roster.member_count(league), roster.room_in(league)
        arguments = AddMemberArguments(
            roster_id=roster.id, email=email, member_name=name, league=league
        )
        preview = AddMemberPreview(
            member_name=name,
            email=email,
            league=league,
            new_to_club=known is None,
            other_leagues=", ".join(roster.leagues_of(email)),
            league_members_before=before,
            league_members_after=before + 1,
            spots_left_after=None if room is None else room - 1,
        )
        return Prepared(arguments=arguments, preview=preview)

    # -- governance -----------------------------------------------------------------------------

    def subject(self, arguments: AddMemberArguments) -> str:
        """The roster holds many members, and a member may play in several leagues: an
        addition is about one person in one league. Proposing it again replaces the pending
        one; the same person proposed for another league, or another person, does not."""
        return f"{arguments.email}/{arguments.league}"

    def recheck(self, arguments: AddMemberArguments, facts: RosterFacts) -> dict[str, Any]:
        roster = facts.roster
        email, name, league = arguments.email, arguments.member_name, arguments.league
        check_known_as(roster, email, name)
        check_not_in(roster, email, name, league)
        check_has_room(roster, league)
        return {
            "email": email,
            "league_members": roster.member_count(league),
            "league_capacity": roster.capacity_of(league),
        }

    def execute(
        self, execution: ExecutionContract[AddMemberArguments], facts: RosterFacts
    ) -> AddMemberResult:
        arguments = execution.arguments
        facts.roster.join(arguments.league, arguments.member_name, arguments.email)
        return AddMemberResult(
            email=arguments.email,
            league=arguments.league,
            league_members=facts.roster.member_count(arguments.league),
        )


def known_name(roster: Roster, email: str) -> str | None:
    """The name the club knows the member by, from the first league they play in; None for a
    person new to the club."""
    for league in roster.leagues_of(email):
        return roster.members_of(league)[email]
    return None


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_is_address(email: str) -> None:
    if EMAIL.fullmatch(email) is None:
        raise RuleBrokenError(
            Finding("not_an_email_address", "email", "not an email address; ask for it")
        )


def check_league_exists(roster: Roster, league: str) -> None:
    if league not in roster.leagues:
        raise RuleBrokenError(
            Finding(
                "no_league_to_join",
                "league",
                "there is no league of that name; list the leagues",
                name=league[:60],
            )
        )


def check_known_as(roster: Roster, email: str, name: str) -> None:
    known = known_name(roster, email)
    if known is not None and known.casefold() != name.casefold():
        raise RuleBrokenError(
            Finding(
                "member_known_by_another_name",
                "name",
                f"the club knows this email as {known!r}; leave the name out",
                member=name,
                known=known,
            )
        )


def check_not_in(roster: Roster, email: str, member: str, league: str) -> None:
    """The person does not play in the league yet. At approval, after ``check_known_as``
    (the club knows the email by the name the manager read, if at all), one who does is
    already where the addition would put them: nothing is left to do."""
    if roster.plays_in(league, email):
        raise RuleBrokenError(
            Finding(
                "member_already_in_league",
                "email",
                f"{member} already plays in {league!r}",
                already_so=True,
                member=member,
                league=league,
            )
        )


def check_has_room(roster: Roster, league: str) -> None:
    if roster.is_full(league):
        capacity = roster.capacity_of(league) or 0
        raise RuleBrokenError(
            Finding(
                "league_to_join_full",
                "league",
                f"{league!r} is full ({capacity} members)",
                league=league,
                capacity=capacity,
            )
        )
