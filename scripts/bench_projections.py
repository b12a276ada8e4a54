"""Projection benchmark: rebuild speed and memory against the store's read ceiling, live lag.

    .venv/bin/python scripts/bench_projections.py                     # both backends
    .venv/bin/python scripts/bench_projections.py --events 200000 --backends postgres

For each backend it fills a fresh store with real proposal lifecycles (Proposed, Approved,
Claimed, Revalidated, Succeeded) written in large commits, then measures, in one run:

- the ceiling: reading and decoding every notification with the library's own calls (the
  store's read rate), and with the application's guarded mapper for reference;
- rebuild: all projections, each dropped and rebuilt from the whole log, in a fresh process
  per size so peak memory (max RSS) is that rebuild's alone, at half and at the full size;
- live lag: with ``projections run`` following the log in another process, the time from an
  approve commit until that proposal's card shows the outcome, p50/p99, under a steady load.

Figures drift between machines; compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from countersign.domain.hash_chain import contract_digest  # noqa: E402
from countersign.domain.proposal import Proposal  # noqa: E402
from countersign.infrastructure.bootstrap import Countersign, bootstrap  # noqa: E402
from countersign.infrastructure.demo.seed import seed  # noqa: E402
from countersign.infrastructure.settings import Settings  # noqa: E402
from eventsourcing.persistence import Mapper  # noqa: E402

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
EVENTS_PER_LIFECYCLE = 5
AVA = "ava@granite.example"
DRAFT = "email_broadcast.apply_draft"


def fresh_url(backend: str, folder: Path, name: str, pg_server: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{folder / (name + '.db')}"
    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return f"{pg_server}/{name}"


def drop_databases(pg_server: str, prefix: str) -> None:
    """Leave the server as we found it: the benchmark's databases are scratch."""
    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        for name in ("proj_half", "proj_full", "lag"):
            conn.execute(f"DROP DATABASE IF EXISTS {prefix}{name} WITH (FORCE)")


def fill(cs: Countersign, lifecycles: int, per_commit: int = 200) -> int:
    """Write real proposal lifecycles in large commits; returns the number of events."""
    seeded = seed(cs)
    org = seeded["organizations"][0]["id"]
    form = seeded["broadcast_forms"]["granite"]
    now = datetime.now(tz=UTC)
    preview = {
        "filters_in_words": "members of Thursday Seniors",
        "audience_count": 4,
        "subject": "Ice times",
        "body": "Draws move later.",
        "sends_email": False,
    }
    arguments = {
        "form_id": form,
        "filters": {"leagues": ["Thursday Seniors"]},
        "subject": "Ice times",
        "body": "Draws move later.",
        "audience_count": 4,
    }
    digest = contract_digest(DRAFT, 1, arguments, preview)
    result = {
        "kind": "succeeded",
        "result": {"form_id": form, "audience_count": 4, "subject": "Ice times"},
    }
    written = 0
    started = time.perf_counter()
    last = started
    for offset in range(0, lifecycles, per_commit):
        batch = []
        for _ in range(min(per_commit, lifecycles - offset)):
            proposal = Proposal.propose(
                id=uuid4(),
                organization_id=org,
                section="email_broadcasts",
                resource_id=form,
                requested_by=AVA,
                interaction_id=f"int-{uuid4().hex[:16]}",
                kind=DRAFT,
                contract_version=1,
                arguments=arguments,
                preview=preview,
                expires_at=now + timedelta(days=1),
                digest=digest,
            )
            proposal.approve_and_claim(AVA, now, uuid4())
            proposal.record_revalidated({"audience_count": 4, "leagues": ["Thursday Seniors"]})
            proposal.succeed(result)
            batch.append(proposal)
        cs.app.save(*batch)
        written += len(batch) * EVENTS_PER_LIFECYCLE
        if time.perf_counter() - last > 2:
            last = time.perf_counter()
            print(
                f"  filling: {written:,} events ({written / (last - started):,.0f}/s)", flush=True
            )
    return written


