"""What a process that wires countersign does not import until it needs it.

Memory is measured by ``scripts/bench.py`` (peak client RSS); these tests keep the libraries
that cost it from creeping back into every process through an import at a module's top."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WIRED = """
import json, sys
from countersign.infrastructure.bootstrap import bootstrap
cs = bootstrap(database_url=sys.argv[1])
cs.close()
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _imported_by_wiring(database_url: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", WIRED, database_url],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_wiring_countersign_imports_no_webauthn_until_a_passkey_ceremony(tmp_path: Path):
    imported = _imported_by_wiring(f"sqlite:///{tmp_path / 'wired.db'}")

    assert "countersign" in imported
    # The WebAuthn library and the cryptography and CBOR code under it: about 17 MB.
    assert not imported & {"webauthn", "cryptography", "cbor2", "OpenSSL"}, imported


def test_wiring_countersign_on_sqlite_imports_no_postgresql_driver(tmp_path: Path):
    imported = _imported_by_wiring(f"sqlite:///{tmp_path / 'wired.db'}")

    # psycopg, its pool and the library's PostgreSQL module: about 17 MB.
    assert not imported & {"psycopg", "psycopg_pool", "psycopg_binary"}, imported


def test_a_process_that_serves_no_metrics_imports_no_prometheus_client(tmp_path: Path):
    imported = _imported_by_wiring(f"sqlite:///{tmp_path / 'wired.db'}")

    # Counting starts when a process serves its metrics (observability/counting.py).
    assert "prometheus_client" not in imported, imported
