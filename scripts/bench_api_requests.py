"""Benchmark: what one approve request costs the server, in-process, without the noise of a race.

    .venv/bin/python scripts/bench_api_requests.py --prepare 200   # once: the proposals
    .venv/bin/python scripts/bench_api_requests.py --proposals 150

    valgrind --tool=callgrind --callgrind-out-file=/tmp/api.20 \\
        .venv/bin/python scripts/bench_api_requests.py --proposals 20
    valgrind --tool=callgrind --callgrind-out-file=/tmp/api.60 \\
        .venv/bin/python scripts/bench_api_requests.py --proposals 60

``--prepare N`` loads N card-refund proposals and an approver token into a template database
(``countersign_bench_api_template``, or ``--template NAME`` for one of your own on a shared
server, given to the runs too; as ``scripts/bench.py http`` loads them). A run copies
it into a database of its own, wires countersign and the whole ASGI application
(``server.compose``: the API, the pages, the operator's routes) in this process and sends
approve requests straight to it, with no HTTP server and no other process: for each
proposal one execution and seven repeats, as the eight clients of ``bench.py http`` do. It
prints the CPU milliseconds per request and the round trips per request to PostgreSQL
(statements, and the BEGIN or COMMIT of a transaction). On a shared machine the CPU time
drifts with the load; callgrind's instruction count does not: run it at two sizes and
divide the difference by the difference in requests (eight per proposal), which leaves the
process's start out.

An execution costs far more than a repeat, so the two are told apart: the round trips are
printed per answer (``succeeded``: the executions, ``already_completed``: the repeats), and
``--repeats N`` sets the repeats per proposal (default 7). With ``--repeats 0`` every request
is an execution, so the two sizes' difference over 40 proposals is one execution's
instructions; the default run's difference less 40 of those, over 280, is one repeat's::

    valgrind --tool=callgrind --callgrind-out-file=/tmp/exec.20 \\
        .venv/bin/python scripts/bench_api_requests.py --proposals 20 --repeats 0

``--profile FILE`` writes cProfile's statistics of the measured requests (CPU time) to FILE,
for ``python -m pstats FILE``: where the instructions go, ranked. cProfile sees only the
thread it runs in, so for it the API's hops to a worker thread are made inline, in the event
loop's thread (``hops.in_thread`` replaced): the requests' work is the same, their hand-over
to a thread is left out. cProfile weighs a Python call more than callgrind does: use it to
rank, and callgrind to count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
# Several server processes share their counters through files, as under `serve --workers 2`.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="bench-api-"))

import psycopg  # noqa: E402

SERVER = "postgresql://postgres@127.0.0.1:5432/"
TEMPLATE = "countersign_bench_api_template"
REPEATS = 7  # bench.py http: eight clients approve each proposal (--repeats)


def _loaded(template: str) -> Path:
    """Where ``--prepare`` leaves the template's proposal ids and token."""
    return Path(tempfile.gettempdir()) / f"{template.replace('_', '-')}.json"


def prepare(proposals: int, template: str) -> None:
    from bench import BENCH_DATABASE_PREFIX, prepare_postgres

    from tests.http_load import load

    if not template.startswith(BENCH_DATABASE_PREFIX):
        raise SystemExit(f"--template must start with {BENCH_DATABASE_PREFIX} (it is dropped)")
    prepare_postgres(SERVER + template)
    loaded = load(SERVER + template, proposals, 1)
    _loaded(template).write_text(json.dumps({"ids": loaded.ids, "token": loaded.tokens[0]}))
    print(f"{proposals} proposals in {template}")


