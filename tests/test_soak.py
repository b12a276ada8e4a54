"""``scripts/soak --quick``: the whole deployment on PostgreSQL (two API workers, the
projection runner, the sweepers' worker), suite 4 against it, and a clean stop: every
service exits 0 on SIGTERM and leaves no process behind (the script checks each process
group and fails otherwise)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import _truncate_postgres
from tests.http_load import REPO

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_soak_quick_deploys_everything_runs_suite_4_and_stops_cleanly(postgres_url):
    _truncate_postgres(postgres_url)
    completed = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "soak"), "--quick", "--postgres-url", postgres_url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr[-4000:]
    table = completed.stdout
    assert "4 HTTP load, postgres (2 API workers, projections, worker)  200 x 4" in table
    assert "passed" in table
    assert "800 approvals" in table
    assert "0 5xx" in table
    assert "soak: 1 of 1 suites passed or missing; 0 failed" in table
