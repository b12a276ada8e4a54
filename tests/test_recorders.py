"""The recorders' commit paths.

PostgreSQL: the recorder packs its commit's arrays itself; the server must read back exactly
what was packed, for every element type, empty arrays, non-ASCII text and string ids.
Both: one commit stores every event in order, returns their notification ids in order, and
refuses (writing nothing) when an aggregate it read has moved on.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.persistence.pg_arrays import BigInts, Byteas, Texts, UUIDs
from countersign.infrastructure.persistence.recorders import (
    CountersignSQLiteRecorder,
    LogEntry,
    ReadSetChangedError,
)
from eventsourcing.persistence import StoredEvent


@pytest.fixture
def pg(postgres_url: str) -> psycopg.Connection[tuple[object, ...]]:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        yield conn


@pytest.mark.postgres
@pytest.mark.parametrize("count", [0, 1, 3])
def test_packed_arrays_read_back_as_sent(pg: psycopg.Connection, count: int) -> None:
    ids = [uuid4() for _ in range(count)]
    numbers = [(-1) ** i * (2**62 - i) for i in range(count)]
    texts = [f"Proposal.Événement-{i}" for i in range(count)]
    blobs = [bytes(range(256)) * i if i % 2 else b"" for i in range(count)]
    row = pg.execute(
        "SELECT %s::uuid[], %s::bigint[], %s::text[], %s::bytea[]",
        (
            UUIDs.of(ids),
            BigInts.of(numbers),
            Texts.of((t.encode() for t in texts), count),
            Byteas.of(blobs, count),
        ),
        binary=True,
    ).fetchone()
    assert row == (ids, numbers, texts, blobs)


@pytest.mark.parametrize("count", [0, 1, 3])
@pytest.mark.parametrize("reads", [0, 1, 3])
def test_a_commits_arrays_are_packed_in_one_pass_as_each_array_alone(
    count: int, reads: int
) -> None:
    """pg_arrays.commit_arrays gives, byte for byte, what each array's ``of`` gives: ids as
    UUIDs or their text, versions with and without NULLs, topics in UTF-8 (again from its
    memory of them), states of any length."""
    from countersign.infrastructure.persistence.pg_arrays import commit_arrays

    events = [
        StoredEvent(
            originator_id=uuid4() if i % 2 else str(uuid4()),  # type: ignore[arg-type]
            originator_version=None if i == 2 else (-1) ** i * (2**62 - i),  # type: ignore[arg-type]
            topic=f"countersign.domain:Événement{i % 2}",
            state=bytes(range(256)) * i if i % 2 else b"",
        )
        for i in range(count)
    ]
    expected = {uuid4(): None if i == 1 else i for i in range(reads)}
    each_alone = (
        UUIDs.of([e.originator_id for e in events]),
        BigInts.of([e.originator_version for e in events]),
        Texts.of([e.topic.encode() for e in events], count),
        Byteas.of([e.state for e in events], count),
        UUIDs.of(list(expected)),
        BigInts.of(list(expected.values())),
    )
    for _ in range(2):
        assert commit_arrays(events, expected) == tuple(p.data for p in each_alone)


@pytest.mark.postgres
def test_a_missing_version_is_packed_as_null(pg: psycopg.Connection) -> None:
    row = pg.execute("SELECT %s::bigint[]", (BigInts.of([3, None, -7]),), binary=True).fetchone()
    assert row == ([3, None, -7],)


@pytest.mark.postgres
def test_string_ids_are_packed_as_uuids(pg: psycopg.Connection) -> None:
    an_id = uuid4()
    row = pg.execute("SELECT %s::uuid[]", (UUIDs.of([str(an_id)]),), binary=True).fetchone()
    assert row == ([an_id],)


@pytest.fixture
def recorder(cs: Countersign) -> Any:
    return cs.app.recorder


def _event(originator: UUID, version: int, state: bytes) -> StoredEvent:
    return StoredEvent(
        originator_id=originator, originator_version=version, topic="t:E", state=state
    )


def test_a_commit_stores_every_event_and_checks_its_read_set(
    recorder: Any,
) -> None:
    read, written = uuid4(), uuid4()
    ids = recorder.insert_events([_event(read, 1, b"{}")])
    assert ids is not None
    assert len(ids) == 1
    states = [b'{"a":"\xc3\xa9"}', b"x" * 5000]
    ids = recorder.insert_events(
        [_event(written, 1, states[0]), _event(written, 2, states[1])],
        expected_versions={read: 1},
    )
    assert ids is not None
    assert len(ids) == 2
    stored = recorder.select_events(written)
    assert [(e.originator_version, e.state) for e in stored] == [(1, states[0]), (2, states[1])]

    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([_event(written, 3, b"{}")], expected_versions={read: 0})
    assert len(recorder.select_events(written)) == 2


def test_a_large_commit_keeps_its_order(recorder: Any) -> None:
    """More events than one SQLite statement carries: ids still increase in event order."""
    many = CountersignSQLiteRecorder.INSERT_CHUNK * 2 + 7
    aggregates = [uuid4() for _ in range(many)]
    before = recorder.max_notification_id() or 0
    ids = recorder.insert_events([_event(a, 1, str(i).encode()) for i, a in enumerate(aggregates)])
    assert ids == list(range(before + 1, before + many + 1))
    notifications = recorder.select_notifications(before + 1, limit=many)
    assert [n.originator_id for n in notifications] == aggregates
    assert [n.state for n in notifications] == [str(i).encode() for i in range(many)]


def test_the_log_read_gives_log_entries_with_the_notifications_values(recorder: Any) -> None:
    """``select_log`` (the projection runners' read) holds what ``select_notifications`` does,
    as ``LogEntry`` named tuples (the id as the database returns it), and leaves the
    connection's rows as the library's reads expect them (SQLite: ``sqlite3.Row``)."""
    before = recorder.max_notification_id() or 0
    aggregate = uuid4()
    states = [b'{"a":"\xc3\xa9"}', b"\x00\xff", b"x" * 5000]
    recorder.insert_events([_event(aggregate, i + 1, state) for i, state in enumerate(states)])
    entries = recorder.select_log(before, 2)
    assert [type(entry) for entry in entries] == [LogEntry, LogEntry]
    entries += recorder.select_log(entries[-1].id, 10)
    notifications = recorder.select_notifications(before + 1, limit=10)
    assert len(entries) == len(notifications) == 3
    for entry, notification in zip(entries, notifications, strict=True):
        assert entry.id == notification.id
        assert UUID(str(entry.originator_id)) == notification.originator_id == aggregate
        assert entry.originator_version == notification.originator_version
        assert entry.topic == notification.topic == "t:E"
        assert type(entry.state) is bytes
        assert entry.state == notification.state
    assert recorder.select_log(entries[-1].id, 10) == []
    # The library's own reads after it, on the same connections, index rows by name.
    assert [e.state for e in recorder.select_events(aggregate)] == states


def test_a_refused_commit_writes_none_of_its_events(recorder: Any) -> None:
    read = uuid4()
    recorder.insert_events([_event(read, 1, b"{}"), _event(read, 2, b"{}")])
    before = recorder.max_notification_id()
    fresh = [uuid4() for _ in range(3)]
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events(
            [_event(a, 1, b"{}") for a in fresh], expected_versions={read: 1, uuid4(): 1}
        )
    assert recorder.max_notification_id() == before
    assert all(recorder.select_events(a) == [] for a in fresh)


@pytest.mark.parametrize("size", [3, 2 * CountersignSQLiteRecorder.CHECK_CHUNK + 1])
def test_a_read_set_of_any_size_is_checked(recorder: Any, size: int) -> None:
    """Past one statement's parameters and result columns on SQLite: checked in parts."""
    read = [uuid4() for _ in range(size)]
    recorder.insert_events([_event(a, 1, b"{}") for a in read])
    recorder.insert_events([_event(uuid4(), 1, b"{}")], expected_versions=dict.fromkeys(read, 1))

    moved = read[-1]  # the last one, in the last part
    recorder.insert_events([_event(moved, 2, b"{}")])
    with pytest.raises(ReadSetChangedError, match=str(moved)):
        recorder.insert_events(
            [_event(uuid4(), 1, b"{}")], expected_versions=dict.fromkeys(read, 1)
        )


def test_a_commit_relying_on_an_absence_is_refused_once_the_aggregate_exists(
    recorder: Any,
) -> None:
    """None expects no event of the aggregate (a decision that found it absent)."""
    ghost = uuid4()
    recorder.insert_events([_event(uuid4(), 1, b"{}")], expected_versions={ghost: None})

    recorder.insert_events([_event(ghost, 1, b"{}")])
    with pytest.raises(ReadSetChangedError):
        recorder.insert_events([_event(uuid4(), 1, b"{}")], expected_versions={ghost: None})


def test_the_sqlite_pools_queue_lock_waits_and_times_out_as_the_semaphore_did(tmp_path):
    import threading

    from countersign.infrastructure.persistence.recorders import (
        CountersignSQLiteFactory,
        _QueueLock,
    )
    from eventsourcing.persistence import ConnectionUnavailableError
    from eventsourcing.utils import Environment

    queue = _QueueLock()
    assert queue.acquire(timeout=None)
    assert not queue.acquire(timeout=0.01)  # taken: a timed wait gives up
    threading.Thread(target=queue.release).start()  # another thread may give it back
    assert queue.acquire(timeout=5)
    queue.release()

    env = Environment("t", {"SQLITE_DBNAME": str(tmp_path / "p.db")})
    datastore = CountersignSQLiteFactory(env).datastore
    pool = datastore.pool
    assert type(pool._get_semaphore) is _QueueLock
    writer = pool.get_connection(is_writer=True)
    with pytest.raises(ConnectionUnavailableError):  # one writer at a time, as before
        pool.get_connection(timeout=0.05, is_writer=True)
    pool.put_connection(writer)
    threads_done = []

    def take_and_give_back() -> None:
        for _ in range(50):
            connection = pool.get_connection(is_writer=True)
            pool.put_connection(connection)
        threads_done.append(True)

    threads = [threading.Thread(target=take_and_give_back) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(threads_done) == 4
    datastore.close()


def test_the_sqlite_pools_short_ways_keep_the_librarys_bookkeeping(tmp_path):
    """``get_connection`` and ``put_connection`` inline the library's helpers: the same
    connections are handed out and taken back, counted the same way, and the same misuse is
    refused (a closed connection is passed over, a foreign one or a closed pool refused)."""
    from countersign.infrastructure.persistence.recorders import (
        CountersignSQLiteFactory,
        _StatementCachingPool,
    )
    from eventsourcing.persistence import (
        ConnectionNotFromPoolError,
        ConnectionPoolClosedError,
    )
    from eventsourcing.sqlite import SQLiteConnectionPool
    from eventsourcing.utils import Environment

    env = Environment("t", {"SQLITE_DBNAME": str(tmp_path / "p.db")})
    datastore = CountersignSQLiteFactory(env).datastore
    pool = datastore.pool
    assert type(pool) is _StatementCachingPool
    assert type(pool).get_connection is not SQLiteConnectionPool.get_connection
    writer = pool.get_connection(is_writer=True)
    assert (pool._num_writers, pool.num_in_use, writer.is_writer) == (1, 1, True)
    reader = pool.get_connection(is_writer=False)
    assert (pool._num_readers, pool.num_in_use, reader.is_writer) == (1, 2, False)
    pool.put_connection(reader)
    pool.put_connection(writer)
    assert (pool._num_writers, pool._num_readers, pool.num_in_use, pool.num_in_pool) == (
        0,
        0,
        0,
        2,
    )
    assert not writer.in_use.locked()
    assert writer.is_writer is None
    again = pool.get_connection(is_writer=True)
    assert again is reader  # the pool's first, as the library's deque gives it
    pool.put_connection(again)
    # A pooled connection closed meanwhile (its max age) is passed over.
    first = pool._pool[0]
    first.close()
    taken = pool.get_connection()
    assert taken is not first
    assert not taken.closed
    with pytest.raises(ConnectionNotFromPoolError):
        pool.put_connection(first)
    pool.put_connection(taken)
    # A full pool closes what is given back; a connection marked closing is closed too.
    pool.pool_size = 1
    one, two = pool.get_connection(), pool.get_connection()
    pool.put_connection(one)
    pool.put_connection(two)
    assert not one.closed
    assert two.closed
    assert pool.num_in_pool == 1
    three = pool.get_connection()
    three._closing.set()
    pool.put_connection(three)
    assert three.closed
    assert pool.num_in_pool == 0
    pool.close()
    with pytest.raises(ConnectionPoolClosedError):
        pool.get_connection()
    datastore.close()


def test_the_postgres_commit_connection_behaves_as_the_librarys(recorder: Any) -> None:
    """``PooledConnection`` is ``PostgresDatastore.get_connection()`` written as a class:
    psycopg's errors come out as the library's, anything else as it is, and the connection
    goes back to the pool, with no transaction left open, however the block ends. (SQLite's
    pool is tested above.)"""
    from countersign.infrastructure.persistence.pg_pool import PooledConnection
    from countersign.infrastructure.persistence.recorders_postgres import (
        CountersignPostgresRecorder,
    )
    from eventsourcing.persistence import IntegrityError, ProgrammingError
    from eventsourcing.postgres import PostgresDatastore
    from psycopg.pq import TransactionStatus

    if not isinstance(recorder, CountersignPostgresRecorder):
        return
    datastore = recorder.datastore
    assert isinstance(datastore.get_connection(), PooledConnection)
    pool = datastore.pool
    with PooledConnection(datastore) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS pooled_t (k int PRIMARY KEY)")
        conn.execute("INSERT INTO pooled_t VALUES (1) ON CONFLICT DO NOTHING")
    available = pool.get_stats().get("pool_available")
    for statement, library_error in (
        ("SELECT * FROM no_such_table_here", ProgrammingError),
        ("INSERT INTO pooled_t VALUES (1)", IntegrityError),
    ):
        for make in (
            datastore.get_connection,  # the datastore's, for every recorder on it
            lambda: PostgresDatastore.get_connection(datastore),  # the library's own
        ):
            with pytest.raises(library_error), make() as conn:
                conn.execute(statement)
            assert pool.get_stats().get("pool_available") == available
    with pytest.raises(ValueError, match="not psycopg's"), PooledConnection(datastore):
        raise ValueError("not psycopg's")
    assert pool.get_stats().get("pool_available") == available
    with PooledConnection(datastore) as conn:
        assert conn.info.transaction_status is TransactionStatus.IDLE
        assert conn.execute("SELECT 42 AS n").fetchone()["n"] == 42
        conn.execute("DROP TABLE pooled_t")


def test_the_postgres_commit_and_log_read_are_prepared_statements_of_their_own(
    recorder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pg_statements: a commit and a log read run countersign's own named prepared
    statements on the connection's libpq object (no psycopg cursor), with the same results;
    a statement the server forgot (``DEALLOCATE ALL``) is prepared again; a stale read is
    still refused as one."""
    from countersign.infrastructure.persistence import pg_statements
    from countersign.infrastructure.persistence.recorders_postgres import (
        CountersignPostgresRecorder,
    )

    if not isinstance(recorder, CountersignPostgresRecorder):
        return

    def no_cursor(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a psycopg cursor ran the statement")

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.Cursor, "execute", no_cursor)
        read, written = uuid4(), uuid4()
        (first,) = recorder.insert_events([_event(read, 1, b"{}")])
        ids = recorder.insert_events(
            [_event(written, 1, b'{"a":1}'), _event(written, 2, b"\x00\xff")],
            expected_versions={read: 1, uuid4(): None},
        )
        assert ids == [first + 1, first + 2]
        entries = recorder.select_log(first - 1, 10)
        assert [tuple(entry) for entry in entries] == [
            (first, read, 1, "t:E", b"{}"),
            (first + 1, written, 1, "t:E", b'{"a":1}'),
            (first + 2, written, 2, "t:E", b"\x00\xff"),
        ]
        assert recorder.select_log(first + 2, 10) == []
        with pytest.raises(ReadSetChangedError, match=str(read)):
            recorder.insert_events([_event(written, 3, b"{}")], expected_versions={read: 0})

    with recorder.datastore.get_connection() as conn:
        names = {row["name"] for row in conn.execute("SELECT name FROM pg_prepared_statements")}
        conn.execute("DEALLOCATE ALL")
        # The server has forgotten it; the connection still lists it as prepared.
        assert recorder._log_statement.name.decode() in names
        result = pg_statements.run(
            conn, recorder._log_statement, (first.to_bytes(8, "big"), (10).to_bytes(8, "big"))
        )
        loaded = pg_statements.rows(conn, result, list)
        assert [row[0] for row in loaded] == [first + 1, first + 2]
        # The server has it; the connection's record says it has not (as through a wrapper
        # of the connection): preparing it again is refused, and it is used as it is.
        conn.__dict__.pop(pg_statements._PREPARED)
        result = pg_statements.run(
            conn, recorder._log_statement, (first.to_bytes(8, "big"), (10).to_bytes(8, "big"))
        )
        assert [row[0] for row in pg_statements.rows(conn, result, list)] == [first + 1, first + 2]


def test_a_commit_is_refused_unless_the_version_relied_on_is_the_latest(recorder: Any) -> None:
    """The read-set check's cases: the latest version passes; an older one (the aggregate
    moved on), a later one (never stored) and None (it exists) are refused. The long history
    fills several index pages (PostgreSQL's check probes from the version relied on)."""
    short, long = uuid4(), uuid4()
    recorder.insert_events([_event(short, v, b"{}") for v in (1, 2, 3)])
    recorder.insert_events([_event(long, v, b"{}") for v in range(1, 1201)])
    recorder.insert_events([_event(uuid4(), 1, b"{}")], expected_versions={short: 3, long: 1200})
    for relied_on in ({short: 2}, {short: 4}, {short: None}, {long: 1199}, {long: 1}):
        before = recorder.max_notification_id()
        with pytest.raises(ReadSetChangedError):
            recorder.insert_events(
                [_event(uuid4(), 1, b"{}")], expected_versions={**relied_on, uuid4(): None}
            )
        assert recorder.max_notification_id() == before


def _compression(conn: Any, table: str) -> str:
    row = conn.execute(
        "SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass "
        "AND attname = 'state'",
        (table,),
    ).fetchone()
    return str(row["attcompression"])


def test_the_postgres_insert_function_and_compression_are_upgraded_at_start(
    recorder: Any,
) -> None:
    """A database made by an earlier version (the function's read-set check as it was,
    states compressed by pglz) takes the current function and LZ4 when the recorder
    creates its tables again, as at every start; values stored before read back as they
    were."""
    from countersign.infrastructure.persistence.recorders_postgres import (
        CountersignPostgresRecorder,
    )

    if not isinstance(recorder, CountersignPostgresRecorder):
        return
    table = recorder.events_table_name
    function = f"{table}_commit"
    old, new = uuid4(), uuid4()
    big = b'{"text":"' + b"abcdefghij" * 600 + b'"}'  # over TOAST_TARGET: compressed
    with recorder.datastore.get_connection() as conn:
        # The earlier function: its read-set check without the bound on the version.
        (definition,) = (
            conn.execute("SELECT pg_get_functiondef(%s::regproc)", (function,)).fetchone().values()
        )
        bound = "AND e.originator_version >= coalesce(c.version, -9223372036854775808)"
        assert bound in definition
        conn.execute(definition.replace(bound, ""))
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN state SET COMPRESSION pglz")
    recorder.insert_events([_event(old, 1, big)])
    # A reader holding the table: the change waits a second at most, and comes next time.
    with recorder.datastore.get_connection() as conn:
        dsn = conn.info.dsn
    with psycopg.connect(dsn, password=conn.info.password) as reader:
        reader.execute(f"SELECT count(*) FROM {table}")  # its transaction stays open
        recorder.create_table()
    with recorder.datastore.get_connection() as conn:
        assert _compression(conn, table) == "p"
    recorder.create_table()
    recorder.insert_events([_event(new, 1, big)])

    with recorder.datastore.get_connection() as conn:
        (definition,) = (
            conn.execute("SELECT pg_get_functiondef(%s::regproc)", (function,)).fetchone().values()
        )
        assert bound in definition
        methods = {
            str(row["originator_id"]): row["method"]
            for row in conn.execute(
                f"SELECT originator_id, pg_column_compression(state) AS method FROM {table} "
                "WHERE originator_id = ANY(%s)",
                ([old, new],),
            )
        }
    assert methods == {str(old): "pglz", str(new): "lz4"}
    assert [e.state for e in recorder.select_events(old)] == [big]
    assert [e.state for e in recorder.select_events(new)] == [big]


@pytest.mark.postgres
@pytest.mark.parametrize("pipelines", [True, False], ids=["pipelined", "one-then-the-other"])
def test_a_statement_and_the_one_after_it_are_sent_together_and_each_runs(
    pg: psycopg.Connection[tuple[object, ...]], pipelines: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pg_statements.run_then, what a PostgreSQL commit runs (the commit, then the transaction
    that waits for the disk): each statement its own transaction, the second run whether or
    not the first failed (the first's transaction then rolled back), the second's failure
    raised first; a statement the server forgot is prepared again (all, or only the second);
    the connection is left out of pipeline mode, in no transaction, and runs the next
    statements as before. The same where libpq has no pipeline mode (before 14), the two
    statements then sent one after the other."""
    from countersign.infrastructure.persistence import pg_statements
    from psycopg.errors import DivisionByZero, UniqueViolation
    from psycopg.pq import PipelineStatus, TransactionStatus

    monkeypatch.setattr(pg_statements, "PIPELINES", pipelines)

    pg.execute("DROP TABLE IF EXISTS pipelined_t")
    pg.execute("DROP SEQUENCE IF EXISTS pipelined_s")
    pg.execute("CREATE TABLE pipelined_t (k bigint PRIMARY KEY)")
    pg.execute("CREATE SEQUENCE pipelined_s")
    insert = pg_statements.Statement(
        b"INSERT INTO pipelined_t VALUES ($1) RETURNING k", [BigInts.element_oid]
    )
    # A sequence is not rolled back: each value drawn shows a run of the statement.
    then = pg_statements.Statement(b"SELECT nextval('pipelined_s')", ())
    failing = pg_statements.Statement(b"SELECT 1 / (nextval('pipelined_s') * 0)", ())

    def key(k: int) -> list[bytes]:
        return [k.to_bytes(8, "big")]

    def drawn() -> int:
        row = pg.execute("SELECT last_value FROM pipelined_s").fetchone()
        assert row is not None
        return int(str(row[0]))

    def idle() -> None:
        assert pg.pgconn.pipeline_status == PipelineStatus.OFF
        assert pg.info.transaction_status is TransactionStatus.IDLE

    result = pg_statements.run_then(pg, insert, key(1), then)
    assert pg_statements.first_column_int8s(result) == [1]
    assert drawn() == 1
    idle()
    # The first refused: nothing of it stays, the second ran all the same.
    with pytest.raises(UniqueViolation):
        pg_statements.run_then(pg, insert, key(1), then)
    assert drawn() == 2
    idle()
    # The second failed: its error, although the first ran and committed.
    with pytest.raises(DivisionByZero):
        pg_statements.run_then(pg, insert, key(2), failing)
    assert [r[0] for r in pg.execute("SELECT k FROM pipelined_t ORDER BY k")] == [1, 2]
    idle()
    # Both forgotten: the first had not run, both are sent again.
    pg.execute("DEALLOCATE ALL")
    result = pg_statements.run_then(pg, insert, key(3), then)
    assert pg_statements.first_column_int8s(result) == [3]
    assert drawn() == 4  # 3 was the failing one's
    # Only the second forgotten: the first ran once, the second runs alone.
    pg.execute(f"DEALLOCATE {then.name.decode()}")
    result = pg_statements.run_then(pg, insert, key(4), then)
    assert pg_statements.first_column_int8s(result) == [4]
    assert drawn() == 5
    assert [r[0] for r in pg.execute("SELECT k FROM pipelined_t ORDER BY k")] == [1, 2, 3, 4]
    idle()
    pg.execute("DROP TABLE pipelined_t")
    pg.execute("DROP SEQUENCE pipelined_s")
