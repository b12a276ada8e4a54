"""The company's own systems: its invoices (a SQLite database of its own), each for one club,
and its ledger service, which credits invoices under idempotency keys (an effect provider)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from countersign.application.ports import EffectResponseLostError
from countersign.domain.ports import EffectResponse


@dataclass(frozen=True)
class Invoice:
    key: str
    organization: str
    """The club it is for, by its slug (``granite``)."""
    customer: str
    balance_cents: int


class InvoiceBook:
    """The company's invoices, in its own database: the facts client its contracts are given."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS invoices "
                "(key TEXT PRIMARY KEY, organization TEXT, customer TEXT, balance_cents INTEGER)"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None)

    def put(self, invoice: Invoice) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO invoices VALUES (?, ?, ?, ?)",
                (invoice.key, invoice.organization, invoice.customer, invoice.balance_cents),
            )

    def delete(self, key: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM invoices WHERE key = ?", (key,))

    def get(self, organization: str, key: str) -> Invoice | None:
        """The invoice under ``key`` if it is the club ``organization``'s: another club's
        is None, exactly as one the company does not have."""
        invoice = self.find(key)
        return invoice if invoice is not None and invoice.organization == organization else None

    def find(self, key: str) -> Invoice | None:
        """The invoice under ``key``, whichever club's: the company's own view."""
        with self._connect() as db:
            row = db.execute(
                "SELECT key, organization, customer, balance_cents FROM invoices WHERE key = ?",
                (key,),
            ).fetchone()
        return None if row is None else Invoice(*row)


class LedgerService:
    """The company's ledger: credits an invoice once per idempotency key, and says what it
    did under a key. ``lose_next`` answers nothing to the next request it performs (a lost
    answer, as after a timeout). ``held`` lists what it holds, as the conformance kit reads a
    provider (``countersign.infrastructure.testing.conformance.provider_requests``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lose_next = False
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS credits"
                " (key TEXT PRIMARY KEY, request TEXT, requests INTEGER NOT NULL DEFAULT 0)"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None)

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO credits (key, request) VALUES (?, ?)",
                (key, json.dumps(dict(request))),
            )
            db.execute("UPDATE credits SET requests = requests + 1 WHERE key = ?", (key,))
        if self.lose_next:
            self.lose_next = False
            raise EffectResponseLostError("the ledger did not answer")
        found = self.lookup(key)
        assert found is not None
        return found

    def lookup(self, key: str) -> EffectResponse | None:
        with self._connect() as db:
            row = db.execute("SELECT rowid FROM credits WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return EffectResponse(idempotency_key=key, status="succeeded", reference=f"CR-{row[0]}")

    def credits(self) -> list[tuple[str, dict[str, Any]]]:
        with self._connect() as db:
            rows = db.execute("SELECT key, request FROM credits ORDER BY rowid").fetchall()
        return [(key, json.loads(request)) for key, request in rows]

    def held(self) -> list[dict[str, Any]]:
        """Every credit, with its idempotency key and how many requests it received."""
        with self._connect() as db:
            rows = db.execute("SELECT key, requests FROM credits ORDER BY rowid").fetchall()
        return [{"idempotency_key": key, "requests": n, "metadata": {}} for key, n in rows]
