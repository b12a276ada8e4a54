"""App-authored hand-back text for outcomes. The model never paraphrases an outcome.

Reason codes are localizable: every code has an English and a French sentence, declared by the
contract that raises it or, for the lifecycle's own reasons, here. Parameters ending in
``_cents`` are formatted as money in the reason's ``currency``.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts import REVISION_REASONS
from countersign.domain.contracts.presentation import EFFECT_UNCERTAIN, LANGUAGES, Localized
from countersign.domain.money import format_money
from countersign.domain.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionReason,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)

SHARED_REASONS: dict[str, Localized] = {
    "declined_by_manager": Localized(
        "The manager declined this proposal.", "Le gestionnaire a refusé cette proposition."
    ),
    "resource_unavailable": Localized(
        "The record this proposal acts on is no longer available.",
        "L'élément visé par cette proposition n'est plus disponible.",
    ),
}
"""Reasons the lifecycle itself records, whatever the operation. Each contract declares the
reasons it raises (``revision_reasons``)."""

_overlap = SHARED_REASONS.keys() & REVISION_REASONS.keys()
if _overlap:
    raise ValueError(f"contracts redeclare shared revision reasons: {sorted(_overlap)}")

_FIXED: dict[str, dict[str, str]] = {
    "en": {
        "revision": "Nothing was changed. {reason} Prepare a new proposal if it is still needed.",
        "reconciling": "{uncertain} Status: {status_path}",
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
        "reconciling": "{uncertain} Suivi : {status_path}",
        "failure": (
            "Cette proposition n'a pas pu être exécutée à cause d'une erreur interne. Elle ne "
            "sera pas relancée. Référence : {correlation_id}"
        ),
        "unknown_reason": "Un fait sur lequel reposait la proposition a changé.",
    },
}


def reason_text(reason: RevisionReason, language: str = "en") -> str:
    sentence = SHARED_REASONS.get(reason.code) or REVISION_REASONS.get(reason.code)
    if sentence is None:
        return _FIXED[_language(language)]["unknown_reason"]
    return sentence.text(_language(language), **_format_params(reason.params))


def outcome_text(
    outcome: Outcome,
    success_text: str,
    language: str = "en",
    uncertain: Localized = EFFECT_UNCERTAIN,
) -> str:
    """The app-authored message for any outcome; ``success_text`` and what an uncertain
    effect means (``uncertain``) come from the contract."""
    texts = _FIXED[_language(language)]
    if isinstance(outcome, Succeeded):
        return success_text
    if isinstance(outcome, RevisionRequired):
        return texts["revision"].format(reason=reason_text(outcome.reason, language))
    if isinstance(outcome, NeedsReconciliation):
        return texts["reconciling"].format(
            uncertain=uncertain.text(_language(language)), status_path=outcome.status_path
        )
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
