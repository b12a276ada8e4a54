"""A lock held on countersign's tables answers in a bounded time, and says so (PostgreSQL).

A resilience review held locks the way an operator's migration or a forgotten ``LOCK TABLE``
in psql does. An ``ACCESS EXCLUSIVE`` lock on the events table made every API read wait as
long as it was held (a 12 s lock: the proposal's GET answered 200 after 12.0 s); an
``EXCLUSIVE`` one made an approval's commit wait its 10 s lock timeout ten times over (the
recorder retried it), about 100 s; and a lock on ``proposal_cards`` stalled ``projections
run``'s pass without a line in its log. Now each connection's statements wait at most
``COUNTERSIGN_DATABASE_TIMEOUT`` seconds (here 1): the API answers 503 ``database-unavailable``
with Retry-After, the pages that the database did not answer, the command line the same, a
commit that waited in vain is not retried and not committed (approving again executes once),
and the projection runner names the table, the session holding it, and carries on once it is
gone. The maintenance commands, and schema changes, still wait as long as they must.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import psycopg.rows
import psycopg.sql
import pytest
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.persistence import pg_pool
from countersign.infrastructure.persistence.sql import SCHEMA_LOCK_KEY, SqlDatabase
from countersign.infrastructure.persistence.unavailable import timed_out
from countersign.infrastructure.projection_engine import runner as runner_module
from countersign.infrastructure.projection_engine import together
from countersign.infrastructure.settings import Database, Settings
from countersign.infrastructure.testing.deployment import backends
from countersign.infrastructure.testing.fixtures import SEEDED, require_postgres

from tests.attacks.conftest import Api, Web, assert_no_leak, problem
from tests.conftest import AVA, events_table
from tests.support.proposing import propose

#: The timeout these tests' countersign runs with (COUNTERSIGN_DATABASE_TIMEOUT), seconds.
WAIT = 1.0
#: How long a test lets a request run before it calls it stuck (the lock is then let go).
STUCK = 8 * WAIT
#: The timeout of a test that shows something does not wait at all: waiting would take this
#: long, ten times what the slowest answer took on a loaded machine (1.84 s at a load average
#: of 11, which failed a bound of 0.9 of WAIT), so only a wait fails it.
PATIENT = 10 * WAIT


@pytest.fixture(params=[b for b in backends() if b == "postgres"] or ["postgres"])
def database_url(request: pytest.FixtureRequest, test_databases: Any) -> Iterator[str]:
    """The kit's ``database_url``, on PostgreSQL only: SQLite has no such locks."""
    if "postgres" not in backends():
        pytest.skip("PostgreSQL's locks (COUNTERSIGN_TEST_BACKENDS leaves it out)")
    request.node.add_marker(pytest.mark.postgres)
    require_postgres()
    names = request.fixturenames
    kind = "seeded" if "seeded" in names else "schema" if "cs" in names else "empty"
    url, seeded = test_databases.copy("postgres", kind)
    request.node.stash[SEEDED] = seeded
    yield url
    test_databases.release(url)


@pytest.fixture
def database_timeout(request: pytest.FixtureRequest) -> float:
    """How long ``cs``'s statements wait: ``WAIT``, or what a test asks for (indirectly)."""
    return float(getattr(request, "param", WAIT))


@pytest.fixture
def cs(
    database_url: str, clock: Any, countersign_plugins: tuple[str, ...], database_timeout: float
) -> Iterator[Countersign]:
    """The kit's ``cs``, its statements waiting at most ``database_timeout`` seconds."""
    settings = Settings(
        database_url=database_url, plugins=countersign_plugins, database_timeout=database_timeout
    )
    wired = bootstrap(settings, clock=clock)
    yield wired
    wired.close()


