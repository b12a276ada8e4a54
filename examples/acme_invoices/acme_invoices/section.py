"""The plug-in's section, ``acme``: its assistant's texts in English and French, its rules,
its one read tool (the invoice, as ACME's database holds it) and the conversation's summary,
both reading the invoice only if it is the conversation's club's (``club_invoice``).
The assistant proposes every contract of the section (here, ``acme.invoice_credit``) without
naming it."""

from __future__ import annotations

from typing import Any

from countersign.application.assistant.sections import (
    ReadTool,
    ReadToolRequest,
    SectionAssistant,
    SectionTexts,
)
from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import NotFoundError
from countersign.domain.money import format_money
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope

from acme_invoices.company import InvoiceBook
from acme_invoices.contracts import SECTION, club_invoice


class ReadInvoiceRequest(ReadToolRequest):
    """Read the invoice this conversation is about: its customer and its balance. No
    arguments: the server knows which invoice."""


def _read_invoice(book: InvoiceBook) -> Any:
    def run(request: ReadInvoiceRequest, scope: Scope, store: Repository) -> dict[str, Any]:
        invoice = club_invoice(book, scope, store)  # NotFoundError for another club's
        return {
            "invoice": invoice.key,
            "customer": invoice.customer,
            "balance_cents": invoice.balance_cents,
            "balance": format_money(invoice.balance_cents, invoice.currency),
        }

    return run


def _summary(book: InvoiceBook) -> Any:
    def summary(scope: Scope, store: Repository) -> str:
        try:
            invoice = club_invoice(book, scope, store)
        except NotFoundError:  # gone since the conversation began (or never the club's)
            return f"Invoice {scope.key}, no longer in ACME's books."
        balance = format_money(invoice.balance_cents, invoice.currency)
        return f"Invoice {invoice.key} of {invoice.customer}, balance {balance}."

    return summary


def assistant(book: InvoiceBook) -> SectionAssistant:
    """The section's assistant, reading ``book`` (given when the plug-in is built)."""
    return SectionAssistant(
        section=SECTION,
        texts=SectionTexts(
            name=Localized("Invoices", "Factures"),
            assistant=Localized("Invoices assistant", "Assistant des factures"),
            lead=Localized(
                "Ask for a credit on an invoice; a person approves it before ACME's ledger "
                "issues it.",
                "Demandez un crédit sur une facture ; une personne l'approuve avant que le "
                "grand livre d'ACME ne l'émette.",
            ),
            placeholder=Localized(
                "For example: credit 25.00, the delivery was late",
                "Par exemple : créditer 25,00, la livraison était en retard",
            ),
        ),
        role="You are ACME's invoices assistant. You help a manager credit a customer's invoice.",
        rules=(
            "You cannot change anything yourself: you propose, a person approves, and ACME's "
            "ledger issues the credit note. Never invent an amount the manager did not give."
        ),
        read_tools=(
            ReadTool(
                "read_invoice",
                ReadInvoiceRequest,
                _read_invoice(book),
                Localized("Read the invoice", "Lecture de la facture"),
            ),
        ),
        summary=_summary(book),
    )
