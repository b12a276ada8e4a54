"""The example plug-in, installed as a company would install its own
(``examples/acme_invoices``, the distribution ``countersign-acme-invoices``; ``scripts/setup``
installs it into the project's environment, and ``scripts/test`` runs its own tests from its
folder). Here, what a deployment sees of it from the command line: nothing until
``COUNTERSIGN_PLUGINS`` names it; then its operation, and its permission to grant."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

COUNTERSIGN = Path(sys.executable).with_name("countersign")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "acme_invoices"


def _env(**extra: str) -> dict[str, str]:
    """This environment without any deployment or ACME setting of the test run's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNTERSIGN_", "ACME_"))}
    return {**env, **extra}


def _countersign(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(COUNTERSIGN), *argv], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_example_is_installed_as_its_own_distribution():
    installed = distribution("countersign-acme-invoices")

    [point] = [p for p in installed.entry_points if p.group == "countersign.plugins"]
    assert (point.name, point.value) == ("acme-invoices", "acme_invoices.plugin:build")
    assert any(r.startswith("countersign") for r in installed.requires or [])
    assert (EXAMPLE / "pyproject.toml").is_file()


def test_the_example_operation_is_listed_only_when_the_deployment_names_it():
    without = _countersign(_env(), "operations", "--json")
    named = _countersign(_env(COUNTERSIGN_PLUGINS="acme-invoices"), "operations", "--json")

    assert without.returncode == 0, without.stderr
    assert named.returncode == 0, named.stderr
    assert "acme.invoice_credit" not in [entry["kind"] for entry in json.loads(without.stdout)]
    listed = {entry["kind"]: entry for entry in json.loads(named.stdout)}
    credit = listed["acme.invoice_credit"]
    assert (credit["section"], credit["permission"], credit["external"]) == (
        "acme",
        "acme.credit_invoices",
        True,
    )
    assert sorted(credit["request_schema"]["properties"]) == ["amount_cents", "reason"]


def test_its_permission_can_be_granted_only_while_it_is_enabled(tmp_path):
    database = f"sqlite:///{tmp_path / 'club.db'}"
    seeded = _countersign(_env(), "seed", "--database", database)
    grant = ("members", "set-permissions", "--database", database, "--org", "granite")
    grant += ("--email", "ben@granite.example", "--permissions", "acme.credit_invoices")

    refused = _countersign(_env(), *grant)
    granted = _countersign(_env(COUNTERSIGN_PLUGINS="acme-invoices"), *grant, "--json")

    assert seeded.returncode == 0, seeded.stderr
    assert refused.returncode != 0
    assert "No such permission: acme.credit_invoices" in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert granted.returncode == 0, granted.stderr
    assert json.loads(granted.stdout)["permissions"] == ["acme.credit_invoices"]
