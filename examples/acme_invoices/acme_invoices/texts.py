"""How ``acme.invoice_credit`` reads for people, in English and French, and for the assistant
that proposes it; the contract (``contracts.py``) inherits it. Its stand-in (the offline
model countersign's demo and tests use, never a real one) is here too: it is a few lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from countersign.domain.contracts.presentation import Localized, PreviewField, RequestField, Shown
from countersign.domain.money import format_money

if TYPE_CHECKING:
    from acme_invoices.contracts import CreditPreview, CreditResult

#: "credit 25", "credit $25.50", "créditer 25,50": the amount the manager's words name (not
#: a number inside a word or a key, such as INV-1042's).
_AMOUNT = re.compile(r"(?<![\w-])(\d{1,6})(?:[.,](\d{2}))?(?![\w-])")


def request_from_words(words: str) -> dict[str, Any] | str | None:
    """The credit the manager's words ask for: the amount they name, and their words as the
    reason (one line, at most 200 characters). None for words that ask for no credit."""
    if not re.search(r"\bcr[eé]dit", words, re.IGNORECASE):
        return None
    amount = _AMOUNT.search(words)
    if amount is None:
        return "How much should the invoice be credited?"
    cents = int(amount.group(1)) * 100 + int(amount.group(2) or 0)
    reason = " ".join(words.split())[:200]
    return {"amount_cents": cents, "reason": reason}


class InvoiceCreditTexts:
    """Every sentence of the credit, by what it is for."""

    this_resource = Localized("this invoice", "cette facture")
    title = Localized("Credit an invoice", "Créditer une facture")
    request_fields: ClassVar[Mapping[str, RequestField]] = {
        "amount_cents": RequestField(
            Localized("Credit (cents)", "Crédit (cents)"),
            Localized("The credit in cents: 2500 is 25.00.", "Le crédit en cents : 2500 = 25,00."),
        ),
        "reason": RequestField(
            Localized("Reason", "Motif"),
            Localized("Why the customer is credited.", "Pourquoi le client est crédité."),
        ),
    }
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        "invoice_key": PreviewField(Localized("Invoice", "Facture")),
        "customer": PreviewField(Localized("Customer", "Client")),
        "amount_cents": PreviewField(Localized("Credit", "Crédit"), Shown.MONEY, emphasis=True),
        "balance_cents": PreviewField(Localized("Balance now", "Solde actuel"), Shown.MONEY),
        "balance_after_cents": PreviewField(
            Localized("Balance after the credit", "Solde après le crédit"), Shown.MONEY
        ),
        "reason": PreviewField(Localized("Reason", "Motif")),
    }
    preview_hidden = frozenset({"currency"})
    request_problems: ClassVar[Mapping[str, Localized]] = {
        "credit_exceeds_balance": Localized(
            "The credit is more than the invoice's balance of {balance_cents}.",
            "Le crédit dépasse le solde de la facture, {balance_cents}.",
        ),
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "invoice_changed": Localized(
            "The invoice changed after this credit was proposed; propose it again on the "
            "invoice as it is now.",
            "La facture a changé depuis que ce crédit a été proposé ; proposez-le de nouveau "
            "sur la facture telle qu'elle est maintenant.",
        ),
        "credit_exceeds_balance": Localized(
            "The credit is now more than the invoice's balance of {balance_cents}.",
            "Le crédit dépasse maintenant le solde de la facture, {balance_cents}.",
        ),
        "invoice_gone": Localized(
            "The invoice no longer exists in ACME's books; nothing was credited.",
            "La facture n'existe plus dans les livres d'ACME ; rien n'a été crédité.",
        ),
        "ledger_refused": Localized(
            "ACME's ledger refused the credit; nothing was credited.",
            "Le grand livre d'ACME a refusé le crédit ; rien n'a été crédité.",
        ),
    }
    assistant_instructions = (
        "To credit one of the customer's invoices, read it with read_invoice, then propose "
        "the credit with {tool}: the amount in cents and the reason in the manager's words. A "
        "person approves it; ACME's ledger issues the credit note."
    )
    stand_in_cue: ClassVar[str | None] = r"\bcr[eé]dit"

    def stand_in(self, words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
        return request_from_words(words)

    def headline(self, preview: CreditPreview, language: str = "en") -> str:
        amount = format_money(preview.amount_cents, preview.currency, language)
        if language == "fr":
            return f"Créditer {amount} sur la facture {preview.invoice_key}"
        return f"Credit {amount} on invoice {preview.invoice_key}"

    def success_text(
        self, preview: CreditPreview, result: CreditResult, language: str = "en"
    ) -> str:
        amount = format_money(preview.amount_cents, preview.currency, language)
        balance = format_money(result.balance_after_cents, preview.currency, language)
        if language == "fr":
            return (
                f"Avoir {result.credit_note} émis : {amount} sur la facture "
                f"{preview.invoice_key}, dont le solde est maintenant de {balance}."
            )
        return (
            f"Credit note {result.credit_note} issued: {amount} on invoice "
            f"{preview.invoice_key}, whose balance is now {balance}."
        )
