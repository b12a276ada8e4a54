"""ACME's own database: its invoices and the credits its ledger service issued.

It is the company's, not countersign's: one SQLite file (``ACME_INVOICES_DB``) that ACME's
ledger service writes and the plug-in only reads. Every change to an invoice increases its
``version``: the contract freezes the version the approver saw, and the ledger credits an
invoice only at that version (a conditional write), so nothing that changed after the
approver looked can be credited on their approval.

``CompanyDatabase`` is the writer (the ledger service, and ACME's own tools and tests);
``InvoiceBook`` is the plug-in's read-only facts client.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS invoices ("
    " key TEXT PRIMARY KEY, customer TEXT NOT NULL, currency TEXT NOT NULL,"
    " balance_cents INTEGER NOT NULL, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS credits ("
    " number INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL UNIQUE,"
    " request TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,"
    " balance_after_cents INTEGER, requests INTEGER NOT NULL DEFAULT 1)",
)


@dataclass(frozen=True)
class Invoice:
    """One of ACME's invoices, known by ACME's own key (``INV-1042``)."""

    key: str
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
                "INSERT OR REPLACE INTO invoices VALUES (?, ?, ?, ?, ?)",
                (invoice.key, invoice.customer, invoice.currency, invoice.balance_cents, version),
            )
        return Invoice(
            invoice.key, invoice.customer, invoice.currency, invoice.balance_cents, version
        )

    def delete(self, key: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM invoices WHERE key = ?", (key,))


def read_invoice(db: sqlite3.Connection, key: str) -> Invoice | None:
    row = db.execute(
        "SELECT key, customer, currency, balance_cents, version FROM invoices WHERE key = ?",
        (key,),
    ).fetchone()
    return None if row is None else Invoice(*row)


class InvoiceBook:
    """The plug-in's facts client: ACME's invoices, read-only, as the database holds them now.
    Built without a path (``ACME_INVOICES_DB`` unset), it lists nothing and says so when read:
    listing the operations needs no company."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def get(self, key: str) -> Invoice | None:
        """The invoice under ``key``, or None; CompanyUnavailableError when the database
        cannot be read."""
        if self.path is None:
            raise CompanyUnavailableError("ACME_INVOICES_DB is not set")
        db = _connect(self.path, read_only=True)
        try:
            return read_invoice(db, key)
        except sqlite3.Error as error:
            raise CompanyUnavailableError(f"ACME's invoices cannot be read: {error}") from None
        finally:
            db.close()
