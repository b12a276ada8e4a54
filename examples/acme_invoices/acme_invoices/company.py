"""ACME's own database: its invoices and the credits its ledger service issued.

It is the company's, not countersign's: one SQLite file (``ACME_INVOICES_DB``) that ACME's
ledger service writes and the plug-in only reads. Every change to an invoice increases its
``version``: the contract freezes the version the approver saw, and the ledger credits an
invoice only at that version (a conditional write), so nothing that changed after the
approver looked can be credited on their approval.

Each invoice is one club's: ``organization`` names the club it is for by its countersign
slug (``granite``). countersign's tenants never share a record, so the plug-in reads an
invoice only for its own club: ``InvoiceBook.get`` answers another club's invoice exactly as
one ACME does not have (None).

``CompanyDatabase`` is the writer (the ledger service, and ACME's own tools and tests);
``InvoiceBook`` is the plug-in's read-only facts client.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS invoices ("
    " key TEXT PRIMARY KEY, organization TEXT NOT NULL, customer TEXT NOT NULL,"
    " currency TEXT NOT NULL, balance_cents INTEGER NOT NULL, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS credits ("
    " number INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL UNIQUE,"
    " request TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,"
    " balance_after_cents INTEGER, requests INTEGER NOT NULL DEFAULT 1)",
)
#: An invoice's columns, by name: a database made before invoices named their club has
#: ``organization`` last (``_add_organizations``).
_INVOICE = "key, organization, customer, currency, balance_cents, version"


@dataclass(frozen=True)
class Invoice:
    """One of ACME's invoices, known by ACME's own key (``INV-1042``), for one club."""

    key: str
    organization: str
    """The club the invoice is for, by its countersign slug (``granite``): only that club's
    managers see it, and only they may credit it. "" (an invoice recorded before invoices
    named their club): nobody's until ACME's invoicing puts it again with its club."""
    customer: str
    currency: str
    balance_cents: int
    version: int = 1


class CompanyUnavailableError(RuntimeError):
    """ACME's database cannot be read: not configured, or not where the setting says."""


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    if read_only:
        if not path.is_file():
            raise CompanyUnavailableError(f"ACME's invoices database {path} does not exist")
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    else:
        db = sqlite3.connect(path, isolation_level=None, timeout=5)
    db.execute("PRAGMA busy_timeout = 5000")
    return db


class CompanyDatabase:
    """The writer's view: the schema, the invoices as ACME's invoicing keeps them, and the
    transaction the ledger service credits in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self.transaction() as db:
            for statement in _SCHEMA:
                db.execute(statement)
            _add_organizations(db)
        with self._open() as db:
            db.execute("PRAGMA journal_mode = WAL")  # readers never wait for the ledger

    @contextmanager
    def _open(self) -> Iterator[sqlite3.Connection]:
        db = _connect(self.path, read_only=False)
        try:
            yield db
        finally:
            db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``): a credit reads the
        invoice and writes it without another writer in between."""
        with self._open() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def put(self, invoice: Invoice) -> Invoice:
        """Create the invoice, or change it (its version then goes up by one)."""
        with self.transaction() as db:
            row = db.execute("SELECT version FROM invoices WHERE key = ?", (invoice.key,))
            found = row.fetchone()
            version = 1 if found is None else int(found[0]) + 1
            db.execute(
                f"INSERT OR REPLACE INTO invoices ({_INVOICE}) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    invoice.key,
                    invoice.organization,
                    invoice.customer,
                    invoice.currency,
                    invoice.balance_cents,
                    version,
                ),
            )
        return replace(invoice, version=version)

    def invoice(self, key: str) -> Invoice | None:
        """The invoice under ``key``, whichever club's: ACME's own view (its tools, tests)."""
        with self._open() as db:
            return read_invoice(db, key)

    def delete(self, key: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM invoices WHERE key = ?", (key,))


def _add_organizations(db: sqlite3.Connection) -> None:
    """A database made before invoices named their club gets the column, and each invoice in
    it is nobody's ("") until ACME's invoicing puts it again with its club: no club sees or
    credits it meanwhile (a proposal pending on it is then not credited on approval; a credit
    already approved is settled as before, from its frozen arguments)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(invoices)")}
    if "organization" not in columns:
        db.execute("ALTER TABLE invoices ADD COLUMN organization TEXT NOT NULL DEFAULT ''")


def read_invoice(db: sqlite3.Connection, key: str) -> Invoice | None:
    """The invoice under ``key``, whichever club's (the ledger's conditional write reads it
    so, after the plug-in checked the club; its version covers a change of club)."""
    row = db.execute(f"SELECT {_INVOICE} FROM invoices WHERE key = ?", (key,)).fetchone()
    return None if row is None else Invoice(*row)


class InvoiceBook:
    """The plug-in's facts client: ACME's invoices, read-only, as the database holds them now.
    Built without a path (``ACME_INVOICES_DB`` unset), it lists nothing and says so when read:
    listing the operations needs no company."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def get(self, organization: str, key: str) -> Invoice | None:
        """The invoice under ``key`` if it is the club ``organization``'s; None when there is
        none *or it is another club's*: the two answer alike, so another club's invoice is
        never told apart from one ACME does not have. CompanyUnavailableError when the
        database cannot be read."""
        if self.path is None:
            raise CompanyUnavailableError("ACME_INVOICES_DB is not set")
        db = _connect(self.path, read_only=True)
        try:
            invoice = read_invoice(db, key)
        except sqlite3.Error as error:
            raise CompanyUnavailableError(f"ACME's invoices cannot be read: {error}") from None
        finally:
            db.close()
        if invoice is None or not invoice.organization or invoice.organization != organization:
            return None  # another club's (or nobody's) is not there for this club
        return invoice
