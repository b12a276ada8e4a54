"""Benchmark: the cold load of a broadcast form after 10 and after 10,000 sends, with and
without its stored snapshots.

Run from the repository root:

    .venv/bin/python scripts/bench_snapshots.py
    .venv/bin/python scripts/bench_snapshots.py --sends 10,10000 --backends sqlite,postgres

For each backend (a SQLite file in a temporary directory; the PostgreSQL database
``countersign_bench_snapshots``, dropped and recreated) and each number of sends, it opens a
form and applies a draft, starts its send and settles it (three events a round), a hundred
rounds a commit (``--per-commit``), so the store writes a snapshot every
``SNAPSHOT_INTERVAL`` events as it would in use. It then times a cold load (a store that holds
nothing, as in a new process: one query) with the snapshots, and again after deleting them
(every event replayed), and prints the medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from uuid import UUID, uuid4

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence.event_store import EventSourcedStore
from countersign.infrastructure.persistence.stored_snapshots import SNAPSHOT_INTERVAL
from countersign.infrastructure.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import prepare_postgres  # the benchmark's own database, reset

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/countersign_bench_snapshots"


def build_form(cs: Countersign, sends: int, per_commit: int) -> UUID:
    form = BroadcastForm(uuid4())
    cs.store.save(form)
    for n in range(sends):
        if n % per_commit == 0:
            form = cs.store.get(form.id, BroadcastForm)
        form.apply_draft({"leagues": ["Thursday Seniors"]}, f"Draft {n}", "Body " * 20, uuid4())
        proposal = uuid4()
        form.start_send(proposal, form.drafts_applied, f"countersign:send:{proposal}", 40)
        form.settle_send(proposal, delivery_ref=f"msg_{n}", sent_by="ava@example.org")
        if (n + 1) % per_commit == 0 or n + 1 == sends:
            cs.store.save(form, final=True)
    return form.id


def cold_load_ms(cs: Countersign, form_id: UUID, repeat: int) -> tuple[float, int]:
    times = []
    EventSourcedStore(cs.app).get(form_id, BroadcastForm, shared=True)  # warm-up, untimed
    for _ in range(repeat):
        store = EventSourcedStore(cs.app)  # holds nothing: a new process
        started = time.perf_counter()
        form = store.get(form_id, BroadcastForm, shared=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), form.version


def delete_snapshots(cs: Countersign, form_id: UUID) -> int:
    recorder = cs.app.snapshot_recorder
    stored = len(recorder.select_events(form_id))
    table = cs.store._snapshot_table
    sqlite = cs.database.kind == "sqlite"
    with recorder.datastore.transaction(commit=True) as cursor:  # type: ignore[attr-defined]
        mark = "?" if sqlite else "%s"
        cursor.execute(
            f"DELETE FROM {table} WHERE originator_id = {mark}",
            [form_id.hex if sqlite else form_id],
        )
    return stored


def run(
    backend: str, sends_list: list[int], repeat: int, per_commit: int
) -> list[tuple[str, int, int, int, float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        if backend == "sqlite":
            url = f"sqlite:///{tmp}/bench.db"
        else:
            prepare_postgres(POSTGRES_URL)
            url = POSTGRES_URL
        cs = bootstrap(Settings(database_url=url), create=True)
        rows = []
        try:
            for sends in sends_list:
                started = time.perf_counter()
                form_id = build_form(cs, sends, per_commit)
                print(
                    f"{backend}: {sends} sends built in {time.perf_counter() - started:.1f} s",
                    flush=True,
                )
                with_ms, version = cold_load_ms(cs, form_id, repeat)
                snapshots = delete_snapshots(cs, form_id)
                without_ms, replayed = cold_load_ms(cs, form_id, repeat)
                assert replayed == version
                rows.append((backend, sends, version, snapshots, with_ms, without_ms))
        finally:
            cs.close()
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sends", default="10,10000", help="comma-separated")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite,postgres")
    parser.add_argument("--repeat", type=int, default=7, help="cold loads timed (median)")
    parser.add_argument(
        "--per-commit",
        type=int,
        default=100,
        help="rounds per commit (the store snapshots every 100 events, whatever the commits)",
    )
    args = parser.parse_args(argv)
    sends_list = [int(s) for s in args.sends.split(",")]
    rows = []
    for backend in args.backends.split(","):
        rows += run(backend, sends_list, args.repeat, args.per_commit)
    print(
        f"\ncold load of a broadcast form (median of {args.repeat}; snapshot interval "
        f"{SNAPSHOT_INTERVAL} events)"
    )
    print("backend  | sends  | events | snapshots | with snapshots ms | without ms | speed-up")
    print("---------+--------+--------+-----------+-------------------+------------+---------")
    for backend, sends, version, snapshots, with_ms, without_ms in rows:
        print(
            f"{backend:8} | {sends:6,} | {version:6,} | {snapshots:9,} | {with_ms:17.2f} | "
            f"{without_ms:10.2f} | {without_ms / with_ms:6.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
