"""A SQLite write lock held by someone else answers in a bounded time, and says so.

SQLite has one write lock for the whole database; another connection holding it (an operator's
``BEGIN EXCLUSIVE`` left open in the sqlite3 shell, a backup tool, a long transaction) made
every countersign write wait 30 s, and then: every command printed a Python traceback
("sqlite3.OperationalError: database is locked", the start of each command writes), an API
request or a page answered 500 with the wait behind it. Now a write waits at most
``COUNTERSIGN_DATABASE_TIMEOUT`` seconds (here 1), as PostgreSQL's statements do
(tests/attacks/test_held_locks.py), and is answered as the database unavailable: the API 503
``database-unavailable`` with Retry-After, the pages that the database did not answer, the
command line the same in one line with exit 1, and nothing of the write is committed (approving
again once the lock is let go executes once). Reads go on meanwhile: SQLite's log lets them.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.persistence.unavailable import database_unavailable, timed_out
from countersign.infrastructure.projection_engine.rows import index_statements
from countersign.infrastructure.settings import (
    SQLITE_MAINTENANCE_WAIT,
    Database,
    sqlite_wait,
)
from countersign.infrastructure.testing.fixtures import SEEDED

from tests.attacks.conftest import Api, Web, assert_no_leak, problem
from tests.attacks.test_held_locks import STUCK, WAIT, Timed, stalled_then_carried_on
from tests.attacks.test_held_locks import cs as cs  # the kit's cs, its waits bounded by WAIT
from tests.attacks.test_held_locks import database_timeout as database_timeout  # cs's: WAIT
from tests.conftest import AVA

NOAH = "noah@granite.example"
_CONNECT = sqlite3.connect


@pytest.fixture
def database_url(request: pytest.FixtureRequest, test_databases: Any) -> Iterator[str]:
    """The kit's ``database_url``, on SQLite only: its one write lock."""
    names = request.fixturenames
    kind = "seeded" if "seeded" in names else "schema" if "cs" in names else "empty"
    url, seeded = test_databases.copy("sqlite", kind)
    request.node.stash[SEEDED] = seeded
    yield url
    test_databases.release(url)


