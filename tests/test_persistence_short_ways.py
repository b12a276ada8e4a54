"""The persistence path's short ways (docs/speed.md, "The cycle's cost", session 29): each
does what the longer way it replaces did, and falls back to it where it must.

- ``aggregate_copy.collected`` (a commit's events, for ``EventSourcedStore.save``) takes
  the library's ``collect_events`` inline, and a class's own ``collect_events`` where it
  has one;
- ``SnapshotCache.put_many`` puts a commit's aggregates as ``put`` put each;
- the SQLite pool tries its locks without waiting first, and waits (and times out) as the
  library does when they are held;
- the SQLite recorder keeps one commit cursor per connection, through refusals, and makes a
  new one for a connection whose sqlite3 connection was swapped;
- a decision's reads are closed however it ends (``StoreUnitOfWork.decide`` without the
  ``with`` block), and a read recorded inline in ``get`` is what ``DecisionReads.saw``
  records.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.application.ports import Answer, Commit, Reads
from countersign.domain.ports import Repository
from countersign.domain.proposal import Proposal
from countersign.infrastructure.persistence import aggregate_copy
from countersign.infrastructure.persistence.aggregate_copy import collected as _collected
from countersign.infrastructure.persistence.decision_reads import DecisionReads
from countersign.infrastructure.persistence.recorders import (
    CountersignSQLiteFactory,
    CountersignSQLiteRecorder,
)
from countersign.infrastructure.persistence.snapshot_cache import SnapshotCache
from countersign.infrastructure.persistence.sqlite_pool import _COMMIT_CURSOR
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import ConnectionUnavailableError, IntegrityError, StoredEvent
from eventsourcing.utils import Environment

from tests.conftest import DRAFT
from tests.support.proposing import propose


class _Counter(Aggregate):
    def __init__(self) -> None:
        self.n = 0

    @event("Counted")
    def count(self) -> None:
        self.n += 1


class _OwnCollector(_Counter):
    collected_by_own = 0

    def collect_events(self) -> Any:
        type(self).collected_by_own += 1
        return super().collect_events()


def _frozen(aggregate: Any) -> bool:
    reference = aggregate_copy._FROZEN.get(id(aggregate))
    return reference is not None and reference() is aggregate


# -- _collected -------------------------------------------------------------------------------


def test_collected_takes_the_pending_events_in_order_and_empties_the_aggregates_list() -> None:
    counter = _Counter()
    counter.count()
    counter.count()
    queued = counter._pending_events
    expected = list(queued)
    untouched = _Counter()
    untouched.collect_events()  # nothing pending

    pending, written = _collected([counter, untouched])

    assert [list(events) for _, events in pending] == [expected, []]
    assert [e.originator_version for e in pending[0][1]] == [1, 2, 3]
    assert pending[0][1] is not queued  # a list of its own, as the library's
    assert counter._pending_events is queued  # the same list, emptied
    assert queued == []
    assert written == {counter.id.int: counter.id}  # only those that had events
    assert _collected([counter])[0][0][1] == []  # collected once


def test_collected_calls_a_classs_own_collect_events() -> None:
    own = _OwnCollector()
    own.count()
    before = _OwnCollector.collected_by_own
    pending, written = _collected([own])
    assert _OwnCollector.collected_by_own == before + 1
    assert [e.originator_version for e in pending[0][1]] == [1, 2]
    assert written == {own.id.int: own.id}


# -- SnapshotCache.put_many -------------------------------------------------------------------


def _committed(counts: int = 1) -> _Counter:
    counter = _Counter()
    for _ in range(counts):
        counter.count()
    counter.collect_events()
    return counter


def test_put_many_puts_each_as_put_would() -> None:
    cache = SnapshotCache(2)
    a, b, c = _committed(), _committed(), _committed()
    since = cache.generation()
    cache.put_many([(a.id, a), (b.id, b)], since)
    assert cache.get(a.id) is a
    assert cache.get(b.id) is b
    assert _frozen(a)  # shared from now on
    assert _frozen(b)
    cache.put_many([(c.id, c)], cache.generation())
    assert cache.get(a.id) is None  # the least recently used left, past the size
    assert cache.get(b.id) is b
    assert cache.get(c.id) is c


def test_put_many_skips_what_was_dropped_after_it_was_read_and_puts_the_rest() -> None:
    cache = SnapshotCache(8)
    a, b = _committed(), _committed()
    since = cache.generation()
    cache.drop(a.id)  # a commit moved ``a`` on after this reader read it
    cache.put_many([(a.id, a), (b.id, b)], since)
    assert cache.get(a.id) is None
    assert cache.get(b.id) is b


def test_put_many_keeps_a_newer_snapshot_held() -> None:
    cache = SnapshotCache(8)
    newer = _committed(3)
    older = aggregate_copy.copy_aggregate(newer)
    older._version = 2
    other = _committed()
    cache.put(newer.id, newer, cache.generation())
    cache.put_many([(older.id, older), (other.id, other)], cache.generation())
    assert cache.get(newer.id) is newer
    assert cache.get(other.id) is other


# -- the SQLite pool --------------------------------------------------------------------------


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Any]:
    env = Environment("t", {"SQLITE_DBNAME": str(tmp_path / "short.db")})
    datastore = CountersignSQLiteFactory(env).datastore
    recorder = CountersignSQLiteRecorder(datastore, "s_events")
    recorder.create_table()
    yield recorder
    datastore.close()


def test_a_held_writer_lock_is_waited_for_and_times_out(recorder: Any) -> None:
    pool = recorder.datastore.pool
    assert pool._writer_lock.acquire()  # another writer holds it
    try:
        with pytest.raises(ConnectionUnavailableError, match="return of writer"):
            pool.get_connection(timeout=0.05, is_writer=True)
    finally:
        pool._writer_lock.release()
    connection = pool.get_connection(timeout=0.05, is_writer=True)  # free again
    pool.put_connection(connection)


def test_a_held_queue_is_waited_for_and_times_out(recorder: Any) -> None:
    pool = recorder.datastore.pool
    queue = pool._get_semaphore._lock
    assert queue.acquire()  # another thread is taking a connection
    try:
        with pytest.raises(ConnectionUnavailableError, match="semaphore"):
            pool.get_connection(timeout=0.05, is_writer=True)
    finally:
        queue.release()


def test_a_writer_waits_for_the_writer_before_it(recorder: Any) -> None:
    pool = recorder.datastore.pool
    first = pool.get_connection(is_writer=True)
    taken = threading.Event()
    got: list[Any] = []

    def second_writer() -> None:
        taken.set()
        got.append(pool.get_connection(timeout=30, is_writer=True))

    thread = threading.Thread(target=second_writer)
    thread.start()
    taken.wait()
    assert not got  # it cannot have the writer's lock while the first holds it
    pool.put_connection(first)
    thread.join(30)
    assert len(got) == 1
    pool.put_connection(got[0])
    assert pool._writer_lock.acquire(blocking=False)  # given back
    pool._writer_lock.release()


def test_an_empty_pool_opens_a_connection_for_a_writer(recorder: Any) -> None:
    pool = recorder.datastore.pool
    reader = pool.get_connection(is_writer=False)
    writer = pool.get_connection(is_writer=True)
    assert writer is not reader
    pool.put_connection(writer)
    pool.put_connection(reader)


# -- the SQLite commit cursor -----------------------------------------------------------------


def _event(aggregate_id: UUID, version: int) -> StoredEvent:
    return StoredEvent(aggregate_id, version, "t:E", b"{}")


def _versions(recorder: Any, aggregate_id: UUID) -> list[int]:
    return [e.originator_version for e in recorder.select_events(aggregate_id)]


def test_the_commit_cursor_is_kept_through_a_refused_commit(recorder: Any) -> None:
    a = uuid4()
    recorder.insert_events([_event(a, 1)])
    connection = recorder.datastore.pool._pool[0]
    sqlite_conn, cursor = connection.__dict__[_COMMIT_CURSOR]
    assert sqlite_conn is connection._sqlite_conn
    with pytest.raises(IntegrityError):
        recorder.insert_events([_event(a, 1)])  # the primary key: rolled back
    assert connection.__dict__[_COMMIT_CURSOR][1] is cursor
    recorder.insert_events([_event(a, 2), _event(a, 3)])  # the same cursor, again
    assert connection.__dict__[_COMMIT_CURSOR][1] is cursor
    assert _versions(recorder, a) == [1, 2, 3]
    assert not connection._sqlite_conn.in_transaction


def test_a_swapped_sqlite_connection_gets_a_cursor_of_its_own(recorder: Any) -> None:
    a = uuid4()
    recorder.insert_events([_event(a, 1)])
    connection = recorder.datastore.pool._pool[0]
    old = connection._sqlite_conn
    connection._sqlite_conn = fresh = old.__class__(
        recorder.datastore.pool.db_name, uri=True, check_same_thread=False, isolation_level=None
    )
    try:
        recorder.insert_events([_event(a, 2)])
        kept_conn, _ = connection.__dict__[_COMMIT_CURSOR]
        assert kept_conn is fresh
    finally:
        connection._sqlite_conn = old
        fresh.close()
    recorder.insert_events([_event(a, 3)])
    assert connection.__dict__[_COMMIT_CURSOR][0] is old
    assert _versions(recorder, a) == [1, 2, 3]


# -- decisions: reads closed, reads recorded ---------------------------------------------------


def _proposal_id(cs: Any, seeded: dict[str, Any]) -> UUID:
    """A pending broadcast draft on granite's form (tests.support.proposing)."""
    return UUID(propose(cs, seeded, operation=DRAFT))