@pytest.fixture
def cancelled(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """The statements the server cancelled on countersign's pooled connections, in order
    (each a wait that ended by COUNTERSIGN_DATABASE_TIMEOUT): the driver's errors as pg_pool
    translates every error its connections raise."""
    found: list[BaseException] = []
    translated = pg_pool._translated

    def recorded(error: psycopg.Error) -> Any:
        if timed_out(error):
            found.append(error)
        return translated(error)

    monkeypatch.setattr(pg_pool, "_translated", recorded)
    return found


@contextmanager
def held(url: str, table: str, mode: str = "ACCESS EXCLUSIVE") -> Iterator[int]:
    """Another session holding ``LOCK TABLE table IN mode MODE`` (its pid) until the end."""
    with psycopg.connect(url, application_name="psql") as holder:
        holder.execute(f"LOCK TABLE {table} IN {mode} MODE")
        try:
            yield holder.info.backend_pid
        finally:
            holder.rollback()


def seen_waiting(url: str, holder: int, going: Callable[[], bool]) -> bool:
    """Whether the server shows a session that ``holder``'s lock blocks still waiting three
    times the timeout into its statement (by the server's clock: a statement with the
    timeout would have been cancelled long before), seen before ``going()`` turns false (the
    waiter gave up or finished). Asked every 0.05 s, the server having no way to say it;
    a hang guard of a minute, which only a waiter that neither waits nor ends reaches."""
    with psycopg.connect(url, autocommit=True) as watcher:
        guard = time.monotonic() + 60
        while going() and time.monotonic() < guard:
            (waiting,) = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
                " AND now() - query_start > make_interval(secs => %s)",
                (holder, WAIT * 3),
            ).fetchone() or (0,)
            if waiting:
                return True
            time.sleep(0.05)  # the next look at the server's sessions
    return False


