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
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.settings import Settings

from tests.support.databases import (
    POSTGRES_SERVER,
    START,
    TestDatabases,
    postgres_problem,
    worker_tag,
)
from tests.support.mutants import apply_from_environment
from tests.support.passwords import use_test_strength

_SEEDED = pytest.StashKey[dict[str, Any] | None]()


def pytest_configure(config: pytest.Config) -> None:
    """``COUNTERSIGN_MUTANT`` applies a deliberate bug (``tests/support/mutants.py``);
    passwords are hashed at test strength (``tests/support/passwords.py``)."""
    apply_from_environment()
    use_test_strength()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests (marked ``slow``) first: run in parallel, the suite then ends with
    many short tests spread over the workers instead of one long one running alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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


def _require_postgres() -> None:
    problem = postgres_problem()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but PostgreSQL is unreachable at {POSTGRES_SERVER}: {problem}")
    pytest.skip(f"PostgreSQL unreachable ({problem}); set CI=1 to make this a failure")


@pytest.fixture(scope="session")
def test_databases() -> Iterator[TestDatabases]:
    """This session's (this xdist worker's) templates, and every copy made from them."""
    databases = TestDatabases()
    yield databases
    databases.close()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """An empty PostgreSQL database of this session's own, for tests that manage their
    database themselves (``_truncate_postgres`` empties it)."""
    _require_postgres()
    name = f"countersign_test_{worker_tag()}"
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    yield f"{POSTGRES_SERVER}/{name}"
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _truncate_postgres(url: str) -> None:
    """Start from an empty schema: events, sandbox, projections and their tracking."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, test_databases: TestDatabases) -> Iterator[str]:
    """A database of the test's own, on each backend (tests/support/databases.py): the demo
    clubs' state when the test asks for ``seeded``; the schema with nobody's rows when it asks
    for ``cs`` alone; else empty, not even a schema (for a test that makes its own)."""
    if request.param == "postgres":
        request.node.add_marker(pytest.mark.postgres)
        _require_postgres()
    names = request.fixturenames
    kind = "seeded" if "seeded" in names else "schema" if "cs" in names else "empty"
    url, seeded = test_databases.copy(request.param, kind)
    request.node.stash[_SEEDED] = seeded
    yield url
    test_databases.release(url)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def cs(database_url: str, clock: FakeClock) -> Iterator[Countersign]:
    wired = bootstrap(Settings(database_url=database_url), clock=clock)
    yield wired
    wired.close()


@pytest.fixture
def seeded(request: pytest.FixtureRequest, cs: Countersign) -> dict[str, Any]:
    """The demo clubs (``countersign.infrastructure.demo.seed``): ``cs``'s database is a copy
    of the session's seeded template, and this is what seeding it returned."""
    found = request.node.stash.get(_SEEDED, None)
    if found is None:  # a test that parametrizes ``database_url`` itself: seed it here
        return seed(cs)
    return found


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
