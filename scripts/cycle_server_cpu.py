"""The PostgreSQL server's side of the local propose -> approve -> succeeded cycle.

    .venv/bin/python scripts/cycle_server_cpu.py --cycles 2000
    .venv/bin/python scripts/cycle_server_cpu.py --cycles 2000 --postgres-url postgresql://...

It seeds the demo club on a fresh database (``countersign_bench_server``, dropped and
recreated, with ``track_functions = 'all'`` set on it), warms up, and runs ``--cycles``
cycles of ``email_broadcast.apply_draft`` (``bench.py``'s local case, the peer benchmark's
cycle). Around the measured cycles it reads:

- the CPU time (utime + stime, ``/proc/<pid>/stat``) of every server process connected to
  that database (found in ``pg_stat_activity``): the server's CPU a cycle, from the kernel's
  own accounting, so it holds on a loaded machine better than a wall clock (it still counts
  in clock ticks: run thousands of cycles). The server must run on this machine;
- ``pg_stat_user_functions``: calls and self time (wall time inside the function, lock
  waits included) of each function, e.g. the events table's insert function;
- ``pg_stat_database``: commits, blocks hit and read; ``pg_stat_wal``: WAL records, bytes,
  full-page images (of the whole server: on a shared one, other databases' writes count);
  ``pg_stat_user_tables``: rows inserted into each table;
- the client's own CPU time (``getrusage``), for the ratio of the two.

``--callgrind-out DIR``: the server runs under callgrind on this machine, its processes
writing to DIR (as the postgres user, on a private data directory and port: ``valgrind
--tool=callgrind --collect-atstart=no --toggle-collect=PostgresMain
--callgrind-out-file=DIR/cg.%p postgres -D ... -p ... -c autovacuum=off``). A backend forked
by the postmaster cannot be reached by ``callgrind_control``; its count is written when it
exits. So after the seeding and warm-up the script opens the application twice more on the
same database, runs ``--callgrind-base`` cycles in the first and that many plus ``--cycles``
in the second, closes each (its backends exit), and prints the difference of the two
sessions' server instructions divided by ``--cycles``: the measured cycles alone, without the
connection's start or the function's first compilation. The database is analysed before the
two sessions, and with autovacuum off no analysis lands in one session and not the other
(each invalidates every cached plan on the table, and both backends plan again: a few
percent of the count, one run in two, with autovacuum on). Give the database a name
beginning ``countersign_bench_`` so that each run starts from an empty one (another name is
used as it is, and a fuller table costs other instructions). A count that does not drift
with the machine's load, for comparing two versions of the insert function; the dumps stay
for ``callgrind_annotate``.

pg_stat_statements needs ``shared_preload_libraries`` and a restart of the server, so it is
used only when the server has it loaded (its per-statement times are then printed too).
Everything is printed per cycle, as one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_server"
TICKS = os.sysconf("SC_CLK_TCK")
STATS_FLUSH_S = 11.0


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds (fields 14 and 15 of ``/proc/<pid>/stat``)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def backends_cpu(admin: Any, dbname: str) -> dict[int, float]:
    """The CPU seconds of every server process connected to ``dbname`` but ``admin``'s."""
    pids = [
        row[0]
        for row in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (dbname,),
        )
    ]
    backends = {}
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # gone meanwhile
            backends[pid] = cpu_seconds(pid)
    return backends


def snapshot(admin: Any, dbname: str, backends: dict[int, float]) -> dict[str, Any]:
    """The server's counters, once its backends have reported them: PostgreSQL 15's
    backends flush their statistics at most once a second while busy, and an idle one
    after ``PGSTAT_IDLE_INTERVAL`` (10 s), so the counters are read 11 s later."""
    time.sleep(STATS_FLUSH_S)
    admin.execute("SELECT pg_stat_clear_snapshot()")
    functions = {
        f"{schema}.{name}": {"calls": calls, "self_ms": self_ms, "total_ms": total_ms}
        for schema, name, calls, self_ms, total_ms in admin.execute(
            "SELECT schemaname, funcname, calls, self_time, total_time FROM pg_stat_user_functions"
        )
    }
    database = admin.execute(
        "SELECT xact_commit, xact_rollback, blks_hit, blks_read FROM pg_stat_database "
        "WHERE datname = %s",
        (dbname,),
    ).fetchone()
    wal = admin.execute("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
    tables = dict(
        admin.execute("SELECT relname, n_tup_ins FROM pg_stat_user_tables WHERE n_tup_ins > 0")
    )
    statements: dict[str, Any] = {}
    if admin.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'").fetchone():
        statements = {
            query: {"calls": calls, "ms": ms}
            for query, calls, ms in admin.execute(
                "SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s "
                "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s",
                (dbname,),
            )
        }
    return {
        "backends": backends,
        "functions": functions,
        "commits": database[0],
        "rollbacks": database[1],
        "blocks_hit": database[2],
        "blocks_read": database[3],
        "wal_records": int(wal[0]),
        "wal_fpi": int(wal[1]),
        "wal_bytes": int(wal[2]),
        "tables": tables,
        "statements": statements,
    }


def per_cycle(before: dict[str, Any], after: dict[str, Any], cycles: int) -> dict[str, Any]:
    backend_cpu = sum(
        after["backends"][pid] - before["backends"].get(pid, 0.0) for pid in after["backends"]
    )
    functions = {}
    for name, now in after["functions"].items():
        then = before["functions"].get(name, {"calls": 0, "self_ms": 0.0, "total_ms": 0.0})
        if now["calls"] == then["calls"]:
            continue
        functions[name] = {
            "calls": round((now["calls"] - then["calls"]) / cycles, 3),
            "self_us": round((now["self_ms"] - then["self_ms"]) * 1000 / cycles, 1),
            "total_us": round((now["total_ms"] - then["total_ms"]) * 1000 / cycles, 1),
        }
    statements = {}
    for query, now in after["statements"].items():
        then = before["statements"].get(query, {"calls": 0, "ms": 0.0})
        if now["calls"] != then["calls"]:
            statements[query[:120]] = {
                "calls": round((now["calls"] - then["calls"]) / cycles, 3),
                "us": round((now["ms"] - then["ms"]) * 1000 / cycles, 1),
            }

    def delta(key: str) -> float:
        return round((after[key] - before[key]) / cycles, 2)

    return {
        "server_cpu_us": round(backend_cpu * 1e6 / cycles, 1),
        "backends": len(after["backends"]),
        "functions": functions,
        "commits": delta("commits"),
        "rollbacks": delta("rollbacks"),
        "blocks_hit": delta("blocks_hit"),
        "blocks_read": delta("blocks_read"),
        "wal_records": delta("wal_records"),
        "wal_fpi": delta("wal_fpi"),
        "wal_bytes": delta("wal_bytes"),
        "rows_inserted": {
            name: round((count - before["tables"].get(name, 0)) / cycles, 2)
            for name, count in after["tables"].items()
            if count != before["tables"].get(name, 0)
        },
        **({"statements": statements} if statements else {}),
    }


def session_dumps(directory: Path, pids: list[int]) -> int:
    """The instructions the exited server processes ``pids`` wrote (``cg.PID``), summed;
    waits for valgrind to write them (a minute at most)."""
    total = 0
    for pid in pids:
        path = directory / f"cg.{pid}"
        for _ in range(600):
            text = path.read_text() if path.exists() else ""
            found = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
            if found:
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"no callgrind count of server process {pid} in {directory}")
        total += int(found.group(1))
    return total


