"""``acme.invoice_credit``: credit one of ACME's invoices through ACME's ledger service.

The invoice lives in ACME's database, not countersign's, and the credit is issued by ACME's
ledger (provider ``acme.ledger``), so the operation is *external*: countersign's commit can
hold nothing of ACME's, and the only safe way to change another system is to ask it, under
an idempotency key, and to be able to ask it later what it did under that key.

- The invoice is named by ACME's own key (``INV-1042``): ``resource_namespace`` maps each
  key, once and deterministically, to the id a proposal stores.
- Each invoice is one club's (``Invoice.organization``). The id a key maps to is the same in
  every club, so the club is checked where the invoice is read: every read goes through
  ``club_invoice``, which answers another club's invoice exactly as one ACME does not have
  (NotFoundError). ``load`` (proposing, approving's ``recheck``, the assistant opening a
  conversation) and the section's read tool and summary all read through it.
- Proposing reads the invoice (``InvoiceBook``, given when the plug-in builds the contract)
  and freezes its key, its version, the amount and the currency; the approver sees the
  customer and the balance before and after.
- Approving reads it again (``recheck``): a changed version is ``invoice_changed``. The
  ledger then credits only at that version (``expected_version``, a conditional write): a
  change between this check and the call is refused by the ledger, never credited.
- Settling (the approval's answer, or the reconciler's lookup after a lost answer) needs
  the frozen arguments and the ledger's answer alone (``settlement_facts``): the invoice
  may have been deleted from ACME's database since.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
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
from countersign.domain.errors import NotFoundError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import EffectResponse, Repository
from countersign.domain.scope import Scope, Section
from eventsourcing.domain import Aggregate
from pydantic import Field

from acme_invoices.company import Invoice, InvoiceBook
from acme_invoices.texts import InvoiceCreditTexts

#: The namespace ACME's invoice keys map under: a constant, never to be changed (every
#: stored proposal's resource id was derived from it).
INVOICES = UUID("0b7c3f8e-54a1-4d0e-9a53-2c6f1e8d9a40")
SECTION = Section("acme")
PERMISSION = "acme.credit_invoices"
PROVIDER = "acme.ledger"


class CreditRequest(ContractRequest):
    """Propose a credit note on the invoice this conversation is about: part or all of its
    balance, with the reason the manager gave. A person approves it before ACME's ledger
    issues anything."""

    amount_cents: int = Field(
        gt=0, le=100_000_00, description="The credit in cents (2500 is 25.00), at most the balance."
    )
    reason: str = Field(
        min_length=3, max_length=200, description="Why the customer is credited, in one line."
    )


class CreditArguments(Frozen):
    invoice_key: str
    invoice_version: int
    amount_cents: int
    currency: str
    reason: str


class CreditPreview(Frozen):
    invoice_key: str
    customer: str
    amount_cents: int
    balance_cents: int
    balance_after_cents: int
    currency: str
    reason: str


class CreditResult(Frozen):
    credit_note: str
    balance_after_cents: int


class LedgerCredit(Frozen):
    """The request ACME's ledger receives (``ledger_service.py``)."""

    invoice_key: str
    expected_version: int
    amount_cents: int
    currency: str
    memo: str


@dataclass
class CreditFacts(Facts):
    """The invoice as ACME's database holds it now; None when settling, which needs only
    the frozen arguments and the ledger's answer."""

    invoice: Invoice | None

    def aggregates(self) -> list[Aggregate]:
        return []  # nothing of countersign's changes: the proposal records the outcome


