"""The projection writer process's instructions per event of a rebuild, counted by callgrind.

    .venv/bin/python scripts/writer_instructions.py                        # SQLite
    .venv/bin/python scripts/writer_instructions.py --backend postgres
    .venv/bin/python scripts/writer_instructions.py --keep /tmp/writer.out
    callgrind_annotate --inclusive=yes /tmp/writer.out | head -80
    .venv/bin/python scripts/writer_instructions.py --measure cpu --lifecycles 20000
    .venv/bin/python scripts/writer_instructions.py --measure syscalls --store /tmp/store.db

It fills a fresh store (SQLite in a temporary folder, or a scratch PostgreSQL database it
drops afterwards) with ``--lifecycles`` of ``scripts/bench_projections.py``'s lifecycles,
empties every projection's tables as a rebuild does, and captures the messages a rebuild of all
seven together (``together._rebuild_shared``) would send its writer process: each batch's
rows prepared by the handlers and packed, written as ``WriterProcess.submit`` sends them
(``writer.flat_batch``). Then it runs itself under ``valgrind --tool=callgrind`` with
collection off; that process configures SQLite as the writer's entry point does
(``writer_main.configure_sqlite``), replays the first ``--warm`` batches through
``writer.serve`` uncounted (imports, codecs, the first statements), and counts
``writer.serve`` over the remaining batches, read from memory: reading them, every
statement, every commit with its positions (``rows.commit_batch``), exactly the writer's path.
Only user-space instructions of the writer's own process are counted: a PostgreSQL server's
work is not, nor the kernel's (page cache, syscalls); ``--measure cpu`` gives the user and
system CPU time of a real rebuild's writer process (from ``/proc``), and its peak RSS; on
PostgreSQL also the CPU time of the server processes serving the writer process and those
serving the rebuilding process (its reads of the log and of rows), and where the rebuilding
process waits: its time off the CPU in the writer's answers (``WriterProcess.wait``) and in
its reads of the log (wall-clock less CPU time: a rough split, not a figure to compare).
``--measure syscalls`` replays the same captured messages (the warm-up batches with the rest)
without valgrind under ``strace -c -f``: the writer's ``pwrite64``, ``pread64`` and
``fdatasync`` calls (on SQLite the write-ahead log's frames, the pages read back, the syncs),
and its user and system CPU time (strace's own cost included: compare two runs of this mode,
not with ``--measure cpu``).
``--measure server`` (PostgreSQL) replays the same captured messages in this process, without
valgrind, and reads the CPU time of the server process serving the replay's connection
(``/proc/<pid>/schedstat``, nanoseconds) over the measured batches, and around each statement
the writer sends, by kind and table: the server's share of a rebuild's writes alone, apart
from the rebuilding process's log reads. What no statement holds (the commits, ending each
transaction) is the difference. The replaying process's own CPU time is given beside it.

Each replay ends with a digest of every projection table (every value's type and text, rows
sorted), so that a change to the writer can be checked to store the same rows. ``--inner`` is
the process valgrind runs; not for use by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# Nothing here may load sqlite3 before ``inner`` has configured it (``writer_main``).
from callgrind_count import count  # noqa: E402

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
#: ``--measure cpu``: the application name of the writer process's connection.
_WRITER_APP = "countersign-writer-measured"


def inner(folder: str) -> None:
    """The process under callgrind: the writer's entry point's set-up, a warm-up, then the
    measured ``serve`` over the rest of the batches in a ctypes callback."""
    from countersign.infrastructure.projection_engine.writer_main import configure_sqlite

    configured = configure_sqlite()
    from countersign.infrastructure.projection_engine.writer import _read, serve

    warm = Path(folder, "warm.bin").read_bytes()
    measured = Path(folder, "measured.bin").read_bytes()
    serve(io.BytesIO(warm), io.BytesIO())
    replies = io.BytesIO()

    def one_pass() -> None:
        serve(io.BytesIO(measured), replies)

    ctypes.CFUNCTYPE(None)(one_pass)()
    replies.seek(0)
    said = []
    while True:
        try:
            said.append(_read(replies)[0])
        except EOFError:
            break
    print(json.dumps({"replies": said, "sqlite_configured": configured}))


def _store(backend: str, pg_server: str, source: str | None, folder: str) -> tuple[str, str | None]:
    """A fresh database's URL (a copy of ``source`` if given; SQLite's in ``folder``), and the
    PostgreSQL database's name to drop (None: SQLite)."""
    if backend == "sqlite":
        path = Path(folder, "countersign.db")
        if source:
            shutil.copyfile(source, path)
        return f"sqlite:///{path}", None
    import psycopg

    name = f"writer_instr_{os.getpid()}"
    template = f" TEMPLATE {source}" if source else ""
    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}{template}")
    return f"{pg_server}/{name}", name


