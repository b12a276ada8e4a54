"""Suite 4, load through the real HTTP server: the deployment, the load, the clients, the checks.

Used by ``tests/test_http_load.py`` (its CI size), ``scripts/bench.py http`` (the figures as a
benchmark) and ``scripts/soak`` (full size, and ``--quick`` with every service running).

* ``Deployment`` starts countersign's services as real processes, each in a process group of
  its own: ``countersign serve --create --workers N``, and optionally ``countersign projections
  run`` and ``countersign worker``. ``stop()`` sends SIGTERM, waits, and reports any service that
  did not exit 0 and any process left in its group (an orphaned server worker).
* ``load`` freezes card-refund proposals (each on its own order, paid with the sandbox's
  card that refunds) and issues one API token per client.
* ``race`` starts the client processes (``python -m tests.http_load client ...``), lets them
  go at the same moment, and gathers every answer. Each client approves every proposal over
  HTTP, in its own shuffled order, clients paired on the same order so that two requests for
  one proposal arrive together.
* ``verify`` says what went wrong, if anything: any answer but 200 (zero 5xx above all),
  not exactly one execution per proposal, an answer that differs from the stored outcome,
  a repeat after the race that differs, or a provider key that got other than one request.
* ``figures`` are what a benchmark prints: approve latency p50/p99 and requests per second.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import httpx

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "countersign.infrastructure.entrypoints.cli"]
CLIENT = [sys.executable, "-m", "tests.http_load", "client"]
ACTOR = "ava@granite.example"
REFUND = "order.refund_missing_discount"
TO_CARD = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0
RACE_TIMEOUT = 1800.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(extra: dict[str, str]) -> dict[str, str]:
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": pythonpath, **extra}


@dataclass
class Service:
    """One running service: its command, its process (a group leader) and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Deployment:
    """countersign's services as separate processes on one database (see the module)."""

    database_url: str
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    services: list[Service] = field(default_factory=list)
    base: str = ""

    def _start(self, name: str, *args: str) -> Service:
        log = self.workdir / f"{name}.log"
        env = _env({"COUNTERSIGN_DATABASE_URL": self.database_url, **self.env})
        with log.open("wb") as out:
            process = subprocess.Popen(
                [*CLI, *args],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: orphans are findable
            )
        service = Service(name, process, log)
        self.services.append(service)
        return service

    def serve(self, workers: int = 2, *options: str) -> str:
        """Start ``serve --workers N`` (and ``options``) and wait until /readyz answers 200;
        its base URL."""
        port = free_port()
        self.env.setdefault("COUNTERSIGN_SECURE_COOKIES", "0")
        # Nothing forwards to this port: the local scrape of /metrics may read it.
        self.env.setdefault("COUNTERSIGN_METRICS_LOCAL", "1")
        address = ("--host", "127.0.0.1", "--port", str(port))
        service = self._start(
            *("serve", "serve", "--create"),  # the first service makes the tables
            *address,
            *("--workers", str(workers)),
            *options,
        )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if service.process.poll() is not None:
                raise RuntimeError(f"serve exited {service.process.returncode}:\n{service.tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/readyz", timeout=5).status_code == 200:
                    return self.base
            time.sleep(0.2)
        raise RuntimeError(f"serve was not ready within {START_TIMEOUT:.0f} s:\n{service.tail()}")

    def projections(self) -> Service:
        return self._start("projections", "projections", "run")

    def worker(self, interval: float = 1.0) -> Service:
        return self._start("worker", "worker", "--interval", str(interval))

    def cpu_seconds(self) -> dict[str, float]:
        """Each running service's CPU time so far (its whole process group), and each of the
        database server's backends now connected to the deployment's database (PostgreSQL,
        keyed ``database <pid>``); ``cpu_spent`` turns two of these into what was spent."""
        stats = _process_stats()
        spent = {
            service.name: sum(cpu for group, cpu in stats.values() if group == service.process.pid)
            for service in self.services
        }
        for pid in database_backends(self.database_url) if stats else ():
            if pid in stats:
                spent[f"database {pid}"] = stats[pid][1]
        return spent

    def stop(self) -> list[str]:
        """SIGTERM every service (the last started first) and wait; what went wrong, if
        anything: a service that did not stop in time or exited non-zero, and any process
        left in a service's group afterwards."""
        problems: list[str] = []
        for service in reversed(self.services):
            if service.process.poll() is None:
                service.process.send_signal(signal.SIGTERM)
        for service in reversed(self.services):
            try:
                code = service.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append(f"{service.name} did not stop within {STOP_TIMEOUT:.0f} s")
                service.process.kill()
                code = service.process.wait()
            if code != 0:
                problems.append(f"{service.name} exited {code}:\n{service.tail()}")
            if _group_alive(service.process.pid):
                problems.append(f"{service.name} left processes behind in its group")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(service.process.pid, signal.SIGKILL)
        self.services.clear()
        return problems

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The CPU seconds each service spent between two ``Deployment.cpu_seconds``, with the
    database backends summed as ``database`` (a backend that ended meanwhile is left out)."""
    spent: dict[str, float] = {}
    for key, seconds in after.items():
        name = key.split(" ", 1)[0]
        spent[name] = spent.get(name, 0.0) + seconds - before.get(key, 0.0)
    return {name: round(seconds, 2) for name, seconds in spent.items()}


def _process_stats() -> dict[int, tuple[int, float]]:
    """Every process's group and CPU time (user + system, seconds) now, by process id, from
    /proc (Linux; empty elsewhere)."""
    if not Path("/proc/self/stat").exists():
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        # The command name (field 2) is in parentheses and may hold spaces: split after it.
        fields = stat[stat.rindex(")") + 2 :].split()
        # Fields 5 (the process group), 14 and 15 (utime and stime, in clock ticks).
        found[int(entry.name)] = (int(fields[2]), (int(fields[11]) + int(fields[12])) / ticks)
    return found


def database_backends(database_url: str) -> list[int]:
    """The process ids of the PostgreSQL server's backends connected to this database (the
    server on this machine: their CPU time is read from /proc); none for SQLite."""
    if not database_url.startswith("postgresql"):
        return []
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return [int(row[0]) for row in rows]


def _group_alive(pgid: int) -> bool:
    """Whether any process is left in the group (the services' groups end with them)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        time.sleep(0.1)
    return True


# -- the load --------------------------------------------------------------------------------


@dataclass
class Loaded:
    """What the clients approve, and the tokens they approve with (one per client)."""

    ids: list[str]
    tokens: list[str]


def load(database_url: str, proposals: int, clients: int, say: Any = None) -> Loaded:
    """Seed the demo clubs, then ``proposals`` card refunds each on an order of its own, and
    one API token per client (acting as Ava, who may approve refunds)."""
    from countersign.domain.club.organization import Organization
    from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.demo.seed import _order, seed
    from countersign.infrastructure.identity.tokens import issue_token
    from countersign.infrastructure.settings import Settings

    cs = bootstrap(Settings(database_url=database_url))
    try:
        seed(cs)
        org = cs.store.get(Organization.create_id("granite"), Organization)
        run = uuid4().hex[:8]
        ids = []
        for i in range(proposals):
            order = _order(
                cs, org, f"load-{run}-{i}", "Load Tester", "load@example.com", CARD_OK, ""
            )
            created = cs.proposals.propose(
                organization="granite",
                actor=ACTOR,
                operation=REFUND,
                resource_id=str(order.id),
                request=dict(TO_CARD),
            )
            ids.append(created.proposal_id)
            if say is not None and (i + 1) % 250 == 0:
                say(f"loaded {i + 1}/{proposals} proposals")
        tokens = [
            issue_token(
                cs,
                "granite",
                f"load-{run}-{k}",
                ["orders.refund"],
                issued_by=ACTOR,
                kind="approver",
            ).token
            for k in range(clients)
        ]
        return Loaded(ids, tokens)
    finally:
        cs.close()


# -- the clients -----------------------------------------------------------------------------


@dataclass
class Answer:
    """One approve request: which proposal, the status, the body, how long it took."""

    proposal_id: str
    status: int
    body: dict[str, Any] | None
    seconds: float


@dataclass
class Race:
    """Every client's answers, and the wall time from the start signal to the last answer."""

    answers: list[Answer]
    seconds: float
    client_cpu_seconds: float = 0.0
    """The CPU time the client processes used from the start signal to their last answer:
    the load generator's own share of the machine it shares with the server."""
    service_cpu_seconds: dict[str, float] = field(default_factory=dict)
    """Each service's CPU time (all its processes) from just before the clients started to
    their last answer: what the server side spent on the race, whatever else runs."""


def race(base: str, loaded: Loaded, workdir: Path, deployment: Deployment | None = None) -> Race:
    """Start one client process per token, release them together, gather every answer
    (and, given the ``deployment``, what each of its services spent on it)."""
    ids_file = workdir / "proposal_ids.json"
    ids_file.write_text(json.dumps(loaded.ids))
    clients: list[subprocess.Popen[str]] = []
    outputs = []
    try:
        for number, token in enumerate(loaded.tokens):
            out = workdir / f"client-{number}.json"
            outputs.append(out)
            order = str(number // 2)  # pairs share an order: two requests arrive together
            clients.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.http_load",
                        "client",
                        base,
                        order,
                        str(ids_file),
                        str(out),
                    ],
                    cwd=REPO,
                    env=_env({"COUNTERSIGN_LOAD_TOKEN": token}),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for client in clients:
            assert client.stdout is not None
            if client.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a client did not start: {client.communicate()[1][-2000:]}")
        services_before = deployment.cpu_seconds() if deployment else {}
        started = time.time()
        for client in clients:
            assert client.stdin is not None
            client.stdin.write("go\n")
            client.stdin.flush()
        for client in clients:
            _, err = client.communicate(timeout=RACE_TIMEOUT)
            if client.returncode != 0:
                raise RuntimeError(f"a client exited {client.returncode}: {err[-2000:]}")
        services_after = deployment.cpu_seconds() if deployment else {}
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()
                client.communicate()
    answers: list[Answer] = []
    finished = started
    cpu = 0.0
    for out in outputs:
        document = json.loads(out.read_text())
        finished = max(finished, document["finished"])
        cpu += document["cpu_seconds"]
        answers += [Answer(*answer) for answer in document["answers"]]
    return Race(answers, finished - started, cpu, cpu_spent(services_before, services_after))


class KeepAlive:
    """A lean HTTP/1.1 client over one keep-alive connection, for the race: the load
    generator shares the cores with the server, and httpx spent about 1 ms of CPU per
    request there (this, a tenth of it). It sends a body-less POST and reads an answer
    framed by ``Content-Length``, which every answer of the API has; anything else it
    cannot read raises. A reused connection the server had closed before answering a
    byte is opened again once, as any HTTP client does; a request is never sent again
    once an answer began."""

    def __init__(self, base: str, headers: dict[str, str], timeout: float) -> None:
        address = urlsplit(base)
        if address.scheme != "http" or address.hostname is None:
            raise ValueError(f"KeepAlive speaks plain http:// only, not {base!r}")
        self.address = (address.hostname, address.port or 80)
        self.timeout = timeout
        lines = [f"Host: {address.netloc}", *(f"{k}: {v}" for k, v in headers.items())]
        self.head = "\r\n".join([*lines, "Content-Length: 0", "", ""]).encode("latin-1")
        self.sock: socket.socket | None = None
        self.buffer = b""

    def post(self, path: str) -> tuple[int, bytes]:
        """POST ``path`` without a body; the answer's status and body."""
        request = f"POST {path} HTTP/1.1\r\n".encode("latin-1") + self.head
        if self.sock is not None:
            try:
                return self._exchange(request)
            except _NothingAnswered:
                self.close()  # it was closed while idle: open another, once
        self._connect()
        try:
            return self._exchange(request)
        except _NothingAnswered:
            self.close()
            raise ConnectionError("the server closed the connection without answering") from None

    def _exchange(self, request: bytes) -> tuple[int, bytes]:
        assert self.sock is not None
        try:
            self.sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            raise _NothingAnswered from None
        return self._answer()

    def _connect(self) -> None:
        self.sock = socket.create_connection(self.address, timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def _receive(self) -> bytes:
        assert self.sock is not None
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        return chunk

    def _answer(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buffer:
            chunk = self._receive()
            if not chunk:
                if self.buffer:
                    raise ConnectionError("the connection closed in the middle of an answer")
                raise _NothingAnswered
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers or "transfer-encoding" in headers:
            raise ConnectionError(f"an answer without Content-Length: {status_line}")
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            chunk = self._receive()
            if not chunk:
                raise ConnectionError("the connection closed in the middle of an answer")
            self.buffer += chunk
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> KeepAlive:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class _NothingAnswered(Exception):
    """The connection closed before a byte of the answer arrived."""


def client(base: str, seed: int, ids_file: str, out_file: str) -> None:
    """A client process: approve every proposal once, in an order shuffled by ``seed``."""
    ids: list[str] = json.loads(Path(ids_file).read_text())
    random.Random(seed).shuffle(ids)
    token = os.environ["COUNTERSIGN_LOAD_TOKEN"]
    answers: list[tuple[str, int, Any, float]] = []
    with KeepAlive(base, {"Authorization": f"Bearer {token}"}, timeout=120) as http:
        print("ready", flush=True)
        sys.stdin.readline()
        cpu_started = time.process_time()
        for proposal_id in ids:
            began = time.perf_counter()
            status, content = http.post(f"/api/v1/proposals/{proposal_id}/approve")
            seconds = time.perf_counter() - began
            try:
                body = json.loads(content)
            except ValueError:
                body = None
            answers.append((proposal_id, status, body, seconds))
    cpu_seconds = time.process_time() - cpu_started
    Path(out_file).write_text(
        json.dumps({"answers": answers, "finished": time.time(), "cpu_seconds": cpu_seconds})
    )


# -- the checks and the figures --------------------------------------------------------------


def verify(database_url: str, base: str, loaded: Loaded, result: Race) -> list[str]:
    """Everything suite 4 promises, checked; the problems found (none: it held)."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    problems: list[str] = []
    clients = len(loaded.tokens)
    failed = [a for a in result.answers if a.status != 200]
    server_errors = [a for a in failed if a.status >= 500]
    if failed:
        problems.append(
            f"{len(failed)} answers were not 200 ({len(server_errors)} of them 5xx), e.g. "
            f"{failed[0].status} {failed[0].body}"
        )
    by_proposal: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for answer in result.answers:
        if answer.status == 200 and answer.body is not None:
            by_proposal[answer.proposal_id].append(answer.body)
    stored: dict[str, Any] = {}
    for proposal_id in loaded.ids:
        bodies = by_proposal[proposal_id]
        executed = [b for b in bodies if b["result"] == "executed"]
        if len(bodies) != clients or len(executed) != 1:
            problems.append(f"{proposal_id}: {len(executed)} executions in {len(bodies)} answers")
            continue
        stored[proposal_id] = executed[0]["outcome"]
        for body in bodies:
            if body is executed[0]:
                continue
            if body["result"] == "already_completed":
                if body["outcome"] != stored[proposal_id]:
                    problems.append(f"{proposal_id}: a repeat answered another outcome: {body}")
            elif (body["result"], body["status"], body["reason"]) != (
                "not_approvable",
                "executing",
                "in_progress",
            ):
                problems.append(f"{proposal_id}: unexpected answer {body}")
    # Every repeat after the race answers the one stored outcome.
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {loaded.tokens[0]}"}, timeout=60
    ) as http:
        for proposal_id, outcome in stored.items():
            again = http.post(f"/api/v1/proposals/{proposal_id}/approve")
            body = again.json() if again.status_code == 200 else {}
            if (again.status_code, body.get("result"), body.get("outcome")) != (
                200,
                "already_completed",
                outcome,
            ):
                problems.append(f"{proposal_id}: the repeat answered {again.status_code} {body}")
    cs = bootstrap(Settings(database_url=database_url))
    try:
        requests = {
            str(r["idempotency_key"]): int(str(r["requests"])) for r in cs.sandbox.refunds()
        }
    finally:
        cs.close()
    for proposal_id in loaded.ids:
        key = f"countersign:{REFUND}:{proposal_id}"
        if requests.get(key) != 1:
            problems.append(f"{key}: {requests.get(key, 0)} provider requests")
    return problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])


@dataclass(frozen=True)
class Figures:
    """What a run of suite 4 measured."""

    backend: str
    proposals: int
    clients: int
    workers: int
    requests: int
    seconds: float
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    server_errors: int
    client_cpu_seconds: float = 0.0
    service_cpu_seconds: dict[str, float] = field(default_factory=dict)
    #: Each answer's ``result`` (``executed``, ``already_completed``, ...): how many, and
    #: their p50 and p99 latency in ms (where the tail comes from).
    by_result: dict[str, tuple[int, float, float]] = field(default_factory=dict)

    @property
    def client_cpu_share(self) -> float:
        """The clients' CPU time as a share of every core for the run's wall time."""
        cores = len(os.sched_getaffinity(0))  # the cores this process may use
        return self.client_cpu_seconds / (self.seconds * cores) if self.seconds else 0.0


def _p50_p99(latencies: list[float]) -> tuple[float, float]:
    if len(latencies) < 2:
        return (round(latencies[0], 1),) * 2 if latencies else (0.0, 0.0)
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
    return round(quantiles[49], 1), round(quantiles[98], 1)


def figures(backend: str, loaded: Loaded, result: Race, workers: int) -> Figures:
    latencies = [a.seconds * 1000 for a in result.answers]
    p50, p99 = _p50_p99(latencies)
    grouped: dict[str, list[float]] = {}
    for answer in result.answers:
        kind = str((answer.body or {}).get("result", f"HTTP {answer.status}"))
        grouped.setdefault(kind, []).append(answer.seconds * 1000)
    return Figures(
        backend=backend,
        proposals=len(loaded.ids),
        clients=len(loaded.tokens),
        workers=workers,
        requests=len(result.answers),
        seconds=round(result.seconds, 2),
        requests_per_second=round(len(result.answers) / result.seconds, 1),
        p50_ms=p50,
        p99_ms=p99,
        server_errors=sum(1 for a in result.answers if a.status >= 500),
        client_cpu_seconds=round(result.client_cpu_seconds, 2),
        service_cpu_seconds=dict(result.service_cpu_seconds),
        by_result={kind: (len(ms), *_p50_p99(ms)) for kind, ms in sorted(grouped.items())},
    )


@dataclass
class SuiteRun:
    """A whole run: the figures, what went wrong, and what stopping the deployment found."""

    figures: Figures
    problems: list[str]


def run_suite(
    backend: str,
    database_url: str,
    workdir: Path,
    *,
    proposals: int,
    clients: int,
    workers: int = 2,
    every_service: bool = False,
    say: Any = None,
) -> SuiteRun:
    """Deploy, load, race, verify, stop; the figures and every problem found."""
    deployment = Deployment(database_url, workdir)
    problems: list[str] = []
    try:
        # With every service, the worker runs the sweepers (serve runs them itself only on
        # SQLite, where nothing else is deployed beside it): never two sets at once.
        base = deployment.serve(workers, *(("--no-sweepers",) if every_service else ()))
        if every_service:
            deployment.projections()
            deployment.worker()
        if say:
            say(f"{backend}: {workers} API workers ready at {base}; loading {proposals}")
        loaded = load(database_url, proposals, clients, say)
        if say:
            say(f"{backend}: {clients} clients approve each of {proposals} proposals at once")
        result = race(base, loaded, workdir, deployment)
        problems += verify(database_url, base, loaded, result)
        if every_service:
            problems += services_caught_up(deployment, len(loaded.ids))
    finally:
        problems += deployment.stop()
    return SuiteRun(figures(backend, loaded, result, workers), problems)


def services_caught_up(deployment: Deployment, proposals: int) -> list[str]:
    """With the projection runner and the worker up: the projections catch up with the log
    (readiness reports no lag) and the metrics count every proposal as succeeded; and the
    worker is running its passes."""
    deadline = time.monotonic() + 120
    lag = succeeded = -1.0
    while time.monotonic() < deadline:
        ready = httpx.get(f"{deployment.base}/readyz", timeout=10).json()
        lag = ready["checks"]["projections"].get("max_lag", -1)
        metrics = httpx.get(f"{deployment.base}/metrics", timeout=10).text
        succeeded = sum(
            float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith('countersign_proposals{status="succeeded"}')
        )
        if lag == 0 and succeeded == proposals:
            break
        time.sleep(0.5)
    problems = []
    if lag != 0 or succeeded != proposals:
        problems.append(f"projections: lag {lag}, {succeeded} of {proposals} shown succeeded")
    worker = next(s for s in deployment.services if s.name == "worker")
    if "running reconcile, expire" not in worker.log.read_text():
        problems.append(f"the worker is not running its passes:\n{worker.tail()}")
    return problems


def main(argv: list[str]) -> None:
    command, *args = argv
    if command != "client":
        raise SystemExit(f"unknown command {command!r}")
    base, seed, ids_file, out_file = args
    client(base, int(seed), ids_file, out_file)


if __name__ == "__main__":
    main(sys.argv[1:])