def callgrind_session(
    args: argparse.Namespace, admin: Any, dbname: str, form_id: str, first: int, cycles: int
) -> int:
    """Open the application on the seeded database, run ``cycles`` cycles, close it: the
    instructions of the server processes that served it."""
    from bench import Fixture, one_cycle
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    cs = bootstrap(Settings(database_url=args.postgres_url))
    try:
        fixture = Fixture(cs=cs, form_id=form_id)
        for i in range(first, first + cycles):
            one_cycle(cs, *fixture.local(i))
        pids = list(backends_cpu(admin, dbname))
    finally:
        cs.close()
    print(f"callgrind: session of {cycles} cycles, server processes {pids}", file=sys.stderr)
    return session_dumps(args.callgrind_out, pids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cycles", type=int, default=2000, help="measured cycles (default 2000)")
    ap.add_argument("--warmup", type=int, default=100, help="cycles before (default 100)")
    ap.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    ap.add_argument(
        "--callgrind-base",
        type=int,
        default=20,
        help="with --callgrind-out: the cycles of the session subtracted (default 20)",
    )
    ap.add_argument(
        "--callgrind-out",
        metavar="DIR",
        type=Path,
        help="the server runs under callgrind, writing here: count its instructions",
    )
    args = ap.parse_args(argv)

    from bench import make_fixture, one_cycle, prepare_postgres_with
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Database, Settings

    # Before the application connects: its sessions start with it.
    admin = prepare_postgres_with(args.postgres_url, track_functions="all")
    db = Database.parse(args.postgres_url)
    cs = bootstrap(Settings(database_url=args.postgres_url))
    try:
        fixture = make_fixture(cs, 0, "postgres")
        for i in range(args.warmup):
            one_cycle(cs, *fixture.local(-1 - i))
        before = snapshot(admin, db.dbname, {})
        before["backends"] = backends_cpu(admin, db.dbname)
        client_before = resource.getrusage(resource.RUSAGE_SELF)
        for i in range(args.cycles):
            one_cycle(cs, *fixture.local(i))
        client_after = resource.getrusage(resource.RUSAGE_SELF)
        after = snapshot(admin, db.dbname, backends_cpu(admin, db.dbname))
    finally:
        cs.close()
    try:
        if args.callgrind_out:
            # Both sessions start from the same statistics: an analysis of the events table
            # in one session and not the other (autovacuum's, at its threshold of rows)
            # invalidates every cached plan on it, and each backend plans again.
            admin.execute("ANALYZE")
            # Indexes far from the measured ones, of the same number of digits.
            base = callgrind_session(
                args, admin, db.dbname, fixture.form_id, 10**6, args.callgrind_base
            )
            more = callgrind_session(
                args,
                admin,
                db.dbname,
                fixture.form_id,
                2 * 10**6,
                args.callgrind_base + args.cycles,
            )
    finally:
        admin.close()
    client = (
        client_after.ru_utime
        + client_after.ru_stime
        - client_before.ru_utime
        - client_before.ru_stime
    )
    figures = per_cycle(before, after, args.cycles)
    figures = {
        "cycles": args.cycles,
        "client_cpu_us": round(client * 1e6 / args.cycles, 1),
        **figures,
    }
    figures["server_to_client"] = round(figures["server_cpu_us"] / figures["client_cpu_us"], 3)
    if args.callgrind_out:
        figures["server_instructions_per_cycle"] = round((more - base) / args.cycles)
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
