"""After a burst, the event store's PostgreSQL pool closes the connections it opened for it
once they stay unused (``COUNTERSIGN_DATABASE_POOL_IDLE``): a shared server gets them back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.persistence.pg_waits import CountersignPostgresFactory
from countersign.infrastructure.settings import Database, Settings, SettingsError
from eventsourcing.utils import Environment

from tests.conftest import _truncate_postgres

pytestmark = pytest.mark.postgres

BURST = 5


@pytest.fixture
def make_datastore(postgres_url: str) -> Iterator[Any]:
    made: list[Any] = []

    def make(pool_idle: float) -> Any:
        env = Database.parse(postgres_url).eventsourcing_env(5.0, pool_idle)
        datastore = CountersignPostgresFactory(Environment(env=env)).datastore
        made.append(datastore)
        with datastore.get_connection():
            pass  # open, as a started process's pool is (its tables made)
        return datastore

    yield make
    for datastore in made:
        datastore.pool.close()


def burst(datastore: Any) -> tuple[int, int]:
    """``BURST`` requests holding a connection each at the same time, then none; the pool's
    size and ready connections while they held them."""
    during: list[tuple[int, int]] = []
    together = threading.Barrier(BURST, action=lambda: during.append(sizes(datastore)), timeout=20)

    def request() -> None:
        with datastore.get_connection() as conn:
            conn.execute("SELECT 1")
            together.wait()

    threads = [threading.Thread(target=request) for _ in range(BURST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return during[0]


def shrunk_back(datastore: Any) -> tuple[int, int]:
    """The pool's size and ready connections once it is back to its one, or 30 s on."""
    deadline = time.monotonic() + 30
    while sizes(datastore) != (1, 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    return sizes(datastore)


def sizes(datastore: Any) -> tuple[int, int]:
    stats = datastore.pool.get_stats()
    return stats["pool_size"], stats["pool_available"]


def test_after_a_burst_the_pool_shrinks_back_to_its_one_connection(make_datastore: Any) -> None:
    datastore = make_datastore(pool_idle=0.5)
    assert burst(datastore) == (BURST, 0)
    assert shrunk_back(datastore) == (1, 1)
    with datastore.get_connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == {"?column?": 1}


def test_one_idle_period_closes_every_connection_the_burst_added(make_datastore: Any) -> None:
    datastore = make_datastore(pool_idle=3600)  # the scheduler's own runs are far off
    assert burst(datastore) == (BURST, 0)
    datastore.pool._shrink_pool()  # the period of the burst: all of them were needed
    assert sizes(datastore) == (BURST, BURST)
    with datastore.get_connection():
        pass  # a lone request afterwards: one connection was enough
    datastore.pool._shrink_pool()  # the period after it
    assert sizes(datastore) == (1, 1)


def test_the_setting_reaches_a_started_processs_pool(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``COUNTERSIGN_DATABASE_POOL_IDLE``, as every process reads it at its start."""
    monkeypatch.setenv("COUNTERSIGN_DATABASE_POOL_IDLE", "soon")
    with pytest.raises(SettingsError, match="COUNTERSIGN_DATABASE_POOL_IDLE must be a positive"):
        Settings.from_env(postgres_url)
    monkeypatch.setenv("COUNTERSIGN_DATABASE_POOL_IDLE", "0.5")
    _truncate_postgres(postgres_url)
    cs = bootstrap(Settings.from_env(postgres_url))
    try:
        datastore = cs.app.factory.datastore
        assert burst(datastore) == (BURST, 0)
        assert shrunk_back(datastore) == (1, 1)
    finally:
        cs.close()
        _truncate_postgres(postgres_url)
