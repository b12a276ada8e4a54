"""ACME's company for each test: its invoices database in the test's own folder, and its
ledger service running over it as a process of its own on 127.0.0.1 (a free port), with
faults on. The plug-in is built over them (``ACME_INVOICES_DB``, ``ACME_LEDGER_URL``) each
time a test's deployment enables it."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from acme_invoices.company import CompanyDatabase, Invoice
from acme_invoices.plugin import DATABASE_ENV, LEDGER_ENV
from countersign.infrastructure.bootstrap import enable_plugins

INVOICES = (
    Invoice("INV-1042", "granite", "Granite Hardware", "CAD", 12_000),
    Invoice("INV 2/b", "granite", "Maple Supplies", "CAD", 5_000),
)


@dataclass
class Company:
    """ACME, as one test sees it: its database (written as ACME's invoicing would) and its
    ledger service."""

    database: CompanyDatabase
    ledger_url: str
    process: subprocess.Popen[str]

    def invoice(self, key: str) -> Invoice | None:
        """The invoice under ``key`` as ACME's database holds it, whichever club's."""
        return self.database.invoice(key)

    def credits(self) -> list[dict[str, Any]]:
        """Every credit the ledger recorded (succeeded or refused), oldest first."""
        with urllib.request.urlopen(f"{self.ledger_url}/credits", timeout=5) as answer:
            return list(json.loads(answer.read())["credits"])

    def lose_next_answer(self) -> None:
        lose_next_answer(self.ledger_url)


def lose_next_answer(ledger_url: str) -> None:
    """The ledger performs the next credit and never answers it (``--faults``)."""
    post = urllib.request.Request(f"{ledger_url}/faults/lose-next-answer", method="POST")
    with urllib.request.urlopen(post, timeout=5):
        pass


def start_ledger(
    database: Path, port: int = 0, *, faults: bool = True
) -> tuple[subprocess.Popen[str], str]:
    """``python -m acme_invoices.ledger_service`` on ``port`` (0: a free one); its URL from
    the line it prints once it accepts requests."""
    process = subprocess.Popen(
        [sys.executable, "-m", "acme_invoices.ledger_service", "--db", str(database)]
        + ["--port", str(port)]
        + (["--faults"] if faults else []),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()
        raise RuntimeError(f"the ledger service did not start: {line!r}")
    return process, line.removeprefix("listening on ")


@pytest.fixture(autouse=True)
def company(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Company]:
    """This test's ACME: two invoices, both Granite's; an empty ledger; the plug-in built over
    them."""
    database = CompanyDatabase(tmp_path / "acme.db")
    for invoice in INVOICES:
        database.put(invoice)
    process, url = start_ledger(database.path)
    monkeypatch.setenv(DATABASE_ENV, str(database.path))
    monkeypatch.setenv(LEDGER_ENV, url)
    enable_plugins(())  # built again (by ``cs``) over this test's company
    try:
        yield Company(database, url, process)
    finally:
        enable_plugins(())
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
