"""The cancel_registration contract: how it reads for people (in every language) and for the
assistant that proposes it; the contract (cancel_registration.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.cancel_registration_stand_in import request_from_words
from countersign.domain.contracts.order_facts import NO_ACCOUNT, REFUND_DESTINATION
from countersign.domain.contracts.presentation import (
    Localized,
    PreviewField,
    RequestField,
    Shown,
    de,
)
from countersign.domain.money import format_money

if TYPE_CHECKING:
    from countersign.domain.contracts.cancel_registration import (
        CancelRegistrationPreview,
        CancelRegistrationResult,
    )


class CancelRegistrationTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    this_resource = Localized("this order", "cette commande")
    title = Localized("Cancel a registration", "Annuler une inscription")
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "destination": REFUND_DESTINATION,
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "participant_name": PreviewField(Localized("Participant", "Participant(e)")),
        "amount_cents": PreviewField(
            Localized("Refund amount", "Montant du remboursement"), Shown.MONEY, emphasis=True
        ),
        "to_account_credit": PreviewField(
            Localized("Refund method", "Mode de remboursement"),
            Shown.FLAG,
            yes=Localized("Club account credit", "Crédit au compte du club"),
            no=Localized("Back to the card", "Retour sur la carte"),
        ),
        "refund_destination": PreviewField(Localized("Refund to", "Remboursé vers")),
        "paid_cents": PreviewField(Localized("Paid", "Payé"), Shown.MONEY),
        "refunded_before_cents": PreviewField(
            Localized("Refunded earlier", "Déjà remboursé"), Shown.MONEY
        ),
        "league_spot_released": PreviewField(
            Localized("League spot released", "Place libérée dans la ligue")
        ),
    }
    preview_hidden = frozenset({"currency"})
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "cancellation_refund_settling": Localized(
            "A refund on this order is still settling; try again once it has settled.",
            "Un remboursement de cette commande est en cours de règlement ; réessayez une fois "
            "qu'il sera réglé.",
        ),
        "nothing_left": Localized(
            "Nothing is left to refund on this order, so its registration cannot be cancelled "
            "here.",
            "Il ne reste rien à rembourser sur cette commande : son inscription ne peut pas être "
            "annulée ici.",
        ),
        "registration_no_longer_active": Localized(
            "This registration has already been cancelled.",
            "Cette inscription a déjà été annulée.",
        ),
        "no_registration": Localized(
            "This order holds no league registration to cancel.",
            "Cette commande ne contient aucune inscription à une ligue à annuler.",
        ),
        "league_spot_gone": Localized(
            "The participant no longer plays in {league}, so there is no spot to release.",
            "Le ou la participant(e) ne joue plus dans {league} : il n'y a pas de place à libérer.",
        ),
        "not_one_card": Localized(
            "What is left to refund was not paid by a single card, so it can only go back as club "
            "account credit.",
            "Ce qui reste à rembourser n'a pas été payé par une seule carte : cela ne peut être "
            "rendu qu'en crédit au compte du club.",
        ),
        "no_account": NO_ACCOUNT,
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "registration_no_longer_active": Localized(
            "The registration has already been cancelled.",
            "L'inscription a déjà été annulée.",
        ),
        "registration_already_cancelled": Localized(
            "The registration has already been cancelled, everything paid has been given "
            "back, and {participant} no longer holds a spot in {league}.",
            "L'inscription a déjà été annulée, tout ce qui avait été payé a été rendu et "
            "{participant} n'a plus de place dans la ligue {league}.",
        ),
        "refundable_balance_changed": Localized(
            "What is left to refund on the order changed from {approved_cents} to "
            "{current_cents} since it was proposed.",
            "Le montant restant à rembourser sur la commande est passé de {approved_cents} à "
            "{current_cents} depuis la proposition.",
        ),
        "cancellation_refund_settling": Localized(
            "Another refund on this order is still settling.",
            "Un autre remboursement de cette commande est en cours de règlement.",
        ),
        "league_spot_gone": Localized(
            "{participant} no longer holds a spot in {league}.",
            "{participant} n'a plus de place dans la ligue {league}.",
        ),
        "cancellation_destination_unavailable": Localized(
            "The refund destination no longer fits the order's payments.",
            "La destination du remboursement ne convient plus aux paiements de la commande.",
        ),
        "cancellation_refund_declined": Localized(
            "The card provider declined the refund; the registration was not cancelled.",
            "Le fournisseur de paiement a refusé le remboursement ; l'inscription n'a pas été "
            "annulée.",
        ),
    }
    effect_uncertain = Localized(
        "The card provider's answer was lost. countersign is confirming the refund with the "
        "card provider, and cancels the registration once it is confirmed. Do not refund "
        "again or cancel it another way.",
        "La réponse du fournisseur de paiement a été perdue. countersign confirme le "
        "remboursement auprès du fournisseur de paiement, et annule l'inscription une fois "
        "qu'il est confirmé. Ne remboursez pas de nouveau et ne l'annulez pas autrement.",
    )
    effect_unavailable = Localized(
        "The card provider was unavailable and refunded nothing: no money has moved and the "
        "registration is still active. countersign sends this same refund, once, as soon as "
        "the provider answers again, and cancels the registration when it is confirmed. Do "
        "not refund again or cancel it another way.",
        "Le fournisseur de paiement était indisponible et n'a rien remboursé\u00a0: aucun "
        "argent n'a bougé et l'inscription est toujours active. countersign envoie ce même "
        "remboursement, une seule fois, dès que le fournisseur répond de nouveau, et annule "
        "l'inscription une fois confirmé. Ne remboursez pas de nouveau et ne l'annulez pas "
        "autrement.",
    )
    outcome_titles: ClassVar[Mapping[str, Localized]] = {
        "succeeded": Localized("Registration cancelled", "Inscription annulée"),
        "needs_reconciliation": Localized(
            "Confirming with the card provider: do not refund again",
            "Confirmation auprès du fournisseur de paiement\u00a0: ne remboursez pas de nouveau",
        ),
        "terminal_failure": Localized("Failed: no money moved", "Échec : aucun argent n'a bougé"),
        "revision_required:cancellation_refund_declined": Localized(
            "Not cancelled: the card was declined", "Non annulée : la carte a été refusée"
        ),
    }
    irreversible: ClassVar[Localized | None] = Localized(
        "Cancelling refunds {amount} to {card}, which cannot be undone, and releases {who}'s "
        "spot in {league}. The member usually sees the refund within 5 to 10 business days.",
        "L'annulation rembourse {amount} sur {card}, ce qui est irréversible, et libère la "
        "place de {who} dans {league}. Le membre voit généralement le remboursement d'ici 5 à "
        "10 jours ouvrables.",
    )
    assistant_instructions = (
        "When the manager asks to cancel the participant's registration, propose it with "
        "{tool}: the application refunds what is left of what they paid and releases their "
        "league spot; you only choose where the money goes, as the manager says."
    )
    stand_in_cue: ClassVar[str | None] = r"\b(cancel|annul)"
    withdrew = Localized(
        "the cancellation of {participant_name}'s registration approved {when} closed this order.",
        "l'annulation de l'inscription de {participant_name} approuvée {when} a clos cette "
        "commande.",
    )

    def approve_label(self, preview: CancelRegistrationPreview, language: str = "en") -> str:
        """What the button does with the money: back to the card, or account credit."""
        amount = format_money(preview.amount_cents, preview.currency, language)
        if preview.to_account_credit:
            return Localized(
                "Cancel and credit {amount} to {who}'s club account",
                "Annuler et créditer {amount} au compte de {who}",
            ).text(language, amount=amount, who=preview.participant_name)
        return Localized(
            "Cancel and refund {amount} to {where}", "Annuler et rembourser {amount} sur {where}"
        ).text(language, amount=amount, where=preview.refund_destination)

    def inbox_reason(self, preview: CancelRegistrationPreview, language: str = "en") -> str | None:
        return Localized("Cancellation: {league}", "Annulation : {league}").text(
            language, league=preview.league_spot_released
        )

    def irreversible_note(
        self, preview: CancelRegistrationPreview, language: str = "en"
    ) -> str | None:
        """Money back to a card leaves the club for good; account credit stays in its books."""
        if preview.to_account_credit or self.irreversible is None:
            return None
        return self.irreversible.text(
            language,
            amount=format_money(preview.amount_cents, preview.currency, language),
            card=preview.refund_destination,
            who=preview.participant_name,
            league=preview.league_spot_released,
        )

    def headline(self, preview: CancelRegistrationPreview, language: str = "en") -> str:
        return Localized(
            "Cancel {who}'s registration and refund {amount}",
            "{who} : annuler l'inscription et rembourser {amount}",
        ).text(
            language,
            who=preview.participant_name,
            amount=format_money(preview.amount_cents, preview.currency, language),
        )

    def success_text(
        self,
        preview: CancelRegistrationPreview,
        result: CancelRegistrationResult,
        language: str = "en",
    ) -> str:
        amount = format_money(result.amount_cents, result.currency, language)
        who = preview.participant_name
        if language == "fr":
            where = (
                f"en crédit au compte du club de {result.destination}"
                if result.to_account_credit
                else f"sur la carte {result.destination}"
            )
            spot = (
                f"sa place dans la ligue {result.league} est libérée"
                if result.spot_released
                else f"{who} n'avait déjà plus de place dans la ligue {result.league}"
            )
            return f"Inscription {de(who)} annulée : {amount} remboursés {where}, et {spot}."
        where = (
            f"as club account credit for {result.destination}"
            if result.to_account_credit
            else f"to {result.destination}"
        )
        spot = (
            f"their spot in {result.league} is released"
            if result.spot_released
            else f"they no longer held a spot in {result.league}"
        )
        return f"Cancelled {who}'s registration: refunded {amount} {where}, and {spot}."

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
