"""roster.move_member: move one member from one league of the club's roster to another.

The model names the member by email and both leagues by name. The application finds the
member's name, checks that they play in the first league and not in the second and that the
second has room, and freezes each league's member count before and after. Approval checks the
same three facts again (any of them changed fails closed) and moves the member in the commit
that records the outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from countersign.domain.club.roster import Roster
from countersign.domain.contracts.base import (
    ContractRequest,
    Facts,
    Frozen,
    OperationContract,
    Prepared,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.presentation import Localized, PreviewField, RequestField
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
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


@dataclass
class MoveFacts(Facts):
    """The roster the member moves within."""

    roster: Roster

    def aggregates(self) -> list[Aggregate]:
        return [self.roster]


#: What people read about a move request ``prepare`` refuses (``request_problems``), by the
#: code of the rule it broke.
_PROBLEMS = {
    "unknown_league": Localized(
        "The club has no league named “{name}”.", "Le club n'a pas de ligue nommée « {name} »."
    ),
    "same_league": Localized(
        "A member can only be moved to another league than the one they play in.",
        "Un membre ne peut être déplacé que vers une autre ligue que la sienne.",
    ),
    "member_left_source_league": Localized(
        "No member with this email address plays in {league}.",
        "Aucun membre ayant cette adresse courriel ne joue dans {league}.",
    ),
    "member_already_in_destination": Localized(
        "{member} already plays in {league}.", "{member} joue déjà dans {league}."
    ),
    "destination_league_full": Localized(
        "{league} is full: it holds its {capacity} members.",
        "{league} est complète : elle compte déjà ses {capacity} membres.",
    ),
}


class MoveMember(
    OperationContract[
        MoveMemberRequest, MoveMemberArguments, MoveMemberPreview, MoveMemberResult, MoveFacts
    ]
):
    """Move a member from one league of the roster to another."""

    kind = "roster.move_member"
    contract_version = 1
    section = Section("roster")
    permission = "roster.manage"

    title = Localized("Move a member to another league", "Changer un membre de ligue")
    request_fields = {
        "email": RequestField(Localized("Member's email", "Courriel du membre")),
        "from_league": RequestField(Localized("League they leave", "Ligue quittée")),
        "to_league": RequestField(Localized("League they join", "Ligue rejointe")),
    }
    preview_fields = {
        "member_name": PreviewField(Localized("Member", "Membre")),
        "email": PreviewField(Localized("Email", "Courriel")),
        "from_league": PreviewField(Localized("From league", "Ligue quittée")),
        "to_league": PreviewField(Localized("To league", "Ligue rejointe"), emphasis=True),
        "from_league_members_before": PreviewField(
            Localized("From league: members before", "Ligue quittée : membres avant")
        ),
        "from_league_members_after": PreviewField(
            Localized("From league: members after", "Ligue quittée : membres après")
        ),
        "to_league_members_before": PreviewField(
            Localized("To league: members before", "Ligue rejointe : membres avant")
        ),
        "to_league_members_after": PreviewField(
            Localized("To league: members after", "Ligue rejointe : membres après")
        ),
    }
    request_problems = _PROBLEMS
    revision_reasons = {
        "member_left_source_league": Localized(
            "{member} no longer plays in {league}.", "{member} ne joue plus dans {league}."
        ),
        "member_already_in_destination": Localized(
            "{member} already plays in {league}.", "{member} joue déjà dans {league}."
        ),
        "destination_league_full": Localized(
            "{league} is full: it holds its {capacity} members.",
            "{league} est complète : elle compte déjà ses {capacity} membres.",
        ),
    }
    outcome_titles = {"succeeded": Localized("Member moved", "Membre déplacé")}
    assistant_instructions = (
        "To move ONE member from one league to another, find the member with the member "
        "search, check the leagues and their room with the league list, and propose it with "
        "{tool}."
    )
    stand_in_cue = r"\b(move|moving|transfer|switch)\b|d[ée]pla[cç]|fai(re|tes) passer|transf[ée]r"

    # -- propose ----------------------------------------------------------------------------

    def load(self, scope: Scope, store: Repository) -> MoveFacts:
        if scope.resource_id != Roster.create_id(scope.organization_id):
            raise NotFoundError("roster")
        return MoveFacts(roster=store.get(scope.resource_id, Roster))

    def resolve(
        self, request: MoveMemberRequest, facts: MoveFacts
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

    # -- approve ----------------------------------------------------------------------------

    # -- governance -----------------------------------------------------------------------------

    def subject(self, arguments: MoveMemberArguments) -> str:
        """The roster holds many members: moving one does not replace a move of another."""
        return arguments.email

    def recheck(self, arguments: MoveMemberArguments, facts: MoveFacts) -> dict[str, Any]:
        roster = facts.roster
        member, email = arguments.member_name, arguments.email
        source, destination = arguments.from_league, arguments.to_league
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
        self, execution: ExecutionContract[MoveMemberArguments], facts: MoveFacts
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

    # -- how it reads -----------------------------------------------------------------------

    def approve_label(self, preview: MoveMemberPreview, language: str = "en") -> str:
        return Localized("Move {who} to {league}", "Déplacer {who} vers {league}").text(
            language, who=preview.member_name, league=preview.to_league
        )

    def headline(self, preview: MoveMemberPreview, language: str = "en") -> str:
        return Localized(
            "Move {member} from {source} to {destination}",
            "Faire passer {member} de {source} à {destination}",
        ).text(
            language,
            member=preview.member_name,
            source=preview.from_league,
            destination=preview.to_league,
        )

    def success_text(
        self, preview: MoveMemberPreview, result: MoveMemberResult, language: str = "en"
    ) -> str:
        return Localized(
            "{member} now plays in {destination} ({to_count}) instead of {source} ({from_count}).",
            "{member} joue maintenant dans {destination} ({to_count}) au lieu de {source} "
            "({from_count}).",
        ).text(
            language,
            member=preview.member_name,
            destination=result.to_league,
            to_count=_members(result.to_league_members, language),
            source=result.from_league,
            from_count=_members(result.from_league_members, language),
        )

    # -- the offline stand-in model ---------------------------------------------------------

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        """The move the manager's words describe: the one member they name (as the member
        search shows them; else the question names those it found) and the league they name
        that the member plays in (the source)
        and the one they do not (the destination). Naming only the destination is enough
        for a member who plays in one league."""
        said = words.casefold()
        member = _one_named_member(said, reads.get("find_members"))
        if member is None:
            return _which_member(said, reads.get("find_members"))
        leagues = _named_leagues(said, reads.get("list_leagues"))
        plays_in = [name for name in leagues if name in member["leagues"]]
        joins = [name for name in leagues if name not in member["leagues"]]
        if len(plays_in) == 1 and len(joins) == 1:
            source, destination = plays_in[0], joins[0]
        elif not plays_in and len(joins) == 1 and len(member["leagues"]) == 1:
            source, destination = member["leagues"][0], joins[0]
        else:
            plays = ", ".join(member["leagues"]) or "no league"
            return (
                f"{member['name']} plays in {plays}. Which league should they leave, and which "
                "should they join?"
            )
        return {"email": member["email"], "from_league": source, "to_league": destination}


_MEMBERS = Localized("{count} members", "{count} membres")
_ONE_MEMBER = Localized("{count} member", "{count} membre")


def _members(count: int, language: str) -> str:
    """A member count in words: "1 member", "5 members" ("0 membre" in French)."""
    singular = count == 1 or (count == 0 and language == "fr")
    return (_ONE_MEMBER if singular else _MEMBERS).text(language, count=count)


# -- the rules: each checked when proposing and, where it can change, again when approving ----


def check_leagues_exist(roster: Roster, source: str, destination: str) -> None:
    unknown = [
        Finding(
            "unknown_league",
            field,
            f"there is no league named {name!r}; list the leagues",
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


def _one_named_member(said: str, found: Any) -> dict[str, Any] | None:
    """The one member whose name or email the words contain, among those the search found."""
    members = found.get("members", []) if isinstance(found, Mapping) else []
    named = [
        member
        for member in members
        if any(member[key].casefold() in said for key in ("name", "email") if member[key])
    ]
    return named[0] if len(named) == 1 else None


#: How many of the members a search found the stand-in names when it asks which one.
_NAMED_AT_MOST = 6


def _which_member(said: str, found: Any) -> str:
    """The question when the words name no one member: the members the search found (the
    ones the words name, if several), so the manager can answer with one of them."""
    members = list(found.get("members", [])) if isinstance(found, Mapping) else []
    more = int(found.get("more_matches", 0)) if isinstance(found, Mapping) else 0
    named = [m for m in members if m["name"] and m["name"].casefold() in said]
    if len(named) > 1:
        members, more = named, 0
    if not members:
        return (
            "The member search found nobody by that name. Which member should move, and to "
            "which league? For example: Move Olivia Chen from Sunday Mixed Doubles to "
            "Thursday Seniors."
        )
    shown = ", ".join(m["name"] for m in members[:_NAMED_AT_MOST])
    left = len(members) - _NAMED_AT_MOST + more
    if left > 0:
        shown += f" and {left} more"
    return (
        f"Which member should move, and to which league? The member search found: {shown}. "
        "Name one of them, for example: Move Olivia Chen from Sunday Mixed Doubles to "
        "Thursday Seniors."
    )


def _named_leagues(said: str, listing: Any) -> list[str]:
    """The leagues the words name, in the order they say them."""
    leagues = listing.get("leagues", []) if isinstance(listing, Mapping) else []
    at = {league["name"]: said.find(league["name"].casefold()) for league in leagues}
    return sorted((name for name in at if name and at[name] >= 0), key=at.__getitem__)