def test_a_decision_that_raises_leaves_its_reads_closed(cs: Any, seeded: dict[str, Any]) -> None:
    pid = _proposal_id(cs, seeded)

    def fails(store: Repository) -> Commit[None]:
        store.read(pid, Proposal)
        raise ValueError("not a refusal")

    with pytest.raises(ValueError, match="not a refusal"):
        cs.store.decide(Reads([pid]), fails)
    reads = cs.store._local.reads
    assert not reads.open
    assert not reads.versions
    assert not reads.preloaded
    # The thread can decide again (an open decision would refuse a second one).
    answer = cs.store.decide(Reads([pid]), lambda store: Answer(store.read(pid, Proposal).id))
    assert answer == pid
    assert not cs.store._local.reads.open


def test_a_read_in_get_is_recorded_as_saw_records_it(cs: Any, seeded: dict[str, Any]) -> None:
    pid = _proposal_id(cs, seeded)
    recorded: dict[str, Any] = {}

    def reads_twice(store: Repository) -> Answer[None]:
        proposal = store.read(pid, Proposal)
        store.read(pid, Proposal)  # a second read records nothing more
        reads = cs.store._local.reads
        expected = DecisionReads()
        expected.open = True
        expected.saw(pid.int, proposal)
        recorded["versions"] = dict(reads.versions)
        recorded["expected"] = dict(expected.versions)
        recorded["ids"] = dict(reads.read_ids)
        recorded["unchecked"] = set(reads.unchecked)
        return Answer(None)

    cs.store.decide(Reads([pid]), reads_twice)
    assert recorded["versions"] == recorded["expected"] == {pid.int: 1}
    assert recorded["ids"] == {pid.int: pid}
    assert recorded["unchecked"] == set()

    def points_at(store: Repository) -> Answer[set[int]]:
        store.read(pid, Proposal)
        return Answer(set(cs.store._local.reads.unchecked))

    # A type the decision only points at is read, not checked.
    unchecked = cs.store.decide(Reads([pid], targets=frozenset({Proposal})), points_at)
    assert unchecked == {pid.int}
