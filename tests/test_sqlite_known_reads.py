"""SQLite commits whose read set this process knows to be current (sqlite_known_reads): the
read-set check is skipped only when the INSERT's first rowid shows that nothing was inserted
since this process's last commit. Another connection's commit, another process's, another
thread's commit of an aggregate read, a failed commit: each makes the check, so a commit is
refused exactly when it was, with the same error."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.infrastructure.persistence.recorders import (
    CountersignSQLiteFactory,
    CountersignSQLiteRecorder,
    ReadSetChangedError,
)
from countersign.infrastructure.persistence.sqlite_known_reads import check_before_statement
from eventsourcing.persistence import IntegrityError, OperationalError, StoredEvent
from eventsourcing.utils import Environment

TABLE = "k_events"


def _event(aggregate_id: UUID, version: int) -> StoredEvent:
    return StoredEvent(aggregate_id, version, "t:E", b"{}")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "known.db"


@pytest.fixture
def recorder(path: Path) -> Iterator[Any]:
    datastore = CountersignSQLiteFactory(Environment("t", {"SQLITE_DBNAME": str(path)})).datastore
    recorder = CountersignSQLiteRecorder(datastore, TABLE)
    recorder.create_table()
    yield recorder
    datastore.close()


@pytest.fixture
def checks(recorder: Any, monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Each read-set check the recorder made: None before its INSERT, else the rowid from
    which the check left the INSERT's rows out."""
    made: list[int | None] = []
    real = recorder._check_read_set

    def check(cursor: Any, expected: Any, before: int | None = None) -> None:
        made.append(before)
        real(cursor, expected, before)

    monkeypatch.setattr(recorder, "_check_read_set", check)
    return made


def _elsewhere(path: Path, *events: StoredEvent) -> None:
    """``events`` committed by another connection to the file, as the library's recorder
    inserts them (no rowid of their own)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        for e in events:
            other.execute(
                f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?)",
                (e.originator_id.hex, e.originator_version, e.topic, e.state),
            )


def _versions(recorder: Any, aggregate_id: UUID) -> list[int]:
    return [e.originator_version for e in recorder.select_events(aggregate_id)]


def test_a_commit_relying_on_what_this_process_wrote_or_checked_makes_no_check(
    recorder: Any, path: Path, checks: list[int | None]
) -> None:
    read, written = uuid4(), uuid4()
    (first,) = recorder.insert_events([_event(read, 1)])
    ids = recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    assert (ids, checks) == ([first + 1], [])
    # One written elsewhere is checked the first time, then known as checked.
    theirs = uuid4()
    _elsewhere(path, _event(theirs, 1))
    recorder.insert_events([_event(written, 2)], expected_versions={theirs: 1})
    assert checks == [None]
    recorder.insert_events([_event(written, 3)], expected_versions={theirs: 1})
    assert checks == [None]
    # What was known before that gap was forgotten at it: checked again.
    recorder.insert_events([_event(written, 4)], expected_versions={read: 1, theirs: 1})
    assert checks == [None, None]
    assert _versions(recorder, written) == [1, 2, 3, 4]


def test_another_connections_commit_makes_the_check_after_the_insert(
    recorder: Any, path: Path, checks: list[int | None]
) -> None:
    read, written = uuid4(), uuid4()
    recorder.insert_events([_event(read, 1)])
    _elsewhere(path, _event(uuid4(), 1))  # not read: the check passes
    (mine,) = recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    assert checks == [mine]

    _elsewhere(path, _event(read, 2))  # read: refused, and nothing written
    before = recorder.max_notification_id()
    with pytest.raises(ReadSetChangedError) as refused:
        recorder.insert_events([_event(written, 2)], expected_versions={read: 1})
    assert refused.value.aggregate_id == str(read)
    assert checks == [mine, before + 1]
    assert recorder.max_notification_id() == before
    assert _versions(recorder, written) == [1]


_ANOTHER_PROCESS = """
import sqlite3, sys
path, table, aggregate = sys.argv[1:]
with sqlite3.connect(path, isolation_level=None) as conn:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"INSERT INTO {table} VALUES (?, 2, 't:E', x'7b7d')", (aggregate,))
    conn.execute("COMMIT")
