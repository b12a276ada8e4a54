"""Prometheus metrics: what each process counts, and what a scrape reads from the database.

Counted in the process that does the work, once it serves its metrics (``enable``, called by
the pages' server as it mounts ``/metrics`` and by the worker with ``--metrics-port``; see
``counting.py``), kept in memory, or in files under ``PROMETHEUS_MULTIPROC_DIR`` when several
server processes share one scrape (``countersign serve --workers N`` sets that up):

* ``countersign_approve_seconds{result}``: how long an approval took, by its answer
  (executed, already_completed, not_approvable, awaiting_approvals), whichever entry point
  asked;
* ``countersign_provider_calls_total{provider,call,result}``: every call to an effect
  provider (``perform`` or ``lookup``) by what came back: succeeded, refused, lost (outcome
  unknown), found, none (a lookup that found nothing), error.

Read from the database when ``/metrics`` is scraped (one small query each), so they are the
same whichever worker answers:

* ``countersign_proposals{status}``: proposals by status, as the ``browser_view`` projection
  holds them (as fresh as that projection: see its lag);
* ``countersign_projection_lag_events{projection}`` and ``countersign_log_head``;
* ``countersign_notifications_pending``: notifications not yet delivered (0 until the
  notification outbox exists: ``notifications_pending`` below is its hook).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator

from countersign.infrastructure.observability import counting
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.projection_engine.rows import TRACKING_TABLE
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger("countersign.metrics")

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


class PrometheusMeter:
    """The counted figures as this process's Prometheus metrics (``counting.Meter``)."""

    def __init__(self) -> None:
        self.approve_seconds = Histogram(
            "countersign_approve_seconds",
            "Time to answer an approval, by its result.",
            ["result"],
            buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        self.provider_calls = Counter(
            "countersign_provider_calls",
            "Calls to effect providers, by provider, call (perform, lookup) and what came back.",
            ["provider", "call", "result"],
        )

    def approval(self, result: str, seconds: float) -> None:
        self.approve_seconds.labels(result).observe(seconds)

    def provider_call(self, provider: str, call: str, result: str) -> None:
        self.provider_calls.labels(provider, call, result).inc()


_enabling = threading.Lock()


def enable() -> PrometheusMeter:
    """Count into Prometheus metrics from now on, in this process (idempotent): what a
    process that serves its metrics calls before it serves."""
    with _enabling:
        meter = counting.installed()
        if not isinstance(meter, PrometheusMeter):
            meter = PrometheusMeter()
            counting.install(meter)
        return meter


# -- read at scrape time ---------------------------------------------------------------------


def notifications_pending(sql: SqlDatabase) -> int:
    """Deliveries waiting to be sent (a webhook POST or an e-mail not yet accepted, before it
    becomes a dead letter): the sender's ledger, ``notification_deliveries``. Before the
    sender's first pass the ledger does not exist yet: nothing is pending."""
    exists = (
        "SELECT 1 FROM pg_tables WHERE tablename = 'notification_deliveries'"
        if sql.is_postgres
        else "SELECT 1 FROM sqlite_master WHERE name = 'notification_deliveries'"
    )
    with sql.reading() as cursor:
        if cursor.execute(exists).fetchone() is None:
            return 0
        row = cursor.execute(
            "SELECT COUNT(*) FROM notification_deliveries WHERE status = 'pending'"
        ).fetchone()
    return int(row[0]) if row else 0


class DatabaseCollector(Collector):
    """The figures a scrape reads from the database: proposals by status, projection lag,
    notifications pending. A query that fails (a table not created yet, the database down)
    leaves its figure out of this scrape and is logged; the rest is still answered."""

    def __init__(self, sql: SqlDatabase, head: Callable[[], int]) -> None:
        self.sql = sql
        self.head = head

    def collect(self) -> Iterator[Metric]:
        for produce in (self._proposals, self._projections, self._notifications):
            try:
                yield from produce()
            except Exception as error:
                log.warning("metrics: %s unavailable: %s", produce.__name__.strip("_"), error)

    def _proposals(self) -> Iterator[Metric]:
        with self.sql.reading() as cursor:
            rows = cursor.execute(
                "SELECT status, COUNT(*) FROM proposal_cards GROUP BY status"
            ).fetchall()
        family = GaugeMetricFamily(
            "countersign_proposals",
            "Proposals by status (as the browser_view projection holds them).",
            labels=["status"],
        )
        for status, count in sorted(rows):
            family.add_metric([str(status)], int(count))
        yield family

    def _projections(self) -> Iterator[Metric]:
        head = self.head()
        with self.sql.reading() as cursor:
            rows = cursor.execute(f"SELECT projection, position FROM {TRACKING_TABLE}").fetchall()
        yield GaugeMetricFamily(
            "countersign_log_head", "The newest notification id in the event log.", value=head
        )
        lag = GaugeMetricFamily(
            "countersign_projection_lag_events",
            "Events in the log a projection has not processed yet.",
            labels=["projection"],
        )
        # Where each projection stands: one that stopped (at an event it cannot read, or
        # whose handler fails) keeps its position while its lag stays above 0, which is what
        # an alert looks for (docs/deploy.md); its lag alone grows only as events arrive.
        at = GaugeMetricFamily(
            "countersign_projection_position",
            "The last notification id a projection has processed.",
            labels=["projection"],
        )
        for name, position in sorted(rows):
            lag.add_metric([str(name)], max(0, head - int(position)))
            at.add_metric([str(name)], int(position))
        yield lag
        yield at

    def _notifications(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "countersign_notifications_pending",
            "Notifications waiting to be sent.",
            value=notifications_pending(self.sql),
        )


def render(database: DatabaseCollector) -> tuple[bytes, str]:
    """The scrape's body and media type: this process's counters (or every server process's,
    in multiprocess mode) followed by the database's figures."""
    if os.environ.get(MULTIPROCESS_ENV):
        from prometheus_client import multiprocess

        counted_here = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted_here)  # type: ignore[no-untyped-call]
    else:
        counted_here = REGISTRY
    read_now = CollectorRegistry(auto_describe=False)
    read_now.register(database)
    return generate_latest(counted_here) + generate_latest(read_now), CONTENT_TYPE_LATEST
