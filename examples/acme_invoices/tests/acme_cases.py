"""The plug-in's conformance case: what countersign's testing kit cannot derive from the
contract (an invoice, an example request, how the invoice goes stale, how the ledger loses
its answer). The kit's suite (``test_conformance.py``) runs every check on it."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from acme_invoices.company import CompanyDatabase
from acme_invoices.ledger_client import LedgerClient
from acme_invoices.plugin import DATABASE_ENV
from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register
from countersign.infrastructure.testing.deployment import AVA
from countersign.infrastructure.testing.sandboxes import provider


def _grant(cs: Countersign, seeded: Seeded) -> None:
    """Ava, a manager of the seeded Granite club, may propose and approve the credit."""
    cs.club.set_permissions("granite", AVA, sorted(PERMISSIONS))


def _invoice(seeded: Seeded) -> str:
    return "INV-1042"  # ACME's own key (conftest.py puts it in ACME's database)


def _database() -> CompanyDatabase:
    return CompanyDatabase(Path(os.environ[DATABASE_ENV]))


def _observe(cs: Countersign, key: str) -> Any:
    """The invoice (its balance and version) and the ledger's credits on it."""
    invoice = _database().invoice(key)
    ledger = provider(cs, "acme.ledger")
    assert isinstance(ledger, LedgerClient)
    return {"invoice": None if invoice is None else vars(invoice), "credits": ledger.held()}


def _change_the_invoice(cs: Countersign, key: str) -> None:
    """ACME's invoicing changes the invoice (a new version) behind the proposal's back."""
    invoice = _database().invoice(key)
    assert invoice is not None
    _database().put(replace(invoice, balance_cents=9_000))


def _lose_the_ledgers_answer(cs: Countersign, key: str) -> None:
    from conftest import lose_next_answer

    ledger = provider(cs, "acme.ledger")
    assert isinstance(ledger, LedgerClient)
    assert ledger.url is not None
    lose_next_answer(ledger.url)


register(
    ConformanceCase(
        kind="acme.invoice_credit",
        request={"amount_cents": 2_500, "reason": "The delivery was late."},
        resource=_invoice,
        observe=_observe,
        make_stale=_change_the_invoice,
        stale_reason="invoice_changed",
        lose_response=_lose_the_ledgers_answer,
        arrange=_grant,
    )
)
