"""The golden streams' projection tables, rebuilt and digested: how a change to a projection's
handlers shows that it stores exactly the rows the code before it stored
(``tests/test_cards_rows.py``, ``tests/test_audit_analytics_rows.py``)."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.infrastructure.settings import Settings

FIXTURES = Path(__file__).parent.parent / "fixtures"


def open_golden(release: str, folder: Path) -> Countersign:
    """A copy of a release's golden SQLite store in ``folder``, opened an hour after it was
    written (its proposals not yet expired)."""
    fixture = FIXTURES / release
    copy = folder / "golden.db"
    shutil.copyfile(fixture / "countersign.db", copy)
    manifest = json.loads((fixture / "manifest.json").read_text())
    clock = FakeClock(datetime.fromisoformat(manifest["written_at"]) + timedelta(hours=1))
    return bootstrap(Settings(database_url=f"sqlite:///{copy}"), clock=clock)


def rebuilt_digests(
    release: str,
    folder: Path,
    projections: tuple[str, ...],
    batch_size: int,
    without: tuple[str, ...] = (),
) -> dict[str, tuple[int, str]]:
    """Per table of ``projections``, rebuilt together from the release's golden stream in
    batches of ``batch_size`` (through the writer process at 1,000): its rows and the digest
    of their SQLite ``quote()``d values, sorted; ``without``: columns left out (added since the
    digests were taken, and checked on their own)."""
    cs = open_golden(release, folder)
    try:
        runners = [
            runner
            for runner in cs.projection_runners(batch_size=batch_size)
            if runner.name in projections
        ]
        rebuild_together(runners, parallel=batch_size == 1000)
        digests = {}
        with cs.sql.transaction() as cursor:
            for runner in runners:
                for table in runner.projection.tables:
                    quoted = ", ".join(
                        f"quote({c})" for c in table.column_names() if c not in without
                    )
                    rows = sorted(
                        repr(tuple(row))
                        for row in cursor.execute(f"SELECT {quoted} FROM {table.name}").fetchall()
                    )
                    digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
                    digests[table.name] = (len(rows), digest)
    finally:
        cs.close()
    return digests
