"""One behaviour suite, every backend: the ``cs`` fixture runs each test on SQLite and on
PostgreSQL. PostgreSQL tests fail (never skip) when CI is set and the server is unreachable.

Environment:
  COUNTERSIGN_TEST_BACKENDS   comma-separated, default "sqlite,postgres"
  COUNTERSIGN_TEST_POSTGRES   server URL without a database name,
                              default "postgresql://postgres@127.0.0.1:5432"
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.settings import Settings

POSTGRES_SERVER = os.environ.get(
    "COUNTERSIGN_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432"
)
TEST_DATABASE = "countersign_test"
BACKENDS = [
    b.strip() for b in os.environ.get("COUNTERSIGN_TEST_BACKENDS", "sqlite,postgres").split(",")
]

AVA = "ava@granite.example"
BEN = "ben@granite.example"
MIA = "mia@maple.example"
REFUND = "order.refund_missing_discount"
DRAFT = "email_broadcast.apply_draft"
TO_CARD = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}


def _postgres_available() -> str | None:
    try:
        with psycopg.connect(f"{POSTGRES_SERVER}/postgres", connect_timeout=3):
            return None
    except psycopg.OperationalError as error:
        return str(error).strip().splitlines()[0]


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of this test session's own, so parallel runs never collide; dropped after."""
    problem = _postgres_available()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but PostgreSQL is unreachable at {POSTGRES_SERVER}: {problem}")
        pytest.skip(f"PostgreSQL unreachable ({problem}); set CI=1 to make this a failure")
    name = f"{TEST_DATABASE}_{os.getpid()}"
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    yield f"{POSTGRES_SERVER}/{name}"
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _truncate_postgres(url: str) -> None:
    """Start each test from an empty schema: events, sandbox, projections and their tracking."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'countersign.db'}"
    request.node.add_marker(pytest.mark.postgres)
    url: str = request.getfixturevalue("postgres_url")
    _truncate_postgres(url)
    return url


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))


@pytest.fixture
def cs(database_url: str, clock: FakeClock) -> Iterator[Countersign]:
    wired = bootstrap(Settings(database_url=database_url), clock=clock)
    yield wired
    wired.close()


@pytest.fixture
def seeded(cs: Countersign) -> dict[str, Any]:
    return seed(cs)


@pytest.fixture
def other(
    database_url: str, cs: Countersign, seeded: dict[str, Any], clock: FakeClock
) -> Iterator[Countersign]:
    """A second process's view of the same database: its own services and snapshots."""
    wired = bootstrap(Settings(database_url=database_url), clock=clock)
    yield wired
    wired.close()


def count_events(cs: Countersign, topic_suffix: str = "") -> int:
    """How many events are stored (optionally of one event type, e.g. 'Proposal.Proposed')."""
    count = 0
    start = 1
    while True:
        batch = cs.app.recorder.select_notifications(start, limit=1000)
        if not batch:
            return count
        count += sum(1 for n in batch if n.topic.endswith(topic_suffix))
        start = batch[-1].id + 1


def events_table(cs: Countersign) -> str:
    """Where the stored events live: eventsourcing names the table per backend."""
    return "stored_events" if cs.database.kind == "sqlite" else "countersign_events"
