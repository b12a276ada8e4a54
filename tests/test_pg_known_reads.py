"""PostgreSQL commits whose read set this process knows to be current (known_reads): the
read-set check's probes are skipped only when nothing has been committed since this process's
last commit. Another process's commit, or an older writer's still in flight, makes the full
check, so a stale read is refused as before."""

from __future__ import annotations

import struct
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence import pg_statements
from countersign.infrastructure.persistence.known_reads import KEPT, KnownReads
from countersign.infrastructure.persistence.pg_commit_function import known_commit_function
from countersign.infrastructure.persistence.recorders import EXPECTED_VERSIONS, ReadSetChangedError
from countersign.infrastructure.settings import Settings
from eventsourcing.persistence import StoredEvent
from psycopg import sql

from tests.conftest import _truncate_postgres, events_table
from tests.test_optimistic_reads import Counter, _stored
from tests.test_pg_writers_lock import _wait_for_a_lock_wait

ARGS = "%s::uuid[], %s::bigint[], %s::text[], %s::bytea[], %s::uuid[], %s::bigint[]"


def _event(aggregate_id: uuid.UUID, version: int) -> StoredEvent:
    return StoredEvent(aggregate_id, version, "tests:Counter.Incremented", b"{}")


def _position(claim: bytes | None) -> int | None:
    return None if claim is None else struct.unpack("!q", claim)[0]


# -- what this process knows, alone -----------------------------------------------------------


def test_nothing_is_claimed_before_a_commit_or_for_an_empty_read_set() -> None:
    known = KnownReads()
    a = uuid.uuid4()
    assert known.claim({a: 1}) is None
    known.committed(10, 10, [_event(a, 1)], {}, None)
    assert known.claim({}) is None
    assert known.claim({a: 1}) == 10


def test_a_claim_needs_every_version_known_and_the_same() -> None:
    known = KnownReads()
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    known.committed(5, 6, [_event(a, 1), _event(a, 2)], {b: 7}, None)
    assert known.claim({a: 2, b: 7}) == 6
    assert known.claim({a: 1}) is None  # an older version than the one written
    assert known.claim({a: 2, c: 1}) is None  # one not known
    assert known.claim({b: None}) is None  # "did not exist" is never claimed
    # As text too (the recorder accepts ids either way).
    assert known.claim({str(a): 2}) == 6


def test_what_was_known_is_kept_only_while_the_commits_follow_each_other() -> None:
    known = KnownReads()
    a, b = uuid.uuid4(), uuid.uuid4()
    known.committed(1, 1, [_event(a, 1)], {}, None)
    known.committed(2, 3, [_event(b, 1), _event(b, 2)], {a: 1}, None)
    assert known.claim({a: 1, b: 2}) == 3
    known.committed(5, 5, [_event(b, 3)], {}, None)  # id 4: another's, or a failed commit's
    assert known.claim({a: 1}) is None
    assert known.claim({b: 3}) == 5


def test_a_commit_that_claimed_keeps_what_it_relied_on() -> None:
    known = KnownReads()
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    known.committed(1, 2, [_event(a, 1), _event(b, 1)], {}, None)
    claimed = known.claim({a: 1})
    assert claimed == 2
    known.committed(3, 3, [_event(c, 1)], {a: 1}, claimed)
    assert known.claim({a: 1, b: 1, c: 1}) == 3
    # Claimed from a state since replaced: what it relied on is recorded again.
    stale_claim = known.claim({a: 1})
    known.committed(9, 9, [_event(c, 2)], {}, None)  # another's commits came between
    known.committed(10, 10, [_event(b, 2)], {a: 1}, stale_claim)
    assert known.claim({a: 1, b: 2, c: 2}) == 10


def test_past_its_size_only_the_last_commit_is_known() -> None:
    known = KnownReads()
    first = uuid.uuid4()
    known.committed(1, 1, [_event(first, 1)], {}, None)
    for n in range(2, KEPT + 3):
        known.committed(n, n, [_event(uuid.uuid4(), 1)], {}, None)
    assert known.claim({first: 1}) is None
    last = uuid.uuid4()
    known.committed(KEPT + 3, KEPT + 3, [_event(last, 1)], {}, None)
    assert known.claim({last: 1}) == KEPT + 3


# -- the recorder and the function, on PostgreSQL ----------------------------------------------


@pytest.fixture
def pg_cs(postgres_url: str, clock: Any) -> Iterator[Countersign]:
    _truncate_postgres(postgres_url)
    cs = bootstrap(Settings(database_url=postgres_url), clock=clock)
    try:
        yield cs
    finally:
        cs.close()


