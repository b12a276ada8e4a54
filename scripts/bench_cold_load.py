"""Benchmark: a snapshotted aggregate's cold load after 10, 1,000, 10,000 and 100,000 events,
with the store's cold query and with the one it replaced (issue 27).

Run from the repository root:

    .venv/bin/python scripts/bench_cold_load.py
    .venv/bin/python scripts/bench_cold_load.py --events 10,10000 --backends sqlite --repeat 9

For each backend (a SQLite file in a temporary directory; the PostgreSQL database
``countersign_bench_cold_load``, dropped and recreated, or ``--postgres-url``) and each
number of events, it builds a broadcast form (a draft applied, its send started and settled:
three events a round) and a member's passkey ring (one rename an event), about a hundred
events a commit, so the store keeps a snapshot every ``SNAPSHOT_INTERVAL`` events as it does
in use. It then times cold loads (a store that holds nothing, as in a new process; the
database's own cache warm, as in a running server) with the store's query (``now``) and with
the former one (``before``, kept below as ``former_statement``), in blocks of ``--repeat``
loads, the two queries' blocks alternated ``--rounds`` times, and prints the medians and each
aggregate's stored snapshot size (so a snapshot that grew with the history would show). The
machine's other load moves single figures: compare the columns of one run.

Every wait is bounded: a statement waits at most ``--statement-timeout`` seconds, and the run
stops, saying where, once ``--deadline`` seconds have passed. Progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.passkeys import PasskeyRing
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence import store_sql
from countersign.infrastructure.persistence.event_store import EventSourcedStore
from countersign.infrastructure.persistence.stored_snapshots import SNAPSHOT_INTERVAL
from countersign.infrastructure.settings import Settings
from eventsourcing.domain import Aggregate
from eventsourcing.sqlite import SQLiteAggregateRecorder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Progress, prepare_postgres, say  # the benchmark's own database, reset

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_cold_load"

CURRENT_STATEMENT = store_sql.select_statement


def former_statement(
    recorder: Any,
    table: str,
    snapshot_table: str,
    after: list[tuple[UUID, int]],
    cold: Sequence[UUID],
) -> tuple[str, list[Any]] | None:
    """The cold query as it was until issue 27: its events joined to the snapshot's version
    by ``LEFT JOIN ... > COALESCE(l.v, 0)``, which no index serves, so both databases read
    every event of the aggregate. (The hot path is the store's own.)"""
    if not cold or after:
        return CURRENT_STATEMENT(recorder, table, snapshot_table, after, cold)
    sqlite = isinstance(recorder, SQLiteAggregateRecorder)
    marks = ", ".join("?" if sqlite else "%s" for _ in cold)
    sql = (
        f"WITH latest AS (SELECT s.originator_id AS oid, MAX(s.originator_version) AS v "
        f"FROM {snapshot_table} s WHERE s.originator_id IN ({marks}) "
        f"AND s.originator_version <= (SELECT MAX(e.originator_version) "
        f"FROM {table} e WHERE e.originator_id = s.originator_id) "
        f"GROUP BY s.originator_id) "
        f"SELECT 0 AS kind, s.originator_id, s.originator_version, s.topic, s.state "
        f"FROM {snapshot_table} s JOIN latest l "
        f"ON s.originator_id = l.oid AND s.originator_version = l.v "
        f"UNION ALL "
        f"SELECT 1 AS kind, e.originator_id, e.originator_version, e.topic, e.state "
        f"FROM {table} e LEFT JOIN latest l ON e.originator_id = l.oid "
        f"WHERE e.originator_id IN ({marks}) AND e.originator_version > COALESCE(l.v, 0) "
        f"ORDER BY 2, 1, 3"
    )
    ids = [i.hex if sqlite else i for i in cold]
    return sql, [*ids, *ids]


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.perf_counter() + seconds

    def check(self, where: str) -> None:
        if time.perf_counter() > self.ends:
            raise SystemExit(
                f"bench_cold_load: stopped at {where}: past --deadline {self.seconds} s"
            )


def build_form(cs: Countersign, events: int, deadline: Deadline) -> UUID:
    """A broadcast form with ``events`` events (one opening it, three a send round)."""
    rounds = max(1, (events - 1) // 3)
    progress = Progress(f"broadcast form, {1 + 3 * rounds:,} events", rounds)
    form = BroadcastForm(uuid4())
    cs.store.save(form)
    per_commit = SNAPSHOT_INTERVAL // 3
    for n in range(rounds):
        if n % per_commit == 0:
            form = cs.store.get(form.id, BroadcastForm)
        form.apply_draft({"leagues": ["Thursday Seniors"]}, f"Draft {n}", "Body " * 20, uuid4())
        proposal = uuid4()
        form.start_send(proposal, form.drafts_applied, f"countersign:send:{proposal}", 40)
        form.settle_send(proposal, delivery_ref=f"msg_{n}", sent_by="ava@example.org")
        if (n + 1) % per_commit == 0 or n + 1 == rounds:
            cs.store.save(form, final=True)
            progress.tick(n + 1)
            deadline.check("building a broadcast form")
    return form.id


def build_ring(cs: Countersign, events: int, deadline: Deadline) -> UUID:
    """A member's passkey ring with ``events`` events (opened, a passkey registered, renames)."""
    renames = max(0, events - 2)
    progress = Progress(f"passkey ring, {2 + renames:,} events", renames)
    ring = PasskeyRing(organization_id=uuid4(), email=f"{uuid4().hex}@example.org")
    ring.register(
        credential_id="phone",
        public_key="pk",
        name="Phone",
        rp_id="example.org",
        sign_count=0,
        membership_id=None,
        at=datetime.now(UTC),
    )
    cs.store.save(ring)
    for n in range(renames):
        if n % SNAPSHOT_INTERVAL == 0:
            ring = cs.store.get(ring.id, PasskeyRing)
        ring.rename("phone", f"Phone {n}")
        if (n + 1) % SNAPSHOT_INTERVAL == 0 or n + 1 == renames:
            cs.store.save(ring, final=True)
            progress.tick(n + 1)
            deadline.check("building a passkey ring")
    return ring.id


def cold_load_ms(cs: Countersign, aggregate_id: UUID, statement: Callable[..., Any]) -> float:
    store_sql.select_statement = statement
    try:
        store = EventSourcedStore(cs.app)  # holds nothing: a new process
        started = time.perf_counter()
        store.get(aggregate_id, Aggregate, shared=True)
        return (time.perf_counter() - started) * 1000
    finally:
        store_sql.select_statement = CURRENT_STATEMENT


def stored_snapshot(cs: Countersign, aggregate_id: UUID) -> tuple[int, int]:
    """The version and size in bytes of the aggregate's stored snapshot (0, 0: none)."""
    stored = cs.app.snapshot_recorder.select_events(aggregate_id, desc=True, limit=1)
    return (stored[0].originator_version, len(stored[0].state)) if stored else (0, 0)


Row = tuple[str, str, int, int, int, float, float]


def measure(
    cs: Countersign, backend: str, what: str, aggregate_id: UUID, args: Any, deadline: Deadline
) -> Row:
    version = EventSourcedStore(cs.app).get(aggregate_id, Aggregate, shared=True).version
    now: list[float] = []
    before: list[float] = []
    pair = [(now, CURRENT_STATEMENT)]
    if args.before:
        pair.append((before, former_statement))
    # Alternated by blocks, each led by an untimed load: the former query's scan of 100,000
    # events evicts SQLite's page cache, so a load timed right after it would pay for that.
    for block in range(args.rounds):
        for times, statement in pair if block % 2 == 0 else pair[::-1]:
            cold_load_ms(cs, aggregate_id, statement)
            for _ in range(args.repeat):
                times.append(cold_load_ms(cs, aggregate_id, statement))
            deadline.check(f"timing {what} on {backend}")
    snapshot_version, size = stored_snapshot(cs, aggregate_id)
    now_ms = statistics.median(now)
    before_ms = statistics.median(before) if before else float("nan")
    row = (backend, what, version, version - snapshot_version, size, now_ms, before_ms)
    say(f"{backend}: {what} at {version:,} events: now {now_ms:.2f} ms, before {before_ms:.2f} ms")
    return row


def run(backend: str, args: argparse.Namespace, deadline: Deadline) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        if backend == "sqlite":
            url = f"sqlite:///{tmp}/bench.db"
        else:
            prepare_postgres(args.postgres_url)
            url = args.postgres_url
        settings = Settings(database_url=url, database_timeout=args.statement_timeout)
        cs = bootstrap(settings, create=True)
        rows = []
        try:
            for events in args.events:
                form_id = build_form(cs, events, deadline)
                ring_id = build_ring(cs, events, deadline)
                rows.append(measure(cs, backend, "broadcast form", form_id, args, deadline))
                rows.append(measure(cs, backend, "passkey ring", ring_id, args, deadline))
        finally:
            cs.close()
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--events", default="10,1000,10000,100000", help="comma-separated")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite,postgres")
    parser.add_argument("--repeat", type=int, default=7, help="cold loads timed in a block")
    parser.add_argument("--rounds", type=int, default=3, help="blocks of each query, alternated")
    parser.add_argument(
        "--no-before",
        dest="before",
        action="store_false",
        help="time the store's query alone (the former one's scans evict the database's cache)",
    )
    parser.add_argument("--postgres-url", default=POSTGRES_URL)
    parser.add_argument("--statement-timeout", type=float, default=30.0, help="seconds")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds for the run")
    args = parser.parse_args(argv)
    args.events = [int(s) for s in args.events.split(",")]
    deadline = Deadline(args.deadline)
    rows = []
    for backend in args.backends.split(","):
        rows += run(backend, args, deadline)
    print(
        f"\ncold load, ms (median of {args.rounds} blocks of {args.repeat}, the two queries' "
        f"blocks alternated; a snapshot every {SNAPSHOT_INTERVAL} events)"
    )
    print("backend  | aggregate      |  events | replayed | snapshot B | now ms | before ms")
    print("---------+----------------+---------+----------+------------+--------+----------")
    for backend, what, version, replayed, size, now_ms, before_ms in rows:
        print(
            f"{backend:8} | {what:14} | {version:7,} | {replayed:8,} | {size:10,} | "
            f"{now_ms:6.2f} | {before_ms:9.2f}"
        )
    print("(replayed: the events after the stored snapshot, all of them where there is none)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
