"""Benchmark: concurrent commits to the PostgreSQL event store, by the way they wait for disk.

    .venv/bin/python scripts/bench_pg_commits.py --writers 8 --seconds 10

Makes the event store's tables in a fresh database (``countersign_bench_commits``, dropped and
recreated), then, for each way of committing, ``--writers`` threads each commit one new
aggregate's event (about 1.5 kB, as a proposal's) again and again for ``--seconds``, on a
connection of their own, and prints commits per second and the commit latency p50/p99:

* ``function``: ``SELECT countersign_events_commit(...)``, one transaction that waits for the
  disk while it holds the writers' lock (what the recorder called until 2026-12-04);
* ``procedure``: ``CALL countersign_events_commit_durably(...)``, the function's transaction
  without the wait, then a second one that waits for the disk (what it calls now).

Only the database's side of a commit is measured (no application around it), with
``synchronous_commit`` on, so the flushes are the server's own: run it on the server a
deployment uses. The two ways alternate ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from countersign.infrastructure.bootstrap import bootstrap  # noqa: E402
from countersign.infrastructure.settings import Settings  # noqa: E402

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_commits"
ARGS = "%s::uuid[], %s::bigint[], %s::text[], %s::bytea[], %s::uuid[], %s::bigint[]"
WAYS = {
    "function": f"SELECT countersign_events_commit({ARGS})",
    "procedure": f"CALL countersign_events_commit_durably({ARGS}, NULL)",
}


def fresh_database(url: str) -> None:
    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    bootstrap(Settings(database_url=url)).close()  # the tables, the function, the procedure


def race(url: str, query: str, writers: int, seconds: float) -> tuple[int, list[float]]:
    """Commits made and each one's latency (seconds), ``writers`` threads for ``seconds``."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    start = threading.Barrier(writers + 1)
    stop = time.monotonic() + seconds + 1.0

    def write(mine: list[float]) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET synchronous_commit = on")
            state = b"x" * 1500
            start.wait()
            while time.monotonic() < stop:
                params = ([uuid.uuid4()], [1], ["bench"], [state], [], [])
                began = time.perf_counter()
                conn.execute(query, params, prepare=True)
                mine.append(time.perf_counter() - began)

    threads = [threading.Thread(target=write, args=(mine,)) for mine in latencies]
    for thread in threads:
        thread.start()
    start.wait()
    for thread in threads:
        thread.join()
    every = [latency for mine in latencies for latency in mine]
    return len(every), every


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    fresh_database(args.url)
    print(f"{'way':<10} {'writers':>7} {'commits':>8} {'per s':>7} {'p50 ms':>7} {'p99 ms':>7}")
    for _ in range(args.rounds):
        for way, query in WAYS.items():
            count, latencies = race(args.url, query, args.writers, args.seconds)
            cuts = statistics.quantiles(latencies, n=100)
            print(
                f"{way:<10} {args.writers:>7} {count:>8} {count / (args.seconds + 1):>7.0f} "
                f"{cuts[49] * 1000:>7.2f} {cuts[98] * 1000:>7.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
