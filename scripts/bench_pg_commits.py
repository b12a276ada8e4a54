"""Benchmark: concurrent commits to the PostgreSQL event store, by the way they wait for disk.

    .venv/bin/python scripts/bench_pg_commits.py --writers 8 --seconds 10

Makes the event store's tables in a fresh database (``countersign_bench_commits``, dropped and
recreated), then, for each way of committing, ``--writers`` threads each commit one new
aggregate's event (about 1.5 kB, as a proposal's) again and again for ``--seconds``, on a
connection of their own, and prints commits per second and the commit latency p50/p99:

* ``function``: ``SELECT countersign_events_commit(...)``, one transaction that waits for the
  disk while it holds the writers' lock (what the recorder called until 2026-12-04);
* ``procedure``: ``CALL countersign_events_commit_durably(...)``, the function's transaction
  without the wait, then a second one that waits for the disk (what it called until
  2026-12-04, s25-cycle);
* ``pipelined``: ``SELECT countersign_events_commit_async(...)`` (the function's transaction
  without the wait), then ``SELECT pg_logical_emit_message(...)`` (the transaction that
  waits), sent together in one round trip (what the recorder sent until 2026-12-04,
  s27-pgserver);
* ``known``: the same with ``countersign_events_commit_known(..., NULL)``, what the recorder
  sends now (its seventh parameter is NULL for a commit that read nothing, as these).

Each is sent as the recorder sends its statements (``pg_statements``: prepared once, its
packed arrays in binary, on the connection's libpq object), so the client's part is the
recorder's own. Beside the rate and latencies it prints the CPU a commit of the writers' server
processes (``/proc``: the server must run on this machine) and of this process, and the load
average.

Only the database's side of a commit is measured (no application around it), with
``synchronous_commit`` on, so the flushes are the server's own: run it on the server a
deployment uses. The ways (``--ways``, all by default) alternate ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.postgres import types as pg_types

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from countersign.infrastructure.bootstrap import bootstrap  # noqa: E402
from countersign.infrastructure.persistence import pg_statements  # noqa: E402
from countersign.infrastructure.persistence.pg_arrays import (  # noqa: E402
    BigInts,
    Byteas,
    Texts,
    UUIDs,
)
from countersign.infrastructure.persistence.recorders_postgres import (  # noqa: E402
    _FLUSH_ALWAYS,
    _FLUSH_IF_DURABLE,
    _INSERT_PARAMETERS,
)
from countersign.infrastructure.settings import Settings  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_commits"
ARGS = "$1::uuid[], $2::bigint[], $3::text[], $4::bytea[], $5::uuid[], $6::bigint[]"
WAYS = {
    "function": f"SELECT countersign_events_commit({ARGS})",
    "procedure": f"CALL countersign_events_commit_durably({ARGS}, NULL)",
    "pipelined": f"SELECT countersign_events_commit_async({ARGS})",
    "known": f"SELECT countersign_events_commit_known({ARGS}, $7::bigint)",
}
#: The ways sent as the recorder sends its commits: two transactions in one round trip.
PIPELINED = ("pipelined", "known")
#: What the recorder runs after the ``pipelined`` way's commit (recorders_postgres).
FLUSH = pg_statements.Statement(
    _FLUSH_IF_DURABLE.encode(),
    (),
    # as the recorder: without the setting's read once a session is seen waiting (s31-pgserver)
    once_it_returned_rows=pg_statements.Statement(_FLUSH_ALWAYS.encode(), ()),
)


def fresh_database(url: str) -> None:
    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    bootstrap(Settings(database_url=url)).close()  # the tables, the function, the procedure


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (fields 14 and 15 of ``/proc/<pid>/stat``): the server must
    run on this machine."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def race(url: str, way: str, writers: int, seconds: float) -> tuple[list[float], float, float]:
    """Each commit's latency (seconds), ``writers`` threads for ``seconds``; the server
    processes' CPU seconds and this process's, over all of them."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    server_cpu = [0.0] * writers
    start = threading.Barrier(writers + 1)
    stop = time.monotonic() + seconds + 1.0
    types = [pg_types[t.element_type].array_oid for t in _INSERT_PARAMETERS]
    if way == "known":
        types.append(pg_types["int8"].oid)
    statement = pg_statements.Statement(WAYS[way].encode(), types)

    def write(index: int) -> None:
        mine = latencies[index]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET synchronous_commit = on")
            state = b"x" * 1500
            backend = conn.info.backend_pid
            start.wait()
            began_cpu = cpu_seconds(backend)
            while time.monotonic() < stop:
                params: list[bytes | None] = [
                    UUIDs.of([uuid.uuid4()]).data,
                    BigInts.of([1]).data,
                    Texts.of([b"bench"], 1).data,
                    Byteas.of([state], 1).data,
                    UUIDs.of([]).data,
                    BigInts.of([]).data,
                ]
                if way == "known":
                    params.append(None)
                began = time.perf_counter()
                if way in PIPELINED:
                    pg_statements.run_then(conn, statement, params, FLUSH)
                else:
                    pg_statements.run(conn, statement, params)
                mine.append(time.perf_counter() - began)
            server_cpu[index] = cpu_seconds(backend) - began_cpu

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    start.wait()
    client_before = resource.getrusage(resource.RUSAGE_SELF)
    for thread in threads:
        thread.join()
    client_after = resource.getrusage(resource.RUSAGE_SELF)
    client = (
        client_after.ru_utime
        + client_after.ru_stime
        - client_before.ru_utime
        - client_before.ru_stime
    )
    every = [latency for mine in latencies for latency in mine]
    return every, sum(server_cpu), client


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ways", default=",".join(WAYS), help="comma-separated: " + ",".join(WAYS))
    args = parser.parse_args(argv)
    fresh_database(args.url)
    print(
        f"{'way':<10} {'writers':>7} {'commits':>8} {'per s':>7} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'srv us':>7} {'cli us':>7}  load"
    )
    for _ in range(args.rounds):
        for way in args.ways.split(","):
            latencies, server, client = race(args.url, way, args.writers, args.seconds)
            count = len(latencies)
            cuts = statistics.quantiles(latencies, n=100)
            print(
                f"{way:<10} {args.writers:>7} {count:>8} {count / (args.seconds + 1):>7.0f} "
                f"{cuts[49] * 1000:>7.2f} {cuts[98] * 1000:>7.2f} "
                f"{server * 1e6 / count:>7.0f} {client * 1e6 / count:>7.0f}  "
                f"{os.getloadavg()[0]:.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
