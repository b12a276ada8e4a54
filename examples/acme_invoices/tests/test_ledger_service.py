"""ACME's ledger service and the plug-in's client of it, over HTTP: a credit once per key,
a conditional write on the invoice's version, lookups, and clear refusals of bad input; and
ACME's database as the plug-in reads it: each invoice for one club."""

from __future__ import annotations

import json
import socket
import sqlite3
import urllib.request
from contextlib import closing
from pathlib import Path
from urllib.error import HTTPError

import pytest
from acme_invoices.company import CompanyDatabase, CompanyUnavailableError, Invoice, InvoiceBook
from acme_invoices.ledger_client import LedgerClient
from conftest import Company
from countersign.application.ports import IdempotencyConflictError, ProviderUnavailableError

CREDIT = {
    "invoice_key": "INV-1042",
    "expected_version": 1,
    "amount_cents": 2_500,
    "currency": "CAD",
    "memo": "late delivery",
}


def test_a_credit_is_performed_once_per_key_and_answered_the_same_again(company):
    ledger = LedgerClient(company.ledger_url)

    first = ledger.perform("key-1", CREDIT)
    again = ledger.perform("key-1", CREDIT)

    assert (first.status, first.reference, first.details) == (
        "succeeded",
        "CN-000001",
        {"balance_after_cents": 9_500},
    )
    assert again == first
    assert ledger.lookup("key-1") == first
    assert ledger.held() == [{"idempotency_key": "key-1", "requests": 2, "metadata": {}}]
    invoice = company.invoice("INV-1042")
    assert invoice is not None
    assert (invoice.balance_cents, invoice.version) == (9_500, 2)


def test_a_key_used_with_another_request_is_a_conflict(company):
    ledger = LedgerClient(company.ledger_url)
    ledger.perform("key-1", CREDIT)

    with pytest.raises(IdempotencyConflictError):
        ledger.perform("key-1", {**CREDIT, "amount_cents": 100})
    assert company.invoice("INV-1042").balance_cents == 9_500  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"expected_version": 7}, "invoice_changed"),
        ({"invoice_key": "INV-404"}, "invoice_not_found"),
        ({"currency": "EUR"}, "currency_mismatch"),
        ({"amount_cents": 12_001}, "insufficient_balance"),
    ],
)
def test_a_credit_on_an_invoice_not_as_the_caller_saw_it_is_refused(company, change, reason):
    ledger = LedgerClient(company.ledger_url)

    answer = ledger.perform("key-1", {**CREDIT, **change})

    assert (answer.status, answer.reason) == ("refused", reason)
    assert ledger.lookup("key-1") == answer  # a refusal is an answer, kept under its key
    assert company.invoice("INV-1042").balance_cents == 12_000  # type: ignore[union-attr]


def test_nothing_under_an_unknown_key(company):
    assert LedgerClient(company.ledger_url).lookup("never-used") is None


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"not json", "the body is not JSON"),
        (b"[1]", "the body must be a JSON object"),
        (json.dumps({**CREDIT, "amount_cents": "25"}).encode(), "amount_cents must be a int"),
        (json.dumps({**CREDIT, "amount_cents": -1}).encode(), "amount_cents must be positive"),
        (json.dumps({**CREDIT, "drop_table": 1}).encode(), "unknown fields: 1"),
    ],
)
def test_a_malformed_request_is_refused_saying_what_is_wrong(company, body, error):
    request = urllib.request.Request(f"{company.ledger_url}/credits/key-1", data=body)

    with pytest.raises(HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)

    with refused.value as answer:
        assert (answer.code, json.loads(answer.read())) == (400, {"error": error})
    assert company.credits() == []


def test_a_body_over_the_limit_is_refused_without_being_read(company):
    request = urllib.request.Request(f"{company.ledger_url}/credits/key-1", data=b"x" * 20_000)

    with pytest.raises(HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)

    with refused.value as answer:
        assert (answer.code, json.loads(answer.read())) == (
            400,
            {"error": "the body is over 16384 bytes"},
        )


def test_the_client_says_unavailable_when_the_ledger_cannot_be_reached(company):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # nobody listens there once it is closed

    for ledger in (LedgerClient(f"http://127.0.0.1:{port}"), LedgerClient(None)):
        with pytest.raises(ProviderUnavailableError):
            ledger.perform("key-1", CREDIT)
        with pytest.raises(ProviderUnavailableError):
            ledger.lookup("key-1")


def test_the_invoice_book_says_when_acmes_database_is_not_there(tmp_path: Path):
    with pytest.raises(CompanyUnavailableError, match="ACME_INVOICES_DB is not set"):
        InvoiceBook(None).get("granite", "INV-1042")
    with pytest.raises(CompanyUnavailableError, match="does not exist"):
        InvoiceBook(tmp_path / "nowhere.db").get("granite", "INV-1042")
    assert not (tmp_path / "nowhere.db").exists()  # reading never creates it


def test_the_invoice_book_reads_an_invoice_for_its_own_club_only(company: Company):
    book = InvoiceBook(company.database.path)

    assert book.get("granite", "INV-1042") == company.invoice("INV-1042")
    assert book.get("maple", "INV-1042") is None  # as for a key ACME does not have
    assert book.get("maple", "INV-404") is None
    assert book.get("", "INV-1042") is None


def test_invoices_recorded_before_they_named_their_club_are_nobodys_until_put_again(
    tmp_path: Path,
):
    """ACME's database as the plug-in's earlier version made it: its invoices gain a club
    only when ACME's invoicing puts them again; meanwhile no club reads or credits them."""
    path = tmp_path / "before.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "CREATE TABLE invoices (key TEXT PRIMARY KEY, customer TEXT NOT NULL,"
            " currency TEXT NOT NULL, balance_cents INTEGER NOT NULL, version INTEGER NOT NULL)"
        )
        db.execute("INSERT INTO invoices VALUES ('INV-9', 'Granite Hardware', 'CAD', 700, 3)")

    database = CompanyDatabase(path)  # the ledger service opens it so when it starts
    book = InvoiceBook(path)

    assert database.invoice("INV-9") == Invoice("INV-9", "", "Granite Hardware", "CAD", 700, 3)
    assert book.get("granite", "INV-9") is None
    assert book.get("", "INV-9") is None
    put = database.put(Invoice("INV-9", "granite", "Granite Hardware", "CAD", 700))
    assert (put.version, book.get("granite", "INV-9")) == (4, put)


def test_answers_are_lost_only_where_the_service_runs_with_faults(company: Company, tmp_path):
    from conftest import start_ledger

    process, url = start_ledger(company.database.path, faults=False)
    try:
        post = urllib.request.Request(f"{url}/faults/lose-next-answer", method="POST")
        with pytest.raises(HTTPError) as refused:
            urllib.request.urlopen(post, timeout=5)
        refused.value.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()

    assert refused.value.code == 404
