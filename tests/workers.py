"""Child processes for the multi-process tests: ``python -m tests.workers COMMAND ...``.

Each child wires its own countersign through ``bootstrap``, exactly like a separate API worker
or approver process would, and talks to the parent test only through argv, stdin and stdout.

``approve URL CLOCK SEED IDS_FILE``
    Bootstrap on URL with a clock fixed at CLOCK (ISO 8601), print ``ready``, wait for one line
    on stdin (the parent's start signal, so all workers race from the same moment), then
    approve every proposal id in IDS_FILE (a JSON list), in an order shuffled by SEED, as Ava.
    Prints one line ``reports <json>``: every report (or the exception an approval raised),
    and how many of its saves lost an optimistic-concurrency race.

``crash URL CLOCK PROPOSAL_ID WHEN``
    Approve one proposal through a payment provider that SIGKILLs its own process: at the
    start of its request (WHEN=before: the claim is committed, nothing was sent), or right
    after the real sandbox applied the refund (WHEN=after: the money moved, the outcome was
    never recorded). If the process survives, it prints ``report <json>`` and exits 3.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from countersign.application.ports import EffectProvider
from countersign.domain.errors import ConcurrencyConflictError
from countersign.domain.ports import EffectResponse
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.settings import Settings

ACTOR = "ava@granite.example"
REPO = Path(__file__).resolve().parents[1]


def start(*args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    """Start ``python -m tests.workers ARGS`` from the repository, with the same interpreter."""
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": pythonpath},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class DyingProvider:
    """The EffectProvider port: the real sandbox, and a SIGKILL before or after its refund."""

    def __init__(self, when: str) -> None:
        if when not in ("before", "after"):
            raise ValueError(f"WHEN is before or after, not {when!r}")
        self.when = when
        self.inner: EffectProvider | None = None

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        assert self.inner is not None
        if self.when == "before":
            _die()
        response = self.inner.perform(key, request)
        if self.when == "after":
            _die()
        return response

    def lookup(self, key: str) -> EffectResponse | None:
        assert self.inner is not None
        return self.inner.lookup(key)


def approve(url: str, clock_at: str, seed: int, ids_file: str) -> None:
    ids: list[str] = json.loads(Path(ids_file).read_text())
    random.Random(seed).shuffle(ids)
    cs = bootstrap(Settings(database_url=url), clock=FakeClock(datetime.fromisoformat(clock_at)))
    conflicts = 0
    save = cs.store.save

    def counting_save(*aggregates: Any, final: bool = False) -> None:
        nonlocal conflicts
        try:
            save(*aggregates, final=final)
        except ConcurrencyConflictError:
            conflicts += 1
            raise

    cs.store.save = counting_save  # type: ignore[method-assign]
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        reports: list[dict[str, Any]] = []
        for proposal_id in ids:
            try:
                reports.append(cs.proposals.approve(proposal_id, ACTOR).to_json())
            except Exception as error:  # reported to the parent, which fails the test
                reports.append({"proposal_id": proposal_id, "error": repr(error)})
        print("reports " + json.dumps({"reports": reports, "conflicts": conflicts}), flush=True)
    finally:
        cs.close()


def crash(url: str, clock_at: str, proposal_id: str, when: str) -> None:
    provider = DyingProvider(when)
    cs = bootstrap(
        Settings(database_url=url),
        clock=FakeClock(datetime.fromisoformat(clock_at)),
        providers={"payments": provider},
    )
    provider.inner = cs.sandbox
    report = cs.proposals.approve(proposal_id, ACTOR)
    # Only reached when the provider was never called: tell the parent what happened instead.
    print("report " + json.dumps(report.to_json()), flush=True)
    cs.close()
    sys.exit(3)


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "approve":
        url, clock_at, seed, ids_file = args
        approve(url, clock_at, int(seed), ids_file)
    elif command == "crash":
        url, clock_at, proposal_id, when = args
        crash(url, clock_at, proposal_id, when)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