class Timed:
    """``call()`` in a thread of its own: its answer, or ``stuck`` past ``STUCK`` seconds (a
    hang guard only: how long the call took is asserted nowhere)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.answer: Any = None
        self._thread = threading.Thread(target=self._run, args=(call,))
        self._thread.start()
        self._thread.join(STUCK)
        self.stuck = self._thread.is_alive()

    def _run(self, call: Callable[[], Any]) -> None:
        self.answer = call()

    def finish(self) -> None:
        """Once the lock is let go, whatever was stuck ends."""
        self._thread.join(60)


def test_an_api_read_behind_a_held_lock_answers_database_unavailable_in_bounded_time(
    api: Api, database_url: str, cancelled: list[BaseException]
):
    proposal_id = api.propose()
    with held(database_url, events_table(api.cs)):
        read = Timed(lambda: api.get(f"/api/v1/proposals/{proposal_id}"))
    read.finish()
    assert not read.stuck, f"the read waited for the lock for {STUCK} s and more"
    status, body = problem(read.answer)
    assert status == 503
    assert body["type"].endswith(":database-unavailable")
    assert "read the proposal before sending it again" in body["detail"]
    assert read.answer.headers["retry-after"] == "5"
    # It waited for the lock until the server cancelled it on the timeout, once: not retried.
    assert [type(e).__name__ for e in cancelled] in (["LockNotAvailable"], ["QueryCanceled"])
    assert api.get(f"/api/v1/proposals/{proposal_id}").status_code == 200  # lock gone


def test_the_page_behind_a_held_lock_says_the_database_did_not_answer(web: Web, database_url: str):
    proposal_id = web.propose()
    browser = web.member(AVA)  # signed in before the lock
    with held(database_url, events_table(web.cs)), held(database_url, "proposal_cards"):
        page = Timed(lambda: browser.get(f"/proposals/{proposal_id}"))
    page.finish()
    assert not page.stuck
    assert page.answer.status_code == 503
    assert page.answer.headers["retry-after"] == "5"
    text = page.answer.text.replace("&#39;", "'")
    assert "open the proposal again to see where it stands" in text
    assert "Nothing was changed" not in text
    assert_no_leak(text)


@contextmanager
def schema_lock_held(url: str) -> Iterator[int]:
    """Another session holding the schema lock, as a rebuild does while it builds its
    indexes (minutes, on a big database)."""
    with psycopg.connect(url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK_KEY,))
        try:
            yield holder.info.backend_pid
        finally:
            holder.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK_KEY,))


@pytest.mark.parametrize("database_timeout", [PATIENT], indirect=True)
@pytest.mark.parametrize("holding", ["schema lock", "a writer on proposal_cards"])
def test_a_page_does_not_wait_for_the_schema_lock_nor_a_writer_of_its_read_models(
    web: Web, database_url: str, holding: str, cancelled: list[BaseException]
):
    """A page's catch-up makes the read models' tables once a process (the first page): the
    next pages neither take the schema lock (a rebuild's index builds hold it) nor build an
    index (CREATE INDEX IF NOT EXISTS waited for a writer's transaction on the table), so
    they answer at once, with the navigation's counts, instead of after the timeout.

    The timeout is ``PATIENT`` here: a page that waited would be stuck past ``STUCK``, and
    one that did not answers while the lock is still held: a wait for the lock ends only by
    its release (after ``STUCK``) or by the timeout (after ``PATIENT``, later still), so an
    answer at all while it is held says the page never waited for it. (A bound on the page's
    time, 0.9 s with ``WAIT``, failed once at a load average of 11: 1.84 s without a wait.)"""
    assert STUCK < PATIENT
    browser = web.member(AVA)  # signed in: its first page made the tables
    web.propose()
    holder = (
        schema_lock_held(database_url)
        if holding == "schema lock"
        else held(database_url, "proposal_cards", "ROW EXCLUSIVE")
    )
    with holder:
        page = Timed(lambda: browser.get("/"))
    page.finish()
    assert not page.stuck, f"the page waited for the {holding} (no answer while it was held)"
    assert page.answer.status_code == 200
    assert cancelled == []
    assert "1 awaiting your decision" in page.answer.text


def test_an_approval_whose_commit_waits_in_vain_is_not_committed_and_executes_once_later(
    api: Api, database_url: str, cancelled: list[BaseException]
):
    """EXCLUSIVE lets reads through and holds every commit (an older writer's lock): the
    claim's commit gives up after the timeout, once, and the proposal is still pending."""
    proposal_id = api.propose()
    path = f"/api/v1/proposals/{proposal_id}/approve"
    with held(database_url, events_table(api.cs), "EXCLUSIVE"):
        approval = Timed(lambda: api.post(path))
    approval.finish()
    assert not approval.stuck, "the commit was retried behind the lock"
    status, body = problem(approval.answer)
    assert (status, body["type"].rsplit(":", 1)[1]) == (503, "database-unavailable")
    assert approval.answer.headers["retry-after"] == "5"
    # The commit waited for the lock until the server cancelled it, once: not retried.
    assert [type(e).__name__ for e in cancelled] in (["LockNotAvailable"], ["QueryCanceled"])
    assert api.get(f"/api/v1/proposals/{proposal_id}").json()["status"] == "pending"
    assert api.cs.sandbox.refunds() == []
    again = api.post(path)
    assert again.status_code == 200, again.text
    assert again.json()["result"] == "executed"
    assert api.post(path).json()["result"] == "already_completed"
    [refund] = api.cs.sandbox.refunds()
    assert int(str(refund["requests"])) == 1


def _follow(cs: Countersign, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, threading.Event, Any]:
    """``projections run`` of browser_view in a thread, caught up first."""
    [runner] = cs.projection_runners(["browser_view"])
    runner.catch_up()
    monkeypatch.setattr(together, "UNAVAILABLE_MOST", 0.2)
    stop = threading.Event()
    thread = threading.Thread(target=together.run_forever, args=([runner], stop))
    return runner, stop, thread


def _logged(caplog: pytest.LogCaptureFixture, words: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if words in caplog.text:
            return True
        time.sleep(0.05)
    return False


def stalled_then_carried_on(
    api: Api,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    holding: Callable[[], AbstractContextManager[Any]],
    propose_inside: bool = True,
) -> tuple[str, Any]:
    """``projections run`` of browser_view behind a lock (``holding()``): its pass gives up
    with a warning, the runner lives on, and once the lock is let go it catches up. A refund
    is proposed first, inside the lock if the database lets it. The warning, and what
    ``holding()`` yielded."""
    runner, stop, thread = _follow(api.cs, monkeypatch)
    if not propose_inside:
        api.propose("refund-two-approvers")  # an event browser_view writes a card of
    try:
        with caplog.at_level(logging.WARNING, logger="countersign.projections"):
            with holding() as holder:
                if propose_inside:
                    api.propose("refund-two-approvers")
                thread.start()
                warned = _logged(caplog, "gave up", STUCK)
                assert thread.is_alive()
            assert warned, "the stalled pass logged nothing"
            carried_on = _logged(caplog, "the database answers again; carrying on", STUCK)
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert carried_on
    assert runner.status().lag == 0
    assert "stopped at notification" not in caplog.text  # never taken for a bad event
    return next(r.getMessage() for r in caplog.records if "gave up" in r.getMessage()), holder


def test_the_projection_runner_names_the_locked_table_and_its_holder_and_carries_on(
    api: Api, database_url: str, monkeypatch, caplog
):
    warning, holder = stalled_then_carried_on(
        api, monkeypatch, caplog, lambda: held(database_url, "proposal_cards")
    )
    assert "projection 'browser_view' waited 1 s for the database" in warning
    assert "proposal_cards is locked (AccessExclusiveLock)" in warning
    assert f"by session {holder} (user postgres, psql, idle in transaction" in warning
    assert "LOCK TABLE proposal_cards IN ACCESS EXCLUSIVE MODE" in warning
    assert (
        f"End that transaction, or the session: SELECT pg_terminate_backend({holder})." in warning
    )
    assert "The runner carries on once the lock is gone; trying again in " in warning


def test_a_lock_on_the_log_is_named_too(api: Api, database_url: str, monkeypatch, caplog):
    _, stop, thread = _follow(api.cs, monkeypatch)
    try:
        with (
            caplog.at_level(logging.WARNING, logger="countersign.projections"),
            held(database_url, events_table(api.cs)) as holder,
        ):
            thread.start()
            warned = _logged(caplog, "gave up", STUCK)
    finally:
        stop.set()
        thread.join(30)
    assert warned
    warning = next(r.getMessage() for r in caplog.records if "gave up" in r.getMessage())
    assert "projections: the log waited 1 s for the database" in warning
    assert f"{events_table(api.cs)} is locked (AccessExclusiveLock) by session {holder}" in warning


def test_every_service_connection_has_the_timeout_and_keeps_pgoptions(
    database_url: str, clock: Any, monkeypatch
):
    monkeypatch.setenv("PGOPTIONS", "-c synchronous_commit=off")
    cs = bootstrap(Settings(database_url=database_url, database_timeout=2.5), clock=clock)
    try:
        with cs.app.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
            pooled = [_show(conn, name) for name in _SETTINGS]
        with cs.sql.reading() as reader:
            plain = [reader.execute(f"SHOW {name}").fetchone()[0] for name in _SETTINGS]
    finally:
        cs.close()
    assert pooled == plain == ["2500ms", "2500ms", "off"]
    maintenance = SqlDatabase(Database.parse(database_url))  # a rebuild's writer, say
    try:
        with maintenance.reading() as reader:
            assert reader.execute("SHOW statement_timeout").fetchone() == ("0",)
    finally:
        maintenance.close()


_SETTINGS = ("statement_timeout", "lock_timeout", "synchronous_commit")


def _show(conn: Any, name: str) -> str:
    with conn.cursor(row_factory=psycopg.rows.tuple_row) as cursor:
        return str(cursor.execute(f"SHOW {name}").fetchone()[0])


def test_a_start_waits_for_the_schema_lock_a_rebuild_holds(database_url: str, clock: Any):
    """A rebuild holds the schema lock while it builds indexes, for minutes: a service
    starting meanwhile waits for it rather than give up after the timeout."""
    started: list[Countersign] = []
    with psycopg.connect(database_url, autocommit=True) as rebuilding:
        rebuilding.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK_KEY,))
        settings = Settings(database_url=database_url, database_timeout=WAIT)
        start = threading.Thread(target=lambda: started.append(bootstrap(settings, clock=clock)))
        start.start()
        waited = seen_waiting(database_url, rebuilding.info.backend_pid, start.is_alive)
        rebuilding.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK_KEY,))
    start.join(30)
    for cs in started:
        cs.close()
    assert waited
    assert len(started) == 1


