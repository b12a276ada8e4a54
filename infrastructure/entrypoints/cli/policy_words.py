"""An approval rule in the terminal's words, for a card and for ``policy`` (EN and FR)."""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.domain.money import format_money


def describe_policy(rule: dict[str, Any], currency: str | None, language: str = "en") -> str:
    """An approval rule in words: '2 distinct approvals above $100.00 CAD; the requester may
    not approve their own'. Amounts read in ``currency`` where there is one, else in cents."""
    count = int(rule["approvals"])
    text = (
        Localized("one approval", "une approbation")
        if count == 1
        else Localized("{n} distinct approvals", "{n} approbations distinctes")
    ).text(language, n=count)
    above = rule.get("above_cents")
    if above is not None:
        amount = (
            format_money(int(above), currency, language)
            if currency
            else Localized("{n} cents", "{n} cents").text(language, n=int(above))
        )
        text += Localized(" above {amount}", " au-delà de {amount}").text(language, amount=amount)
    if not rule.get("requester_may_approve", True):
        text += Localized(
            "; the requester may not approve their own",
            " ; la personne qui la demande ne peut pas l'approuver",
        ).text(language)
    if rule.get("require_passkey"):
        text += Localized(
            "; each approval signed with a passkey",
            " ; chaque approbation signée avec une clé d'accès",
        ).text(language)
    return text
