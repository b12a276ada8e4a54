"""The kit's pytest plug-in: a seeded countersign deployment per test, on every backend.

Fixtures:

- ``cs``: countersign bootstrapped on a database of the test's own, once per backend
  (``COUNTERSIGN_TEST_BACKENDS``, default ``sqlite,postgres``; PostgreSQL at
  ``COUNTERSIGN_TEST_POSTGRES``, default ``postgresql://postgres@127.0.0.1:5432``), with the
  plug-ins ``countersign_plugins`` names enabled;
- ``seeded``: the demo clubs in ``cs``'s database (what seeding returned: the records' ids);
- ``clock``: the ``FakeClock`` ``cs`` runs on, at ``START``;
- ``other``: a second process's view of the same database;
- ``seeded_database``: without ``cs``, a copy of the seeded template and what seeding
  returned, for a test that wires countersign itself (its own model or settings);
- ``database_url``, ``test_databases``: the database under ``cs`` and the session's
  templates (``countersign.infrastructure.testing.databases``);
- ``countersign_plugins``: the plug-ins the deployment enables: those ``COUNTERSIGN_PLUGINS``
  names, as for any deployment (none when it is unset), unless a test, a class or a
  ``conftest.py`` overrides it.

PostgreSQL tests fail (never skip) when ``CI`` is set and the server is unreachable.

It is active only when a test run asks for it (``countersign_kit = true`` in the pytest
configuration, or ``-p countersign.infrastructure.testing.fixtures``): see
``countersign.infrastructure.testing.activation``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.settings import Settings, plugin_names
from countersign.infrastructure.testing.databases import (
    POSTGRES_SERVER,
    START,
    TestDatabases,
    postgres_problem,
)
from countersign.infrastructure.testing.deployment import backends

SEEDED = pytest.StashKey[dict[str, Any] | None]()
"""What seeding the test's database returned, when it is a copy of the seeded template."""


#: Whether this process has reached the PostgreSQL server (``require_postgres``).
_reached = False


def require_postgres() -> None:
    """Skip the test when the PostgreSQL server is unreachable; fail it if ``CI`` is set.

    Asked once per process until the server answers, then no more: the check is a
    connection of its own (about 20 ms on the loaded 2-core machine, twice the reset of a
    test's database), and a server that goes away later fails the tests that use it, skip
    or not, with their own connection's error."""
    global _reached
    if _reached:
        return
    problem = postgres_problem()
    if problem is None:
        _reached = True
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


@pytest.fixture(params=backends())
def database_url(request: pytest.FixtureRequest, test_databases: TestDatabases) -> Iterator[str]:
    """A database of the test's own, on each backend: the demo clubs' state when the test
    asks for ``seeded`` or ``seeded_database``; the schema with nobody's rows when it asks
    for ``cs`` alone; else empty, not even a schema (for a test that makes its own)."""
    if request.param == "postgres":
        request.node.add_marker(pytest.mark.postgres)
        require_postgres()
    names = request.fixturenames
    seeded = "seeded" in names or "seeded_database" in names
    kind = "seeded" if seeded else "schema" if "cs" in names else "empty"
    url, made = test_databases.copy(request.param, kind)
    request.node.stash[SEEDED] = made
    yield url
    test_databases.release(url)


@pytest.fixture
def countersign_plugins() -> tuple[str, ...]:
    """The plug-ins (entry-point names) ``cs`` and ``other`` enable: by default the
    deployment's (``COUNTERSIGN_PLUGINS``); override it to name others."""
    return plugin_names()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def cs(
    database_url: str, clock: FakeClock, countersign_plugins: tuple[str, ...]
) -> Iterator[Countersign]:
    settings = Settings(database_url=database_url, plugins=countersign_plugins)
    wired = bootstrap(settings, clock=clock)
    yield wired
    wired.close()


def seeded_records(request: pytest.FixtureRequest, cs: Countersign) -> dict[str, Any]:
    """What seeding ``cs``'s database returned; seeded here if it is not a seeded copy (a
    test that parametrizes ``database_url`` itself)."""
    found = request.node.stash.get(SEEDED, None)
    return seed(cs) if found is None else found


@pytest.fixture
def seeded(request: pytest.FixtureRequest, cs: Countersign) -> dict[str, Any]:
    """The demo clubs (``countersign.infrastructure.demo.seed``): ``cs``'s database is a copy
    of the session's seeded template, and this is what seeding it returned."""
    return seeded_records(request, cs)


@dataclass(frozen=True)
class SeededDatabase:
    """A database of the test's own in the demo clubs' state, and what seeding returned."""

    url: str
    seeded: dict[str, Any]


@pytest.fixture
def seeded_database(request: pytest.FixtureRequest, database_url: str) -> SeededDatabase:
    """``database_url`` as a copy of the session's seeded template, without ``cs``: for a
    test that wires countersign itself (a model of its own, other settings) on the demo
    clubs, and would otherwise bootstrap and seed an empty database: 1.4 s on PostgreSQL on
    the loaded 2-core machine (2026-12-07), where the copy is a reset of a few hundredths.
    The assistant tests' sums on both backends went from 26.6 s to 11.0 s."""
    seeded = request.node.stash.get(SEEDED, None)
    assert seeded is not None, "database_url is parametrized by the test: seed it there"
    return SeededDatabase(database_url, seeded)


@pytest.fixture
def other(
    database_url: str,
    cs: Countersign,
    seeded: dict[str, Any],
    clock: FakeClock,
    countersign_plugins: tuple[str, ...],
) -> Iterator[Countersign]:
    """A second process's view of the same database: its own services and snapshots."""
    settings = Settings(database_url=database_url, plugins=countersign_plugins)
    wired = bootstrap(settings, clock=clock)
    yield wired
    wired.close()
