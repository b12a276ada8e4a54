"""The sample plug-in's conformance cases: what the kit cannot derive from its contracts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from countersign.domain.contracts import PERMISSIONS, REGISTRY
from countersign.domain.errors import NotFoundError
from countersign.domain.scope import keyed_resource_id
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import ConformanceCase, Seeded, register
from countersign.infrastructure.testing.deployment import AVA
from countersign.infrastructure.testing.sandboxes import provider
from sample_plugin.company import InvoiceBook, LedgerService
from sample_plugin.contracts import INVOICES
from sample_plugin.domain import InvoiceTags


def _grant(cs: Countersign, seeded: Seeded) -> None:
    """Ava, a manager of the seeded club, may propose and approve the plug-in's operations."""
    cs.club.set_permissions("granite", AVA, sorted(PERMISSIONS))


def _invoice(seeded: Seeded) -> str:
    return "INV-1"  # the company's own key (conftest.py puts it in the company's database)


def _tags(cs: Countersign, key: str) -> InvoiceTags:
    resource = keyed_resource_id(INVOICES, key)
    try:
        return cs.store.get(resource, InvoiceTags)
    except NotFoundError:
        return InvoiceTags(id=resource, invoice_key=key)


def _tagged(cs: Countersign, key: str) -> Any:
    tags = _tags(cs, key)
    return {"tags": list(tags.tags), "version": tags.version}


def _tag_behind_its_back(cs: Countersign, key: str) -> None:
    tags = _tags(cs, key)
    tags.tag("disputed", source="proposal")
    cs.app.save(tags)


def _ledger(cs: Countersign) -> LedgerService:
    ledger = provider(cs, "sample.ledger")
    assert isinstance(ledger, LedgerService)
    return ledger


def _credits(cs: Countersign, key: str) -> Any:
    return [credit for credit in _ledger(cs).credits() if credit[1]["invoice_key"] == key]


def _book() -> InvoiceBook:
    book: InvoiceBook = REGISTRY["sample.invoice_credit"].book  # type: ignore[attr-defined]
    return book


def _balance_spent_elsewhere(cs: Countersign, key: str) -> None:
    invoice = _book().find(key)
    assert invoice is not None
    _book().put(replace(invoice, balance_cents=1_000))


def _lose_the_ledgers_answer(cs: Countersign, key: str) -> None:
    _ledger(cs).lose_next = True


register(
    ConformanceCase(
        kind="sample.tag_invoice",
        request={"tag": "disputed"},
        resource=_invoice,
        observe=_tagged,
        make_stale=_tag_behind_its_back,
        stale_reason="already_tagged",
        arrange=_grant,
    )
)

register(
    ConformanceCase(
        kind="sample.invoice_credit",
        request={"amount_cents": 2_500},
        resource=_invoice,
        observe=_credits,
        make_stale=_balance_spent_elsewhere,
        stale_reason="credit_exceeds_balance",
        lose_response=_lose_the_ledgers_answer,
        arrange=_grant,
    )
)