"""


def test_another_processs_commit_of_an_aggregate_read_is_refused(
    recorder: Any, path: Path, checks: list[int | None]
) -> None:
    read, written = uuid4(), uuid4()
    recorder.insert_events([_event(read, 1)])
    recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    assert checks == []
    subprocess.run([sys.executable, "-c", _ANOTHER_PROCESS, str(path), TABLE, read.hex], check=True)
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([_event(written, 2)], expected_versions={read: 1})
    assert len(checks) == 1
    assert _versions(recorder, read) == [1, 2]
    assert _versions(recorder, written) == [1]


def test_a_read_kept_past_another_threads_commit_of_it_is_refused(
    recorder: Any, checks: list[int | None]
) -> None:
    """A decision read version 1 here; another thread of this process commits version 2
    through the same recorder (the last commit, so no gap): what is known is version 2."""
    read, written = uuid4(), uuid4()
    recorder.insert_events([_event(read, 1)])
    recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    thread = threading.Thread(target=recorder.insert_events, args=([_event(read, 2)],))
    thread.start()
    thread.join(10)
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([_event(written, 2)], expected_versions={read: 1})
    assert checks == [None]
    assert _versions(recorder, written) == [1]
    recorder.insert_events([_event(written, 2)], expected_versions={read: 2})
    assert checks == [None, None]  # forgotten at the refusal, then known again


def test_a_commit_that_failed_forgets_what_was_known(
    recorder: Any, checks: list[int | None]
) -> None:
    read, written = uuid4(), uuid4()
    recorder.insert_events([_event(read, 1)])
    with pytest.raises(IntegrityError):
        recorder.insert_events([_event(read, 1)])  # the primary key: rolled back
    recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    assert checks == [None]


class _Proxy:
    """An object's attributes, read and set, but ``execute`` and ``cursor`` as below."""

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_real", real)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)


class _CommitsThenFails(_Proxy):
    def execute(self, statement: str, *args: Any) -> Any:
        result = self._real.execute(statement, *args)
        if statement == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return result


class _ConnectionCommittingThenFailing(_Proxy):
    def cursor(self) -> Any:
        return _CommitsThenFails(self._real.cursor())


