"""The PostgreSQL commit's shortcuts (s30-pg): each does what the long way did.

- ``insert_events`` retries as the library's ``retry`` decorator did (the same errors, the
  same number of attempts, the same pauses, the last error raised as it was);
- it takes pg_pool's connection steps itself (``taken``/``given_back``), as ``with
  datastore.get_connection()`` takes them: the same pool bookkeeping, the same errors, the
  connection given back idle; and through whatever the datastore hands out instead if that
  is no longer pg_pool's;
- a pipeline's results are read without asking libpq whether it is busy after each
  statement's result (``pg_statements._until_synced``): the same results, and libpq is
  never asked for a result while it would have to wait for one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.persistence import pg_statements, recorders_postgres
from countersign.infrastructure.persistence.pg_pool import PooledConnection
from countersign.infrastructure.persistence.recorders import ReadSetChangedError
from eventsourcing import utils
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    StoredEvent,
)
from psycopg.pq import ExecStatus, PipelineStatus, TransactionStatus

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.parametrize("database_url", ["postgres"], indirect=True),
]


def _event(originator: Any, version: int, state: bytes = b"{}") -> StoredEvent:
    return StoredEvent(
        originator_id=originator, originator_version=version, topic="t:E", state=state
    )


def _library_retry() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator ``insert_events`` carried until s30-pg."""
    decorate: Callable[[Callable[..., Any]], Callable[..., Any]] = utils.retry(
        (InterfaceError, OperationalError), max_attempts=10, wait=0.2
    )
    return decorate