def test_index_builds_and_the_start_s_migrations_are_not_cut_off(cs: Countersign, monkeypatch):
    """Statements that rightly run long (a rebuild's index builds, an upgrade's migration at a
    start) run past the timeout: here each is a sleep of 2.5 times it."""
    slow = f"SELECT pg_sleep({WAIT * 2.5})"
    [runner] = cs.projection_runners(["audit_trail"])
    builds = [[slow]]  # one index, however many tables
    monkeypatch.setattr(
        runner_module, "index_statements", lambda table: builds.pop() if builds else []
    )
    runner.create_indexes()
    recorder: Any = cs.app.recorder
    recorder.sql_create_statements.append(psycopg.sql.SQL(slow))
    try:
        recorder.create_table()
    finally:
        recorder.sql_create_statements.pop()
    with pytest.raises(Exception) as cut, cs.sql.reading() as reader:
        reader.execute(slow)  # anything else is cut off
    assert timed_out(cut.value)


def test_the_command_line_gives_up_but_the_maintenance_commands_wait(
    cs: Countersign, seeded: dict[str, Any], database_url: str, monkeypatch, capsys
):
    monkeypatch.setenv("COUNTERSIGN_DATABASE_TIMEOUT", str(WAIT))
    proposal_id = propose(cs, seeded)  # a card refund of refund-ok's missed discount
    statuses: dict[str, int] = {}

    def run(name: str, *argv: str) -> None:
        statuses[name] = main([*argv, "--json", "--database", database_url])

    with held(database_url, events_table(cs)) as holder:
        shown = Timed(lambda: run("show", "show", proposal_id, "--as", AVA))
        verifying = threading.Thread(target=run, args=("verify", "audit", "verify"))
        verifying.start()
        verify_waited = seen_waiting(database_url, holder, verifying.is_alive)
    shown.finish()
    verifying.join(60)
    out = capsys.readouterr()
    assert not shown.stuck
    assert statuses["show"] == 1
    document, _ = json.JSONDecoder().raw_decode(out.out)  # show's, then verify's
    assert document["error"] == "database_unavailable"
    assert "did not answer in time" in document["message"]
    assert "Internal error" not in out.err
    assert_no_leak(out.out + out.err)
    assert verify_waited
    assert statuses["verify"] == 0


