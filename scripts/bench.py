"""Benchmark: propose -> approve -> succeeded cycles per second, against raw eventsourcing saves.

Run from the repository root:

    .venv/bin/python scripts/bench.py
    .venv/bin/python scripts/bench.py --cycles 1000 --backends postgres --profile

For each backend (a SQLite file in a temporary directory; a PostgreSQL database) it seeds the
demo club and times two cases with one client:

- local: ``email_broadcast.apply_draft`` on granite's broadcast form (every approval changes
  the form; the roster does not change, so revalidation passes);
- card: ``order.refund_missing_discount`` to the original card, one fresh order with a
  4242 4242 4242 4242 sandbox charge per cycle (a discount is refunded only once), all created
  before the timed section.

Each case alternates, block by block, with its reference on the same backend and settings: a
plain eventsourcing Application saving as many events as the block wrote, one event (of the
case's average stored size) per save. The printed ratio is cycles/s divided by raw saves/s.

PostgreSQL: the default database ``countersign_bench`` is dropped and recreated on every run.
A database whose name does not start with ``countersign_bench`` is never dropped: the
benchmark then adds its proposals, orders and charges to whatever is there.

``--profile`` then runs a few more cycles with the store, the sandbox and (on PostgreSQL) the
psycopg driver instrumented, and prints the reads, commits and SQL round trips of each propose
and approve. It changes nothing in the timed figures above it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from countersign.domain.club.organization import Organization  # noqa: E402
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK  # noqa: E402
from countersign.infrastructure.bootstrap import Countersign, bootstrap  # noqa: E402
from countersign.infrastructure.demo.seed import _order, seed  # noqa: E402
from countersign.infrastructure.persistence.sql import postgres_unreachable  # noqa: E402
from countersign.infrastructure.settings import Database, Settings  # noqa: E402
from eventsourcing.application import Application  # noqa: E402
from eventsourcing.domain import Aggregate  # noqa: E402

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench"
BENCH_DATABASE_PREFIX = "countersign_bench"

ORGANIZATION = "granite"
ACTOR = "ava@granite.example"
LOCAL = "email_broadcast.apply_draft"
CARD = "order.refund_missing_discount"
LEAGUES = ["Thursday Seniors"]
TO_CARD = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}
BODY = (
    "Hello Thursday Seniors, the ice is booked for our season opener next week. Draws start "
    "at 1:30 pm sharp; please arrive twenty minutes early to stretch and sweep the sheets. "
    "Coffee and muffins are in the lounge afterwards, and the skips' meeting follows at 4 pm "
    "to settle the schedule for the fall. If you cannot make it, tell your skip by Tuesday so "
    "we can find a spare. Bring clean shoes, your broom and your grippers; the club still has "
    "a few loaner sliders at the front desk. See you on the ice!"
)

# The product targets (shared notes, performance baselines): 5x the one-client approval cycle of
# LangGraph with PostgresSaver (92/s) and with SqliteSaver (133/s) on the baseline machine.
TARGETS = {"postgres": 5 * 92, "sqlite": 5 * 133}
# raw eventsourcing "create + save, 1 event" on the baseline machine, with the settings
# countersign uses (PostgreSQL WITHOUT POSTGRES_ENABLE_DB_FUNCTIONS, whose insert function
# breaks the commit order of notification ids in 9.5.6; SQLite file)
BASELINE_RAW = {"postgres": 838, "sqlite": 2972}

_T0 = time.perf_counter()


def say(message: str) -> None:
    """A progress line, on stderr so that stdout holds only the results."""
    print(f"[{time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


class Progress:
    """Prints how far a long loop got, at most about once a second."""

    def __init__(self, label: str, total: int) -> None:
        self.label = label
        self.total = total
        self.started = time.perf_counter()
        self.last = self.started

    def tick(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last >= 1.0 or done == self.total:
            self.last = now
            rate = done / (now - self.started) if now > self.started else 0.0
            say(f"{self.label}: {done}/{self.total} ({rate:,.0f}/s)")


# -- results --------------------------------------------------------------------------------


@dataclass
class CaseResult:
    backend: str
    operation: str
    cycles: int
    seconds: float
    propose_ms: list[float]
    approve_ms: list[float]
    events: int
    event_bytes: float
    raw_saves: int = 0
    raw_seconds: float = 0.0

    @property
    def cycles_per_s(self) -> float:
        return self.cycles / self.seconds

    @property
    def raw_per_s(self) -> float:
        return self.raw_saves / self.raw_seconds if self.raw_seconds else 0.0

    @property
    def ratio(self) -> float:
        return self.cycles_per_s / self.raw_per_s if self.raw_per_s else 0.0

    @property
    def target(self) -> int | None:
        return TARGETS.get(self.backend) if self.operation == "local" else None


def percentile(values: list[float], p: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


# -- databases ------------------------------------------------------------------------------


def prepare_postgres(url: str) -> None:
    """Drop and recreate the benchmark's own database; create any other one if missing."""
    import psycopg  # here: a SQLite run's client never imports the driver (its peak RSS)
    from psycopg import sql

    db = Database.parse(url)
    with psycopg.connect(
        host=db.host,
        port=db.port,
        user=db.user,
        password=db.password,
        dbname="postgres",
        autocommit=True,
        connect_timeout=5,
    ) as admin:
        name = sql.Identifier(db.dbname)
        if db.dbname.startswith(BENCH_DATABASE_PREFIX):
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
            say(f"postgres: recreated database {db.dbname}")
            return
        exists = admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (db.dbname,)
        ).fetchone()
        if exists is None:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
            say(f"postgres: created database {db.dbname}")
        else:
            say(f"postgres: using the existing database {db.dbname} as it is (not reset)")