class Counted:
    """Round trips to PostgreSQL: statements (through psycopg's cursors, and countersign's own
    prepared statements, ``pg_statements``: the commits) and transaction commands."""

    def __init__(self) -> None:
        import psycopg._connection_base as connections
        import psycopg._cursor_base as cursors
        from countersign.infrastructure.persistence import pg_statements

        self.statements = self.commands = 0
        start, command = cursors.BaseCursor._start_query, connections.BaseConnection._exec_command
        executed = pg_statements._executed
        # A commit's two transactions, sent together (run_then): one round trip; so are a
        # refused one's rollback and the transaction after it.
        pipelined = pg_statements._pipelined
        rolled_back = pg_statements._roll_back

        def counted_start(cursor: Any, *args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return start(cursor, *args, **kwargs)

        def counted_executed(*args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return executed(*args, **kwargs)

        def counted_pipelined(*args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return pipelined(*args, **kwargs)

        def counted_rolled_back(*args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return rolled_back(*args, **kwargs)

        def counted_command(connection: Any, *args: Any, **kwargs: Any) -> Any:
            self.commands += 1
            return command(connection, *args, **kwargs)

        cursors.BaseCursor._start_query = counted_start  # type: ignore[method-assign]
        pg_statements._executed = counted_executed
        pg_statements._pipelined = counted_pipelined
        pg_statements._roll_back = counted_rolled_back
        connections.BaseConnection._exec_command = counted_command  # type: ignore[method-assign]


async def _approve(app: Any, token: str, proposal_id: str) -> str:
    """POST approve (no body) to the ASGI app; the answer's ``result``."""
    path = f"/api/v1/proposals/{proposal_id}/approve"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", b"0"),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # never disconnects
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent[1:])
    if sent[0]["status"] != 200:
        raise RuntimeError(f"approve answered {sent[0]['status']}: {body[:300]!r}")
    return str(json.loads(body)["result"])


def _inline_hops() -> None:
    """Every hop of the API made in the calling thread, with this context's variables."""
    from contextvars import copy_context

    from countersign.infrastructure.entrypoints.http import auth, gate

    async def inline(function: Any, /, *args: Any, **kwargs: Any) -> Any:
        return copy_context().run(function, *args, **kwargs)

    auth.in_thread = gate.in_thread = inline  # type: ignore[attr-defined]


def run(proposals: int, template: str, repeats: int = REPEATS, profile: str | None = None) -> None:
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.observability.logs import configure_logging
    from countersign.infrastructure.server import compose
    from countersign.infrastructure.settings import Settings

    try:
        loaded = json.loads(_loaded(template).read_text())
    except FileNotFoundError:
        raise SystemExit(
            f"no proposals prepared in {template}: run with --prepare 200"
            + (f" --template {template}" if template != TEMPLATE else "")
            + " first"
        ) from None
    warm, ids = loaded["ids"][:5], loaded["ids"][5 : 5 + proposals]
    if len(ids) < proposals:
        raise SystemExit(f"only {len(ids)} proposals prepared: run --prepare with more")
    database = f"countersign_bench_api_{os.getpid()}"
    with psycopg.connect(SERVER + "postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database} TEMPLATE {template}")
    try:
        configure_logging()
        cs = bootstrap(Settings(database_url=SERVER + database))
        try:
            app = compose(cs, secure_cookies=False)
            counted = Counted()
            answered = Answered(counted)

            if profile is not None:
                import cProfile

                _inline_hops()
                profiler = cProfile.Profile(time.process_time)

            async def race() -> float:
                for proposal_id in warm:
                    for _ in range(1 + REPEATS):
                        await _approve(app, loaded["token"], proposal_id)
                started = time.process_time()
                if profile is not None:
                    profiler.enable()
                for proposal_id in ids:
                    for _ in range(1 + repeats):
                        await answered.request(_approve(app, loaded["token"], proposal_id))
                if profile is not None:
                    profiler.disable()
                    profiler.dump_stats(profile)
                return time.process_time() - started

            cpu = asyncio.run(race())
        finally:
            cs.close()
    finally:
        with psycopg.connect(SERVER + "postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    requests = len(ids) * (1 + repeats)
    print(f"{requests} approve requests: CPU {cpu * 1000 / requests:.3f} ms per request")
    print(answered.summary())


class Answered:
    """The round trips of each request, summed by its answer (``result``)."""

    def __init__(self, counted: Counted) -> None:
        self.counted = counted
        #: result -> [requests, statements, BEGIN or COMMIT]
        self.by_result: dict[str, list[int]] = {}

    async def request(self, answer: Any) -> None:
        statements, commands = self.counted.statements, self.counted.commands
        result = await answer
        sums = self.by_result.setdefault(result, [0, 0, 0])
        sums[0] += 1
        sums[1] += self.counted.statements - statements
        sums[2] += self.counted.commands - commands

    def summary(self) -> str:
        """Round trips per request, in all and by answer."""
        requests, statements, commands = (
            sum(s[n] for s in self.by_result.values()) for n in range(3)
        )
        lines = [
            f"round trips per request: {statements / requests:.2f} statements, "
            f"{commands / requests:.2f} BEGIN or COMMIT"
        ]
        for result, (n, s, c) in sorted(self.by_result.items()):
            lines.append(
                f"  {result}: {n} requests, {s / n:.2f} statements, {c / n:.2f} BEGIN or COMMIT"
            )
        return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--prepare", type=int, metavar="N", help="load N proposals first")
    parser.add_argument("--proposals", type=int, default=60, help="how many to approve")
    parser.add_argument("--template", default=TEMPLATE, help=f"the template (default {TEMPLATE})")
    parser.add_argument(
        "--repeats", type=int, default=REPEATS, help=f"repeats per proposal (default {REPEATS})"
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="write cProfile's statistics of the requests to FILE"
    )
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.template)
    else:
        run(args.proposals, args.template, args.repeats, args.profile)


if __name__ == "__main__":
    main()
