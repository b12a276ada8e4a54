"""The refund_missing_discount contract: how it reads for people (in every language) and for the
assistant that proposes it; the contract (refund_missing_discount.py) inherits it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.order_facts import NO_ACCOUNT, REFUND_DESTINATION
from countersign.domain.contracts.presentation import Localized, PreviewField, RequestField, Shown
from countersign.domain.contracts.refund_missing_discount_stand_in import request_from_words
from countersign.domain.money import format_money

if TYPE_CHECKING:
    from countersign.domain.contracts.refund_missing_discount import RefundPreview, RefundResult


_SUCCESS = Localized(
    "Refunded {amount} for {who}'s missed {discount} to {destination}. The order total is now "
    "{total}.",
    "Remboursement de {amount} pour la remise manquée « {discount} » de {who}, vers "
    "{destination}. Le total de la commande est maintenant de {total}.",
)


ACCOUNT_CREDIT = Localized(
    "club account credit for {holder}", "crédit au compte du club de {holder}"
)
"""A refund to account credit, by its holder: ``prepare`` freezes the English words in the
destination's label (so every stored proposal holds them); people read them in their own."""


ACCOUNT_CREDIT_PREFIX = ACCOUNT_CREDIT.en.removesuffix("{holder}")


def _destination(label: str, language: str) -> str:
    """A frozen destination label in ``language``: a card's label is the card's own name in
    every language; account credit is worded for its holder."""
    if label.startswith(ACCOUNT_CREDIT_PREFIX):
        return ACCOUNT_CREDIT.text(language, holder=label.removeprefix(ACCOUNT_CREDIT_PREFIX))
    return label


def _to_card(preview: RefundPreview) -> bool:
    """Whether the refund goes back to the card: ``prepare`` names a card destination by the
    payment's own label, and account credit otherwise."""
    return preview.refund_destination == preview.payment_method