def prepare_postgres_with(url: str, **defaults: str) -> Any:
    """``prepare_postgres(url)``, then an autocommit connection to that database (the caller
    closes it), with each of ``defaults`` made the database's own setting (``ALTER DATABASE
    ... SET``): the sessions that connect after it start with it."""
    import psycopg
    from psycopg import sql

    prepare_postgres(url)
    db = Database.parse(url)
    admin = psycopg.connect(
        host=db.host,
        port=db.port,
        user=db.user,
        password=db.password,
        dbname=db.dbname,
        autocommit=True,
    )
    for name, value in defaults.items():
        admin.execute(
            sql.SQL("ALTER DATABASE {} SET {} = {}").format(
                sql.Identifier(db.dbname), sql.Identifier(name), sql.Literal(value)
            )
        )
    return admin


# -- the cycles -----------------------------------------------------------------------------


@dataclass
class Fixture:
    """A seeded countersign and what the cycles act on."""

    cs: Countersign
    form_id: str
    orders: list[str] = field(default_factory=list)

    def local(self, i: int) -> tuple[str, str, dict[str, Any]]:
        request = {
            "filters": {"leagues": LEAGUES},
            "subject": f"Season opener, draft {i}",
            "body": BODY,
        }
        return LOCAL, self.form_id, request

    def card(self, i: int) -> tuple[str, str, dict[str, Any]]:
        return CARD, self.orders.pop(), dict(TO_CARD)


def make_fixture(cs: Countersign, card_orders: int, label: str) -> Fixture:
    seeded = seed(cs)
    fixture = Fixture(cs=cs, form_id=seeded["broadcast_forms"][ORGANIZATION])
    org = cs.store.get(Organization.create_id(ORGANIZATION), Organization)
    run = uuid4().hex[:8]
    progress = Progress(f"{label}: creating card orders with 4242 charges", card_orders)
    for i in range(card_orders):
        order = _order(
            cs,
            org,
            f"bench-{run}-{i}",
            "Bench Participant",
            "bench.participant@example.com",
            CARD_OK,
            "",
        )
        fixture.orders.append(str(order.id))
        progress.tick(i + 1)
    return fixture


def one_cycle(
    cs: Countersign,
    operation: str,
    resource_id: str,
    request: dict[str, Any],
    on_phase: Callable[[str], None] | None = None,
) -> tuple[float, float]:
    """Propose and approve once; the two latencies in ms. Anything but success stops the run."""
    proposals = cs.proposals
    if on_phase:
        on_phase("propose")
    t0 = time.perf_counter()
    created = proposals.propose(
        organization=ORGANIZATION,
        actor=ACTOR,
        operation=operation,
        resource_id=resource_id,
        request=request,
    )
    t1 = time.perf_counter()
    if on_phase:
        on_phase("approve")
    report = proposals.approve(created.proposal_id, ACTOR)
    t2 = time.perf_counter()
    if on_phase:
        on_phase("idle")
    if report.result != "executed" or report.status != "succeeded":
        raise SystemExit(f"{operation}: approval did not succeed: {report}")
    return (t1 - t0) * 1000, (t2 - t1) * 1000


