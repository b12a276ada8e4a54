"""The add_member contract: how it reads for people (in every language) and for the assistant
that proposes it; the contract (add_member.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.add_member_stand_in import DEMO_SCENE, request_from_words
from countersign.domain.contracts.presentation import (
    DemoScene,
    Localized,
    PreviewField,
    RequestField,
    Shown,
)

if TYPE_CHECKING:
    from countersign.domain.contracts.add_member import AddMemberPreview, AddMemberResult

_NONE = Localized("none", "aucune")
_NO_LIMIT = Localized("no limit", "sans limite")


def _leagues(value: str, language: str) -> str:
    """The other leagues a member plays in, or "none"."""
    return value or _NONE.text(language)


def _spots(value: str, language: str) -> str:
    """The spots a league has left, or "no limit" for a league without a capacity."""
    return _NO_LIMIT.text(language) if value == "None" else value


class AddMemberTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    title = Localized("Add a member to a league", "Ajouter un membre à une ligue")
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "email": RequestField(Localized("Email", "Courriel")),
        "league": RequestField(Localized("League they join", "Ligue rejointe")),
        "name": RequestField(
            Localized("Full name", "Nom complet"),
            Localized(
                "Only for a person new to the club: a member keeps the name the club knows.",
                "Seulement pour une personne nouvelle au club : un membre garde le nom que le "
                "club connaît.",
            ),
        ),
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "member_name": PreviewField(Localized("Member", "Membre")),
        "email": PreviewField(Localized("Email", "Courriel")),
        "league": PreviewField(Localized("League they join", "Ligue rejointe"), emphasis=True),
        "new_to_club": PreviewField(
            Localized("New to the club", "Nouveau au club"), shown=Shown.FLAG
        ),
        "other_leagues": PreviewField(
            Localized("Already plays in", "Joue déjà dans"), words=_leagues
        ),
        "league_members_before": PreviewField(
            Localized("Members of the league before", "Membres de la ligue avant")
        ),
        "league_members_after": PreviewField(
            Localized("Members of the league after", "Membres de la ligue après")
        ),
        "spots_left_after": PreviewField(
            Localized("Spots left after", "Places restantes après"), words=_spots
        ),
    }
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "not_an_email_address": Localized(
            "The member's email is not an email address.",
            "Le courriel du membre n'est pas une adresse courriel.",
        ),
        "no_league_to_join": Localized(
            "The club has no league named “{name}”.", "Le club n'a pas de ligue nommée « {name} »."
        ),
        "new_member_needs_name": Localized(
            "No member has the email address {email}: give the full name of this new member.",
            "Aucun membre n'a l'adresse courriel {email} : donnez le nom complet de ce nouveau "
            "membre.",
        ),
        "member_known_by_another_name": Localized(
            "The club knows this email address as {known}, not {member}.",
            "Le club connaît cette adresse courriel sous le nom {known}, pas {member}.",
        ),
        "member_already_in_league": Localized(
            "{member} already plays in {league}.", "{member} joue déjà dans {league}."
        ),
        "league_to_join_full": Localized(
            "{league} is full: it holds its {capacity} members.",
            "{league} est complète : elle compte déjà ses {capacity} membres.",
        ),
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "member_known_by_another_name": Localized(
            "The club now knows this email address as {known}, not {member}.",
            "Le club connaît maintenant cette adresse courriel sous le nom {known}, pas {member}.",
        ),
        "member_already_in_league": Localized(
            "{member} already plays in {league}.", "{member} joue déjà dans {league}."
        ),
        "league_to_join_full": Localized(
            "{league} is full: it holds its {capacity} members.",
            "{league} est complète : elle compte déjà ses {capacity} membres.",
        ),
    }
    outcome_titles: ClassVar[Mapping[str, Localized]] = {
        "succeeded": Localized("Member added", "Membre ajouté")
    }
    assistant_instructions = (
        "To add ONE person to one league, search the members for them (a member of another "
        "league keeps their name; give a name only for someone new to the club), check the "
        "league and its room with the league list, and propose it with {tool}."
    )
    stand_in_cue: ClassVar[str | None] = r"\b(add|adding|enrol|enroll|sign up)\b|ajout|inscri"
    demo_scene: ClassVar[DemoScene | None] = DEMO_SCENE

    def approve_label(self, preview: AddMemberPreview, language: str = "en") -> str:
        return Localized("Add {who} to {league}", "Ajouter {who} à {league}").text(
            language, who=preview.member_name, league=preview.league
        )

    def headline(self, preview: AddMemberPreview, language: str = "en") -> str:
        return self.approve_label(preview, language)

    def success_text(
        self, preview: AddMemberPreview, result: AddMemberResult, language: str = "en"
    ) -> str:
        return Localized(
            "{member} now plays in {league} (members now: {count}).",
            "{member} joue maintenant dans {league} (membres maintenant : {count}).",
        ).text(
            language, member=preview.member_name, league=result.league, count=result.league_members
        )

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
