"""The plug-in's two operations over the company's invoices, known by the company's own keys
(``INV-1``): each contract is built with the facts client it reads (no module globals).
Each invoice is one club's: both read it through ``_OverInvoices.invoice``, which answers
another club's invoice exactly as one the company does not have (NotFoundError), before
anything else (the tags of an invoice are read only once it is found the club's).

- ``sample.tag_invoice`` (local): tags an invoice; the tags live in the plug-in's own
  aggregate (``InvoiceTags``), changed in countersign's commit.
- ``sample.invoice_credit`` (external): credits the invoice through the company's ledger
  service (provider ``sample.ledger``), under the proposal's idempotency key. The request and
  the result come from the frozen arguments and the ledger's answer alone
  (``settlement_facts``), so the company deleting the invoice after approval never blocks
  the settlement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from uuid import UUID

from countersign.domain.club.organization import Organization
from countersign.domain.contracts.base import (
    ContractRequest,
    Effect,
    Facts,
    Frozen,
    OperationContract,
    Prepared,
    RevisionNeededError,
)
from countersign.domain.contracts.findings import Finding, RuleBrokenError
from countersign.domain.contracts.presentation import Localized, PreviewField, Shown
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
from pydantic import Field

from sample_plugin.company import Invoice, InvoiceBook
from sample_plugin.domain import InvoiceTags

#: The namespace the company's invoice keys map under (a constant: never change it).
INVOICES = UUID("6f1c1f4e-8a43-4c39-9d7e-2f6f0b1a7c11")
SECTION = Section("sample")


class _OverInvoices:
    """What both operations share: the section, the permission, the company's keys, and the
    facts client each is built with."""

    section = SECTION
    permission = "sample.manage"
    resource_namespace = INVOICES
    contract_version = 1

    def __init__(self, book: InvoiceBook) -> None:
        self.book = book

    def invoice(self, scope: Scope, store: Repository) -> Invoice:
        """The invoice the scope's key names, as the company's database holds it now, if it
        is the scope's club's; NotFoundError otherwise, alike for another club's."""
        club = store.read(scope.organization_id, Organization).slug
        invoice = self.book.get(club, scope.key or "")
        if invoice is None:
            raise NotFoundError("invoice")
        return invoice


#: The preview rows both operations show first.
INVOICE_FIELDS = {
    "invoice_key": PreviewField(Localized("Invoice", "Facture")),
    "customer": PreviewField(Localized("Customer", "Client")),
}


# -- sample.tag_invoice -------------------------------------------------------------------------


class TagRequest(ContractRequest):
    """Tag the invoice."""

    tag: str = Field(min_length=1, max_length=40, description="The tag.")


class TagArguments(Frozen):
    invoice_key: str
    tag: str


class TagPreview(Frozen):
    invoice_key: str
    customer: str
    tag: str


class TagResult(Frozen):
    tags: list[str]


@dataclass
class TagFacts(Facts):
    invoice: Invoice
    tags: InvoiceTags

    def aggregates(self) -> list[Aggregate]:
        return [self.tags]


class TagInvoice(
    _OverInvoices,
    OperationContract[TagRequest, TagArguments, TagPreview, TagResult, TagFacts],
):
    kind = "sample.tag_invoice"
    title = Localized("Tag an invoice", "Étiqueter une facture")
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        **INVOICE_FIELDS,
        "tag": PreviewField(Localized("Tag", "Étiquette"), emphasis=True),
    }
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "already_tagged": Localized("The invoice has this tag.", "La facture a cette étiquette.")
    }
    assistant_instructions = "To tag an invoice, propose it with {tool}."

    def load(self, scope: Scope, store: Repository) -> TagFacts:
        invoice = self.invoice(scope, store)
        try:
            tags = store.get(scope.resource_id, InvoiceTags)
        except NotFoundError:
            tags = InvoiceTags(id=scope.resource_id, invoice_key=invoice.key)
        return TagFacts(invoice, tags)

    def resolve(self, request: TagRequest, facts: TagFacts) -> Prepared[TagArguments, TagPreview]:
        _check_untagged(facts.tags, request.tag)
        key = facts.invoice.key
        return Prepared(
            TagArguments(invoice_key=key, tag=request.tag),
            TagPreview(invoice_key=key, customer=facts.invoice.customer, tag=request.tag),
        )

    def recheck(self, arguments: TagArguments, facts: TagFacts) -> dict[str, Any]:
        _check_untagged(facts.tags, arguments.tag)
        return {"tags": list(facts.tags.tags)}

    def execute(self, execution: ExecutionContract[TagArguments], facts: TagFacts) -> TagResult:
        facts.tags.tag(execution.arguments.tag, source="proposal")
        return TagResult(tags=list(facts.tags.tags))

    def headline(self, preview: TagPreview, language: str = "en") -> str:
        if language == "fr":
            return f"{preview.invoice_key} : {preview.tag}"
        return f"{preview.invoice_key}: {preview.tag}"

    def success_text(self, preview: TagPreview, result: TagResult, language: str = "en") -> str:
        tags = ", ".join(result.tags)
        if language == "fr":
            return f"La facture {preview.invoice_key} porte l'étiquette {tags}."
        return f"{preview.invoice_key} is tagged {tags}."