def _drop(pg_server: str, name: str | None) -> None:
    if name is None:
        return
    import psycopg

    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def capture(url: str, folder: str, warm: int, batch_size: int = 0) -> dict[str, int]:
    """Empty the projections' tables as a rebuild does and write the messages its writer
    would be sent: ``warm.bin`` (set-up and the first ``warm`` batches), ``measured.bin``
    (set-up and the rest) and ``all.bin`` (set-up and every batch). Returns the events in each."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.projection_engine.key_filter import KeyFilter
    from countersign.infrastructure.projection_engine.together import _prepare_together
    from countersign.infrastructure.projection_engine.writer import _write, flat_batch

    cs = bootstrap(database_url=url)
    runners = cs.projection_runners()
    for runner in runners:
        runner.reset(indexes=False)
        runner.batch_size = batch_size or runner.batch_size
    first = runners[0]
    setup = (
        "setup",
        first.sql.database,
        first.dialect,
        {r.name: tuple(r.projection.tables) for r in runners},
        first.head(),
        {r.name: r.projection.fingerprint() for r in runners},
    )
    streams = {"warm": io.BytesIO(), "measured": io.BytesIO(), "all": io.BytesIO()}
    events = {"warm": 0, "measured": 0}
    for stream in streams.values():
        _write(stream, setup)
    known, overlays, position, batches = KeyFilter(), None, 0, 0
    while batch := first._select(position):
        last = batch[-1].id
        with first.sql.reading() as reader:
            rows = _prepare_together(runners, batch, reader, overlays, known)
        packed = [(r.name, rows[i].packed()) for i, r in enumerate(runners)]
        part = "warm" if batches < warm else "measured"
        # As ``WriterProcess.submit`` sends it (on SQLite flattened, marshalled).
        message = flat_batch(first.dialect, setup[3], position, last, packed)
        _write(streams[part], message, plain=message[0] == "flat")
        _write(streams["all"], message, plain=message[0] == "flat")
        events[part] += len(batch)
        overlays = [runner_rows.written for runner_rows in rows]
        position, batches = last, batches + 1
    for part, stream in streams.items():
        _write(stream, None)
        Path(folder, f"{part}.bin").write_bytes(stream.getvalue())
    cs.close()
    return events


def digest(url: str) -> str:
    """Every projection table's rows, sorted, each value's type and text, hashed."""
    from countersign.infrastructure.bootstrap import bootstrap

    cs = bootstrap(database_url=url)
    runners = cs.projection_runners()
    hashed = hashlib.sha256()
    with runners[0].sql.reading() as cursor:
        for runner in runners:
            for table in runner.projection.tables:
                if runners[0].sql.is_postgres:
                    query = f"SELECT t::text FROM {table.name} AS t"
                else:
                    names = ", ".join(
                        f"typeof({c}) || ':' || quote({c})" for c in table.column_names()
                    )
                    query = f"SELECT {names} FROM {table.name}"
                rows = sorted(repr(tuple(row)) for row in cursor.execute(query).fetchall())
                hashed.update(f"{table.name}:{len(rows)}\n".encode())
                for row in rows:
                    hashed.update(row.encode() + b"\n")
    cs.close()
    return hashed.hexdigest()


#: The system calls ``--measure syscalls`` reports.
SYSCALLS = ("pwrite64", "pread64", "fdatasync")


def measure_syscalls(folder: str) -> dict[str, Any]:
    """The captured replay (``capture``) in a process of its own under ``strace -c -f``:
    how many times it made each call of ``SYSCALLS``, and its user and system CPU time."""
    import subprocess

    summary = Path(folder, "strace.txt")
    command = ["strace", "-c", "-f", "-o", str(summary), sys.executable, __file__]
    before = os.times()
    done = subprocess.run([*command, f"--inner={folder}"], capture_output=True, text=True)
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(done.stderr[-4000:])
    said = json.loads(done.stdout.strip().splitlines()[-1])
    if set(said["replies"]) != {"ok"}:
        raise SystemExit(f"the writer did not commit every batch: {said['replies']}")
    calls = dict.fromkeys(SYSCALLS, 0)
    for line in summary.read_text().splitlines():
        fields = line.split()
        if fields and fields[-1] in calls:  # % time, seconds, usecs/call, calls, [errors,] name
            calls[fields[-1]] = int(fields[3])
    return {
        "batches": len(said["replies"]),
        **calls,
        "user_s": round(after.children_user - before.children_user, 2),
        "system_s": round(after.children_system - before.children_system, 2),
    }


def _on_cpu_ns(pid: int) -> int:
    """The nanoseconds process ``pid`` has run on a CPU (``/proc/<pid>/schedstat``'s first)."""
    with open(f"/proc/{pid}/schedstat") as schedstat:
        return int(schedstat.read().split()[0])


def _statement_kind(sql: str) -> str:
    """A writer statement's kind and table, e.g. ``copy stage:cards``."""
    words = sql.split()
    verb = words[0].lower()
    if verb == "copy":
        table = words[1].removeprefix("pg_temp.")
        if table.startswith("countersign_stage_"):
            return "copy stage:" + table.removeprefix("countersign_stage_")
        return "copy table:" + table
    if verb == "create":
        return "create stage:" + words[6].removeprefix("countersign_stage_")
    if verb == "insert":
        source = "staged" if "FROM pg_temp." in sql else "arrays"
        return f"upsert {source}:{words[2]}"
    if verb == "delete":
        return "delete:" + words[2]
    if verb == "select" and "FOR UPDATE" in sql:
        return "lock position"
    if verb == "update":
        return "save position"
    return verb


def _replies(stream: io.BytesIO) -> list[str]:
    """The kinds of the writer's answers in ``stream`` ("ok" for a committed batch)."""
    from countersign.infrastructure.projection_engine.writer import _read

    stream.seek(0)
    said = []
    while True:
        try:
            said.append(_read(stream)[0])
        except EOFError:
            return said


class _Backend:
    """The one server process connected to ``dbname`` (the replay's), found when first asked."""

    def __init__(self, pg_server: str, dbname: str) -> None:
        self.pg_server, self.dbname, self.pid = pg_server, dbname, 0

    def on_cpu_ns(self) -> int:
        if not self.pid:
            import psycopg

            with psycopg.connect(f"{self.pg_server}/postgres", autocommit=True) as admin:
                pids = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.dbname,)
                ).fetchall()
            if len(pids) != 1:
                raise SystemExit(f"expected the replay's one connection to {self.dbname}: {pids}")
            self.pid = pids[0][0]
        return _on_cpu_ns(self.pid)