class RefundMissingDiscountTexts:
    """How the operation reads: its texts, its preview's rows and its sentences."""

    this_resource = Localized("this order", "cette commande")
    title = Localized("Refund a missed discount", "Rembourser une remise manquée")
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "payment": RequestField(
            Localized("Payment", "Paiement"),
            Localized(
                "The payment's reference in the order, like P1.",
                "La référence du paiement dans la commande, par exemple P1.",
            ),
        ),
        "line_item": RequestField(
            Localized("Line item", "Article"),
            Localized(
                "The item's reference in the order, like L1.",
                "La référence de l'article dans la commande, par exemple L1.",
            ),
        ),
        "discount": RequestField(
            Localized("Discount", "Remise"),
            Localized(
                "The missed discount's reference in the order, like D1.",
                "La référence de la remise manquée dans la commande, par exemple D1.",
            ),
        ),
        "destination": REFUND_DESTINATION,
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "participant_name": PreviewField(Localized("Participant", "Participant(e)")),
        "product_name": PreviewField(Localized("Product", "Produit")),
        "discount_name": PreviewField(Localized("Missed discount", "Remise manquée")),
        "amount_cents": PreviewField(
            Localized("Refund amount", "Montant du remboursement"), Shown.MONEY, emphasis=True
        ),
        "payment_method": PreviewField(Localized("Payment", "Paiement")),
        "refund_destination": PreviewField(
            Localized("Refund to", "Remboursé vers"),
            words=lambda label, language: _destination(label, language),
        ),
        "current_order_total_cents": PreviewField(
            Localized("Order total before", "Total avant remboursement"), Shown.MONEY
        ),
        "resulting_order_total_cents": PreviewField(
            Localized("Order total after", "Total après remboursement"), Shown.MONEY
        ),
        "product_configuration_unchanged": PreviewField(
            Localized("Product configuration", "Configuration du produit"),
            Shown.FLAG,
            yes=Localized("Unchanged", "Inchangée"),
            no=Localized("CHANGED", "MODIFIÉE"),
            alert_when=False,
        ),
    }
    preview_hidden = frozenset({"currency"})
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "unknown_payment": Localized(
            "This order has no such payment.",
            "Cette commande n'a pas ce paiement.",
        ),
        "unknown_line_item": Localized(
            "This order has no such item.",
            "Cette commande n'a pas cet article.",
        ),
        "unknown_discount": Localized(
            "This order has no such discount.",
            "Cette commande n'a pas cette remise.",
        ),
        "discount_elsewhere": Localized(
            "“{discount}” belongs to another item of this order.",
            "« {discount} » porte sur un autre article de cette commande.",
        ),
        "discount_applied": Localized(
            "“{discount}” was applied at checkout, so nothing is owed.",
            "« {discount} » a été appliquée au paiement : rien n'est dû.",
        ),
        "discount_refunded": Localized(
            "“{discount}” has already been refunded.",
            "« {discount} » a déjà été remboursée.",
        ),
        "refund_in_progress": Localized(
            "Another refund on this order is still settling; try again once it has settled.",
            "Un autre remboursement de cette commande est en cours de règlement ; réessayez une "
            "fois qu'il sera réglé.",
        ),
        "payment_short": Localized(
            "This payment has only {refundable_cents} left to refund, less than the missed "
            "discount.",
            "Il ne reste que {refundable_cents} à rembourser sur ce paiement, moins que la remise "
            "manquée.",
        ),
        "not_by_card": Localized(
            "This payment was not made by card, so it can only go back as club account credit.",
            "Ce paiement n'a pas été fait par carte : il ne peut être rendu qu'en crédit au compte "
            "du club.",
        ),
        "no_account": NO_ACCOUNT,
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "amount_changed": Localized(
            "The refund amount changed from {approved_cents} to {current_cents} since it was "
            "proposed.",
            "Le montant du remboursement est passé de {approved_cents} à {current_cents} "
            "depuis la proposition.",
        ),
        "order_total_changed": Localized(
            "The order total changed from {approved_cents} to {current_cents} since it was "
            "proposed (another refund of this order).",
            "Le total de la commande est passé de {approved_cents} à {current_cents} depuis la "
            "proposition (un autre remboursement de cette commande).",
        ),
        "payment_already_refunded": Localized(
            "The payment {payment} has already been refunded.",
            "Le paiement {payment} a déjà été remboursé.",
        ),
        "insufficient_refundable": Localized(
            "Only {refundable_cents} of the payment is left to refund.",
            "Il ne reste que {refundable_cents} à rembourser sur ce paiement.",
        ),
        "discount_already_refunded": Localized(
            "The {discount} has already been refunded.",
            "La remise {discount} a déjà été remboursée.",
        ),
        "refund_in_progress": Localized(
            "Another refund on this order is still settling.",
            "Un autre remboursement de cette commande est en cours de règlement.",
        ),
        "evidence_missing": Localized(
            "The order no longer shows the line item or discount.",
            "La commande ne montre plus l'article ou la remise.",
        ),
        "destination_unavailable": Localized(
            "The refund destination no longer fits the payment.",
            "La destination du remboursement ne convient plus au paiement.",
        ),
        "refund_declined_by_provider": Localized(
            "The card provider declined the refund.",
            "Le fournisseur de paiement a refusé le remboursement.",
        ),
    }
    effect_uncertain = Localized(
        "The refund was sent, but the card provider's answer was lost, so it is not yet known "
        "whether the money moved. countersign is confirming it with the card provider, by "
        "asking about that same refund: it never sends a second one. Tell the member their "
        "refund is being processed. Do not refund again, by hand or otherwise.",
        "Le remboursement a été envoyé, mais la réponse du fournisseur de paiement a été "
        "perdue\u00a0: on ne sait pas encore si l'argent a bougé. countersign le confirme "
        "auprès du fournisseur de paiement, en l'interrogeant sur ce même remboursement\u00a0: "
        "il n'en envoie jamais un second. Dites au membre que son remboursement est en cours "
        "de traitement. Ne remboursez pas de nouveau, ni à la main ni autrement.",
    )
    effect_unavailable = Localized(
        "The card provider was unavailable and refunded nothing: no money has moved yet. "
        "countersign sends this same refund, once, as soon as the provider answers again. "
        "Tell the member their refund is on its way. Do not refund again, by hand or "
        "otherwise.",
        "Le fournisseur de paiement était indisponible et n'a rien remboursé\u00a0: aucun "
        "argent n'a encore bougé. countersign envoie ce même remboursement, une seule fois, "
        "dès que le fournisseur répond de nouveau. Dites au membre que son remboursement est "
        "en route. Ne remboursez pas de nouveau, ni à la main ni autrement.",
    )
    outcome_titles: ClassVar[Mapping[str, Localized]] = {
        "succeeded": Localized("Refund sent", "Remboursement envoyé"),
        # Nothing leaves the club for account credit: the member's account is credited.
        "succeeded:account_credit": Localized("Account credited", "Compte crédité"),
        "needs_reconciliation": Localized(
            "Confirming with the card provider: do not refund again",
            "Confirmation auprès du fournisseur de paiement\u00a0: ne remboursez pas de nouveau",
        ),
        "terminal_failure": Localized("Failed: no money moved", "Échec : aucun argent n'a bougé"),
        "revision_required:refund_declined_by_provider": Localized(
            "Not executed: the card was declined", "Non exécutée : la carte a été refusée"
        ),
    }
    irreversible: ClassVar[Localized | None] = Localized(
        "A card refund cannot be undone: once you confirm, {amount} goes back to {card} and the "
        "club cannot take it back. The member usually sees it on their statement within 5 to "
        "10 business days.",
        "Un remboursement sur carte est irréversible : dès que vous confirmez, {amount} "
        "retourne sur {card} et le club ne peut pas le reprendre. Le membre le voit "
        "généralement sur son relevé d'ici 5 à 10 jours ouvrables.",
    )
    assistant_instructions = (
        "When a participant missed a discount they were eligible for, propose a refund with {tool}."
    )
    withdrew = Localized(
        "the {amount_cents} refund approved {when} changed this order's balance.",
        "le remboursement de {amount_cents} approuvé {when} a modifié le solde de cette commande.",
    )

    def headline(self, preview: RefundPreview, language: str = "en") -> str:
        return Localized("{amount} to {who}", "{amount} pour {who}").text(
            language,
            amount=format_money(preview.amount_cents, preview.currency, language),
            who=preview.participant_name,
        )

    def approve_label(self, preview: RefundPreview, language: str = "en") -> str:
        amount = format_money(preview.amount_cents, preview.currency, language)
        if _to_card(preview):
            return Localized("Refund {amount} to {card}", "Rembourser {amount} sur {card}").text(
                language, amount=amount, card=preview.payment_method
            )
        return Localized(
            "Credit {amount} to {who}'s club account", "Créditer {amount} au compte de {who}"
        ).text(language, amount=amount, who=preview.participant_name)

    def success_title_key(self, preview: RefundPreview) -> str:
        return "succeeded" if _to_card(preview) else "succeeded:account_credit"

    def inbox_reason(self, preview: RefundPreview, language: str = "en") -> str | None:
        return Localized(
            "Missed discount: {discount} · {product}", "Remise manquée : {discount} · {product}"
        ).text(language, discount=preview.discount_name, product=preview.product_name)

    def irreversible_note(self, preview: RefundPreview, language: str = "en") -> str | None:
        """A card refund leaves the club for good; account credit stays in the club's books."""
        if not _to_card(preview) or self.irreversible is None:
            return None
        return self.irreversible.text(
            language,
            amount=format_money(preview.amount_cents, preview.currency, language),
            card=preview.payment_method,
        )

    def success_text(
        self, preview: RefundPreview, result: RefundResult, language: str = "en"
    ) -> str:
        return _SUCCESS.text(
            language,
            amount=format_money(result.amount_cents, result.currency, language),
            who=preview.participant_name,
            discount=preview.discount_name,
            destination=_destination(result.destination, language),
            total=format_money(result.resulting_order_total_cents, result.currency, language),
        )

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words, reads)
