"""The send_broadcast contract: how it reads for people (in every language) and for the assistant
that proposes it; the contract (send_broadcast.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.apply_broadcast_draft_texts import audience_words, recipients
from countersign.domain.contracts.presentation import Localized, PreviewField, Shown
from countersign.domain.contracts.send_broadcast_stand_in import request_from_words

if TYPE_CHECKING:
    from countersign.domain.contracts.send_broadcast import (
        SendBroadcastPreview,
        SendBroadcastResult,
    )

#: How many recipients the preview names; the rest are counted.
FIRST_RECIPIENTS = 5


class SendBroadcastTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    this_resource = Localized("this broadcast form", "ce formulaire d'envoi")
    title = Localized("Send the broadcast", "Envoyer le courriel aux membres")
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "subject": PreviewField(Localized("Subject", "Objet")),
        "audience_count": PreviewField(
            Localized("Recipients", "Nombre de destinataires"), emphasis=True
        ),
        "first_recipients": PreviewField(
            Localized("First recipients", "Premiers destinataires"),
            more=lambda preview: int(preview.get("audience_count") or 0) - FIRST_RECIPIENTS,
        ),
        "filters_in_words": PreviewField(
            Localized("Audience", "Destinataires"), words=audience_words
        ),
        "body": PreviewField(Localized("Body", "Message"), Shown.MULTILINE),
        "sends_email": PreviewField(
            Localized("Sends email", "Envoie un courriel"),
            Shown.FLAG,
            yes=Localized(
                "YES: to every recipient, once", "OUI : à chaque destinataire, une seule fois"
            ),
            no=Localized("No", "Non"),
            alert_when=True,
        ),
    }
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "no_draft": Localized(
            "The broadcast form has no approved draft yet: have a draft proposed and approved "
            "before sending it.",
            "Le formulaire d'envoi n'a pas encore de brouillon approuvé : faites proposer et "
            "approuver un brouillon avant de l'envoyer.",
        ),
        "broadcast_already_sent": Localized(
            "This draft has already been sent.", "Ce brouillon a déjà été envoyé."
        ),
        "broadcast_send_in_progress": Localized(
            "A send of this draft is still settling; wait for it to finish.",
            "Un envoi de ce brouillon est en cours de règlement ; attendez qu'il se termine.",
        ),
        "nobody": Localized(
            "Nobody plays in the draft's leagues, so the message would reach no one.",
            "Personne ne joue dans les ligues du brouillon : le message n'atteindrait personne.",
        ),
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "broadcast_draft_changed": Localized(
            "The broadcast form holds another draft than the one proposed for sending.",
            "Le formulaire d'envoi contient un autre brouillon que celui proposé à l'envoi.",
        ),
        "broadcast_audience_count_changed": Localized(
            "The audience of the draft changed from {approved_count} to {current_count} "
            "recipients.",
            "L'audience du brouillon est passée de {approved_count} à {current_count} "
            "destinataires.",
        ),
        "broadcast_recipients_changed": Localized(
            "The draft still reaches {approved_count} recipients, but not the same ones.",
            "Le brouillon atteint toujours {approved_count} destinataires, mais pas les mêmes.",
        ),
        "broadcast_already_sent": Localized(
            "This draft has already been sent; it is sent only once.",
            "Ce brouillon a déjà été envoyé ; il ne l'est qu'une fois.",
        ),
        "broadcast_send_in_progress": Localized(
            "Another send of this draft is still settling.",
            "Un autre envoi de ce brouillon est en cours de règlement.",
        ),
        "broadcast_delivery_refused": Localized(
            "The e-mail delivery service refused the broadcast; nothing was sent.",
            "Le service d'envoi de courriels a refusé l'envoi ; rien n'a été envoyé.",
        ),
    }
    effect_uncertain = Localized(
        "The e-mail delivery service's answer was lost. countersign is confirming the send "
        "with the service, by asking about that same send: it never sends it twice. Do not "
        "send the draft again.",
        "La réponse du service d'envoi de courriels a été perdue. countersign confirme l'envoi "
        "auprès du service, en l'interrogeant sur ce même envoi\u00a0: il ne l'envoie jamais "
        "deux fois. Ne renvoyez pas le brouillon.",
    )
    effect_unavailable = Localized(
        "The e-mail delivery service was unavailable and sent nothing. countersign sends this "
        "same broadcast, once, as soon as the service answers again. Do not send the draft "
        "again.",
        "Le service d'envoi de courriels était indisponible et n'a rien envoyé. countersign "
        "envoie ce même courriel, une seule fois, dès que le service répond de nouveau. Ne "
        "renvoyez pas le brouillon.",
    )
    outcome_titles: ClassVar[Mapping[str, Localized]] = {
        "succeeded": Localized("Email sent", "Courriel envoyé"),
        "needs_reconciliation": Localized(
            "Confirming with the e-mail delivery service: do not send it again",
            "Confirmation auprès du service d'envoi de courriels\u00a0: ne le renvoyez pas",
        ),
        "terminal_failure": Localized("Failed: nothing was sent", "Échec : rien n'a été envoyé"),
    }
    irreversible: ClassVar[Localized | None] = Localized(
        "An e-mail cannot be unsent: once you confirm, “{subject}” goes to {whom}.",
        "Un courriel ne peut pas être rappelé : dès que vous confirmez, « {subject} » part vers "
        "{whom}.",
    )
    assistant_instructions = (
        "When the manager asks to send the draft that is in the broadcast form, propose "
        "sending it with {tool}: it takes no arguments and sends exactly the applied draft. "
        "Never propose a send the manager did not ask for."
    )
    stand_in_cue: ClassVar[str | None] = (
        r"\b(send|envoie|envoyez|envoyer)\b.*\b(draft|form|brouillon|formulaire)\b"
    )

    def approve_label(self, preview: SendBroadcastPreview, language: str = "en") -> str:
        return Localized("Send to {whom}", "Envoyer à {whom}").text(
            language, whom=recipients(preview.audience_count, language)
        )

    def irreversible_note(self, preview: SendBroadcastPreview, language: str = "en") -> str | None:
        if self.irreversible is None:
            return None
        return self.irreversible.text(
            language,
            subject=preview.subject,
            whom=recipients(preview.audience_count, language),
        )

    def headline(self, preview: SendBroadcastPreview, language: str = "en") -> str:
        subject = preview.subject if len(preview.subject) <= 80 else preview.subject[:79] + "…"
        return Localized("Send “{subject}” to {whom}", "Envoyer « {subject} » à {whom}").text(
            language, subject=subject, whom=recipients(preview.audience_count, language)
        )

    def success_text(
        self, preview: SendBroadcastPreview, result: SendBroadcastResult, language: str = "en"
    ) -> str:
        return Localized(
            "Sent “{subject}” to {whom} ({audience}), once.",
            "« {subject} » a été envoyé à {whom} ({audience}), une seule fois.",
        ).text(
            language,
            subject=result.subject,
            whom=recipients(result.audience_count, language),
            audience=audience_words(preview.filters_in_words, language),
        )

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