def measure_server(
    pg_server: str, dbname: str, folder: str, events: int, warm_batches: int
) -> dict[str, Any]:
    """The captured replay (``capture``) through ``writer.serve`` in this process: the CPU
    time of the server process serving it over the measured batches, by statement kind and
    table (microseconds an event, and round trips), and this process's own."""
    from unittest import mock

    from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase
    from countersign.infrastructure.projection_engine import writer

    backend = _Backend(pg_server, dbname)
    spent: dict[str, list[int]] = {}  # statement kind: server ns, round trips
    clock: list[int] = []  # the server's at the first statement and as the connection closes

    def timed(method: Any) -> Any:
        def wrapper(self: Cursor, sql: str, *args: Any) -> Any:
            before = backend.on_cpu_ns()
            if not clock:
                clock.append(before)
            result = method(self, sql, *args)
            kind = spent.setdefault(_statement_kind(sql), [0, 0])
            kind[0] += backend.on_cpu_ns() - before
            kind[1] += 1
            return result

        return wrapper

    def close_reading(self: SqlDatabase, close: Any = SqlDatabase.close) -> None:
        if clock:
            clock.append(backend.on_cpu_ns())
        close(self)

    # One replay, as one writer process serves a rebuild (it keeps what it learns from batch
    # to batch): the warm-up batches, then the measured ones, counted from the first
    # statement after the warm-up's last answer.
    stream = Path(folder, "all.bin").read_bytes()
    replies = io.BytesIO()
    answered = [0]

    def answer(stream: IO[bytes], message: Any, write: Any = writer._write) -> None:
        write(stream, message)
        answered[0] += 1
        if answered[0] == warm_batches:
            spent.clear()
            clock.clear()
            times.append(os.times())

    times: list[Any] = []
    with contextlib.ExitStack() as patches:
        for name in ("execute", "execute_native", "copy_in"):
            patches.enter_context(mock.patch.object(Cursor, name, timed(getattr(Cursor, name))))
        patches.enter_context(mock.patch.object(SqlDatabase, "close", close_reading))
        patches.enter_context(mock.patch.object(writer, "_write", answer))
        writer.serve(io.BytesIO(stream), replies)
        after = os.times()
    mine = times[0]
    said = _replies(replies)
    if set(said) != {"ok"}:
        raise SystemExit(f"the writer did not commit every batch: {said}")
    total = clock[-1] - clock[0]
    statements = sum(ns for ns, _ in spent.values())
    return {
        "events": events,
        "batches": len(said) - warm_batches,
        "server_us": round(total / events / 1e3, 2),
        "server_commits_and_rest_us": round((total - statements) / events / 1e3, 2),
        "replay_cpu_us": round(
            (after.user + after.system - mine.user - mine.system) / events * 1e6, 2
        ),
        "statements": {
            kind: {"us_per_event": round(ns / events / 1e3, 2), "round_trips": calls}
            for kind, (ns, calls) in sorted(spent.items(), key=lambda item: -item[1][0])
        },
    }


