"""The sample plug-in's company data for each test: its invoices and its ledger in a folder
of the test's own (``SAMPLE_PLUGIN_DATA``, read when the plug-in is built)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from countersign.infrastructure.bootstrap import enable_plugins
from sample_plugin.company import Invoice, InvoiceBook

#: Where the plug-in is built while pytest collects (the suite lists its contracts' kinds);
#: removed when this process ends (each run of the suite left one behind in the temp folder).
if "SAMPLE_PLUGIN_DATA" not in os.environ:
    _COLLECTING = tempfile.mkdtemp(prefix="sample-plugin-")
    os.environ["SAMPLE_PLUGIN_DATA"] = _COLLECTING
    atexit.register(shutil.rmtree, _COLLECTING, ignore_errors=True)

INVOICES = (
    Invoice("INV-1", "granite", "Granite Hardware", 12_000),
    Invoice("INV-2", "granite", "Maple Supplies", 5_000),
)


@pytest.fixture(autouse=True)
def company(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's company: two invoices, an empty ledger; the plug-in built over them."""
    monkeypatch.setenv("SAMPLE_PLUGIN_DATA", str(tmp_path))
    book = InvoiceBook(tmp_path / "invoices.db")
    for invoice in INVOICES:
        book.put(invoice)
    enable_plugins(())  # built again (by ``cs``) over this test's folder
    yield tmp_path
    enable_plugins(())
