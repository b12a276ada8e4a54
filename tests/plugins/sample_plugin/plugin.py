"""The plug-in's entry points (tests/test_plugins.py writes them as a dist-info):

- ``sample``: ``build``, which reads where the company's systems are
  (``SAMPLE_PLUGIN_DATA``, a folder) and builds the contracts with their clients;
- ``sample-broken``: a plug-in whose operation is not named by its namespace;
- ``sample-reshaped``: ``reshaped``, its tag preview given a required field since;
- ``sample-leaky``: ``leaky``, the same operations reading an invoice whichever club's it is
  (as ACME's example did before its invoices named their club): the conformance kit must
  refuse it (tests/test_conformance_kit_tenants.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from countersign.application.assistant.sections import SectionAssistant, SectionTexts
from countersign.application.plugins import Plugin
from countersign.domain.contracts.presentation import Localized, PreviewField
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope

from sample_plugin.company import Invoice, InvoiceBook, LedgerService
from sample_plugin.contracts import SECTION, InvoiceCredit, TagInvoice, TagPreview


def _summary(scope: Scope, store: Repository) -> str:
    return f"The invoice {scope.key}."


ASSISTANT = SectionAssistant(
    section=SECTION,
    texts=SectionTexts(
        name=Localized("Invoices", "Factures"),
        assistant=Localized("Invoices assistant", "Assistant des factures"),
        lead=Localized("Ask to tag or credit an invoice.", "Demandez d'étiqueter une facture."),
        placeholder=Localized("For example: credit $10", "Par exemple : créditer 10 $"),
    ),
    role="You are the company's invoices assistant.",
    rules="You cannot change anything yourself.",
    read_tools=(),
    summary=_summary,
)


def build() -> Plugin:
    data = Path(os.environ.get("SAMPLE_PLUGIN_DATA") or ".")
    book = InvoiceBook(data / "invoices.db")
    return Plugin(
        name="sample",
        namespace="sample",
        contracts=(TagInvoice(book), InvoiceCredit(book)),
        sections=(ASSISTANT,),
        providers={"sample.ledger": LedgerService(data / "ledger.db")},
        event_packages=("sample_plugin.domain",),
    )


class _Misnamed(TagInvoice):
    kind = "orders.tag_invoice"


def broken() -> Plugin:
    book = InvoiceBook(Path(os.environ.get("SAMPLE_PLUGIN_DATA") or ".") / "invoices.db")
    return Plugin(name="sample-broken", namespace="broken", contracts=(_Misnamed(book),))


class _Untitled(TagInvoice):
    title = None  # type: ignore[assignment]  # the mistake ``lacking`` makes on purpose


def lacking() -> Plugin:
    """``build``'s plug-in with a contract that has no title."""
    plugin = build()
    return Plugin(
        name="sample-lacking",
        namespace="sample",
        contracts=(_Untitled(plugin.contracts[0].book), plugin.contracts[1]),
        sections=plugin.sections,
        providers=plugin.providers,
        event_packages=plugin.event_packages,
    )


class _ReshapedPreview(TagPreview):
    origin: str  # required: a preview stored before it was added lacks it


class _Reshaped(TagInvoice):
    preview_fields: ClassVar[Mapping[str, PreviewField]] = {
        **TagInvoice.preview_fields,
        "origin": PreviewField(Localized("Origin", "Origine")),
    }


_Reshaped.Preview = _ReshapedPreview  # type: ignore[assignment]  # set after the class is made


def reshaped() -> Plugin:
    """``build``'s plug-in whose tag preview was given a required field: the mistake it makes
    on purpose, which stored previews of ``build``'s do not read as."""
    plugin = build()
    return Plugin(
        name="sample-reshaped",
        namespace="sample",
        contracts=(_Reshaped(plugin.contracts[0].book), plugin.contracts[1]),
        sections=plugin.sections,
        providers=plugin.providers,
        event_packages=plugin.event_packages,
    )


def noevents() -> Plugin:
    """``build``'s plug-in without its ``event_packages``: the mistake it makes on purpose."""
    plugin = build()
    return Plugin(
        name="sample-noevents",
        namespace="sample",
        contracts=plugin.contracts,
        sections=plugin.sections,
        providers=plugin.providers,
    )


def _whichever_clubs(
    contract: TagInvoice | InvoiceCredit, scope: Scope, store: Repository
) -> Invoice:
    """The invoice under the scope's key, whoever's club it is for: the mistake ``leaky``
    makes on purpose."""
    invoice = contract.book.find(scope.key or "")
    if invoice is None:
        raise NotFoundError("invoice")
    return invoice


class _LeakyTag(TagInvoice):
    invoice = _whichever_clubs


class _LeakyCredit(InvoiceCredit):
    invoice = _whichever_clubs


def leaky() -> Plugin:
    """The sample plug-in, but for one thing: its contracts' load ignores the organization."""
    plugin = build()
    book = InvoiceBook(Path(os.environ.get("SAMPLE_PLUGIN_DATA") or ".") / "invoices.db")
    return Plugin(
        name="sample-leaky",
        namespace="sample",
        contracts=(_LeakyTag(book), _LeakyCredit(book)),
        sections=plugin.sections,
        providers=plugin.providers,
        event_packages=plugin.event_packages,
    )
