"""The conformance kit keeps every contract's resources within their organization, a plug-in's
included: a plug-in whose contracts read a company's record whichever club it is for (the
sample plug-in's ``sample-leaky``, as ACME's example did before its invoices named their club)
fails the kit's check, and the failure says what to fix. (The sample plug-in itself passes it:
tests/test_plugins.py runs its whole repository; countersign's own contracts pass it in
tests/contracts/test_conformance.py.)

As in tests/test_plugins.py, nothing is installed: a ``*.dist-info`` folder naming the entry
point is put on the ``PYTHONPATH`` of the plug-in repository's pytest, run in a process of its
own from that repository's folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).parent / "plugins"
PYTEST = Path(sys.executable).with_name("pytest")
CHECK = "test_another_organizations_resource_is_not_found_and_nothing_is_written"
CONTROL = "test_approving_again_returns_the_stored_outcome_and_executes_once"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where importlib.metadata finds the leaky plug-in's distribution (for the process run)."""
    site = tmp_path_factory.mktemp("site")
    info = site / "countersign_sample_leaky-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: countersign-sample-leaky\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[countersign.plugins]\nsample-leaky = sample_plugin.plugin:leaky\n"
    )
    return site


@pytest.mark.slow
def test_a_plugin_whose_load_ignores_the_organization_fails_the_kit_saying_what_to_fix(
    site, tmp_path
):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNTERSIGN_")}
    env.update({k: v for k, v in os.environ.items() if k.startswith("COUNTERSIGN_TEST_")})
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(PLUGINS)])
    env["SAMPLE_PLUGIN_DATA"] = str(tmp_path)
    env["SAMPLE_PLUGIN_CHECKED"] = "sample-leaky"

    ran = subprocess.run(
        [str(PYTEST), "-v", "-n", "0", "-k", f"{CHECK} or {CONTROL}"],
        cwd=PLUGINS / "sample_plugin_tests",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    results = re.findall(
        r"::TestConformance::(test_\w+)\[([\w.]+)-(\w+)\] (PASSED|FAILED|SKIPPED)", ran.stdout
    )
    backends = {
        b.strip() for b in env.get("COUNTERSIGN_TEST_BACKENDS", "sqlite,postgres").split(",")
    }
    kinds = {"sample.tag_invoice", "sample.invoice_credit"}
    expected = {
        (check, kind, backend)
        for check in (CHECK, CONTROL)
        for kind in kinds
        for backend in backends
    }
    assert {(check, kind, backend) for check, kind, backend, _ in results} == expected, ran.stdout[
        -4000:
    ]
    # Only the organization check refuses it: the kit otherwise takes it as it takes ``sample``.
    assert {(check, outcome) for check, _, _, outcome in results} == {
        (CHECK, "FAILED"),
        (CONTROL, "PASSED"),
    }, ran.stdout[-4000:]
    assert ran.returncode == 1
    for kind in kinds:
        assert (
            f"{kind} lets another organization reach granite's resource 'INV-1': as "
            "mia@maple.example of maple, proposing the case's example on it succeeded; the "
            "contract's load, on their organization's scope succeeded"
        ) in ran.stdout
    assert (
        "the contract's load must raise NotFoundError unless the record is "
        "scope.organization_id's (a company's record must know its organization)"
    ) in ran.stdout