def _off_cpu(waits: list[int], method: Any) -> Any:
    """``method``, adding to ``waits[0]`` the nanoseconds this process is off the CPU in it."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter_ns(), _on_cpu_ns(os.getpid())
        try:
            return method(*args, **kwargs)
        finally:
            waits[0] += time.perf_counter_ns() - wall - (_on_cpu_ns(os.getpid()) - cpu)

    return wrapper


class _Backends:
    """The server processes of a PostgreSQL database: each one's name and CPU nanoseconds."""

    def __init__(self, url: str) -> None:
        import psycopg

        server, _, self.dbname = url.rpartition("/")
        self.admin = psycopg.connect(f"{server}/postgres", autocommit=True)

    def now(self) -> dict[int, tuple[str, int]]:
        pids = self.admin.execute(
            "SELECT pid, application_name FROM pg_stat_activity WHERE datname = %s",
            (self.dbname,),
        ).fetchall()
        return {pid: (name, _on_cpu_ns(pid)) for pid, name in pids}

    @staticmethod
    def spent(
        before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], events: int
    ) -> dict[str, float]:
        """The server's CPU an event for the writer process and for the rebuilding one."""
        spent = {"writer": 0, "rebuild": 0}
        for pid, (name, ns) in after.items():
            kind = "writer" if name == _WRITER_APP else "rebuild"
            spent[kind] += ns - before.get(pid, ("", 0))[1]
        return {f"server_for_{kind}_us": round(ns / events / 1e3, 2) for kind, ns in spent.items()}


