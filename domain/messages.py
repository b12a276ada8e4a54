"""The app-authored message for a stored outcome, in English or French."""

from __future__ import annotations

from typing import Any

from domain.contracts import REGISTRY
from domain.handback import outcome_text
from domain.outcomes import Succeeded, outcome_from_stored


def outcome_message(
    kind: str, preview: dict[str, Any], stored_outcome: dict[str, Any], language: str = "en"
) -> str:
    """What the browser, the conversation and the CLI say about an outcome. Never the model."""
    outcome = outcome_from_stored(stored_outcome)
    success = ""
    if isinstance(outcome, Succeeded):
        contract = REGISTRY[kind]
        success = contract.success_text(
            contract.Preview.model_validate(preview),
            contract.Result.model_validate(outcome.result),
            language,
        )
    return outcome_text(outcome, success, language)