@pytest.fixture
def claims(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The position each commit through the recorder's pipelined statements claimed."""
    sent: list[int | None] = []
    real = pg_statements.run_then

    def run_then(conn: Any, statement: Any, params: Any, then: Any) -> Any:
        sent.append(_position(params[6]))
        return real(conn, statement, params, then)

    monkeypatch.setattr(pg_statements, "run_then", run_then)
    return sent


def _as_an_older_process(holder: psycopg.Connection[Any], table: str, event: Any) -> None:
    """``event`` stored as the library's own recorder stores it: the table's EXCLUSIVE lock,
    an INSERT whose notification id comes from the sequence (left uncommitted)."""
    holder.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
    holder.execute(
        f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
        "VALUES (%s, %s, %s, %s)",
        (event.originator_id, event.originator_version, event.topic, event.state),
    )


def test_a_commit_relying_on_what_this_process_wrote_claims_its_last_commit(
    pg_cs: Countersign, claims: list[int | None]
) -> None:
    recorder: Any = pg_cs.app.recorder
    read, written = Counter(), Counter()
    (first,) = recorder.insert_events(_stored(pg_cs, read))
    ids = recorder.insert_events(_stored(pg_cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})
    written.increment()
    more = recorder.insert_events(_stored(pg_cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})

    assert claims == [None, first, ids[-1]]
    assert more == [ids[-1] + 1]
    assert [e.originator_version for e in recorder.select_events(written.id)] == [1, 2]
    # A version older than the one this process wrote is not claimed, and is refused.
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events(_stored(pg_cs, Counter()), **{EXPECTED_VERSIONS: {written.id: 1}})
    assert claims[-1] is None


def test_a_commit_of_several_events_with_the_probes_skipped_stores_them_all(
    pg_cs: Countersign, claims: list[int | None]
) -> None:
    """The sequence is tested once, before the rows draw their ids (each draw moves it)."""
    recorder: Any = pg_cs.app.recorder
    read = Counter()
    (first,) = recorder.insert_events(_stored(pg_cs, read))
    written = Counter()
    for _ in range(4):
        written.increment()
    stored = _stored(pg_cs, written)

    ids = recorder.insert_events(stored, **{EXPECTED_VERSIONS: {read.id: 1}})

    assert claims[-1] == first
    assert ids == [first + 1, first + 2, first + 3, first + 4, first + 5]
    assert [(e.id, e.originator_version, e.state) for e in recorder.select_log(first, 10)] == [
        (i, e.originator_version, e.state) for i, e in zip(ids, stored, strict=True)
    ]


def test_a_relied_on_aggregate_moved_by_another_process_is_refused(
    pg_cs: Countersign, postgres_url: str, claims: list[int | None]
) -> None:
    recorder: Any = pg_cs.app.recorder
    read, written = Counter(), Counter()
    (first,) = recorder.insert_events(_stored(pg_cs, read))
    read.increment()
    with psycopg.connect(postgres_url) as other:
        _as_an_older_process(other, events_table(pg_cs), _stored(pg_cs, read)[0])

    with pytest.raises(ReadSetChangedError):
        recorder.insert_events(_stored(pg_cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})

    assert claims[-1] == first  # claimed, and the sequence said something came after
    assert list(recorder.select_events(written.id)) == []


@pytest.mark.parametrize("plans", ["force_custom_plan", "force_generic_plan"])
def test_an_older_writer_that_draws_its_ids_after_the_first_test_is_seen(
    postgres_url: str, clock: Any, plans: str
) -> None:
    """An older writer holds the table's EXCLUSIVE lock but has not drawn an id yet when the
    commit tests the sequence: the commit's INSERT waits for that writer, whose ids then come
    before it; the INSERT's own test of the sequence sees them, and the full check refuses."""
    _truncate_postgres(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        database = sql.Identifier(admin.info.dbname)
        admin.execute(
            sql.SQL("ALTER DATABASE {} SET plan_cache_mode = {}").format(
                database, sql.Identifier(plans)
            )
        )
        cs = bootstrap(Settings(database_url=postgres_url), clock=clock)
        try:
            recorder: Any = cs.app.recorder
            table = events_table(cs)
            read, written = Counter(), Counter()
            recorder.insert_events(_stored(cs, read))
            recorder.insert_events(_stored(cs, written), **{EXPECTED_VERSIONS: {read.id: 1}})
            read.increment()
            moved = _stored(cs, read)[0]
            written.increment()
            outcome: list[object] = []

            def commit() -> None:
                try:
                    outcome.append(
                        recorder.insert_events(
                            _stored(cs, written), **{EXPECTED_VERSIONS: {read.id: 1}}
                        )
                    )
                except Exception as error:
                    outcome.append(error)

            with psycopg.connect(postgres_url) as holder:
                holder.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
                writer = threading.Thread(target=commit)
                writer.start()
                _wait_for_a_lock_wait(postgres_url)
                assert not outcome
                _as_an_older_process(holder, table, moved)
                holder.commit()
            writer.join(timeout=15)
            assert len(outcome) == 1, outcome
            assert isinstance(outcome[0], ReadSetChangedError), outcome
            assert [e.originator_version for e in recorder.select_events(written.id)] == [1]
        finally:
            cs.close()
            admin.execute(sql.SQL("ALTER DATABASE {} RESET plan_cache_mode").format(database))


def _call(conn: psycopg.Connection[Any], function: str, *args: Any) -> Any:
    marks = ARGS + (", %s::bigint" if len(args) == 7 else "")
    row = conn.execute(f"SELECT {function}({marks})", args).fetchone()
    assert row is not None
    return row[0]


def _arrays(events: list[Any], expected: Mapping[uuid.UUID, int | None]) -> list[Any]:
    return [
        [e.originator_id for e in events],
        [e.originator_version for e in events],
        [e.topic for e in events],
        [e.state for e in events],
        list(expected),
        list(expected.values()),
    ]


def test_the_function_skips_the_probes_only_at_the_sequences_last_value(
    pg_cs: Countersign, postgres_url: str
) -> None:
    """What the function trusts: a claim of the sequence's last value (here made falsely, to
    show the probes are skipped); any other, or none, and the read set is checked."""
    recorder: Any = pg_cs.app.recorder
    read = Counter()
    (last,) = recorder.insert_events(_stored(pg_cs, read))
    function = f"{events_table(pg_cs)}_commit_known"
    stale = {read.id: 7}  # never true
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for claim in (None, last - 1, last + 1):
            with pytest.raises(psycopg.Error) as refused:
                _call(conn, function, *_arrays(_stored(pg_cs, Counter()), stale), claim)
            assert refused.value.sqlstate == "CS409"
        trusted = _call(conn, function, *_arrays(_stored(pg_cs, Counter()), stale), last)
    assert trusted == last + 1


def test_the_older_functions_stay_as_they_were_called(
    pg_cs: Countersign, postgres_url: str
) -> None:
    """A process of the previous version calls ``_commit_async`` (and ``_commit``) with six
    arrays: they are still made at every start, check the read set and insert as before."""
    recorder: Any = pg_cs.app.recorder
    table = events_table(pg_cs)
    read = Counter()
    (first,) = recorder.insert_events(_stored(pg_cs, read))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP FUNCTION {table}_commit_known")
        for function in (f"{table}_commit_async", f"{table}_commit"):
            with pytest.raises(psycopg.Error) as refused:
                _call(conn, function, *_arrays(_stored(pg_cs, Counter()), {read.id: 2}))
            assert refused.value.sqlstate == "CS409"
            checked = Counter()
            last = _call(conn, function, *_arrays(_stored(pg_cs, checked), {read.id: 1}))
            unchecked = _call(conn, function, *_arrays(_stored(pg_cs, Counter()), {}))
            assert unchecked == last + 1
    bootstrap(Settings(database_url=postgres_url)).close()  # the next start makes it again
    assert recorder.insert_events(_stored(pg_cs, Counter()), **{EXPECTED_VERSIONS: {read.id: 1}})
    assert first < unchecked


def test_the_known_function_waits_for_the_writers_lock_as_long_as_its_connection_does(
    pg_cs: Countersign, postgres_url: str
) -> None:
    """It sets no lock timeout of its own (since pg-timeouts; it set 10 s until then): a
    connection's ``lock_timeout`` (the store's: COUNTERSIGN_DATABASE_TIMEOUT, set as it
    connects) bounds its wait for the writers' lock, and the commit is refused, nothing
    written."""
    recorder: Any = pg_cs.app.recorder
    table = recorder.events_table_name
    create = known_commit_function(
        sql.Identifier("impatient_commit"),
        schema_name=recorder.datastore.schema,
        table_name=table,
        channel=recorder.channel_name,
    )
    before = _count(postgres_url, table)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(create)
        with psycopg.connect(postgres_url) as holder:
            holder.execute(f"SELECT {table}_commit_known({ARGS}, NULL)", [[], [], [], [], [], []])
            conn.execute("SET lock_timeout = '200ms'")
            conn.execute("SET statement_timeout = '5s'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                _call(conn, "impatient_commit", *_arrays(_stored(pg_cs, Counter()), {}), None)
    assert _count(postgres_url, table) == before


def _count(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


def test_a_commit_notifies_the_listeners(pg_cs: Countersign, postgres_url: str) -> None:
    recorder: Any = pg_cs.app.recorder
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(recorder.channel_name)))
        recorder.insert_events(_stored(pg_cs, Counter()))
        heard = list(listener.notifies(timeout=5, stop_after=1))
    assert [(n.channel, n.payload) for n in heard] == [(recorder.channel_name, "")]
