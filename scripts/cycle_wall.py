"""Where the PostgreSQL cycle's wall time goes: the client's CPU, the server's CPU, the flushes
of the log it waits for, and its round trips.

    .venv/bin/python scripts/cycle_wall.py --cycles 3000
    .venv/bin/python scripts/cycle_wall.py --cycles 3000 --synchronous-commit off

It seeds the demo club on a fresh database (``countersign_bench_wall``, dropped and recreated),
with ``track_wal_io_timing`` on for that database's sessions (``ALTER DATABASE``, so the server
processes serving the cycle time their own flushes of the log; it needs a superuser), warms up
with ``--warmup`` cycles and runs ``--cycles`` cycles of ``email_broadcast.apply_draft``
(``bench.py``'s local case, the peer benchmark's cycle). It prints one JSON object, each
figure a cycle:

- ``wall_us``: the cycles' wall time;
- ``client_cpu_us``: this process's user and system CPU (``getrusage``);
- ``server_cpu_us``: the CPU (``/proc/<pid>/stat``) of the server processes connected to the
  database, and ``walwriter_cpu_us`` the WAL writer's (the whole server's: it writes every
  database's log);
- ``flush_us`` and ``flushes``: ``pg_stat_wal``'s ``wal_sync_time`` and ``wal_sync``, the time
  the server processes spent in the log's ``fdatasync`` and how many they made (of the whole
  server: run it alone; the WAL writer's own are counted, not timed);
- ``commits``: the database's committed transactions; ``round_trips``: statements the client
  sent, counted in a second run of ``--count-cycles`` cycles (the store's prepared statements,
  psycopg's cursor executes and its transaction commands);
- ``round_trip_us``: the median wall time of a bare prepared ``SELECT 1`` on one of the store's
  pooled connections (the network, both wake-ups and the server's least work);
- ``rest_us``: the wall time none of the above accounts for (``wall - client - server -
  flush``; the client's and server's CPU overlap only while both run, which a cycle's
  alternation mostly excludes), i.e. the wake-ups and waits between them.

``--synchronous-commit off`` runs the store's sessions so (``PGOPTIONS``): commits wait for no
flush, which shows what the flushes and their transactions cost the wall. The figures are the
machine's: report the load average beside them (printed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_wall"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (fields 14 and 15 of ``/proc/<pid>/stat``)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_cpu(admin: Any, dbname: str) -> tuple[dict[int, float], float]:
    backends = {}
    for (pid,) in admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (dbname,),
    ).fetchall():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # gone meanwhile
            backends[pid] = cpu_seconds(pid)
    writer = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'"
    ).fetchone()
    return backends, cpu_seconds(writer[0]) if writer else 0.0


def counters(admin: Any, dbname: str) -> dict[str, float]:
    admin.execute("SELECT pg_stat_clear_snapshot()")
    wal = admin.execute("SELECT wal_sync, wal_sync_time, wal_write FROM pg_stat_wal").fetchone()
    commits = admin.execute(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (dbname,)
    ).fetchone()
    return {
        "flushes": float(wal[0]),
        "flush_ms": float(wal[1]),
        "writes": float(wal[2]),
        "commits": float(commits[0]),
    }


def count_round_trips(cs: Any, fixture: Any, cycles: int) -> float:
    """Statements sent to the server, a cycle: the store's own prepared statements
    (``pg_statements``), psycopg's cursor executes and its transaction commands."""
    import psycopg
    from bench import one_cycle
    from countersign.infrastructure.persistence import pg_statements
    from psycopg._connection_base import BaseConnection

    sent = [0]
    # A commit's two transactions, sent together (``run_then``), are one round trip; so are a
    # refused one's rollback and the transaction after it. (A version without them counts
    # what it has.)
    originals = {
        name: getattr(pg_statements, name)
        for name in ("_executed", "_pipelined", "_roll_back")
        if hasattr(pg_statements, name)
    }
    execute = psycopg.Cursor.execute
    command = BaseConnection._exec_command

    def counted(original: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            sent[0] += 1
            return original(*args, **kwargs)

        return call

    for name, original in originals.items():
        setattr(pg_statements, name, counted(original))
    psycopg.Cursor.execute = counted(execute)  # type: ignore[method-assign]
    BaseConnection._exec_command = counted(command)  # type: ignore[method-assign]
    try:
        for i in range(cycles):
            one_cycle(cs, *fixture.local(2 * 10**6 + i))
    finally:
        for name, original in originals.items():
            setattr(pg_statements, name, original)
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        BaseConnection._exec_command = command  # type: ignore[method-assign]
    return sent[0] / cycles


def bare_round_trip_us(cs: Any, times: int = 2000) -> float:
    """The median wall time of a prepared ``SELECT 1`` on a pooled connection of the store."""
    from countersign.infrastructure.persistence import pg_statements

    statement = pg_statements.Statement(b"SELECT 1", ())
    taken = []
    with cs.app.recorder.datastore.get_connection() as conn:
        for _ in range(times):
            began = time.perf_counter()
            pg_statements.run(conn, statement, ())
            taken.append(time.perf_counter() - began)
    return statistics.median(taken) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cycles", type=int, default=3000, help="measured cycles (default 3000)")
    ap.add_argument("--warmup", type=int, default=100, help="cycles before (default 100)")
    ap.add_argument("--count-cycles", type=int, default=200, help="cycles counted (default 200)")
    ap.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    ap.add_argument("--synchronous-commit", default="on", help="the store's sessions' setting")
    args = ap.parse_args(argv)

    from bench import make_fixture, one_cycle, prepare_postgres_with
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Database, Settings

    # Before the store connects: its sessions start with it.
    admin = prepare_postgres_with(args.postgres_url, track_wal_io_timing="on")
    db = Database.parse(args.postgres_url)
    os.environ["PGOPTIONS"] = f"-c synchronous_commit={args.synchronous_commit}"
    cs = bootstrap(Settings(database_url=args.postgres_url))
    try:
        fixture = make_fixture(cs, 0, "postgres")
        for i in range(args.warmup):
            one_cycle(cs, *fixture.local(-1 - i))
        backends_before, writer_before = server_cpu(admin, db.dbname)
        before = counters(admin, db.dbname)
        client_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for i in range(args.cycles):
            one_cycle(cs, *fixture.local(i))
        wall = time.perf_counter() - started
        client_after = resource.getrusage(resource.RUSAGE_SELF)
        backends_after, writer_after = server_cpu(admin, db.dbname)
        # A busy server process reports its statistics at most once a second; an idle one
        # after ten seconds.
        time.sleep(11)
        after = counters(admin, db.dbname)
        round_trips = count_round_trips(cs, fixture, args.count_cycles)
        bare = bare_round_trip_us(cs)
    finally:
        cs.close()
        admin.close()
    n = args.cycles
    client = (
        client_after.ru_utime
        + client_after.ru_stime
        - client_before.ru_utime
        - client_before.ru_stime
    )
    server = sum(t - backends_before.get(pid, 0.0) for pid, t in backends_after.items())
    figures: dict[str, Any] = {
        "cycles": n,
        "synchronous_commit": args.synchronous_commit,
        "cycles_per_s": round(n / wall, 1),
        "wall_us": round(wall * 1e6 / n, 1),
        "client_cpu_us": round(client * 1e6 / n, 1),
        "server_cpu_us": round(server * 1e6 / n, 1),
        "walwriter_cpu_us": round((writer_after - writer_before) * 1e6 / n, 1),
        "flush_us": round((after["flush_ms"] - before["flush_ms"]) * 1000 / n, 1),
        "flushes": round((after["flushes"] - before["flushes"]) / n, 2),
        "wal_writes": round((after["writes"] - before["writes"]) / n, 2),
        "commits": round((after["commits"] - before["commits"]) / n, 2),
        "round_trips": round(round_trips, 2),
        "round_trip_us": round(bare, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    figures["rest_us"] = round(
        figures["wall_us"]
        - figures["client_cpu_us"]
        - figures["server_cpu_us"]
        - figures["flush_us"],
        1,
    )
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