def read_ceiling(cs: Countersign, mapper: Any) -> tuple[int, float]:
    """Read and decode every notification with the library's own calls, as fast as it goes."""
    count = 0
    start = 1
    began = time.perf_counter()
    while True:
        batch = cs.app.recorder.select_notifications(start, limit=1000)
        if not batch:
            break
        for notification in batch:
            mapper.to_domain_event(notification)
        count += len(batch)
        start = batch[-1].id + 1
    return count, time.perf_counter() - began


def ceilings(cs: Countersign, passes: int) -> tuple[int, dict[str, list[float]]]:
    """The events, and the rates of ``passes`` passes of the store's read + decode with the
    library's stock mapper and JSON transcoder ("stock": the ceiling the target is measured
    against, as in the baseline figures) and with the application's guarded mapper ("app")."""
    stock = Mapper(transcoder=cs.app.mapper.transcoder)
    rates: dict[str, list[float]] = {"stock": [], "app": []}
    total = 0
    for _ in range(passes):
        for name, mapper in (("stock", stock), ("app", cs.app.mapper)):
            total, seconds = read_ceiling(cs, mapper)
            rates[name].append(total / seconds)
    return total, rates


REBUILD_CHILD = """
import json, resource, sys, time
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.projection_engine.together import rebuild_together

def peak_rss_mb():
    # This process's own peak. ru_maxrss is not: Linux carries the parent's peak over to a
    # child it spawns, so it would report the benchmark's own (larger) process.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def children_cpu():
    # The writer processes this one started and reaped (a rebuild's writer ends with it).
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime

cs = bootstrap(database_url=sys.argv[1])
cpu, writer_cpu = time.process_time(), children_cpu()
began = time.perf_counter()
runners = cs.projection_runners()
events = rebuild_together(runners)
together = time.perf_counter() - began
cpu, writer_cpu = time.process_time() - cpu, children_cpu() - writer_cpu
each = {}
for runner in cs.projection_runners():
    began = time.perf_counter()
    count = runner.rebuild()
    each[runner.name] = count / (time.perf_counter() - began)
print(json.dumps({"events": events, "batch": runners[0].batch_size, "seconds": together,
                  "each": each, "cpu_s": cpu, "writer_cpu_s": writer_cpu,
                  "max_rss_mb": peak_rss_mb()}))
cs.close()
"""


#: A rebuild of a million events takes minutes; one that takes an hour is stuck.
REBUILD_DEADLINE_S = 3600


def rebuild_in_child(url: str) -> dict[str, Any]:
    try:
        out = subprocess.run(
            [sys.executable, "-c", REBUILD_CHILD, url],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            timeout=REBUILD_DEADLINE_S,
        ).stdout
    except subprocess.TimeoutExpired:
        raise SystemExit(f"the rebuild did not finish in {REBUILD_DEADLINE_S} s") from None
    return dict(json.loads(out.strip().splitlines()[-1]))


def live_lag(cs: Countersign, url: str, approvals: int, rate: float) -> list[float]:
    """Approve at a steady rate while a runner process follows; lag until the card shows it.

    Each draft is proposed just before it is approved: proposed all at once, each would
    supersede the one before (one pending proposal per form), and a superseded proposal never
    gets an outcome. Every wait has a deadline and fails loudly."""
    form = seed(cs)["broadcast_forms"]["granite"]
    request = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"}
    for runner in cs.projection_runners():
        runner.catch_up()
    follower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "countersign.infrastructure.entrypoints.cli",
            "projections",
            "run",
            "--database",
            url,
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lags = []
    try:
        time.sleep(1.0)  # let the follower start
        interval = 1.0 / rate
        granite = seed(cs)["organizations"][0]["id"]
        for number in range(approvals):
            tick = time.perf_counter()
            proposal_id = cs.proposals.propose(
                organization="granite",
                actor=AVA,
                operation=DRAFT,
                resource_id=form,
                request={**request, "subject": f"Hi {number}"},
            ).proposal_id
            report = cs.proposals.approve(proposal_id, AVA)
            if report.status != "succeeded":
                raise SystemExit(
                    f"live lag: approval {number} ended {report.status}, not succeeded"
                )
            committed = time.perf_counter()
            wait_for(
                lambda shown=proposal_id: (cs.read_models.card(granite, shown) or {}).get(
                    "outcome_kind"
                ),
                f"the follower to project approval {number}'s outcome",
                follower,
            )
            lags.append((time.perf_counter() - committed) * 1000)
            time.sleep(max(0.0, interval - (time.perf_counter() - tick)))
    finally:
        follower.terminate()
        follower.wait(timeout=10)
    return lags


