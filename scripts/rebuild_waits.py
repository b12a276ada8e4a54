"""Where the rebuilding process waits during a rebuild of all seven projections together.

    .venv/bin/python scripts/rebuild_waits.py                              # SQLite
    .venv/bin/python scripts/rebuild_waits.py --backend postgres --lifecycles 20000
    .venv/bin/python scripts/rebuild_waits.py --store /tmp/store.db --repeat 3 --in-flight 1

It fills a fresh store (SQLite in a temporary folder, or a scratch PostgreSQL database it drops
afterwards) with ``--lifecycles`` of ``scripts/bench_projections.py``'s lifecycles, or copies
``--store``, then runs ``rebuild_together`` of every projection with its writer process, in
this process, ``--repeat`` times. Around each step that can wait it reads the main thread's
wall-clock and CPU time (``time.thread_time_ns``): the rest of the step's wall-clock time the
thread was off the CPU, blocked or waiting for a core. Per event, by cause:

- ``writer_start``: starting the writer process and sending it its set-up;
- ``reset``: dropping and creating the tables (``ProjectionRunner.reset``);
- ``log_reads``: reading the log (``ProjectionRunner._select``);
- ``preparing``: running a batch through the handlers (``together._prepare_together``), which
  blocks only to look rows up in the database (what neither the rows of the batches in
  flight nor ``KeyFilter`` answered);
- ``writer_answers``: waiting for the writer to answer a batch (``WriterProcess.wait``: in
  ``submit`` while ``WriterProcess.IN_FLIGHT`` batches are in flight, and in ``finish``);
- ``sending``: writing a batch into the writer's pipe (``WriterProcess._send``: the pipe full);
- ``indexes``: building the indexes after the last batch (``together.create_indexes``);
- ``writer_end``: ending the writer process (``WriterProcess.close``);
- ``elsewhere``: the rest of the rebuild (its Python, handlers, packing and pickling).

A step inside another (the set-up sent while the writer starts) counts as the outer one.
Each cause's CPU is printed beside (``cpu_by_cause_us``): its wall-clock time is the sum.
On a loaded machine much of each cause's time off the CPU is waiting for a core: the rebuild's
whole time runnable but not running (``/proc/self/task/<tid>/schedstat``) is given beside, not
split by cause (the kernel's figure did not add up by step in a virtual machine).
Beside them: the wall-clock time of the rebuild an event, its ratio to the library's read +
decode of the same store measured in the same run just before (the ceiling of issue 27), and
the writer process's CPU (``RUSAGE_CHILDREN``). ``--in-flight`` and ``--index-connections`` set
``WriterProcess.IN_FLIGHT`` and ``together.INDEX_CONNECTIONS`` for the run (an A/B on one code).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
CAUSES = (
    "writer_start",
    "reset",
    "log_reads",
    "preparing",
    "writer_answers",
    "sending",
    "indexes",
    "writer_end",
)


def _runnable_ns() -> int:
    """The calling thread's nanoseconds runnable, waiting for a core."""
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as stat:
        return int(stat.read().split()[1])


class Waits:
    """Per cause: wall-clock and CPU nanoseconds of the main thread in it."""

    def __init__(self) -> None:
        self.spent = {cause: [0, 0] for cause in CAUSES}
        self._depth = 0
        self._main = threading.get_native_id()

    @contextlib.contextmanager
    def measuring(self, cause: str) -> Iterator[None]:
        if self._depth or threading.get_native_id() != self._main:
            yield  # inside another cause, or another thread: counted there or not at all
            return
        self._depth += 1
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        try:
            yield
        finally:
            self._depth -= 1
            spent = self.spent[cause]
            spent[1] += time.thread_time_ns() - cpu
            spent[0] += time.perf_counter_ns() - wall

    def wrap(self, owner: Any, name: str, cause: str) -> Callable[[], None]:
        """Measure ``owner.name`` as ``cause``; returns what puts it back."""
        original = getattr(owner, name)

        def measured(*args: Any, **kwargs: Any) -> Any:
            with self.measuring(cause):
                return original(*args, **kwargs)

        setattr(owner, name, measured)
        return lambda: setattr(owner, name, original)


def _store(backend: str, pg_server: str, source: str | None, folder: str, prefix: str) -> str:
    """A fresh database's URL (a copy of ``source`` if given)."""
    if backend == "sqlite":
        path = Path(folder, "countersign.db")
        if source:
            shutil.copyfile(source, path)
        return f"sqlite:///{path}"
    import psycopg

    name = f"{prefix}{os.getpid()}"
    template = f" TEMPLATE {source}" if source else ""
    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}{template}")
    return f"{pg_server}/{name}"


