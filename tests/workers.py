"""Child processes for the multi-process tests: ``python -m tests.workers COMMAND ...``.

Each child wires its own countersign through ``bootstrap``, exactly like a separate API worker
or approver process would, and talks to the parent test only through argv, stdin and stdout.

``approve URL CLOCK SEED IDS_FILE``
    Bootstrap on URL with a clock fixed at CLOCK (ISO 8601), print ``ready``, wait for one line
    on stdin (the parent's start signal, so all workers race from the same moment), then
    approve every proposal id in IDS_FILE (a JSON list), in an order shuffled by SEED, as Ava.
    Prints one line ``reports <json>``: every report (or the exception an approval raised),
    and how many of its saves lost an optimistic-concurrency race.

``crash URL CLOCK PROPOSAL_ID WHEN``
    Approve one proposal through a payment provider that SIGKILLs its own process: at the
    start of its request (WHEN=before: the claim is committed, nothing was sent), or right
    after the real sandbox applied the refund (WHEN=after: the money moved, the outcome was
    never recorded). If the process survives, it prints ``report <json>`` and exits 3.

``forks``
    A fork server for the crash suite (tests/test_crash_points.py), which kills hundreds of
    processes: it pays for the imports once (PostgreSQL's driver and the contracts too: see
    ``_imports_of_every_child``), prints ``ready``, then for each JSON line on
    stdin ``{"command", "args", "env"}`` forks a child that sets ``env`` (say
    ``COUNTERSIGN_CRASH_AT``, read by its own bootstrap) and runs one of the commands below,
    prints ``forked <pid>``, waits for it and prints ``exited <json>`` (its signal or exit
    code). Each child bootstraps its own connections after the fork: the server never opens
    one. The child commands print their own lines on the same output:

    ``approve_one URL CLOCK PROPOSAL_ID``: approve, print ``report <json>``, exit 3.
    ``reconcile URL CLOCK``: one reconciler pass, print ``swept <json>``, exit 3.
    ``stream URL CLOCK IDS_FILE``: print ``started``, approve each id in turn printing
    ``answered <json>``, then print ``done`` and wait to be killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from countersign.application.ports import EffectProvider
from countersign.domain.errors import ConcurrencyConflictError
from countersign.domain.ports import EffectResponse
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.settings import Settings

from tests.support.mutants import apply_from_environment

ACTOR = "ava@granite.example"
REPO = Path(__file__).resolve().parents[1]


def start(
    *args: str, stdin: int | None = None, stderr: Any = subprocess.PIPE
) -> subprocess.Popen[str]:
    """Start ``python -m tests.workers ARGS`` from the repository, with the same interpreter."""
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": pythonpath},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def _die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class DyingProvider:
    """The EffectProvider port: the real sandbox, and a SIGKILL before or after its refund."""

    def __init__(self, when: str) -> None:
        if when not in ("before", "after"):
            raise ValueError(f"WHEN is before or after, not {when!r}")
        self.when = when
        self.inner: EffectProvider | None = None

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        assert self.inner is not None
        if self.when == "before":
            _die()
        response = self.inner.perform(key, request)
        if self.when == "after":
            _die()
        return response

    def lookup(self, key: str) -> EffectResponse | None:
        assert self.inner is not None
        return self.inner.lookup(key)


def approve(url: str, clock_at: str, seed: int, ids_file: str) -> None:
    ids: list[str] = json.loads(Path(ids_file).read_text())
    random.Random(seed).shuffle(ids)
    cs = bootstrap(Settings(database_url=url), clock=FakeClock(datetime.fromisoformat(clock_at)))
    conflicts = 0
    save = cs.store.save

    def counting_save(*aggregates: Any, final: bool = False) -> None:
        nonlocal conflicts
        try:
            save(*aggregates, final=final)
        except ConcurrencyConflictError:
            conflicts += 1
            raise

    cs.store.save = counting_save  # type: ignore[method-assign]
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        reports: list[dict[str, Any]] = []
        for proposal_id in ids:
            try:
                reports.append(cs.proposals.approve(proposal_id, ACTOR).to_json())
            except Exception as error:  # reported to the parent, which fails the test
                reports.append({"proposal_id": proposal_id, "error": repr(error)})
        print("reports " + json.dumps({"reports": reports, "conflicts": conflicts}), flush=True)
    finally:
        cs.close()


def crash(url: str, clock_at: str, proposal_id: str, when: str) -> None:
    provider = DyingProvider(when)
    cs = bootstrap(
        Settings(database_url=url),
        clock=FakeClock(datetime.fromisoformat(clock_at)),
        providers={"payments": provider},
    )
    provider.inner = cs.sandbox
    report = cs.proposals.approve(proposal_id, ACTOR)
    # Only reached when the provider was never called: tell the parent what happened instead.
    print("report " + json.dumps(report.to_json()), flush=True)
    cs.close()
    sys.exit(3)


def say(line: str) -> None:
    """One line on stdout in one write: the fork server and its children share the pipe, and
    a write of less than PIPE_BUF bytes is never interleaved with another (print may write a
    line in two pieces, as it does under PYTHONUNBUFFERED)."""
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def _bootstrapped(url: str, clock_at: str) -> Any:
    return bootstrap(Settings(database_url=url), clock=FakeClock(datetime.fromisoformat(clock_at)))


def approve_one(url: str, clock_at: str, proposal_id: str) -> int:
    cs = _bootstrapped(url, clock_at)
    say("report " + json.dumps(cs.proposals.approve(proposal_id, ACTOR).to_json()))
    cs.close()
    return 3


def reconcile(url: str, clock_at: str) -> int:
    cs = _bootstrapped(url, clock_at)
    swept = [(s.proposal_id, s.action, s.status) for s in cs.sweepers.reconcile()]
    say("swept " + json.dumps(swept))
    cs.close()
    return 3


def stream(url: str, clock_at: str, ids_file: str) -> int:
    cs = _bootstrapped(url, clock_at)
    say("started")
    for proposal_id in json.loads(Path(ids_file).read_text()):
        report = cs.proposals.approve(proposal_id, ACTOR)
        said = {k: getattr(report, k) for k in ("proposal_id", "result", "status", "reason")}
        say("answered " + json.dumps({**said, "outcome": report.outcome}))
    say("done")
    time.sleep(3600)  # the parent kills it: a pid it kills is never one reused since
    return 3


def bootstrap_together(url: str, workers: str) -> int:
    """WORKERS processes bootstrap one database at the same moment, as a deploy starts its
    API workers, runners and reconciler: each forked with everything imported, released by
    one write to a pipe. Says each failure, then how many failed."""
    start_reading, start_writing = os.pipe()
    pids = []
    for _ in range(int(workers)):
        pid = os.fork()
        if pid == 0:  # a grandchild: wait for the start, bootstrap, end
            os.close(start_writing)
            os.read(start_reading, 1)
            code = 0
            try:
                bootstrap(Settings(database_url=url)).close()
            except BaseException as error:
                say("failed " + json.dumps(f"{type(error).__name__}: {error}".splitlines()[0]))
                code = 1
            os._exit(code)
        pids.append(pid)
    os.close(start_reading)
    os.write(start_writing, b"x" * len(pids))  # one byte each: all released at once
    os.close(start_writing)
    failed = sum(1 for pid in pids if os.waitpid(pid, 0)[1] != 0)
    say("bootstrapped " + json.dumps({"workers": len(pids), "failed": failed}))
    return 3


FORKED: dict[str, Callable[..., int]] = {
    "bootstrap_together": bootstrap_together,
    "approve_one": approve_one,
    "reconcile": reconcile,
    "stream": stream,
}


def _imports_of_every_child() -> None:
    """What each child would otherwise import for itself, once, before any fork: the
    PostgreSQL driver, its pool and countersign's recorder for it (``bootstrap`` imports them
    only for a PostgreSQL URL, so that a SQLite process never loads them) and the built-in
    contracts (the registry imports each on first use). In every child they cost about half
    a second of CPU on PostgreSQL (142 modules: psycopg, psycopg_pool, ssl, asyncio...) and
    a few dozen milliseconds on SQLite; the crash suite forks a few hundred children, and
    ``bootstrap_together``'s processes reached their schema statements only after importing
    them side by side. Nothing here connects: each child still opens its own connections."""
    from countersign.domain.contracts import REGISTRY
    from countersign.infrastructure.persistence import recorders_postgres  # noqa: F401

    REGISTRY.load_all()


def serve_forks() -> None:
    _imports_of_every_child()
    say("ready")
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns to this loop
            code = 1
            try:
                os.environ.update(request["env"])
                code = FORKED[request["command"]](*request["args"])
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        say(f"forked {pid}")
        _, status = os.waitpid(pid, 0)
        ended = {
            "pid": pid,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        }
        say("exited " + json.dumps(ended))


@dataclass
class Child:
    """What a forked child printed, and how it ended."""

    pid: int
    lines: list[str] = field(default_factory=list)
    signal: int | None = None
    code: int | None = None

    @property
    def killed(self) -> bool:
        return self.signal == signal.SIGKILL

    def json(self, prefix: str) -> list[Any]:
        return [
            json.loads(line[len(prefix) + 1 :]) for line in self.lines if line.startswith(prefix)
        ]


class Forks:
    """The test's side of the fork server: run a child, or start one and kill it yourself."""

    TIMEOUT = 120.0

    def __init__(self, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("w")
        self.server = start("forks", stdin=subprocess.PIPE, stderr=self._stderr)
        self._lines: queue.Queue[str] = queue.Queue()
        self._live: Child | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self._next() == "ready", self.errors()

    def _read(self) -> None:
        assert self.server.stdout is not None
        for line in self.server.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put("")  # the server is gone

    def _next(self) -> str:
        try:
            return self._lines.get(timeout=self.TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"the fork server said nothing for {self.TIMEOUT}s") from None

    def errors(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text()[-3000:]

    def spawn(self, command: str, *args: str, env: Mapping[str, str] | None = None) -> Child:
        """Fork a child running ``command``; returns once it is running."""
        assert self.server.stdin is not None
        request = {"command": command, "args": list(args), "env": dict(env or {})}
        self.server.stdin.write(json.dumps(request) + "\n")
        self.server.stdin.flush()
        early = []
        while not (line := self._next()).startswith("forked "):
            assert line, f"the fork server died: {self.errors()}"
            early.append(line)
        self._live = Child(int(line.split()[1]), early)
        return self._live

    def read_until(self, child: Child, prefix: str) -> bool:
        """Collect the child's lines up to one starting with ``prefix`` (True), or its end."""
        while True:
            line = self._next()
            assert line, f"the fork server died: {self.errors()}"
            if line.startswith("exited "):
                ended = json.loads(line[len("exited ") :])
                child.signal, child.code = ended["signal"], ended["code"]
                self._live = None
                return False
            child.lines.append(line)
            if line.startswith(prefix):
                return True

    def wait(self, child: Child) -> Child:
        while self.read_until(child, "exited "):
            pass
        return child

    def run(self, command: str, *args: str, env: Mapping[str, str] | None = None) -> Child:
        return self.wait(self.spawn(command, *args, env=env))

    def close(self) -> None:
        if self._live is not None:  # a test that failed with a child still running
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._live.pid, signal.SIGKILL)
        if self.server.stdin is not None:
            self.server.stdin.close()
        self.server.wait(timeout=self.TIMEOUT)
        self._reader.join(timeout=self.TIMEOUT)
        if self.server.stdout is not None:
            self.server.stdout.close()
        self._stderr.close()


def main(argv: list[str]) -> None:
    apply_from_environment()  # a deliberate bug, when scripts/mutants runs the suites
    command, *args = argv
    if command == "approve":
        url, clock_at, seed, ids_file = args
        approve(url, clock_at, int(seed), ids_file)
    elif command == "crash":
        url, clock_at, proposal_id, when = args
        crash(url, clock_at, proposal_id, when)
    elif command == "forks":
        serve_forks()
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