def _check_untagged(tags: InvoiceTags, tag: str) -> None:
    if tag in tags.tags:
        raise RuleBrokenError(Finding("already_tagged", "tag", "the invoice has this tag"))


# -- sample.invoice_credit ----------------------------------------------------------------------


class CreditRequest(ContractRequest):
    """Credit part of the invoice's balance."""

    amount_cents: int = Field(gt=0, le=10_000_00, description="The credit, in cents.")


class CreditArguments(Frozen):
    invoice_key: str
    amount_cents: int


class CreditPreview(Frozen):
    invoice_key: str
    customer: str
    amount_cents: int
    currency: str


class CreditResult(Frozen):
    reference: str


class LedgerCredit(Frozen):
    invoice_key: str
    amount_cents: int


@dataclass
class CreditFacts(Facts):
    """The invoice as the company's database holds it now; None when settling (the
    settlement needs nothing but the frozen arguments and the ledger's answer)."""

    invoice: Invoice | None

    def aggregates(self) -> list[Aggregate]:
        return []


class InvoiceCredit(
    _OverInvoices,
    OperationContract[CreditRequest, CreditArguments, CreditPreview, CreditResult, CreditFacts],
):
    kind = "sample.invoice_credit"
    provider = "sample.ledger"
    requested_amounts = frozenset({"amount_cents"})  # the manager names the credit
    title = Localized("Credit an invoice", "Créditer une facture")
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        **INVOICE_FIELDS,
        "amount_cents": PreviewField(Localized("Credit", "Crédit"), Shown.MONEY, emphasis=True),
    }
    preview_hidden = frozenset({"currency"})
    revision_reasons: ClassVar[Mapping[str, Localized]] = {
        "credit_exceeds_balance": Localized(
            "The credit is more than the invoice's balance.",
            "Le crédit dépasse le solde de la facture.",
        ),
        "credit_refused": Localized("The ledger refused the credit.", "Le grand livre a refusé."),
    }
    assistant_instructions = "To credit an invoice, propose it with {tool}."

    def load(self, scope: Scope, store: Repository) -> CreditFacts:
        return CreditFacts(self.invoice(scope, store))

    def settlement_facts(self, scope: Scope, store: Repository) -> CreditFacts:
        return CreditFacts(None)

    def resolve(
        self, request: CreditRequest, facts: CreditFacts
    ) -> Prepared[CreditArguments, CreditPreview]:
        assert facts.invoice is not None
        invoice = facts.invoice
        _check_balance(invoice, request.amount_cents)
        return Prepared(
            CreditArguments(invoice_key=invoice.key, amount_cents=request.amount_cents),
            CreditPreview(
                invoice_key=invoice.key,
                customer=invoice.customer,
                amount_cents=request.amount_cents,
                currency="CAD",
            ),
        )

    def recheck(self, arguments: CreditArguments, facts: CreditFacts) -> dict[str, Any]:
        assert facts.invoice is not None
        _check_balance(facts.invoice, arguments.amount_cents)
        return {"balance_cents": facts.invoice.balance_cents}

    def amount_cents(self, arguments: CreditArguments) -> int:
        """The credit, for an approval policy's threshold."""
        return arguments.amount_cents

    def is_external(self, arguments: CreditArguments) -> bool:
        return True

    def execute(
        self, execution: ExecutionContract[CreditArguments], facts: CreditFacts
    ) -> CreditResult:
        raise NotImplementedError("a credit always goes through the ledger (is_external)")

    def describe_external(
        self, execution: ExecutionContract[CreditArguments], facts: CreditFacts
    ) -> Effect:
        arguments = execution.arguments
        request = LedgerCredit(
            invoice_key=arguments.invoice_key, amount_cents=arguments.amount_cents
        )
        return self.effect(execution.proposal_id, request)

    def start_external(
        self, execution: ExecutionContract[CreditArguments], facts: CreditFacts
    ) -> Effect:
        return self.describe_external(execution, facts)

    def finish_external(
        self,
        execution: ExecutionContract[CreditArguments],
        facts: CreditFacts,
        response: EffectResponse,
    ) -> CreditResult:
        if response.status != "succeeded":
            raise RevisionNeededError("credit_refused")
        return CreditResult(reference=response.reference)

    def headline(self, preview: CreditPreview, language: str = "en") -> str:
        if language == "fr":
            return f"Créditer {preview.amount_cents / 100:.2f} à {preview.invoice_key}"
        return f"Credit {preview.amount_cents / 100:.2f} to {preview.invoice_key}"

    def success_text(
        self, preview: CreditPreview, result: CreditResult, language: str = "en"
    ) -> str:
        if language == "fr":
            return f"La facture {preview.invoice_key} a été créditée ({result.reference})."
        return f"{preview.invoice_key} was credited ({result.reference})."


def _check_balance(invoice: Invoice, amount_cents: int) -> None:
    if amount_cents > invoice.balance_cents:
        raise RuleBrokenError(
            Finding("credit_exceeds_balance", "amount_cents", "more than the balance")
        )
