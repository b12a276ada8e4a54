"""The apply_broadcast_draft contract: how it reads for people (in every language) and for the
assistant that proposes it; the contract (apply_broadcast_draft.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.apply_broadcast_draft_stand_in import request_from_words
from countersign.domain.contracts.presentation import Localized, PreviewField, RequestField, Shown

if TYPE_CHECKING:
    from countersign.domain.contracts.apply_broadcast_draft import (
        BroadcastDraftPreview,
        BroadcastDraftResult,
    )


def audience_words(stored: str, language: str) -> str:
    """How an audience the preview stored in English (``describe_filters``) reads in
    ``language``: "membres de la ligue A", "membres des ligues A, B ou C". The stored words
    stay as they were frozen; only their reading changes."""
    if language != "fr" or not stored.startswith("members of "):
        return stored
    leagues = stored.removeprefix("members of ")
    head, separator, last = leagues.rpartition(" or ")
    if not separator:
        return f"membres de la ligue {leagues}"
    return f"membres des ligues {head} ou {last}"


def recipients(count: int, language: str) -> str:
    """``count`` recipients in words: "1 recipient", "9 recipients"; in French, as French
    counts, the singular for 0 and 1 ("0 destinataire")."""
    if language == "fr":
        return f"{count} destinataire" if count <= 1 else f"{count} destinataires"
    return f"{count} recipient" if count == 1 else f"{count} recipients"


class ApplyBroadcastDraftTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    this_resource = Localized("this broadcast form", "ce formulaire d'envoi")
    title = Localized(
        "Put a draft in the broadcast form", "Placer un brouillon dans le formulaire d'envoi"
    )
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "filters": RequestField(Localized("Audience", "Destinataires")),
        "filters.leagues": RequestField(
            Localized("Leagues", "Ligues"),
            Localized(
                "One league per line, exactly as the league list shows it.",
                "Une ligue par ligne, exactement comme dans la liste des ligues.",
            ),
        ),
        "subject": RequestField(Localized("Subject", "Objet")),
        "body": RequestField(Localized("Message", "Message")),
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "filters_in_words": PreviewField(
            Localized("Audience", "Destinataires"), words=audience_words
        ),
        "audience_count": PreviewField(Localized("Recipients", "Nombre de destinataires")),
        "subject": PreviewField(Localized("Subject", "Objet")),
        "body": PreviewField(Localized("Body", "Message"), Shown.MULTILINE),
        "sends_email": PreviewField(
            Localized("Sends email", "Envoie un courriel"),
            Shown.FLAG,
            yes=Localized("YES", "OUI"),
            no=Localized(
                "No: it only fills in the broadcast form",
                "Non : remplit seulement le formulaire d'envoi",
            ),
            alert_when=True,
        ),
    }
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "unknown_league": Localized(
            "The club has no league named “{name}”.", "Le club n'a pas de ligue nommée « {name} »."
        ),
        "nobody": Localized(
            "Nobody plays in these leagues, so the message would reach no one.",
            "Personne ne joue dans ces ligues : le message n'atteindrait personne.",
        ),
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "audience_changed": Localized(
            "The audience changed from {approved_count} to {current_count} recipients.",
            "L'audience est passée de {approved_count} à {current_count} destinataires.",
        ),
    }
    assistant_instructions = (
        "You help the club manager draft ONE email broadcast and propose it with {tool}: "
        "audience filters (league names), a subject and a plain-text body. Approval only copies "
        "the draft into the editable broadcast form; nothing is ever sent by you or by approval."
    )
    withdrew = Localized(
        "the draft “{subject}” approved {when} replaced the one in the broadcast form.",
        "le brouillon « {subject} » approuvé {when} a remplacé celui du formulaire d'envoi.",
    )

    def approve_label(self, preview: BroadcastDraftPreview, language: str = "en") -> str:
        return Localized(
            "Put this draft in the broadcast form",
            "Placer ce brouillon dans le formulaire d'envoi",
        ).text(language)

    def headline(self, preview: BroadcastDraftPreview, language: str = "en") -> str:
        subject = preview.subject if len(preview.subject) <= 80 else preview.subject[:79] + "…"
        return Localized("“{subject}” to {whom}", "« {subject} » à {whom}").text(
            language, subject=subject, whom=recipients(preview.audience_count, language)
        )

    def success_text(
        self, preview: BroadcastDraftPreview, result: BroadcastDraftResult, language: str = "en"
    ) -> str:
        whom = recipients(result.audience_count, language)
        if language == "fr":
            return (
                f"Le brouillon est dans le formulaire d'envoi pour {whom} "
                f"({audience_words(preview.filters_in_words, 'fr')}). Rien n'a "
                "été envoyé : relisez-le, puis demandez à l'assistant courriel de l'envoyer "
                "(une proposition à part, approuvée comme celle-ci)."
            )
        return (
            f"The draft is in the broadcast form for {whom} "
            f"({preview.filters_in_words}). Nothing has been sent: review it, then ask the email "
            "assistant to send it (a proposal of its own, approved like this one)."
        )

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
