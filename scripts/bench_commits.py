"""Benchmark: how many commits per second one PostgreSQL primary takes from 1, 2 and 4 writers.

    .venv/bin/python scripts/bench_commits.py
    .venv/bin/python scripts/bench_commits.py --writers 1,2,4,8 --seconds 10

Each writer is a process of its own, wired like an API worker (``bootstrap``), that commits
new orders (one event of about 1.2 KB each, nothing read first) through countersign's insert
function for ``--seconds``: the writers' lock, the read-set check, NOTIFY and the
insert, one round trip per commit. The total rate at each number of writers shows where the
single write lock stops the primary from scaling (docs/deploy.md, the capacity model).
The database ``countersign_bench_commits`` is dropped and recreated.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from bench import prepare_postgres  # noqa: E402

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_commits"


def writer(url: str, seconds: float, number: int, go: Any, results: Any) -> None:
    from countersign.domain.club.orders import Order
    from countersign.domain.club.organization import Organization
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.demo import seed as demo
    from countersign.infrastructure.settings import Settings

    cs = bootstrap(Settings(database_url=url))
    org = cs.store.get(Organization.create_id("granite"), Organization)
    fields = {
        "organization_id": org.id,
        "participant_name": "Bench Writer",
        "participant_email": "writer@example.com",
        "currency": "CAD",
        "line_items": [dict(demo._LEAGUE_FEE), dict(demo._RENTAL)],
        "discounts": [dict(demo._EARLY_BIRD), dict(demo._RETURNING)],
        "payments": [
            {
                "ref": "P1",
                "method": "cash",
                "label": "Cash at the front desk",
                "amount_cents": 34500,
                "charge_id": None,
            }
        ],
        "note": "",
        "placed_at": demo.PLACED_AT,
    }
    results.put(("ready", number, 0))
    if not go.wait(timeout=300):
        raise SystemExit(f"writer {number}: never told to start")
    commits = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        cs.store.save(Order(key=f"w{number}-{commits}", **fields))
        commits += 1
    results.put(("done", number, commits))
    cs.close()


def measure(url: str, writers: int, seconds: float) -> float:
    context = multiprocessing.get_context("fork")
    go = context.Event()
    results = context.Queue()
    processes = [
        context.Process(target=writer, args=(url, seconds, f"{writers}-{n}", go, results))
        for n in range(writers)
    ]
    for process in processes:
        process.start()
    for _ in processes:
        results.get(timeout=120)  # ready
    go.set()
    total = sum(results.get(timeout=seconds + 120)[2] for _ in processes)
    for process in processes:
        process.join(timeout=60)
        if process.is_alive():
            process.kill()
            raise SystemExit("a writer did not stop after its results")
    return total / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--writers", default="1,2,4")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    args = parser.parse_args()
    prepare_postgres(args.postgres_url)
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.demo.seed import seed
    from countersign.infrastructure.settings import Settings

    cs = bootstrap(Settings(database_url=args.postgres_url))
    seed(cs)
    cs.close()
    rates = {}
    for count in [int(w) for w in args.writers.split(",")]:
        rates[count] = measure(args.postgres_url, count, args.seconds)
        print(f"[{count} writers] {rates[count]:,.0f} commits/s", file=sys.stderr, flush=True)
    one = rates.get(1) or next(iter(rates.values()))
    print(f"{'writers':>7} {'commits/s':>10} {'per writer':>10} {'vs 1 writer':>11}")
    for count, rate in rates.items():
        print(f"{count:>7} {rate:>10,.0f} {rate / count:>10,.0f} {rate / one:>10.2f}x")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.seconds:g} s each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
