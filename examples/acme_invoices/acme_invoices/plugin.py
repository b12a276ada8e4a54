"""The plug-in's entry point: ``acme-invoices = "acme_invoices.plugin:build"`` (pyproject.toml).

``build`` reads where ACME's systems are and builds the contract, the section and the
provider with their clients; countersign calls it in every process of a deployment that
names ``acme-invoices`` in ``COUNTERSIGN_PLUGINS``. Its own settings:

- ``ACME_INVOICES_DB``: ACME's invoices database (a SQLite file the ledger service writes);
- ``ACME_LEDGER_URL``: ACME's ledger service (``http://127.0.0.1:8765``).

Either may be unset where the company is not reached (``countersign operations`` lists the
operation without them): reading an invoice then fails saying which setting is missing, and
a credit is never sent (the provider answers "unavailable", and the reconciler asks again).
"""

from __future__ import annotations

import os
from pathlib import Path

from countersign.application.plugins import Plugin

from acme_invoices.company import InvoiceBook
from acme_invoices.contracts import PROVIDER, InvoiceCredit
from acme_invoices.ledger_client import LedgerClient
from acme_invoices.section import assistant

NAME = "acme-invoices"
DATABASE_ENV = "ACME_INVOICES_DB"
LEDGER_ENV = "ACME_LEDGER_URL"


def build() -> Plugin:
    database = os.environ.get(DATABASE_ENV) or None
    book = InvoiceBook(None if database is None else Path(database))
    return Plugin(
        name=NAME,
        namespace="acme",
        contracts=(InvoiceCredit(book),),
        sections=(assistant(book),),
        providers={PROVIDER: LedgerClient(os.environ.get(LEDGER_ENV) or None)},
    )