def measure_cpu(url: str, batch_size: int = 0) -> dict[str, Any]:
    """A real ``rebuild_together`` of all seven: its writer process's user and system CPU time
    and peak RSS, read from ``/proc`` once its last batch has committed, before it is told to
    end (its start-up included); where the rebuilding process is off the CPU; on PostgreSQL,
    the server's CPU for each."""
    from unittest import mock

    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.projection_engine import writer
    from countersign.infrastructure.projection_engine.runner import ProjectionRunner
    from countersign.infrastructure.projection_engine.together import rebuild_together

    seen: dict[str, Any] = {}
    cs = bootstrap(database_url=url)
    runners = cs.projection_runners(batch_size=batch_size or None)
    backends = _Backends(url) if runners[0].sql.is_postgres else None
    at_start = backends.now() if backends else {}

    def finish_reading(
        self: writer.WriterProcess, finish: Any = writer.WriterProcess.finish
    ) -> None:
        self.wait()
        if backends:
            seen["backends"] = backends.now()
        pid = self._process.pid
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        ticks = os.sysconf("SC_CLK_TCK")
        seen["user_s"], seen["system_s"] = int(fields[11]) / ticks, int(fields[12]) / ticks
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    seen["peak_rss_mb"] = int(line.split()[1]) / 1024
        finish(self)

    def start_named(
        self: writer.WriterProcess,
        *args: Any,
        start: Any = writer.WriterProcess.__init__,
        **kwargs: Any,
    ) -> None:
        # The writer process's connection is told apart by its name: libpq reads PGAPPNAME
        # from the environment the process inherits as it starts.
        with mock.patch.dict(os.environ, {"PGAPPNAME": _WRITER_APP}):
            start(self, *args, **kwargs)

    waits = {"writer": [0], "log": [0]}  # off-CPU nanoseconds
    with contextlib.ExitStack() as patches:
        patches.enter_context(mock.patch.object(writer.WriterProcess, "__init__", start_named))
        patches.enter_context(mock.patch.object(writer.WriterProcess, "finish", finish_reading))
        wait = _off_cpu(waits["writer"], writer.WriterProcess.wait)
        patches.enter_context(mock.patch.object(writer.WriterProcess, "wait", wait))
        select = _off_cpu(waits["log"], ProjectionRunner._select)
        patches.enter_context(mock.patch.object(ProjectionRunner, "_select", select))
        events = rebuild_together(runners, parallel=True)
    cs.close()
    result = {
        "events": events,
        "writer_user_us": round(seen["user_s"] / events * 1e6, 2),
        "writer_system_us": round(seen["system_s"] / events * 1e6, 2),
        "writer_peak_rss_mb": round(seen["peak_rss_mb"], 1),
        "rebuild_off_cpu_in_writer_wait_us": round(waits["writer"][0] / events / 1e3, 2),
        "rebuild_off_cpu_in_log_reads_us": round(waits["log"][0] / events / 1e3, 2),
    }
    if backends:
        result |= backends.spent(at_start, seen["backends"], events)
        backends.admin.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--measure", choices=["instructions", "cpu", "syscalls", "server"], default="instructions"
    )
    parser.add_argument("--lifecycles", type=int, default=4000)
    parser.add_argument("--warm", type=int, default=3, help="batches replayed uncounted first")
    parser.add_argument("--batch", type=int, default=0, help="events a batch (0: the default)")
    parser.add_argument("--postgres-url", default=PG_SERVER, help="server URL, no database")
    parser.add_argument(
        "--store",
        help="a filled store to copy instead of filling one (SQLite: its file, closed; "
        "PostgreSQL: a database's name, copied as a template): the same rows every run, so "
        "the digests of two runs compare",
    )
    parser.add_argument("--keep", help="write callgrind's output here")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args.inner)
        return
    from bench_projections import fill
    from countersign.infrastructure.bootstrap import bootstrap

    folder = tempfile.mkdtemp(prefix="writer-instr-")  # the SQLite store and the messages
    scratch = None
    try:
        url, scratch = _store(args.backend, args.postgres_url, args.store, folder)
        if not args.store:
            cs = bootstrap(database_url=url)
            fill(cs, args.lifecycles)
            cs.close()
        if args.measure == "cpu":
            result = {"backend": args.backend, **measure_cpu(url, args.batch), "rows": digest(url)}
            print(json.dumps(result))
            return
        events = capture(url, folder, args.warm, args.batch)
        if args.measure == "server":
            if scratch is None:
                raise SystemExit("--measure server is for --backend postgres")
            result = {"backend": args.backend, "events": events["measured"]}
            result |= {
                **measure_server(args.postgres_url, scratch, folder, events["measured"], args.warm)
            }
            print(json.dumps(result | {"rows": digest(url)}))
            return
        if args.measure == "syscalls":
            result = {"backend": args.backend, "events": events["measured"]}
            result |= {**measure_syscalls(folder), "rows": digest(url)}
            print(json.dumps(result))
            return
        total, inner_said = count(__file__, [f"--inner={folder}"], args.keep, "writer-instr-")
        if set(inner_said["replies"]) != {"ok"}:
            raise SystemExit(f"the writer did not commit every batch: {inner_said['replies']}")
        print(
            json.dumps(
                {
                    "backend": args.backend,
                    "events": events["measured"],
                    "batches": len(inner_said["replies"]),
                    "instructions": total,
                    "per_event": round(total / events["measured"]),
                    "sqlite_configured": inner_said["sqlite_configured"],
                    "rows": digest(url),
                }
            )
        )
    finally:
        _drop(args.postgres_url, scratch)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