def _failing(outcomes: list[Any], attempts: list[int]) -> Callable[..., Any]:
    """A commit attempt that raises or returns each of ``outcomes`` in turn."""

    def attempt(*args: Any) -> Any:
        attempts.append(len(attempts) + 1)
        outcome = outcomes[len(attempts) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return attempt


@pytest.mark.parametrize(
    "outcomes",
    [
        [[7]],
        [OperationalError("dropped"), InterfaceError("closed"), OperationalError("x"), [8]],
        [OperationalError(f"dropped {n}") for n in range(10)],
        [OperationalError("dropped"), IntegrityError("our own first attempt")],
        [ReadSetChangedError("moved")],
    ],
    ids=["at-once", "after-three", "never", "then-integrity", "stale"],
)
def test_insert_events_retries_as_the_librarys_retry_did(
    cs: Countersign, monkeypatch: pytest.MonkeyPatch, outcomes: list[Any]
) -> None:
    recorder: Any = cs.app.recorder
    paused: dict[str, list[float]] = {"library": [], "here": []}
    monkeypatch.setattr(utils, "random", lambda: 0.25)
    monkeypatch.setattr(recorders_postgres, "random", lambda: 0.25)
    monkeypatch.setattr(utils, "sleep", paused["library"].append)
    monkeypatch.setattr(recorders_postgres, "sleep", paused["here"].append)

    def run(call: Callable[..., Any]) -> tuple[str, Any]:
        try:
            return "returned", call()
        except Exception as error:  # the error is what is compared
            return "raised", error

    library_attempts: list[int] = []
    library = _library_retry()(_failing(outcomes, library_attempts))
    expected = run(lambda: library([_event(uuid4(), 1)]))

    attempts: list[int] = []
    monkeypatch.setattr(recorder, "_commit", _failing(outcomes, attempts))
    got = run(lambda: recorder.insert_events([_event(uuid4(), 1)], expected_versions={}))

    assert got == expected  # the same value, or the very same error object
    assert attempts == library_attempts
    assert paused["here"] == paused["library"]
    assert len(paused["here"]) == len(attempts) - 1 or got[0] == "raised"
    if got[0] == "raised" and isinstance(got[1], OperationalError | InterfaceError):
        assert len(attempts) == 10  # the last attempt's error
        assert paused["here"] == [0.2 * (1 + 0.1 * (0.25 - 0.5))] * 9


def test_a_commit_takes_and_gives_back_its_connection_as_the_pooled_context_does(
    cs: Countersign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed, refused as stale, refused by the primary key: the same pool statistics
    (``requests_num``, connections lost, returned...) move as through ``with
    datastore.get_connection()``, the same errors are raised, and the connection is back
    in the pool, idle, each time."""
    recorder: Any = cs.app.recorder
    datastore = recorder.datastore
    pool = datastore.pool
    assert recorder._get_connection is datastore.get_connection  # the shortcut is taken

    def round_of(shortcut: bool) -> tuple[list[Any], dict[str, int]]:
        if not shortcut:
            monkeypatch.setattr(recorder, "_get_connection", None)
        before = pool.get_stats()
        read, written = uuid4(), uuid4()
        outcomes: list[Any] = []
        (first,) = recorder.insert_events([_event(read, 1)])
        ids = recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
        outcomes.append([i - first for i in ids])
        for events, expected in (
            ([_event(written, 2)], {read: 0}),  # stale
            ([_event(written, 1)], {}),  # the primary key
        ):
            try:
                recorder.insert_events(events, expected_versions=expected)
            except Exception as error:  # the error is what is compared
                text = str(error).replace(str(read), "READ").replace(str(written), "WRITTEN")
                outcomes.append((type(error), text))
        with datastore.get_connection() as conn:
            assert conn.info.transaction_status is TransactionStatus.IDLE
        after = pool.get_stats()
        monkeypatch.undo()
        moved = {k: after.get(k, 0) - before.get(k, 0) for k in after if "ms" not in k}
        assert pool.get_stats()["pool_available"] == pool.get_stats()["pool_size"]
        return outcomes, moved

    assert round_of(True) == round_of(False)


def test_a_datastore_whose_connections_come_another_way_is_used_as_it_is(
    cs: Countersign, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder: Any = cs.app.recorder
    datastore = recorder.datastore
    taken: list[PooledConnection] = []

    def another_way() -> PooledConnection:
        taken.append(PooledConnection(datastore))
        return taken[-1]

    monkeypatch.setattr(datastore, "get_connection", another_way)
    recorder.insert_events([_event(uuid4(), 1)])
    assert len(taken) == 1


def test_a_pipelines_results_are_read_without_ever_waiting_inside_libpq(
    cs: Countersign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``get_result`` that ``_until_synced`` asks for is one libpq has in hand (its
    ``is_busy`` says no just before): none would block with the interpreter's lock held.
    Each statement's result comes, in order, after a refused one the server's "aborted"
    ones, and the commit path's results are unchanged (a commit, then a stale one)."""
    recorder: Any = cs.app.recorder
    asked: list[bool] = []

    class Watched:
        def __init__(self, pgconn: Any) -> None:
            self._pgconn = pgconn

        def __getattr__(self, name: str) -> Any:
            return getattr(self._pgconn, name)

        def get_result(self) -> Any:
            asked.append(bool(self._pgconn.is_busy()))
            return self._pgconn.get_result()

    until_synced = pg_statements._until_synced
    monkeypatch.setattr(
        pg_statements, "_until_synced", lambda pgconn, syncs: until_synced(Watched(pgconn), syncs)
    )
    read, written = uuid4(), uuid4()
    (first,) = recorder.insert_events([_event(read, 1)])
    assert recorder.insert_events([_event(written, 1)], expected_versions={read: 1}) == [first + 1]
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([_event(written, 2)], expected_versions={read: 0})
    assert asked
    assert not any(asked)

    with psycopg.connect(recorder.datastore.pool.conninfo, autocommit=True) as conn:
        pgconn = conn.pgconn
        pgconn.enter_pipeline_mode()
        for query in (b"SELECT 1", b"SELECT 1/0", b"SELECT 2"):
            pgconn.send_query_params(query, None)
        pgconn.pipeline_sync()
        for query in (b"SELECT 3", b"SELECT 4"):
            pgconn.send_query_params(query, None)
        pgconn.pipeline_sync()
        asked.clear()
        results = conn.wait(until_synced(Watched(pgconn), 2))
        pgconn.exit_pipeline_mode()
        assert [r.status for r in results] == [
            ExecStatus.TUPLES_OK,
            ExecStatus.FATAL_ERROR,
            ExecStatus.PIPELINE_ABORTED,
            ExecStatus.TUPLES_OK,
            ExecStatus.TUPLES_OK,
        ]
        assert [r.get_value(0, 0) for r in results[3:]] == [b"3", b"4"]
        assert asked
        assert not any(asked)
        assert pgconn.pipeline_status == PipelineStatus.OFF
        assert conn.execute("SELECT 5").fetchone() == (5,)
