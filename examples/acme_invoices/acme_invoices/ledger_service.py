"""ACME's ledger service: issues credit notes on ACME's invoices, over HTTP, under
idempotency keys. Standard library only; run it beside ACME's invoices database::

    python -m acme_invoices.ledger_service --db acme.db --port 8765

It prints ``listening on http://127.0.0.1:<port>`` once it accepts requests (``--port 0``
picks a free port: the tests read it from that line).

``POST /credits/<key>`` with ``{"invoice_key", "expected_version", "amount_cents",
"currency", "memo"}`` credits the invoice once per key, and only at the version the caller
names (the conditional write): in one transaction of ACME's database it reads the invoice,
refuses (``invoice_not_found``, ``invoice_changed``, ``insufficient_balance``,
``currency_mismatch``) or lowers the balance, and records the answer under the key. The same
key with the same request answers what it recorded (a refusal is an answer too); with another
request, 409. ``GET /credits/<key>`` answers what is recorded under a key (404 if nothing
is), ``GET /credits`` lists every credit with how many requests each received.

``--faults`` (tests only) adds ``POST /faults/lose-next-answer``: the next credit is performed
and committed, and its answer is never sent (the connection is closed), as after a timeout.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from acme_invoices.company import CompanyDatabase, read_invoice

_CREDIT = re.compile(r"^/credits/([^/]{1,300})$")
_FIELDS = {"invoice_key": str, "expected_version": int, "amount_cents": int, "currency": str}
_MAX_BODY = 16_384


class BadRequestError(ValueError):
    """A request the ledger cannot read: the message says which field, never echoes it."""


class Ledger:
    """What the service does, without HTTP: credit under a key, look a key up, list."""

    def __init__(self, database: CompanyDatabase) -> None:
        self.database = database
        self.lose_next_answer = threading.Event()

    def credit(self, key: str, request: dict[str, Any]) -> tuple[HTTPStatus, dict[str, Any]]:
        """The answer under ``key``: recorded now, or as recorded the first time."""
        body = json.dumps(request, sort_keys=True)
        with self.database.transaction() as db:
            row = db.execute("SELECT request FROM credits WHERE idempotency_key = ?", (key,))
            found = row.fetchone()
            if found is not None:
                if found[0] != body:
                    return HTTPStatus.CONFLICT, {"error": "key used with another request"}
                db.execute(
                    "UPDATE credits SET requests = requests + 1 WHERE idempotency_key = ?", (key,)
                )
            else:
                _apply(db, key, body, request)
            return HTTPStatus.OK, _answer(db, key) or {}

    def lookup(self, key: str) -> dict[str, Any] | None:
        with self.database.transaction() as db:
            return _answer(db, key)

    def listing(self) -> list[dict[str, Any]]:
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT idempotency_key, request, status, requests FROM credits ORDER BY number"
            ).fetchall()
        return [
            {"idempotency_key": k, "request": json.loads(r), "status": s, "requests": n}
            for k, r, s, n in rows
        ]


def _apply(db: sqlite3.Connection, key: str, body: str, request: dict[str, Any]) -> None:
    """Credit the invoice if it is as the caller saw it, and record the answer either way."""
    invoice = read_invoice(db, request["invoice_key"])
    amount = request["amount_cents"]
    reason = None
    if invoice is None:
        reason = "invoice_not_found"
    elif invoice.version != request["expected_version"]:
        reason = "invoice_changed"
    elif invoice.currency != request["currency"]:
        reason = "currency_mismatch"
    elif amount > invoice.balance_cents:
        reason = "insufficient_balance"
    balance_after = None
    if reason is None and invoice is not None:
        balance_after = invoice.balance_cents - amount
        db.execute(
            "UPDATE invoices SET balance_cents = ?, version = version + 1 WHERE key = ?",
            (balance_after, invoice.key),
        )
    db.execute(
        "INSERT INTO credits (idempotency_key, request, status, reason, balance_after_cents)"
        " VALUES (?, ?, ?, ?, ?)",
        (key, body, "refused" if reason else "succeeded", reason, balance_after),
    )


def _answer(db: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    row = db.execute(
        "SELECT number, status, reason, balance_after_cents FROM credits WHERE idempotency_key = ?",
        (key,),
    ).fetchone()
    if row is None:
        return None
    number, status, reason, balance_after = row
    details = {} if balance_after is None else {"balance_after_cents": balance_after}
    return {
        "idempotency_key": key,
        "status": status,
        "reference": f"CN-{number:06d}",
        "reason": reason,
        "details": details,
    }


def parse_credit(raw: bytes) -> dict[str, Any]:
    """The credit request, checked: exactly the known fields, each of its type."""
    try:
        request = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadRequestError("the body is not JSON") from None
    if not isinstance(request, dict):
        raise BadRequestError("the body must be a JSON object")
    unknown = sorted(set(request) - {*_FIELDS, "memo"})
    if unknown:
        raise BadRequestError(f"unknown fields: {len(unknown)}")
    for name, kind in _FIELDS.items():
        value = request.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BadRequestError(f"{name} must be a {kind.__name__}")
    if request["amount_cents"] <= 0:
        raise BadRequestError("amount_cents must be positive")
    if not isinstance(request.get("memo", ""), str):
        raise BadRequestError("memo must be a str")
    return request


class _Handler(BaseHTTPRequestHandler):
    server: LedgerServer

    def do_POST(self) -> None:
        if self.path == "/faults/lose-next-answer" and self.server.faults:
            self.server.ledger.lose_next_answer.set()
            self._send(HTTPStatus.OK, {"armed": True})
            return
        match = _CREDIT.match(self.path)
        if match is None:
            self._send(HTTPStatus.NOT_FOUND, {"error": "no such route"})
            return
        try:
            request = parse_credit(self._body())
        except BadRequestError as bad:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(bad)})
            return
        status, answer = self.server.ledger.credit(unquote(match.group(1)), request)
        if self.server.ledger.lose_next_answer.is_set():
            self.server.ledger.lose_next_answer.clear()
            self.close_connection = True  # performed and committed; the answer is lost
            return
        self._send(status, answer)

    def _body(self) -> bytes:
        """The request's body, at most ``_MAX_BODY`` bytes as its Content-Length says."""
        length = (self.headers.get("Content-Length") or "0").strip()
        if not length.isdigit():
            raise BadRequestError("Content-Length must be a number of bytes")
        if int(length) > _MAX_BODY:
            raise BadRequestError(f"the body is over {_MAX_BODY} bytes")
        return self.rfile.read(int(length))

    def do_GET(self) -> None:
        if self.path == "/credits":
            self._send(HTTPStatus.OK, {"credits": self.server.ledger.listing()})
            return
        match = _CREDIT.match(self.path)
        answer = None if match is None else self.server.ledger.lookup(unquote(match.group(1)))
        if answer is None:
            self._send(HTTPStatus.NOT_FOUND, {"error": "nothing under this key"})
            return
        self._send(HTTPStatus.OK, answer)

    def _send(self, status: HTTPStatus, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests start one per test."""


class LedgerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, ledger: Ledger, port: int = 0, *, faults: bool = False) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.ledger = ledger
        self.faults = faults

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ACME's ledger service (credit notes)")
    parser.add_argument("--db", required=True, type=Path, help="ACME's invoices database")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--faults", action="store_true", help="tests: answers can be lost")
    args = parser.parse_args(argv)
    server = LedgerServer(Ledger(CompanyDatabase(args.db)), args.port, faults=args.faults)
    print(f"listening on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