class InvoiceCredit(
    InvoiceCreditTexts,
    OperationContract[CreditRequest, CreditArguments, CreditPreview, CreditResult, CreditFacts],
):
    kind = "acme.invoice_credit"
    contract_version = 1
    section = SECTION
    permission = PERMISSION
    provider = PROVIDER
    resource_namespace = INVOICES
    #: How much to credit is the manager's call (the model writes down what they said), and
    #: the approver reads it beside the balance: the one amount the application cannot compute.
    requested_amounts = frozenset({"amount_cents"})

    def __init__(self, book: InvoiceBook) -> None:
        self.book = book

    def load(self, scope: Scope, store: Repository) -> CreditFacts:
        """The invoice, if it is the scope's club's; NotFoundError otherwise (another club's
        answers exactly as one ACME does not have)."""
        return CreditFacts(club_invoice(self.book, scope, store))

    def settlement_facts(self, scope: Scope, store: Repository) -> CreditFacts:
        return CreditFacts(None)

    def resolve(
        self, request: CreditRequest, facts: CreditFacts
    ) -> Prepared[CreditArguments, CreditPreview]:
        invoice = _present(facts)
        check_balance(invoice, request.amount_cents)
        return Prepared(
            CreditArguments(
                invoice_key=invoice.key,
                invoice_version=invoice.version,
                amount_cents=request.amount_cents,
                currency=invoice.currency,
                reason=request.reason,
            ),
            CreditPreview(
                invoice_key=invoice.key,
                customer=invoice.customer,
                amount_cents=request.amount_cents,
                balance_cents=invoice.balance_cents,
                balance_after_cents=invoice.balance_cents - request.amount_cents,
                currency=invoice.currency,
                reason=request.reason,
            ),
        )

    def recheck(self, arguments: CreditArguments, facts: CreditFacts) -> dict[str, Any]:
        invoice = _present(facts)
        check_unchanged(invoice, arguments.invoice_version)
        check_balance(invoice, arguments.amount_cents)
        return {"invoice_version": invoice.version, "balance_cents": invoice.balance_cents}

    def amount_cents(self, arguments: CreditArguments) -> int:
        return arguments.amount_cents

    def is_external(self, arguments: CreditArguments) -> bool:
        return True

    def execute(
        self, execution: ExecutionContract[CreditArguments], facts: CreditFacts
    ) -> CreditResult:
        raise NotImplementedError("a credit is always issued by ACME's ledger (is_external)")

    def describe_external(
        self, execution: ExecutionContract[CreditArguments], facts: CreditFacts
    ) -> Effect:
        """From the frozen arguments alone: the reconciler describes it again, the same."""
        arguments = execution.arguments
        request = LedgerCredit(
            invoice_key=arguments.invoice_key,
            expected_version=arguments.invoice_version,
            amount_cents=arguments.amount_cents,
            currency=arguments.currency,
            memo=arguments.reason,
        )
        return self.effect(execution.proposal_id, request)

    def start_external(
        self, execution: ExecutionContract[CreditArguments], facts: CreditFacts
    ) -> Effect:
        return self.describe_external(execution, facts)  # countersign's claim records it

    def finish_external(
        self,
        execution: ExecutionContract[CreditArguments],
        facts: CreditFacts,
        response: EffectResponse,
    ) -> CreditResult:
        # What the ledger's refusals mean for the proposal (``ledger_service.py`` names them);
        # each code is written out, so the checks countersign runs on every contract can find
        # it and its sentence. Any other refusal (``insufficient_balance`` or
        # ``currency_mismatch``, which the version check makes unreachable) reads
        # ``ledger_refused``.
        if response.status != "succeeded":
            if response.reason == "invoice_changed":
                raise RevisionNeededError("invoice_changed")
            if response.reason == "invoice_not_found":
                raise RevisionNeededError("invoice_gone")
            raise RevisionNeededError("ledger_refused")
        return CreditResult(
            credit_note=response.reference,
            balance_after_cents=int(response.details["balance_after_cents"]),
        )


def club_invoice(book: InvoiceBook, scope: Scope, store: Repository) -> Invoice:
    """The invoice the scope's key names, as ACME's database holds it now, if it is for the
    club the scope is confined to; NotFoundError when ACME has none under that key *and when
    it is another club's*, alike. Every read of an invoice goes through here."""
    club = store.read(scope.organization_id, Organization).slug
    invoice = book.get(club, scope.key or "")
    if invoice is None:
        raise NotFoundError("invoice")
    return invoice


def _present(facts: CreditFacts) -> Invoice:
    if facts.invoice is None:  # only settling reads no invoice, and settling never resolves
        raise NotFoundError("invoice")
    return facts.invoice


def check_unchanged(invoice: Invoice, version: int) -> None:
    """The invoice is at the version the approver saw."""
    if invoice.version != version:
        raise RuleBrokenError(
            Finding("invoice_changed", "amount_cents", "the invoice changed since")
        )


def check_balance(invoice: Invoice, amount_cents: int) -> None:
    """The credit is at most the balance."""
    if amount_cents > invoice.balance_cents:
        raise RuleBrokenError(
            Finding(
                "credit_exceeds_balance",
                "amount_cents",
                "more than the invoice's balance; read the invoice",
                balance_cents=invoice.balance_cents,
                currency=invoice.currency,
            )
        )
