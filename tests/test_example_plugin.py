"""The example plug-in, installed as a company would install its own
(``examples/acme_invoices``, the distribution ``countersign-acme-invoices``; ``scripts/setup``
installs it into the project's environment, and ``scripts/test`` runs its own tests from its
folder). Here, what a deployment sees of it from the command line: nothing until
``COUNTERSIGN_PLUGINS`` names it; then its operation, and its permission to grant."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from importlib.metadata import distribution
from pathlib import Path

import pytest
from countersign.infrastructure.entrypoints.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "acme_invoices"

#: ``countersign`` in this process, with the deployment's settings the environment gives:
#: (exit status, stdout, stderr).
Command = Callable[..., tuple[int, str, str]]


@pytest.fixture
def countersign(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Command:
    """The command in this process, without any deployment or ACME setting of the test run's,
    and with ``COUNTERSIGN_PLUGINS`` as a call names it: the command reads it, and enables or
    disables the plug-ins, at each start (its console script in a process of its own cost
    about a second a call on the loaded 2-core machine; the module 17.3 s, -n 0, 2026-12-07)."""
    for name in os.environ:
        if name.startswith(("COUNTERSIGN_", "ACME_")):
            monkeypatch.delenv(name)

    def run(*argv: str, plugins: str | None = None) -> tuple[int, str, str]:
        if plugins is None:
            monkeypatch.delenv("COUNTERSIGN_PLUGINS", raising=False)
        else:
            monkeypatch.setenv("COUNTERSIGN_PLUGINS", plugins)
        try:
            status = main(list(argv))
        except SystemExit as stopped:  # argparse's own answers
            status = int(stopped.code or 0)
        out, err = capsys.readouterr()
        return status, out, err

    return run


def test_the_example_is_installed_as_its_own_distribution():
    installed = distribution("countersign-acme-invoices")

    [point] = [p for p in installed.entry_points if p.group == "countersign.plugins"]
    assert (point.name, point.value) == ("acme-invoices", "acme_invoices.plugin:build")
    assert any(r.startswith("countersign") for r in installed.requires or [])
    assert (EXAMPLE / "pyproject.toml").is_file()


def test_the_example_operation_is_listed_only_when_the_deployment_names_it(countersign):
    without = countersign("operations", "--json")
    named = countersign("operations", "--json", plugins="acme-invoices")
    again = countersign("operations", "--json")

    assert without[0] == 0, without[2]
    assert named[0] == 0, named[2]
    assert "acme.invoice_credit" not in [entry["kind"] for entry in json.loads(without[1])]
    assert again == without  # a start without it, after one with it, lists it no more
    listed = {entry["kind"]: entry for entry in json.loads(named[1])}
    credit = listed["acme.invoice_credit"]
    assert (credit["section"], credit["permission"], credit["external"]) == (
        "acme",
        "acme.credit_invoices",
        True,
    )
    assert sorted(credit["request_schema"]["properties"]) == ["amount_cents", "reason"]


def test_its_permission_can_be_granted_only_while_it_is_enabled(countersign, tmp_path):
    database = f"sqlite:///{tmp_path / 'club.db'}"
    seeded = countersign("seed", "--database", database)
    grant = ("members", "set-permissions", "--database", database, "--org", "granite")
    grant += ("--email", "ben@granite.example", "--permissions", "acme.credit_invoices")

    refused = countersign(*grant)
    granted = countersign(*grant, "--json", plugins="acme-invoices")

    assert seeded[0] == 0, seeded[2]
    assert refused[0] != 0
    assert "No such permission: acme.credit_invoices" in refused[1] + refused[2]
    assert "Traceback" not in refused[2]
    assert granted[0] == 0, granted[2]
    assert json.loads(granted[1])["permissions"] == ["acme.credit_invoices"]
