"""The move_member contract: how it reads for people (in every language) and for the assistant that
proposes it; the contract (move_member.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.move_member_stand_in import request_from_words
from countersign.domain.contracts.presentation import Localized, PreviewField, RequestField

if TYPE_CHECKING:
    from countersign.domain.contracts.move_member import MoveMemberPreview, MoveMemberResult


_MEMBERS = Localized("{count} members", "{count} membres")


_ONE_MEMBER = Localized("{count} member", "{count} membre")


def _members(count: int, language: str) -> str:
    """A member count in words: "1 member", "5 members" ("0 membre" in French)."""
    singular = count == 1 or (count == 0 and language == "fr")
    return (_ONE_MEMBER if singular else _MEMBERS).text(language, count=count)


class MoveMemberTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    title = Localized("Move a member to another league", "Changer un membre de ligue")
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "email": RequestField(Localized("Member's email", "Courriel du membre")),
        "from_league": RequestField(Localized("League they leave", "Ligue quittée")),
        "to_league": RequestField(Localized("League they join", "Ligue rejointe")),
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
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
    request_problems: ClassVar[Mapping[str, Localized]] = {
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
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "member_left_source_league": Localized(
            "{member} no longer plays in {league}.", "{member} ne joue plus dans {league}."
        ),
        "member_already_in_destination": Localized(
            "{member} already plays in {league}.", "{member} joue déjà dans {league}."
        ),
        "member_already_moved": Localized(
            "{member} already plays in {league} and no longer in {left_league}.",
            "{member} joue déjà dans {league} et ne joue plus dans {left_league}.",
        ),
        "destination_league_full": Localized(
            "{league} is full: it holds its {capacity} members.",
            "{league} est complète : elle compte déjà ses {capacity} membres.",
        ),
    }
    outcome_titles: ClassVar[Mapping[str, Localized]] = {
        "succeeded": Localized("Member moved", "Membre déplacé")
    }
    assistant_instructions = (
        "To move ONE member from one league to another, find the member with the member "
        "search, check the leagues and their room with the league list, and propose it with "
        "{tool}."
    )
    stand_in_cue: ClassVar[str | None] = (
        r"\b(move|moving|transfer|switch)\b|d[ée]pla[cç]|fai(re|tes) passer|transf[ée]r"
    )

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

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