def run_case(
    backend: str, operation: str, fixture: Fixture, raw: RawReference, args: argparse.Namespace
) -> CaseResult:
    """Timed cycles, interleaved block by block with raw saves of as many events.

    Interleaving lets both see the same machine: on a shared 2-core VM a slow second
    would otherwise land on one side of the ratio only.
    """
    cs = fixture.cs
    recorder = cs.app.recorder
    make = fixture.local if operation == "local" else fixture.card
    for i in range(args.warmup):
        one_cycle(cs, *make(-1 - i))
    label = f"{backend} {operation}"
    propose_ms: list[float] = []
    approve_ms: list[float] = []
    seconds = raw_seconds = 0.0
    events = 0
    payload = ""
    event_bytes = 0.0
    blocks = min(args.blocks, args.cycles)
    done = 0
    for block in range(blocks):
        size = args.cycles * (block + 1) // blocks - done
        first_id = (recorder.max_notification_id() or 0) + 1
        started = time.perf_counter()
        for i in range(done, done + size):
            p, a = one_cycle(cs, *make(i))
            propose_ms.append(p)
            approve_ms.append(a)
        seconds += time.perf_counter() - started
        done += size
        written = (recorder.max_notification_id() or 0) - first_id + 1
        if written < size:
            raise SystemExit(f"{label}: only {written} events reached the store")
        events += written
        if block == 0:
            sizes = [len(n.state) for n in recorder.select_notifications(first_id, limit=written)]
            event_bytes = statistics.fmean(sizes)
            payload = raw.payload_of(round(event_bytes))
        raw_seconds += run_raw(raw, written, payload)
        say(
            f"{label}: {done}/{args.cycles} cycles ({done / seconds:,.0f}/s), "
            f"raw saves {events / raw_seconds:,.0f}/s"
        )
    return CaseResult(
        backend=backend,
        operation=operation,
        cycles=args.cycles,
        seconds=seconds,
        propose_ms=propose_ms,
        approve_ms=approve_ms,
        events=events,
        event_bytes=event_bytes,
        raw_saves=events,
        raw_seconds=raw_seconds,
    )


# -- the raw reference ----------------------------------------------------------------------


class Tick(Aggregate):
    """A trivial aggregate: one Created event per save. Written, never read back."""

    def __init__(self, payload: str) -> None:
        self.payload = payload


class RawReference(Application[UUID]):
    """A plain eventsourcing application with its own table (PostgreSQL) or file (SQLite)."""

    name = "countersign_bench_raw"

    def payload_of(self, stored_bytes: int) -> str:
        """A payload that makes a Tick's stored event about stored_bytes long."""
        event = Tick(payload="").collect_events()[0]
        envelope = len(self.mapper.to_stored_event(event).state)
        return "x" * max(stored_bytes - envelope, 1)

    def warm_up(self) -> None:
        for _ in range(20):
            self.save(Tick(payload="x"))


RAW_SCHEMA = "countersign_bench_raw"


def raw_env(database: Database, sqlite_dir: Path | None) -> dict[str, str]:
    """Countersign's persistence settings with the library's stock recorder and factory (as
    in the baseline figures), the reference kept apart from countersign's data."""
    env = database.eventsourcing_env()
    env.pop("APPLICATION_RECORDER_TOPIC", None)
    if database.kind == "sqlite":
        # The library's own SQLite persistence (countersign's factory caches statements).
        env["PERSISTENCE_MODULE"] = "eventsourcing.sqlite"
        # eventsourcing's SQLite recorder always names its table stored_events: own file.
        assert sqlite_dir is not None
        env["SQLITE_DBNAME"] = str(sqlite_dir / "raw_reference.db")
        return env
    # With POSTGRES_ENABLE_DB_FUNCTIONS=y, eventsourcing 9.5.6 names its insert function
    # es_insert_events_uuid per schema, not per table, and (re)creates it at start-up: a second
    # application in countersign's schema would send countersign's events to its own table.
    # Hence a schema of its own.
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        host=database.host,
        port=database.port,
        user=database.user,
        password=database.password,
        dbname=database.dbname,
        autocommit=True,
    ) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(RAW_SCHEMA)))
    env["POSTGRES_SCHEMA"] = RAW_SCHEMA
    # The library's own PostgreSQL factory (countersign's sets its connections' timeout).
    env["PERSISTENCE_MODULE"] = "eventsourcing.postgres"
    return env


