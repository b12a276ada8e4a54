"""App-authored hand-back text for outcomes. The model never paraphrases an outcome.

Reason codes are localizable: every code has an English and a French sentence. Parameters
ending in ``_cents`` are formatted as money in the reason's ``currency``.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.money import format_money
from countersign.domain.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionReason,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)

LANGUAGES = ("en", "fr")

REASONS: dict[str, dict[str, str]] = {
    "en": {
        "declined_by_manager": "The manager declined this proposal.",
        "amount_changed": (
            "The refund amount changed from {approved_cents} to {current_cents} since it "
            "was proposed."
        ),
        "payment_already_refunded": "The payment {payment} has already been refunded.",
        "insufficient_refundable": "Only {refundable_cents} of the payment is left to refund.",
        "discount_already_refunded": "The {discount} has already been refunded.",
        "refund_in_progress": "Another refund on this order is still settling.",
        "evidence_missing": "The order no longer shows the line item or discount.",
        "destination_unavailable": "The refund destination no longer fits the payment.",
        "refund_declined_by_provider": "The card provider declined the refund.",
        "audience_changed": (
            "The audience changed from {approved_count} to {current_count} recipients."
        ),
        "resource_unavailable": "The record this proposal acts on is no longer available.",
    },
    "fr": {
        "declined_by_manager": "Le gestionnaire a refusé cette proposition.",
        "amount_changed": (
            "Le montant du remboursement est passé de {approved_cents} à {current_cents} "
            "depuis la proposition."
        ),
        "payment_already_refunded": "Le paiement {payment} a déjà été remboursé.",
        "insufficient_refundable": (
            "Il ne reste que {refundable_cents} à rembourser sur ce paiement."
        ),
        "discount_already_refunded": "La remise {discount} a déjà été remboursée.",
        "refund_in_progress": "Un autre remboursement de cette commande est en cours de règlement.",
        "evidence_missing": "La commande ne montre plus l'article ou la remise.",
        "destination_unavailable": "La destination du remboursement ne convient plus au paiement.",
        "refund_declined_by_provider": "Le fournisseur de paiement a refusé le remboursement.",
        "audience_changed": (
            "L'audience est passée de {approved_count} à {current_count} destinataires."
        ),
        "resource_unavailable": "L'élément visé par cette proposition n'est plus disponible.",
    },
}

_FIXED: dict[str, dict[str, str]] = {
    "en": {
        "revision": "Nothing was changed. {reason} Prepare a new proposal if it is still needed.",
        "reconciling": (
            "The card provider's answer was lost. The refund is being reconciled with the "
            "provider; do not retry it. Status: {status_path}"
        ),
        "failure": (
            "This proposal could not be executed because of an internal error. It will not be "
            "retried. Reference: {correlation_id}"
        ),
        "unknown_reason": "A fact the proposal relied on has changed.",
    },
    "fr": {
        "revision": (
            "Rien n'a été modifié. {reason} Préparez une nouvelle proposition si elle est "
            "toujours nécessaire."
        ),
        "reconciling": (
            "La réponse du fournisseur de paiement a été perdue. Le remboursement est en cours "
            "de rapprochement ; ne le relancez pas. Suivi : {status_path}"
        ),
        "failure": (
            "Cette proposition n'a pas pu être exécutée à cause d'une erreur interne. Elle ne "
            "sera pas relancée. Référence : {correlation_id}"
        ),
        "unknown_reason": "Un fait sur lequel reposait la proposition a changé.",
    },
}


def reason_text(reason: RevisionReason, language: str = "en") -> str:
    catalogue = REASONS[_language(language)]
    template = catalogue.get(reason.code)
    if template is None:
        return _FIXED[_language(language)]["unknown_reason"]
    return template.format(**_format_params(reason.params))


def outcome_text(outcome: Outcome, success_text: str, language: str = "en") -> str:
    """The app-authored message for any outcome; ``success_text`` comes from the contract."""
    texts = _FIXED[_language(language)]
    if isinstance(outcome, Succeeded):
        return success_text
    if isinstance(outcome, RevisionRequired):
        return texts["revision"].format(reason=reason_text(outcome.reason, language))
    if isinstance(outcome, NeedsReconciliation):
        return texts["reconciling"].format(status_path=outcome.status_path)
    assert isinstance(outcome, TerminalFailure)
    return texts["failure"].format(correlation_id=outcome.correlation_id)


def _language(language: str) -> str:
    return language if language in LANGUAGES else "en"


def _format_params(params: dict[str, Any]) -> dict[str, Any]:
    currency = str(params.get("currency", ""))
    return {
        key: format_money(int(value), currency) if key.endswith("_cents") else value
        for key, value in params.items()
    }
