"""Benchmark: suite 4's load through the real HTTP server, as figures.

    .venv/bin/python scripts/bench.py http
    .venv/bin/python scripts/bench.py http --backends postgres --proposals 1000 --clients 8

For each backend it starts ``countersign serve --workers N`` on a fresh database (PostgreSQL:
``countersign_bench_http``, dropped and recreated; SQLite: a temporary file), starts the
projection runner and the worker beside it, as a PostgreSQL deployment runs them (the worker
runs the sweepers, ``serve --no-sweepers``; ``--server-only`` leaves both out, and on SQLite
``serve`` then runs the sweepers itself, as the embedded deployment does), loads card-refund
proposals, lets the client processes approve every one at once over HTTP
(tests/http_load.py) and prints approve latency p50/p99 (every request: executions and
repeats) and requests per second, with the checks' verdict: one provider request per key,
one stored answer, no 5xx, the projections caught up. The load generator shares the cores
with the server: the clients' own CPU time is printed as a share of them. Then the CPU
milliseconds per request of every process kind in the race (serve's workers, the projection
runner, the worker, the PostgreSQL backends of the bench database, the clients): on a busy
machine the latencies say little, CPU per request much more.
Defaults: PostgreSQL 1,000 x 8, SQLite 200 x 4, two API workers.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from bench import prepare_postgres  # noqa: E402

from tests.http_load import Figures, run_suite  # noqa: E402

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_http"
SIZES = {"postgres": (1000, 8), "sqlite": (200, 4)}
_T0 = time.perf_counter()


def say(message: str) -> None:
    print(f"[{time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


def table(rows: list[tuple[Figures, list[str]]]) -> str:
    header = (
        f"{'backend':<9} {'proposals x clients':>19} {'workers':>7} {'requests':>8} "
        f"{'seconds':>8} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'5xx':>4}  checks"
    )
    lines = [header, "-" * len(header)]
    for f, problems in rows:
        size = f"{f.proposals:,} x {f.clients}"
        lines.append(
            f"{f.backend:<9} {size:>19} {f.workers:>7} {f.requests:>8,} {f.seconds:>8.1f} "
            f"{f.requests_per_second:>7.1f} {f.p50_ms:>7.1f} {f.p99_ms:>7.1f} "
            f"{f.server_errors:>4}  {'held' if not problems else 'FAILED: ' + problems[0]}"
        )
    return "\n".join(lines)


def cpu_per_request(f: Figures) -> str:
    """CPU milliseconds per request of each process kind in the race: a measure that other
    load on the machine leaves alone, unlike the latencies."""
    spent = {**f.service_cpu_seconds, "clients": f.client_cpu_seconds}
    parts = [f"{name} {seconds * 1000 / f.requests:.2f}" for name, seconds in spent.items()]
    total = sum(spent.values()) * 1000 / f.requests
    return f"CPU ms per request: {', '.join(parts)}; all {total:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--proposals", type=int, help="default: 1,000 (PostgreSQL), 200 (SQLite)")
    parser.add_argument("--clients", type=int, help="default: 8 (PostgreSQL), 4 (SQLite)")
    parser.add_argument("--workers", type=int, default=2, help="API worker processes")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument(
        "--server-only",
        action="store_true",
        help="without the projection runner and the worker beside the server",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rows = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        proposals, clients = SIZES[backend]
        with tempfile.TemporaryDirectory(prefix="countersign-bench-http-") as workdir:
            if backend == "postgres":
                prepare_postgres(args.postgres_url)
                url = args.postgres_url
            else:
                url = f"sqlite:///{Path(workdir) / 'countersign.db'}"
            run = run_suite(
                backend,
                url,
                Path(workdir),
                proposals=args.proposals or proposals,
                clients=args.clients or clients,
                workers=args.workers,
                every_service=not args.server_only,
                say=say,
            )
        rows.append((run.figures, run.problems))
        for problem in run.problems:
            say(f"{backend}: {problem}")
    print(table(rows))
    for f, _ in rows:
        print(
            f"{f.backend}: the {f.clients} clients used {f.client_cpu_seconds:.1f} CPU-seconds of "
            f"the {f.seconds * len(os.sched_getaffinity(0)):.1f} core-seconds the race took "
            f"({f.client_cpu_share:.0%})"
        )
        print(f"{f.backend}: {cpu_per_request(f)}")
        kinds = "; ".join(
            f"{kind} {count:,} p50 {p50:.1f} p99 {p99:.1f}"
            for kind, (count, p50, p99) in f.by_result.items()
        )
        print(f"{f.backend}: approve latency (ms) by answer: {kinds}")
    print(
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs: the clients, the "
        "server processes and the database share them"
    )
    return 1 if any(problems for _, problems in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