def run_raw(app: RawReference, saves: int, payload: str) -> float:
    started = time.perf_counter()
    for _ in range(saves):
        app.save(Tick(payload=payload))
    return time.perf_counter() - started


# -- the profile ----------------------------------------------------------------------------


def _topic_class(topic: str) -> str:
    return topic.partition(":")[2].split(".")[0] or topic


def _sql_kind(text: str) -> str:
    words = text.strip().split(None, 1)
    verb = words[0].upper() if words else "?"
    if "es_insert_events" in text:
        return "INSERT events (library db function)"
    if "_events_commit" in text or "_events_insert" in text:
        return "commit events (countersign's insert function: lock, read-set check, insert)"
    if "sandbox_" in text:
        return f"{verb} sandbox"
    if "_events" in text:
        return f"{verb} events"
    return verb


@dataclass
class PhaseStats:
    calls: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    ms: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    sql: Counter[str] = field(default_factory=Counter)
    reads: list[tuple[UUID, str, int]] = field(default_factory=list)  # the last call's reads
    writes: list[int] = field(default_factory=list)  # the last call's events per commit


class Probe:
    """Counts store reads, store commits, sandbox transactions and psycopg round trips."""

    def __init__(self, cs: Countersign) -> None:
        self.cs = cs
        self.phase = "idle"
        self.stats: dict[str, PhaseStats] = defaultdict(PhaseStats)
        self.topics: dict[UUID, str] = {}

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        if phase != "idle":
            stats = self.stats[phase]
            stats.calls += 1
            stats.reads = []
            stats.writes = []

    @contextmanager
    def installed(self) -> Iterator[Probe]:
        recorder = self.cs.app.recorder
        select_events = recorder.select_events
        insert_events = recorder.insert_events
        sql = self.cs.sql
        transaction = sql.transaction
        statements = sql.statements
        probe = self

        def timed_select(originator_id: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            rows = select_events(originator_id, **kwargs)
            stats = probe.stats[probe.phase]
            stats.ms["store reads"] += (time.perf_counter() - t0) * 1000
            mode = "cached, fast-forward" if kwargs.get("gt") is not None else "full load"
            stats.counts[f"store read ({mode})"] += 1
            stats.reads.append((UUID(str(originator_id)), mode, len(rows)))
            return rows

        def timed_insert(stored_events: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            result = insert_events(stored_events, **kwargs)
            stats = probe.stats[probe.phase]
            stats.ms["store commits"] += (time.perf_counter() - t0) * 1000
            stats.counts["store commit"] += 1
            stats.counts["events written"] += len(stored_events)
            stats.writes.append(len(stored_events))
            return result

        def timed(begin: Callable[..., AbstractContextManager[Any]]) -> Callable[..., Any]:
            @contextmanager
            def timed_transaction(**kwargs: Any) -> Iterator[Any]:
                t0 = time.perf_counter()
                try:
                    with begin(**kwargs) as cursor:
                        yield cursor
                finally:
                    stats = probe.stats[probe.phase]
                    stats.ms["sandbox"] += (time.perf_counter() - t0) * 1000
                    stats.counts["sandbox transaction"] += 1

            return timed_transaction

        with ExitStack() as stack:
            recorder.select_events = timed_select  # type: ignore[method-assign]
            recorder.insert_events = timed_insert  # type: ignore[method-assign]
            # The sandbox's transactions, and its statements that are one (a PostgreSQL
            # refund is one call of its server-side function).
            sql.transaction = timed(transaction)  # type: ignore[method-assign]
            sql.statements = timed(statements)  # type: ignore[method-assign]
            stack.callback(delattr, recorder, "select_events")
            stack.callback(delattr, recorder, "insert_events")
            stack.callback(delattr, sql, "transaction")
            stack.callback(delattr, sql, "statements")
            if self.cs.database.kind == "postgres":
                stack.enter_context(self._psycopg_counted())
            yield self
        for aggregate_id in {r[0] for s in self.stats.values() for r in s.reads}:
            stored = recorder.select_events(aggregate_id, limit=1)
            self.topics[aggregate_id] = _topic_class(stored[0].topic) if stored else "?"

    def _psycopg_counted(self) -> AbstractContextManager[None]:
        """Count every statement psycopg sends: cursor executes, and BEGIN/COMMIT/ROLLBACK."""
        import psycopg
        from psycopg import sql
        from psycopg._connection_base import BaseConnection

        execute = psycopg.Cursor.execute
        exec_command = BaseConnection._exec_command
        probe = self

        def text_of(query: Any, context: Any) -> str:
            if isinstance(query, bytes):
                return query.decode(errors="replace")
            if isinstance(query, sql.Composable):
                return query.as_string(context)
            return str(query)

        def counted_execute(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            probe.stats[probe.phase].sql[_sql_kind(text_of(query, cursor))] += 1
            return execute(cursor, query, *args, **kwargs)

        def counted_command(conn: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
            probe.stats[probe.phase].sql[_sql_kind(text_of(command, conn))] += 1
            return exec_command(conn, command, *args, **kwargs)

        @contextmanager
        def patched() -> Iterator[None]:
            psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign,assignment]
            BaseConnection._exec_command = counted_command  # type: ignore[method-assign,assignment]
            try:
                yield
            finally:
                psycopg.Cursor.execute = execute  # type: ignore[method-assign]
                BaseConnection._exec_command = exec_command  # type: ignore[method-assign]

        return patched()


def run_profile(backend: str, operation: str, fixture: Fixture, cycles: int) -> None:
    cs = fixture.cs
    make = fixture.local if operation == "local" else fixture.card
    probe = Probe(cs)
    with probe.installed():
        wall: defaultdict[str, float] = defaultdict(float)
        for i in range(cycles):
            p, a = one_cycle(cs, *make(10_000 + i), on_phase=probe.set_phase)
            wall["propose"] += p
            wall["approve"] += a
    print(
        f"\nprofile: {backend} {operation}, {cycles} instrumented cycles "
        "(per call; times include the probe's overhead)"
    )
    for phase in ("propose", "approve"):
        stats = probe.stats[phase]
        n = stats.calls
        counts = ", ".join(f"{v / n:g} {k}" for k, v in sorted(stats.counts.items()))
        print(f"  {phase}: {counts}")
        sequence = ", ".join(
            f"{probe.topics.get(aid, '?')} ({mode}, {rows} rows)" for aid, mode, rows in stats.reads
        )
        print(f"    reads, in order: {sequence}")
        repeated = [
            probe.topics.get(aid, "?")
            for aid, k in Counter(r[0] for r in stats.reads).items()
            if k > 1
        ]
        if repeated:
            print(f"    read more than once in one call: {', '.join(repeated)}")
        print(f"    commits, events in each: {stats.writes}")
        if stats.sql:
            total = sum(stats.sql.values()) / n
            detail = ", ".join(f"{v / n:g} {k}" for k, v in stats.sql.most_common())
            print(f"    SQL round trips: {total:g} = {detail}")
        total_ms = wall[phase] / n
        parts = {k: v / n for k, v in sorted(stats.ms.items())}
        rest = total_ms - sum(parts.values())
        split = " + ".join(f"{v:.2f} {k}" for k, v in parts.items())
        print(f"    time: {total_ms:.2f} ms = {split} + {rest:.2f} Python and the rest")


# -- one backend ----------------------------------------------------------------------------


def run_backend(backend: str, url: str, args: argparse.Namespace) -> list[CaseResult]:
    with ExitStack() as stack:
        sqlite_dir: Path | None = None
        if backend == "sqlite":
            sqlite_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cs-bench-")))
            url = f"sqlite:///{sqlite_dir / 'countersign.db'}"
        else:
            prepare_postgres(url)
        say(f"{backend}: bootstrapping on {url}")
        cs = bootstrap(Settings(database_url=url))
        stack.callback(cs.close)
        raw = RawReference(env=raw_env(cs.database, sqlite_dir))
        stack.callback(raw.close)
        operations = [op for op in ("local", "card") if op in args.operations]
        profile_cycles = args.profile_cycles if args.profile else 0
        card_orders = args.warmup + args.cycles + profile_cycles if "card" in operations else 0
        fixture = make_fixture(cs, card_orders, backend)
        results = []
        raw.warm_up()
        for operation in operations:
            result = run_case(backend, operation, fixture, raw, args)
            say(
                f"{backend} {operation}: {result.cycles_per_s:,.0f} cycles/s, "
                f"{result.events / result.cycles:g} events per cycle, "
                f"raw reference {result.raw_per_s:,.0f} saves/s"
            )
            results.append(result)
        for operation in operations if args.profile else ():
            run_profile(backend, operation, fixture, args.profile_cycles)
        return results


# -- report ---------------------------------------------------------------------------------


def print_table(results: list[CaseResult]) -> None:
    headers = [
        "backend",
        "operation",
        "cycles",
        "cycles/s",
        "propose p50 ms",
        "approve p50 ms",
        "approve p99 ms",
        "events/cycle",
        "raw saves/s",
        "ratio",
        "target cycles/s",
    ]
    rows = []
    for r in results:
        target = r.target
        rows.append(
            [
                r.backend,
                r.operation,
                f"{r.cycles:,}",
                f"{r.cycles_per_s:,.0f}",
                f"{percentile(r.propose_ms, 50):.2f}",
                f"{percentile(r.approve_ms, 50):.2f}",
                f"{percentile(r.approve_ms, 99):.2f}",
                f"{r.events / r.cycles:g}",
                f"{r.raw_per_s:,.0f}",
                f"{r.ratio:.3f}",
                f"{target:,} ({r.cycles_per_s / target:.0%} of it)" if target else "-",
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    print()
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(
            " | ".join(
                cell.ljust(w) if i < 2 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    print()
    print("cycle = propose + approve until Succeeded, one client; approve latency per call.")
    print("raw saves/s = a plain eventsourcing Application on the same backend and settings")
    print("  (the library's own recorder and persistence factory),")
    print("  one event per save, as many saves as the case wrote events, event size alike,")
    print("  alternating with the cycles in blocks")
    sizes = ", ".join(f"{r.backend} {r.operation} {r.event_bytes:,.0f} B" for r in results)
    print(f"  (average stored event: {sizes}).")
    print("ratio = cycles/s / raw saves/s, measured in this run (machine-independent).")
    print("target = 5x the LangGraph approval cycle on the baseline machine, local operation:")
    for backend, target in TARGETS.items():
        ratio = target / BASELINE_RAW[backend]
        print(
            f"  {backend}: {target}/s; as a ratio to that machine's raw saves "
            f"({BASELINE_RAW[backend]:,}/s): {ratio:.3f}"
        )
    for r in results:
        if r.target:
            wanted = r.target / BASELINE_RAW[r.backend]
            print(
                f"  {r.backend} local: ratio {r.ratio:.3f} vs {wanted:.3f} wanted "
                f"-> {r.ratio / wanted:.0%} of the target, adjusted to this machine "
                f"(scaled target {wanted * r.raw_per_s:,.0f} cycles/s)"
            )


def run_child(backend: str, argv: list[str]) -> dict[str, Any] | None:
    """Run this benchmark for one backend in a child process; its results, or None."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "results.json"
        keep = [a for a in argv if not a.startswith("--backends")]
        if "--backends" in argv:  # "--backends X" as two words
            at = argv.index("--backends")
            keep = argv[:at] + argv[at + 2 :]
        command = [sys.executable, __file__, *keep, "--backends", backend, "--results-to", str(out)]
        try:  # a run takes minutes; one that takes an hour is stuck
            status = subprocess.run(command, check=False, timeout=3600).returncode
        except subprocess.TimeoutExpired:
            print(f"{backend}: the benchmark did not finish in an hour; stopped", flush=True)
            return None
        if status != 0 or not out.exists():
            return None
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def peak_rss_mb() -> float:
    """This process's peak resident memory since start, or since ``reset_peak_rss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _psycopg_version() -> str:
    """The driver's version (imported here, after every figure: a SQLite run's client never
    imports it)."""
    import psycopg

    return f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__} implementation)"


def main(argv: list[str] | None = None) -> int:
    after_imports = peak_rss_mb()
    load_before = os.getloadavg()[0]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--cycles",
        type=int,
        default=250,
        help="timed cycles per case (default 250: about 15 s in all)",
    )
    parser.add_argument("--warmup", type=int, default=20, help="untimed cycles first")
    parser.add_argument(
        "--blocks", type=int, default=10, help="alternate cycles and raw saves in this many blocks"
    )
    parser.add_argument(
        "--backends", default="sqlite,postgres", help="comma-separated: sqlite,postgres"
    )
    parser.add_argument("--operations", default="local,card", help="comma-separated: local,card")
    parser.add_argument(
        "--postgres-url",
        default=DEFAULT_POSTGRES_URL,
        help=f"default {DEFAULT_POSTGRES_URL} (dropped and recreated)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="then count reads, commits and SQL round trips per call",
    )
    parser.add_argument("--profile-cycles", type=int, default=50)
    parser.add_argument("--results-to", help=argparse.SUPPRESS)  # a child's JSON results
    args = parser.parse_args(argv)
    args.operations = [o.strip() for o in args.operations.split(",") if o.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - set(TARGETS) | set(args.operations) - {"local", "card"}
    if unknown:
        parser.error(f"unknown backend or operation: {', '.join(sorted(unknown))}")
    if min(args.cycles, args.blocks, args.profile_cycles) < 1 or args.warmup < 0:
        parser.error("--cycles, --blocks and --profile-cycles must be at least 1")

    results: list[CaseResult] = []
    failed = []
    peaks: dict[str, float] = {}
    for backend in backends:
        if len(backends) > 1:
            # Each backend in a process of its own, so that its peak memory is its own.
            child = run_child(backend, argv or [])
            if child is None:
                failed.append(backend)
                continue
            results += [CaseResult(**case) for case in child["results"]]
            peaks[backend] = child["peak_rss_mb"]
            continue
        try:
            results += run_backend(backend, args.postgres_url, args)
            peaks[backend] = peak_rss_mb()
            say(f"{backend}: done; peak client RSS {peaks[backend]:.1f} MB")
        except postgres_unreachable() as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            say(f"{backend}: skipped, cannot reach PostgreSQL at {args.postgres_url}: {first}")
            failed.append(backend)
    if args.results_to:
        document = {"results": [asdict(r) for r in results], "peak_rss_mb": peak_rss_mb()}
        Path(args.results_to).write_text(json.dumps(document))
        return 1 if failed else 0
    if results:
        print_table(results)
    print(
        "\npeak client RSS, each backend in a process of its own (the product's budget is "
        "60 MB): "
        + ", ".join(f"{backend} {mb:.1f} MB" for backend, mb in peaks.items())
        + f"; {after_imports:.1f} MB after imports"
    )
    print(
        f"python {sys.version.split()[0]}, {_psycopg_version()}, SQLite {sqlite3.sqlite_version}; "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after "
        f"({os.cpu_count()} CPUs: other work on the machine skews the absolute figures)"
    )
    return 1 if failed else 0


SUITES = {
    "projections": "bench_projections",  # rebuild speed, memory, live lag
    "assistant": "bench_assistant",  # context and schema sizes, app time per turn
    "http": "bench_http",  # suite 4 through `serve --workers 2`: latency p50/p99, requests/s
}


def dispatch(argv: list[str]) -> int:
    """``bench.py`` runs the approval cycles; ``bench.py projections|assistant|http|all ...`` the
    other suites (each is also runnable on its own)."""
    if argv and argv[0] in (*SUITES, "all"):
        import importlib

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        names = list(SUITES) if argv[0] == "all" else [argv[0]]
        status = main([]) if argv[0] == "all" else 0
        for name in names:
            module = importlib.import_module(SUITES[name])
            sys.argv = [f"{name} benchmark", *([] if argv[0] == "all" else argv[1:])]
            module.main()
        return status
    return main(argv)


if __name__ == "__main__":
    sys.exit(dispatch(sys.argv[1:]))
