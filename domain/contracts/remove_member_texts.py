"""The remove_member contract: how it reads for people (in every language) and for the assistant
that proposes it; the contract (remove_member.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.presentation import (
    DemoScene,
    Localized,
    PreviewField,
    RequestField,
)
from countersign.domain.contracts.remove_member_stand_in import DEMO_SCENE, request_from_words

if TYPE_CHECKING:
    from countersign.domain.contracts.remove_member import (
        RemoveMemberPreview,
        RemoveMemberResult,
    )


class RemoveMemberTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    title = Localized("Take a member out of a league", "Retirer un membre d'une ligue")
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "member": RequestField(
            Localized("Member", "Membre"),
            Localized(
                "Their full name or their email address.", "Son nom complet ou son courriel."
            ),
        ),
        "league": RequestField(Localized("League they leave", "Ligue quittée")),
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "member_name": PreviewField(Localized("Member", "Membre")),
        "email": PreviewField(Localized("Email", "Courriel")),
        "league": PreviewField(Localized("League they leave", "Ligue quittée"), emphasis=True),
        "league_members_before": PreviewField(
            Localized("Members of the league before", "Membres de la ligue avant")
        ),
        "league_members_after": PreviewField(
            Localized("Members of the league after", "Membres de la ligue après")
        ),
    }
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "no_such_league": Localized(
            "The club has no league named “{name}”.", "Le club n'a pas de ligue nommée « {name} »."
        ),
        "not_in_league": Localized(
            "No member of {league} has the name or email address “{member}”.",
            "Aucun membre de {league} n'a le nom ou l'adresse courriel « {member} ».",
        ),
        "member_name_shared": Localized(
            "{count} members of {league} are named {member}: name the one to take out by "
            "their email address.",
            "{count} membres de {league} s'appellent {member} : désignez celui à retirer par "
            "son adresse courriel.",
        ),
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "member_left_league": Localized(
            "{member} no longer plays in {league}.", "{member} ne joue plus dans {league}."
        ),
    }
    outcome_titles: ClassVar[Mapping[str, Localized]] = {
        "succeeded": Localized("Member taken out of the league", "Membre retiré de la ligue")
    }
    assistant_instructions = (
        "To take ONE member out of one league (their other leagues keep them), find the member "
        "with the member search, check the league with the league list, and propose it with "
        "{tool}."
    )
    stand_in_cue: ClassVar[str | None] = (
        r"\b(remove|removing|drop)\b|\btake\b.*\bout\b|retir|enl[eè]v|sort(ir|ez)\b"
    )
    demo_scene: ClassVar[DemoScene | None] = DEMO_SCENE

    def approve_label(self, preview: RemoveMemberPreview, language: str = "en") -> str:
        return Localized("Take {who} out of {league}", "Retirer {who} de {league}").text(
            language, who=preview.member_name, league=preview.league
        )

    def headline(self, preview: RemoveMemberPreview, language: str = "en") -> str:
        return self.approve_label(preview, language)

    def success_text(
        self, preview: RemoveMemberPreview, result: RemoveMemberResult, language: str = "en"
    ) -> str:
        return Localized(
            "{member} no longer plays in {league} (members now: {count}).",
            "{member} ne joue plus dans {league} (membres maintenant : {count}).",
        ).text(
            language, member=preview.member_name, league=result.league, count=result.league_members
        )

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
