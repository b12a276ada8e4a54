"""The system calls of the local propose -> approve -> succeeded cycle, and its CPU split.

    .venv/bin/python scripts/cycle_syscalls.py --cycles 400
    .venv/bin/python scripts/cycle_syscalls.py --cycles 400 --backend postgres

It seeds the demo club on a fresh database (a SQLite file in a temporary folder, or the
PostgreSQL database ``countersign_bench_syscalls``, dropped and recreated), warms up with
``--warmup`` cycles, then attaches ``strace -c -f`` to itself and runs ``--cycles`` cycles of
``email_broadcast.apply_draft`` (``bench.py``'s local case, the peer benchmark's cycle). It
prints one JSON object: each system call a cycle (count, and strace's own time in it, which
strace inflates: read the counts), and, from a second run of as many cycles without strace,
the client's user and system CPU a cycle, its wall time and its voluntary context switches
(``getrusage``). The wall time depends on the disk's flush latency: on a machine whose disk
others share, ``fdatasync`` waits dominate it; the counts do not drift.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_syscalls"
_ROW = re.compile(r"^\s*[\d.]+\s+([\d.]+)\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$")


def strace_summary(text: str) -> dict[str, tuple[int, float]]:
    """``strace -c``'s table: system call -> (calls, seconds)."""
    calls = {}
    for line in text.splitlines():
        found = _ROW.match(line)
        if found and found.group(3) != "total":
            calls[found.group(3)] = (int(found.group(2)), float(found.group(1)))
    return calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--cycles", type=int, default=400, help="measured cycles (default 400)")
    ap.add_argument("--warmup", type=int, default=50, help="cycles before (default 50)")
    ap.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    args = ap.parse_args(argv)

    from bench import make_fixture, one_cycle, prepare_postgres
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    if args.backend == "postgres":
        prepare_postgres(args.postgres_url)
        url = args.postgres_url
    else:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='countersign-syscalls-')}/cycle.db"
    cs = bootstrap(Settings(database_url=url))
    try:
        fixture = make_fixture(cs, 0, args.backend)
        for i in range(args.warmup):
            one_cycle(cs, *fixture.local(-1 - i))
        with tempfile.NamedTemporaryFile(suffix=".strace") as out:
            tracer = subprocess.Popen(
                ["strace", "-c", "-f", "-p", str(os.getpid()), "-o", out.name],
                stderr=subprocess.PIPE,
                text=True,
            )
            assert tracer.stderr is not None
            tracer.stderr.readline()  # "strace: Process N attached": tracing from here
            for i in range(args.cycles):
                one_cycle(cs, *fixture.local(i))
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=60)
            calls = strace_summary(Path(out.name).read_text())
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for i in range(args.cycles):
            one_cycle(cs, *fixture.local(10**6 + i))
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        cs.close()
    n = args.cycles
    figures: dict[str, Any] = {
        "backend": args.backend,
        "cycles": n,
        "syscalls_per_cycle": round(sum(c for c, _ in calls.values()) / n, 2),
        "syscalls": {
            name: {"per_cycle": round(count / n, 2), "strace_us": round(s * 1e6 / n, 1)}
            for name, (count, s) in sorted(calls.items(), key=lambda item: -item[1][0])
        },
        "user_us": round((after.ru_utime - before.ru_utime) * 1e6 / n, 1),
        "system_us": round((after.ru_stime - before.ru_stime) * 1e6 / n, 1),
        "wall_us": round(wall * 1e6 / n, 1),
        "voluntary_switches": round((after.ru_nvcsw - before.ru_nvcsw) / n, 2),
    }
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
