"""The app-authored message for a stored outcome, in English or French."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.contracts import REGISTRY
from domain.contracts.presentation import LANGUAGES
from domain.handback import outcome_text
from domain.outcomes import Succeeded, outcome_from_stored


def outcome_message(
    kind: str, preview: dict[str, Any], stored_outcome: dict[str, Any], language: str = "en"
) -> str:
    """What the browser, the conversation and the CLI say about an outcome. Never the model."""
    return outcome_messages(kind, preview, stored_outcome, (language,))[0]


def outcome_messages(
    kind: str,
    preview: dict[str, Any],
    stored_outcome: dict[str, Any],
    languages: Sequence[str] = LANGUAGES,
) -> tuple[str, ...]:
    """``outcome_message`` in several languages, validating the stored values once (the
    projections store every language of every outcome)."""
    outcome = outcome_from_stored(stored_outcome)
    if not isinstance(outcome, Succeeded):
        return tuple(outcome_text(outcome, "", language) for language in languages)
    contract = REGISTRY[kind]
    valid_preview = contract.Preview.model_validate(preview)
    result = contract.Result.model_validate(outcome.result)
    return tuple(
        outcome_text(outcome, contract.success_text(valid_preview, result, language), language)
        for language in languages
    )