def test_the_command_line_says_a_decision_may_have_been_recorded_only_after_sending_one(
    cs: Countersign, seeded: dict[str, Any], database_url: str, monkeypatch, capsys
):
    """Every command said "a decision sent just before may have been recorded", a read too."""
    monkeypatch.setenv("COUNTERSIGN_DATABASE_TIMEOUT", str(WAIT))
    proposal_id = propose(cs, seeded)  # a card refund of refund-ok's missed discount
    said = {}
    with held(database_url, events_table(cs)):
        for command in ("approve", "show"):
            argv = [command, proposal_id, "--as", AVA, "--json", "--database", database_url]
            assert main(argv) == 1
            said[command] = json.loads(capsys.readouterr().out)["message"]
    # Both gave up as they started (their tables checked behind the lock): nothing was sent.
    only = "the database did not answer in time; try again in a few seconds"
    assert said == {"approve": only, "show": only}
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"  # nothing was recorded

    # A decision that was on its way when the database gave up may have been recorded.
    from countersign.infrastructure.entrypoints.cli import _answer_to
    from countersign.infrastructure.persistence.unavailable import DatabaseTimeoutError

    cut = DatabaseTimeoutError("canceling statement due to statement timeout")
    for command in ("approve", "decline", "revise", "chat"):
        document, text, status = _answer_to(cut, "en", command)
        assert text == f"error: {document['message']}"
        assert status == 1
        assert "A decision sent just before may have been recorded" in document["message"]
    for command in ("show", "inbox", "audit", None):
        assert _answer_to(cut, "en", command)[0]["message"] == only


def test_a_statement_the_server_cancelled_is_told_apart_from_a_bad_record():
    errors = pytest.importorskip("psycopg.errors")
    for cancelled in (errors.QueryCanceled("statement timeout"), errors.LockNotAvailable("lock")):
        assert timed_out(cancelled)
    assert not timed_out(psycopg.OperationalError("terminating connection"))
    from countersign.infrastructure.persistence.pg_pool import _translated
    from countersign.infrastructure.persistence.unavailable import (
        DatabaseTimeoutError,
        database_unavailable,
    )
    from eventsourcing.persistence import OperationalError

    translated = _translated(errors.QueryCanceled("canceling statement due to statement timeout"))
    assert isinstance(translated, DatabaseTimeoutError)
    assert not isinstance(translated, OperationalError)  # the library retries those
    assert database_unavailable(translated)
    assert timed_out(translated)


@pytest.mark.parametrize(("value", "seconds"), [("", 5.0), ("0.5", 0.5), (" 30 ", 30.0)])
def test_the_timeout_is_a_number_of_seconds(monkeypatch, value: str, seconds: float):
    monkeypatch.setenv("COUNTERSIGN_DATABASE_TIMEOUT", value)
    assert Settings.from_env().database_timeout == seconds