def test_a_commit_whose_outcome_is_not_known_forgets_what_was_known(
    recorder: Any, checks: list[int | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its COMMIT raised, but had committed: the next commit relying on what was known is
    checked before its INSERT, as one relying on what is not known."""
    read, written = uuid4(), uuid4()
    recorder.insert_events([_event(read, 1)])
    pool = recorder.datastore.pool
    real_get = pool.get_connection
    failing: list[Any] = []

    def get_connection(*args: Any, **kwargs: Any) -> Any:
        connection = real_get(*args, **kwargs)
        failing.append((connection, connection._sqlite_conn))
        connection._sqlite_conn = _ConnectionCommittingThenFailing(connection._sqlite_conn)
        return connection

    with monkeypatch.context() as patched:
        patched.setattr(pool, "get_connection", get_connection)
        with pytest.raises(OperationalError):
            recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    for connection, real in failing:
        connection._sqlite_conn = real
    assert _versions(recorder, written) == [1]  # committed after all
    checks.clear()
    recorder.insert_events([_event(written, 2)], expected_versions={read: 1})
    assert checks == [None]


def test_a_moved_read_set_is_raised_ahead_of_the_primary_keys_refusal(
    recorder: Any, path: Path, checks: list[int | None]
) -> None:
    """As when the check came before the INSERT: a commit both stale and beaten on the
    primary key is refused as stale; beaten alone, by the primary key."""
    read, written = uuid4(), uuid4()
    recorder.insert_events([_event(read, 1)])
    recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    with pytest.raises(IntegrityError):
        recorder.insert_events([_event(written, 1)], expected_versions={read: 1})
    recorder.insert_events([_event(read, 2)])  # known again, at version 2
    _elsewhere(path, _event(read, 3), _event(written, 2))
    checks.clear()
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([_event(written, 2)], expected_versions={read: 2})
    assert checks == [None]  # after the INSERT failed: nothing of it in the table


def test_an_aggregate_written_and_relied_on_is_checked_as_it_was_before_the_insert(
    recorder: Any, path: Path, checks: list[int | None]
) -> None:
    """A caller may name an aggregate it writes in its read set too: checked before the
    INSERT, it is at the version relied on; after it, the check leaves the INSERT's rows out."""
    aggregate = uuid4()
    recorder.insert_events([_event(aggregate, 1)])
    _elsewhere(path, _event(uuid4(), 1))
    (mine,) = recorder.insert_events([_event(aggregate, 2)], expected_versions={aggregate: 1})
    assert checks == [mine]
    assert _versions(recorder, aggregate) == [1, 2]


def test_a_commit_of_more_than_one_insert_is_checked_before_it(
    recorder: Any, checks: list[int | None]
) -> None:
    """A second INSERT that failed would leave the first one's rows in the table: such a
    commit is checked first, as before, and refused by the primary key alone here."""
    aggregate = uuid4()
    recorder.insert_events([_event(aggregate, 1)])
    many = [_event(aggregate, 2)] + [
        _event(uuid4(), 1) for _ in range(CountersignSQLiteRecorder.INSERT_CHUNK)
    ]
    many[-1] = _event(aggregate, 1)  # in the second INSERT: the primary key refuses it
    with pytest.raises(IntegrityError):
        recorder.insert_events(many, expected_versions={aggregate: 1})
    assert checks == [None]
    assert _versions(recorder, aggregate) == [1]


def test_a_commit_of_no_events_is_checked(recorder: Any, checks: list[int | None]) -> None:
    read = uuid4()
    recorder.insert_events([_event(read, 1)])
    assert recorder.insert_events([], expected_versions={read: 1}) == []
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([], expected_versions={read: 2})
    assert checks == [None, None]


def test_the_check_after_the_insert_reads_the_primary_keys_index(recorder: Any) -> None:
    with recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute(
            "EXPLAIN QUERY PLAN " + check_before_statement(TABLE, 2), [10, "a" * 32, "b" * 32]
        )
        plan = [row[3] for row in cursor.fetchall()]
    searches = [step for step in plan if "SEARCH" in step]
    assert len(searches) == 2, plan
    assert all("INDEX" in step and "originator_id=?" in step for step in searches), plan
    assert not any(f"SCAN {TABLE}" in step for step in plan), plan


# -- against the check made every time -----------------------------------------------------------


def _stale(path: Path, expected: Mapping[UUID, int | None]) -> bool:
    """What the check made before every INSERT would find, read on a connection of its own."""
    with closing(sqlite3.connect(path)) as conn:
        found = [
            conn.execute(
                f"SELECT max(originator_version) FROM {TABLE} WHERE originator_id = ?",
                (aggregate_id.hex,),
            ).fetchone()[0]
            for aggregate_id in expected
        ]
    return found != list(expected.values())


def test_commits_are_refused_exactly_as_when_every_commit_was_checked(
    recorder: Any, path: Path, checks: list[int | None]
) -> None:
    """Random commits through the recorder relying on versions known, old or made up, among
    commits by another connection and commits refused by the primary key: each is refused
    (and how) exactly when the check made before every INSERT would refuse it."""
    rng = random.Random(27)
    ids = [uuid4() for _ in range(4)]
    latest: dict[UUID, int] = {}
    skipped = 0
    outcomes = {"committed": 0, "stale": 0, "beaten": 0}
    for _ in range(400):
        action = rng.random()
        if action < 0.15:
            target = rng.choice(ids)
            latest[target] = latest.get(target, 0) + 1
            _elsewhere(path, _event(target, latest[target]))
            continue
        read = rng.sample(ids, rng.randint(1, 2))
        expected: dict[UUID, int | None] = {}
        for aggregate_id in read:
            version = latest.get(aggregate_id)
            if version is not None and rng.random() < 0.2:
                version = rng.choice([version - 1, version + 1])
            expected[aggregate_id] = version
        writes = [a for a in ids if a not in expected]
        target = rng.choice(writes)
        version = latest.get(target, 0) + (1 if rng.random() < 0.9 else 0)
        stale = _stale(path, expected)
        made = len(checks)
        try:
            recorder.insert_events([_event(target, version)], expected_versions=expected)
        except ReadSetChangedError:
            assert stale
            outcomes["stale"] += 1
        except IntegrityError:
            assert not stale
            assert version == latest.get(target, 0)
            outcomes["beaten"] += 1
        else:
            assert not stale
            latest[target] = version
            outcomes["committed"] += 1
            skipped += len(checks) == made
    # Every way was taken: no check, the check after the INSERT, and each outcome.
    assert skipped > 40
    assert sum(before is not None for before in checks) > 4
    assert min(outcomes.values()) > 10, outcomes


def test_threads_of_two_recorders_on_one_file_commit_only_on_current_reads(
    recorder: Any, path: Path
) -> None:
    """Two recorders (two pools, as two processes) on one file, two threads each: every
    thread moves shared aggregates on, and commits events of its own relying on versions of
    them it remembers, often out of date. Read back in rowid order, the log shows each of
    those commits made when every aggregate it relied on was at the version it relied on."""
    env = Environment("t", {"SQLITE_DBNAME": str(path)})
    second = CountersignSQLiteFactory(env).datastore
    recorders = [recorder, CountersignSQLiteRecorder(second, TABLE)]
    shared = [uuid4(), uuid4(), uuid4()]
    recorder.insert_events([_event(a, 1) for a in shared])
    errors: list[BaseException] = []
    refused: list[type] = []

    def work(seed: int, mine: Any) -> None:
        rng = random.Random(seed)
        own = uuid4()
        own_version = 0
        remembered = dict.fromkeys(shared, 1)
        try:
            for _ in range(150):
                relied = dict(rng.sample(sorted(remembered.items()), rng.randint(1, 2)))
                if rng.random() < 0.3:  # move one of them on
                    target = rng.choice(shared)
                    events = [_event(target, remembered[target] + 1)]
                    relied.pop(target, None)
                else:
                    events = [
                        StoredEvent(
                            own,
                            own_version + 1,
                            "t:Relied",
                            json.dumps({a.hex: v for a, v in relied.items()}).encode(),
                        )
                    ]
                try:
                    mine.insert_events(events, expected_versions=relied)
                except (ReadSetChangedError, IntegrityError) as lost:
                    refused.append(type(lost))
                    for a in shared:  # read them again
                        remembered[a] = max(e.originator_version for e in mine.select_events(a))
                    continue
                if events[0].originator_id == own:
                    own_version += 1
                else:
                    remembered[events[0].originator_id] += 1
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n, recorders[n % 2])) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    second.close()
    assert not errors, errors

    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute(
            f"SELECT originator_id, originator_version, topic, state FROM {TABLE} ORDER BY rowid"
        ).fetchall()
    current: dict[str, int] = {}
    relied_commits = 0
    for originator_id, version, topic, state in rows:
        if topic == "t:Relied":
            relied = json.loads(bytes(state))
            assert all(current[a] == v for a, v in relied.items()), (relied, current)
            relied_commits += 1
        current[originator_id] = max(current.get(originator_id, 0), version)
    assert relied_commits > 50
    assert refused.count(ReadSetChangedError) > 20