@contextmanager
def held(url: str) -> Iterator[None]:
    """Another connection holding the database's write lock (``BEGIN EXCLUSIVE``, as in the
    sqlite3 shell) until the end."""
    holder = sqlite3.connect(Database.parse(url).sqlite_path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def _busy_ms(connection: sqlite3.Connection) -> int:
    """How long ``connection`` waits for another's write lock before SQLite's "database is
    locked" (its busy timeout), in milliseconds."""
    return int(connection.execute("PRAGMA busy_timeout").fetchone()[0])


def _writers(cs: Countersign, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The connections the recorder's pool hands out for a write from now on, in order (each
    a commit's attempt: ``insert_events`` takes the pool's writer)."""
    pool: Any = cs.app.recorder.datastore.pool  # type: ignore[attr-defined]
    taken: list[Any] = []
    take = pool.get_connection

    def recorded(*args: Any, **kwargs: Any) -> Any:
        connection = take(*args, **kwargs)
        if kwargs.get("is_writer") is True:
            taken.append(connection)
        return connection

    monkeypatch.setattr(pool, "get_connection", recorded)
    return taken


#: How a statement that asks for SQLite's write lock begins (a read never waits for it).
_WRITES = ("BEGIN IMMEDIATE", "BEGIN EXCLUSIVE", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP")


def _opened_waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[str]]]:
    """The SQLite connections opened from now on, in order: each one's busy timeout (ms),
    and the statements it began (sqlite3's trace callback)."""
    opened: list[tuple[int, list[str]]] = []
    connect = sqlite3.connect

    def recorded(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        began: list[str] = []
        opened.append((_busy_ms(connection), began))
        connection.set_trace_callback(began.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", recorded)
    return opened


def test_an_approval_behind_the_write_lock_is_not_committed_and_executes_once_later(
    api: Api, database_url: str, monkeypatch, caplog
):
    proposal_id = api.propose()
    path = f"/api/v1/proposals/{proposal_id}/approve"
    writers = _writers(api.cs, monkeypatch)
    with held(database_url):
        approval = Timed(lambda: api.post(path))
        read = Timed(lambda: api.get(f"/api/v1/proposals/{proposal_id}"))
    approval.finish()
    read.finish()
    assert not approval.stuck, f"the approval waited for the lock for {STUCK} s and more"
    status, body = problem(approval.answer)
    assert (status, body["type"].rsplit(":", 1)[1]) == (503, "database-unavailable")
    assert approval.answer.headers["retry-after"] == "5"
    assert "read the proposal before sending it again" in body["detail"]
    assert_no_leak(approval.answer.text)
    # The commit took the writer once (not retried), which waited for the lock as long as
    # COUNTERSIGN_DATABASE_TIMEOUT lets it, and ended by SQLite's "database is locked".
    [writer] = writers
    assert _busy_ms(writer._sqlite_conn) == WAIT * 1000
    assert "OperationalError: database is locked" in caplog.text
    # Reads went on behind the lock.
    assert read.answer.status_code == 200, read.answer.text
    assert read.answer.json()["status"] == "pending"
    assert api.cs.sandbox.refunds() == []
    again = api.post(path)
    assert again.status_code == 200, again.text
    assert again.json()["result"] == "executed"
    assert api.post(path).json()["result"] == "already_completed"
    [refund] = api.cs.sandbox.refunds()
    assert int(str(refund["requests"])) == 1


def test_a_decision_on_a_page_behind_the_write_lock_says_the_database_did_not_answer(
    web: Web, database_url: str
):
    proposal_id = web.propose()
    browser = web.member(NOAH)  # signed in before the lock
    browser.page_token(f"/proposals/{proposal_id}")
    path = f"/proposals/{proposal_id}/decline"
    with held(database_url):
        declined = Timed(lambda: browser.submit(path, {"note": "not this one"}))
    declined.finish()
    assert not declined.stuck
    assert declined.answer.status_code == 503
    assert declined.answer.headers["retry-after"] == "5"
    text = declined.answer.text.replace("&#39;", "'")
    assert "open the proposal again to see where it stands" in text
    assert_no_leak(text)
    assert web.status(proposal_id) == "pending"


def test_pages_with_nothing_new_to_project_are_read_behind_the_write_lock(
    web: Web, database_url: str, caplog
):
    """A page catches the read models up before it reads them: with nothing new in the log
    that is reads only, and it took the write lock all the same (to read a position), so
    every page waited behind a held lock (30 s, then 500; 1 s, then 503)."""
    proposal_id = web.propose()
    browser = web.member(NOAH)
    assert proposal_id in browser.get("/").text  # caught up before the lock
    with held(database_url):
        inbox = Timed(lambda: browser.get("/"))
        card = Timed(lambda: browser.get(f"/proposals/{proposal_id}"))
    inbox.finish()
    card.finish()
    # Answered while the lock was held, and not as the database unavailable: a page that
    # asked for the write lock would have waited the timeout for it and answered 503.
    for page in (inbox, card):
        assert not page.stuck
        assert page.answer.status_code == 200, page.answer.text[:300]
    assert "database is locked" not in caplog.text
    assert proposal_id in inbox.answer.text


def test_a_command_behind_the_write_lock_says_so_in_one_line(
    cs: Countersign, seeded: dict[str, Any], database_url: str, monkeypatch, caplog
):
    """Every command writes as it starts (its tables): it gave up with a traceback after 30 s."""
    monkeypatch.setenv("COUNTERSIGN_DATABASE_URL", database_url)
    monkeypatch.setenv("COUNTERSIGN_DATABASE_TIMEOUT", str(WAIT))
    out, err = io.StringIO(), io.StringIO()

    def inbox() -> int:
        with redirect_stdout(out), redirect_stderr(err):
            return main(["inbox", "--org", "granite", "--as", AVA])

    with held(database_url):
        waits = _opened_waits(monkeypatch)  # the command's connections, not the holder's
        command = Timed(inbox)
    command.finish()
    monkeypatch.setattr(sqlite3, "connect", _CONNECT)
    assert not command.stuck, f"the command waited for the lock for {STUCK} s and more"
    assert command.answer == 1
    # Every connection it asked the write lock on waits for it at most the timeout, and it
    # gave up as such a wait ended (SQLite's "database is locked", in the operator's log).
    writing = [
        busy for busy, began in waits if any(s.lstrip().upper().startswith(_WRITES) for s in began)
    ]
    assert writing, "the command asked for the write lock on no connection"
    assert set(writing) == {WAIT * 1000}, waits
    assert "database is locked" in caplog.text
    said = out.getvalue() + err.getvalue()
    assert "error: the database did not answer in time; try again in a few seconds" in said
    assert "A decision sent" not in said  # an inbox decides nothing
    assert "Traceback" not in said
    assert "sqlite3" not in said
    assert_no_leak(said)
    with redirect_stdout(io.StringIO()):
        assert main(["inbox", "--org", "granite", "--as", AVA]) == 0  # the lock let go


def test_the_projection_runner_says_the_write_lock_is_held_and_carries_on(
    api: Api, database_url: str, monkeypatch, caplog
):
    warning, _ = stalled_then_carried_on(
        api, monkeypatch, caplog, lambda: held(database_url), propose_inside=False
    )
    assert "projection 'browser_view' waited 1 s for the database and gave up" in warning
    assert "another connection holds the SQLite database's write lock" in warning
    assert "pg_locks" not in warning  # PostgreSQL's words are not SQLite's


def test_only_a_locked_database_is_unavailable_not_every_sqlite_error(tmp_path: Path):
    path = str(tmp_path / "x.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    waiting = sqlite3.connect(path, timeout=0.05, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError) as locked:
        waiting.execute("INSERT INTO t VALUES (1)")
    holder.close()
    with pytest.raises(sqlite3.OperationalError) as missing:
        waiting.execute("SELECT * FROM nowhere")
    waiting.close()
    # One connection in conflict with itself (a table dropped under its own open read):
    # SQLITE_LOCKED, a defect that waiting does not mend, not the database out of reach.
    same = sqlite3.connect(":memory:", isolation_level=None)
    same.execute("CREATE TABLE u (x)")
    same.executemany("INSERT INTO u VALUES (?)", [(1,), (2,)])
    reading = same.execute("SELECT * FROM u")
    reading.fetchone()  # its read still open
    with pytest.raises(sqlite3.OperationalError, match="database table is locked") as itself:
        same.execute("DROP TABLE u")
    same.close()
    assert database_unavailable(locked.value)
    assert timed_out(locked.value)
    assert not database_unavailable(itself.value)
    assert not timed_out(itself.value)
    assert not database_unavailable(missing.value)
    assert not timed_out(missing.value)


def test_the_write_lock_waits_for_the_timeout_in_whole_seconds_or_30_for_maintenance():
    assert sqlite_wait(5.0) == 5
    assert sqlite_wait(0.2) == 1
    assert sqlite_wait(2.5) == 3
    assert sqlite_wait(None) == SQLITE_MAINTENANCE_WAIT == 30
    env = Database.parse("sqlite:////tmp/x.db").eventsourcing_env(5.0)
    assert env["SQLITE_LOCK_TIMEOUT"] == "5"


def test_a_rebuild_builds_each_index_in_a_write_transaction_of_its_own(
    cs: Countersign, monkeypatch
):
    """Each holds SQLite's one write lock while it runs: all of the audit trail's in one held
    it for their sum (4-5 s at a million events, 10.5 s at two million), past the services'
    timeout; one at a time, the longest alone."""
    [runner] = cs.projection_runners(["audit_trail"])
    opened: list[Any] = []
    begin = runner.sql.transaction

    def counted(**kwargs: Any) -> Any:
        opened.append(kwargs)
        return begin(**kwargs)

    monkeypatch.setattr(runner.sql, "transaction", counted)
    runner.create_indexes()
    statements = [s for table in runner.projection.tables for s in index_statements(table)]
    assert len(statements) >= 4
    assert len(opened) == len(statements)


def test_the_worker_says_another_connection_holds_the_write_lock_and_what_to_do(
    cs: Countersign, database_url: str, caplog
):
    """On SQLite a sweeper's pass behind the write lock said only that the database was
    unavailable ("database is locked"); it says, as ``projections run`` does, that another
    connection holds the write lock and what to do."""
    import logging

    from countersign.infrastructure.sweepers import run_pass, sweepers

    work = sweepers(cs, 5.0)  # (its notify sender makes its tables: a write)
    with caplog.at_level(logging.WARNING, logger="countersign.worker"), held(database_url):
        report = run_pass(work, 1)

    assert report.failed[0] == "reconcile"
    [warning, *_] = [r.getMessage() for r in caplog.records if r.name == "countersign.worker"]
    assert warning.startswith("reconcile pass waited 1 s for the database and gave up (")
    assert warning.endswith(
        "another connection holds the SQLite database's write lock (a long transaction, or a "
        "BEGIN left open in the sqlite3 shell). End that transaction; the next pass tries "
        "again once the lock is let go"
    )
