"""Client instructions per local propose -> approve -> succeeded cycle, counted by callgrind.

    .venv/bin/python scripts/cycle_instructions.py --backend sqlite --cycles 200
    .venv/bin/python scripts/cycle_instructions.py --backend postgres --keep /tmp/pg.out
    callgrind_annotate --inclusive=yes /tmp/pg.out | head -80

It runs itself under ``valgrind --tool=callgrind`` (installed here) with collection off, seeds
the demo club on a fresh database (a SQLite file in a temporary folder; the PostgreSQL
database ``countersign_bench_cycles``, dropped and recreated, as ``bench.py`` does with its
own), warms up with ``--warmup`` cycles, and then runs ``--cycles`` cycles of
``email_broadcast.apply_draft`` on granite's broadcast form (``bench.py``'s local case and
the peer benchmark's cycle) inside a ctypes callback: callgrind is told to
collect only while that callback runs (``--toggle-collect=closure_fcn``, ctypes' callback
entry, which nothing else in the cycle calls). So the count holds the cycles alone: no start,
no imports, no seeding, no warm-up. The process's other threads (PostgreSQL's connection pool
workers) are idle meanwhile. It prints one JSON line: instructions per cycle and the total.

On a shared machine wall-clock time drifts with the load; this count does not, so a change is
measured by running this before and after it. PostgreSQL's count repeats to within 0.1% from
run to run of the same code; SQLite's varies by about 0.7% (most likely because SQLite's own
work in a commit depends on the B-tree pages the random ids land on, and on when the log is
checkpointed): run it twice or more on each side there, and count only a difference beyond
that spread.
``--inner`` is the process valgrind runs; not for use by hand.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from callgrind_count import count  # noqa: E402

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_cycles"


def inner(backend: str, url: str, warmup: int, cycles: int) -> None:
    """The process under callgrind: seed, warm up, then the measured cycles in a callback."""
    from bench import Fixture, make_fixture, one_cycle, prepare_postgres
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    if backend == "postgres":
        prepare_postgres(url)
    else:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='cycle-instr-')}/countersign.db"
    cs = bootstrap(Settings(database_url=url))
    try:
        fixture: Fixture = make_fixture(cs, 0, backend)
        for i in range(warmup):
            one_cycle(cs, *fixture.local(-1 - i))

        def measured() -> None:
            for i in range(cycles):
                one_cycle(cs, *fixture.local(i))

        callback = ctypes.CFUNCTYPE(None)(measured)
        callback()
    finally:
        cs.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--cycles", type=int, default=200, help="measured cycles (default 200)")
    ap.add_argument("--warmup", type=int, default=50, help="cycles before (default 50)")
    ap.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    ap.add_argument("--keep", metavar="FILE", help="keep callgrind's output here")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        inner(args.backend, args.postgres_url, args.warmup, args.cycles)
        return 0
    arguments = ["--inner", "--backend", args.backend, "--cycles", str(args.cycles)]
    arguments += ["--warmup", str(args.warmup), "--postgres-url", args.postgres_url]
    total, _ = count(__file__, arguments, args.keep, "cycle-instr-")
    print(
        json.dumps(
            {
                "backend": args.backend,
                "cycles": args.cycles,
                "instructions_per_cycle": round(total / args.cycles),
                "instructions": total,
                **({"callgrind_out": args.keep} if args.keep else {}),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
