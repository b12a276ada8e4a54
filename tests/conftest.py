"""One behaviour suite, every backend: the ``cs`` fixture runs each test on SQLite and on
PostgreSQL. PostgreSQL tests fail (never skip) when CI is set and the server is unreachable.

The deployment fixtures (``cs``, ``seeded``, ``clock``, ``other``, ``database_url``) are the
testing kit's (``countersign.infrastructure.testing.fixtures``, turned on by
``countersign_kit = true`` in pyproject.toml), the ones a plug-in's repository uses too.

Environment:
  COUNTERSIGN_TEST_BACKENDS   comma-separated, default "sqlite,postgres"
  COUNTERSIGN_TEST_POSTGRES   server URL without a database name,
                              default "postgresql://postgres@127.0.0.1:5432"
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from countersign.domain.seals import SealKeys
from countersign.infrastructure.bootstrap import Countersign, bootstrap, enable_plugins
from countersign.infrastructure.settings import plugin_names
from countersign.infrastructure.testing.databases import (
    POSTGRES_SERVER,
    TestDatabases,
    worker_tag,
)
from countersign.infrastructure.testing.deployment import (
    AVA,
    BEN,
    MIA,
    backends,
    count_events,
    events_table,
)
from countersign.infrastructure.testing.fixtures import require_postgres

from tests.support.golden_postgres import GoldenPostgres
from tests.support.mutants import apply_from_environment
from tests.support.passwords import use_test_strength

__all__ = ["AVA", "BEN", "MIA", "count_events", "events_table"]

# The deployment's plug-ins (COUNTERSIGN_PLUGINS) are enabled before any test module is
# collected: tests parametrised over the registries (every operation, section, permission)
# then include them, as the deployment's processes would (scripts/test runs the registry-wide
# checks once more with the example plug-in enabled).
enable_plugins(plugin_names())


@pytest.fixture(autouse=True)
def _the_deployments_plugins() -> Iterator[None]:
    """A test that switches plug-ins (the conformance suite over countersign's own, the
    sample plug-in's tests) leaves the deployment's enabled for the next (the same set costs
    a comparison)."""
    yield
    enable_plugins()


#: Not collected: the sample plug-in's own repository (its tests run through the kit in a
#: process of their own, tests/test_plugins.py).
collect_ignore = ["plugins"]


def pytest_configure(config: pytest.Config) -> None:
    """``COUNTERSIGN_MUTANT`` applies a deliberate bug (``tests/support/mutants.py``);
    passwords are hashed at test strength (``tests/support/passwords.py``)."""
    apply_from_environment()
    use_test_strength()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests (marked ``slow``) first: run in parallel, the suite then ends with
    many short tests spread over the workers instead of one long one running alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


BACKENDS = backends()
REFUND = "order.refund_missing_discount"
DRAFT = "email_broadcast.apply_draft"
TO_CARD = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}


@pytest.fixture
def command(database_url: str, capsys: pytest.CaptureFixture[str]) -> Callable[..., Any]:
    """The ``countersign`` command in this process, on the test's database: ``run(*argv)``
    answers (exit status, stdout, stderr); argparse's own answers (a usage error, --help)
    give their status too. A test module that needs the clubs seeded overrides it with one
    asking for ``seeded`` as well."""
    from countersign.infrastructure.entrypoints.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            status = main([*argv, "--database", database_url])
        except SystemExit as stopped:  # argparse's own answers
            status = int(stopped.code or 0)
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture(scope="session")
def postgres_url(test_databases: TestDatabases) -> str:
    """An empty PostgreSQL database of this session's own, for tests that manage their
    database themselves (``_truncate_postgres`` empties it). Dropped at the session's end
    together with the worker's other databases (``TestDatabases.drop_at_close``)."""
    require_postgres()
    name = f"countersign_test_{worker_tag()}"
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    url = f"{POSTGRES_SERVER}/{name}"
    test_databases.drop_at_close(url)
    return url


@pytest.fixture(scope="session")
def golden_postgres(test_databases: TestDatabases) -> GoldenPostgres:
    """This worker's golden databases on PostgreSQL (``tests/fixtures/*/postgres.sql``): each
    dump loaded once, and copied for each test that asks (``GoldenPostgres.copy``)."""
    return GoldenPostgres(test_databases)


def _truncate_postgres(url: str) -> None:
    """Start from an empty schema: events, sandbox, projections and their tracking."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for a module's tests (the browser tests): launching it and Playwright's
    driver cost about a second of CPU and two of waiting on the loaded 2-core machine, once
    per test before. Each test still opens contexts of its own (cookies, storage and
    permissions are per context), and ``browser`` closes whatever one a test left open.
    Skips without Chromium, and fails under CI (``tests/test_browser_e2e.py``)."""
    from tests.test_browser_e2e import CHROMIUM, CHROMIUM_ARGS, _browser_or_fail

    sync_playwright = _browser_or_fail()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The module's Chromium, for one test: the contexts the test opened are closed after
    it, passed or failed, so the next test starts from none."""
    yield chromium
    for context in list(chromium.contexts):
        context.close()


@pytest.fixture
def deployments(cs: Countersign) -> Iterator[Callable[[SealKeys | None], Countersign]]:
    """Fresh processes on ``cs``'s database, each holding the seal keys given (or none):
    deployments with and without seal keys, side by side (the seal tests)."""
    made: list[Countersign] = []

    def deployment(keys: SealKeys | None) -> Countersign:
        made.append(bootstrap(replace(cs.settings, seal_keys=keys), clock=cs.clock))
        return made[-1]

    yield deployment
    for one in made:
        one.close()