@pytest.mark.parametrize("value", ["0", "-1", "five", "5s", "nan", "inf", "\u0665"])
def test_a_timeout_that_is_no_positive_number_of_seconds_stops_the_command(
    monkeypatch, capsys, tmp_path, value: str
):
    monkeypatch.setenv("COUNTERSIGN_DATABASE_TIMEOUT", value)
    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert (
        main(["show", "00000000-0000-0000-0000-000000000000", "--as", AVA, "--database", url]) == 2
    )
    said = capsys.readouterr().err
    assert "COUNTERSIGN_DATABASE_TIMEOUT must be a positive number of seconds" in said
    assert repr(value) in said


def test_mcp_over_http_behind_a_held_lock_answers_database_unavailable_with_retry_after(
    cs: Countersign, seeded: dict[str, Any], database_url: str, caplog: pytest.LogCaptureFixture
):
    """The MCP server's token check read behind the lock raised through the SDK's ASGI stack:
    a bare 500 in text, no Retry-After (a client's retry logic gave up), and a traceback in
    the log. It answers as the JSON API does now: 503, Retry-After, a JSON error."""
    from countersign.infrastructure.entrypoints.mcp import http_app
    from countersign.infrastructure.identity.tokens import issue_token

    from tests.servers import serving
    from tests.test_mcp import ALL, HELLO, post

    agent = issue_token(cs, "granite", "agent", ALL, issued_by=AVA, kind="agent").token
    with serving(http_app(cs), lifespan="on") as running:
        with held(database_url, events_table(cs)):
            hello = Timed(lambda: post(running.base, HELLO, Authorization=f"Bearer {agent}"))
        hello.finish()
        assert not hello.stuck
        answer = hello.answer
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "5"
        assert answer.json()["error"] == "database_unavailable"
        assert "try again" in answer.json()["message"]
        assert_no_leak(answer.text)
        assert "Traceback" not in caplog.text
        assert post(running.base, HELLO, Authorization=f"Bearer {agent}").status_code == 200


def test_the_worker_names_the_lock_it_waited_for_and_its_holder(
    cs: Countersign, database_url: str, caplog
):
    """A sweeper's pass behind another session's lock gave up after the timeout and the
    worker said only ``reconcile pass: the database is unavailable (QueryCanceled: …)``: not
    what was locked, nor by whom, nor what to do, as ``projections run`` says them. It now
    says them as the runner does, and the next pass tries again."""
    from countersign.infrastructure.sweepers import run_pass, sweepers

    with (
        caplog.at_level(logging.WARNING, logger="countersign.worker"),
        held(database_url, events_table(cs)) as holder,
    ):
        report = run_pass(sweepers(cs, 5.0), 1)

    assert report.failed[0] == "reconcile"
    [warning, *_] = [r.getMessage() for r in caplog.records if r.name == "countersign.worker"]
    assert warning.startswith("reconcile pass waited 1 s for the database and gave up")
    assert f"{events_table(cs)} is locked (AccessExclusiveLock) by session {holder}" in warning
    assert "(user postgres, psql, idle in transaction" in warning
    assert (
        f"End that transaction, or the session: SELECT pg_terminate_backend({holder})." in warning
    )
    assert warning.endswith("The next pass tries again once the lock is gone")


def test_a_pass_whose_record_waits_for_a_lock_names_its_holder_too(
    cs: Countersign, database_url: str, caplog
):
    """A pass that did its work and then waited in vain to record that it finished (a lock
    on ``sweeper_passes``) said only that the database was unavailable."""
    from countersign.infrastructure.sweepers import run_pass, sweepers

    work = sweepers(cs, 5.0)
    cs.sweeper_passes.record("reconcile", cs.clock.now(), timedelta(seconds=5))  # its table
    with (
        caplog.at_level(logging.WARNING, logger="countersign.worker"),
        held(database_url, "sweeper_passes") as holder,
    ):
        report = run_pass(work[:1], 1)

    assert report.failed == ["reconcile"]
    [warning] = [r.getMessage() for r in caplog.records if r.name == "countersign.worker"]
    assert warning.startswith("reconcile pass waited 1 s for the database and gave up")
    assert f"sweeper_passes is locked (AccessExclusiveLock) by session {holder}" in warning