def _drop(url: str) -> None:
    if not url.startswith("postgresql://"):
        return
    import psycopg

    server, _, name = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rebuild_once(url: str, batch_size: int = 0) -> dict[str, Any]:
    """One ``rebuild_together`` of every projection, measured."""
    from bench_projections import ceilings
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.projection_engine import runner, together, writer

    cs = bootstrap(database_url=url)
    events, rates = ceilings(cs, 1)
    waits = Waits()
    measured = [
        (writer.WriterProcess, "__init__", "writer_start"),
        (runner.ProjectionRunner, "reset", "reset"),
        (runner.ProjectionRunner, "_select", "log_reads"),
        (together, "_prepare_together", "preparing"),
        (writer.WriterProcess, "wait", "writer_answers"),
        (writer.WriterProcess, "_send", "sending"),
        (together, "create_indexes", "indexes"),
        (runner.ProjectionRunner, "create_indexes", "indexes"),
        (writer.WriterProcess, "close", "writer_end"),
    ]
    # Code from before ``together.create_indexes`` builds the indexes runner by runner: the
    # same cause, for an A/B against it.
    undo = [
        waits.wrap(owner, name, cause) for owner, name, cause in measured if hasattr(owner, name)
    ]
    try:
        children = _children_cpu_s()
        wall, cpu, runnable = time.perf_counter_ns(), time.thread_time_ns(), _runnable_ns()
        rebuilt = together.rebuild_together(
            cs.projection_runners(batch_size=batch_size or None), parallel=True
        )
        runnable, cpu = _runnable_ns() - runnable, time.thread_time_ns() - cpu
        wall = time.perf_counter_ns() - wall
        writer_cpu = _children_cpu_s() - children
    finally:
        for put_back in undo:
            put_back()
        cs.close()
    assert rebuilt == events, (rebuilt, events)
    off_cpu = {cause: wall_ns - cpu_ns for cause, (wall_ns, cpu_ns) in waits.spent.items()}
    off_cpu["elsewhere"] = wall - cpu - sum(off_cpu.values())
    on_cpu = {cause: cpu_ns for cause, (_, cpu_ns) in waits.spent.items()}
    on_cpu["elsewhere"] = cpu - sum(on_cpu.values())
    ceiling = rates["stock"][0]
    return {
        "events": events,
        "rebuild_us": round(wall / events / 1e3, 2),
        "ceiling_per_s": round(ceiling),
        "ratio": round(events / (wall / 1e9) / ceiling, 3),
        "cpu_us": round(cpu / events / 1e3, 2),
        "writer_cpu_us": round(writer_cpu / events * 1e6, 2),
        "off_cpu_us": round((wall - cpu) / events / 1e3, 2),
        "runnable_us": round(runnable / events / 1e3, 2),
        "off_cpu_by_cause_us": {
            cause: round(ns / events / 1e3, 2) for cause, ns in off_cpu.items()
        },
        "cpu_by_cause_us": {cause: round(ns / events / 1e3, 2) for cause, ns in on_cpu.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--lifecycles", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=1, help="rebuilds of the one store")
    parser.add_argument(
        "--in-flight", type=int, default=0, help="WriterProcess.IN_FLIGHT for the run"
    )
    parser.add_argument("--batch", type=int, default=0, help="events a batch (0: the default)")
    parser.add_argument(
        "--index-connections", type=int, default=0, help="together.INDEX_CONNECTIONS for the run"
    )
    parser.add_argument("--postgres-url", default=PG_SERVER, help="server URL, no database")
    parser.add_argument(
        "--database-prefix", default="rebuild_waits_", help="PostgreSQL: the scratch database's"
    )
    parser.add_argument(
        "--store",
        help="a filled store to copy instead of filling one (SQLite: its file, closed; "
        "PostgreSQL: a database's name, copied as a template)",
    )
    args = parser.parse_args()
    from countersign.infrastructure.projection_engine import together, writer

    if args.in_flight:
        writer.WriterProcess.IN_FLIGHT = args.in_flight
    if args.index_connections:
        together.INDEX_CONNECTIONS = args.index_connections
    from bench_projections import fill
    from countersign.infrastructure.bootstrap import bootstrap

    folder = tempfile.mkdtemp(prefix="rebuild-waits-")
    url = ""
    try:
        url = _store(args.backend, args.postgres_url, args.store, folder, args.database_prefix)
        if not args.store:
            cs = bootstrap(database_url=url)
            fill(cs, args.lifecycles)
            cs.close()
        runs = []
        for _ in range(args.repeat):
            runs.append(rebuild_once(url, args.batch))
            print(json.dumps({"backend": args.backend, **runs[-1]}), flush=True)
        if len(runs) > 1:
            medians = {
                key: statistics.median(run[key] for run in runs)
                for key in ("rebuild_us", "ratio", "cpu_us", "writer_cpu_us", "off_cpu_us")
            }
            print(json.dumps({"backend": args.backend, "median": medians}))
    finally:
        _drop(url)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