#: How long any wait of this benchmark may take before it stops with what it waited for.
DEADLINE_S = 60.0


def wait_for(ready: Any, what: str, process: subprocess.Popen[bytes] | None = None) -> None:
    """Poll ``ready`` until it is truthy; stop loudly at the deadline or if ``process`` died."""
    deadline = time.monotonic() + DEADLINE_S
    while not ready():
        if process is not None and process.poll() is not None:
            raise SystemExit(f"waiting for {what}: its process exited {process.returncode}")
        if time.monotonic() > deadline:
            raise SystemExit(f"waited {DEADLINE_S:.0f} s for {what}; it never came")
        time.sleep(0.001)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def bench_backend(
    backend: str,
    events: int,
    folder: Path,
    pg_server: str,
    approvals: int,
    rate: float,
    prefix: str = "countersign_bench_",
) -> dict[str, Any]:
    lifecycles = events // EVENTS_PER_LIFECYCLE
    row: dict[str, Any] = {"backend": backend}
    sizes = {}
    for label, count in (("half", lifecycles // 2), ("full", lifecycles)):
        url = fresh_url(backend, folder, f"{prefix}proj_{label}", pg_server)
        cs = bootstrap(Settings(database_url=url))
        print(f"{backend}: filling {count * EVENTS_PER_LIFECYCLE:,} events ({label})", flush=True)
        fill(cs, count)
        total, rates = ceilings(cs, 2)
        print(f"{backend}: rebuilding all projections from {total:,} events ({label})", flush=True)
        rebuilt = rebuild_in_child(url)
        # One more pass after the rebuilds: the median of three, on either side of them.
        _, after = ceilings(cs, 1)
        cs.close()
        sizes[label] = {
            "events": total,
            "batch": rebuilt["batch"],
            "ceiling_per_s": statistics.median(rates["stock"] + after["stock"]),
            "app_ceiling_per_s": statistics.median(rates["app"] + after["app"]),
            # Every projection together, the log read and decoded once.
            "rebuild_per_s": rebuilt["events"] / rebuilt["seconds"],
            "each_per_s": rebuilt["each"],
            "max_rss_mb": rebuilt["max_rss_mb"],
            # CPU an event of the rebuild of all together: the rebuilding process, its
            # writer process, and the wall-clock time the rebuilding process was not on a CPU.
            "main_us": rebuilt["cpu_s"] / rebuilt["events"] * 1e6,
            "writer_us": rebuilt["writer_cpu_s"] / rebuilt["events"] * 1e6,
            "waiting_us": max(0.0, rebuilt["seconds"] - rebuilt["cpu_s"]) / rebuilt["events"] * 1e6,
        }
    row["sizes"] = sizes
    url = fresh_url(backend, folder, f"{prefix}lag", pg_server)
    cs = bootstrap(Settings(database_url=url))
    print(f"{backend}: live lag over {approvals} approvals at {rate}/s", flush=True)
    lags = live_lag(cs, url, approvals, rate)
    cs.close()
    row["lag_p50_ms"] = statistics.median(lags)
    row["lag_p99_ms"] = percentile(lags, 0.99)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--postgres-url", default=PG_SERVER, help="server URL, no database")
    parser.add_argument("--approvals", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="approvals per second")
    parser.add_argument(
        "--database-prefix",
        default="countersign_bench_",
        help="PostgreSQL: the names of the scratch databases begin with this (two runs at once "
        "on one server need different ones)",
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="countersign-bench-") as tmp:
        for backend in args.backends.split(","):
            if backend.strip() == "postgres":
                atexit.register(drop_databases, args.postgres_url, args.database_prefix)
            rows.append(
                bench_backend(
                    backend.strip(),
                    args.events,
                    Path(tmp),
                    args.postgres_url,
                    args.approvals,
                    args.rate,
                    args.database_prefix,
                )
            )
    print()
    batches = sorted({size["batch"] for row in rows for size in row["sizes"].values()})
    batch = " or ".join(f"{n:,}" for n in batches) or "?"
    print(f"Projection rebuild, batches of {batch} events. 'all': every projection rebuilt")
    print("together, the log read and decoded once, with its events/s and its ratio to the")
    print("store's read+decode rate; then each projection rebuilt alone, the same two figures.")
    print("'stock r+d/s' is that rate with the library's own calls (select_notifications, its")
    print("mapper and JSON transcoder): the ceiling the ratios use. 'app r+d/s' is the same")
    print("read with the application's guarded mapper, for reference. Each: the median of")
    print("three passes, two before the rebuilds and one after. 'max RSS MB': the rebuilding")
    print("process's peak (the writer process it starts for a long rebuild is not in it).")
    names = list(rows[0]["sizes"]["full"]["each_per_s"]) if rows else []
    header = (
        f"{'backend':<9}{'size':<6}{'events':>9}{'stock r+d/s':>12}{'app r+d/s':>10}"
        f"{'all ev/s':>16}" + "".join(f"{name:>16}" for name in names) + f"{'max RSS MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        for label, size in row["sizes"].items():
            ceiling = size["ceiling_per_s"]
            each = "".join(
                f"{rate:>10,.0f} {rate / ceiling:5.2f}" for rate in size["each_per_s"].values()
            )
            print(
                f"{row['backend']:<9}{label:<6}{size['events']:>9,}{ceiling:>12,.0f}"
                f"{size['app_ceiling_per_s']:>10,.0f}{size['rebuild_per_s']:>10,.0f}"
                f" {size['rebuild_per_s'] / ceiling:5.2f}{each}"
                f"{size['max_rss_mb']:>12.1f}"
            )
    print()
    print("CPU an event of the rebuild of all together (us): the rebuilding process (reads,")
    print("decodes, runs the handlers, packs each batch), its writer process (writes and commits")
    print("the rows), and the time the rebuilding process was off the CPU (waiting for the writer")
    print("or the database, or for a core). 'main/writer': the CPU ratio of the two; above 1")
    print("the rebuilding process bounds the rebuild, below 1 the writer does.")
    header = (
        f"{'backend':<9}{'size':<6}{'events':>9}{'main':>9}{'writer':>9}{'waiting':>9}"
        f"{'main/writer':>13}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        for label, size in row["sizes"].items():
            # A rebuild under ProjectionRunner.PARALLEL_FROM events writes in its own process.
            ratio = (
                f"{size['main_us'] / size['writer_us']:>13.2f}"
                if size["writer_us"]
                else f"{'no writer':>13}"
            )
            print(
                f"{row['backend']:<9}{label:<6}{size['events']:>9,}{size['main_us']:>9.1f}"
                f"{size['writer_us']:>9.1f}{size['waiting_us']:>9.1f}{ratio}"
            )
    print()
    print(
        "Live lag: approve commit -> card shows the outcome, `projections run` in another process"
    )
    for row in rows:
        print(
            f"{row['backend']:<9} p50 {row['lag_p50_ms']:6.1f} ms   p99 {row['lag_p99_ms']:6.1f} ms"
        )
    print(
        f"\nbench client peak RSS: "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MB (pid {os.getpid()})"
    )


if __name__ == "__main__":
    main()
