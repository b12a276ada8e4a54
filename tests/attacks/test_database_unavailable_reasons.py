"""The operator's log says why the database did not answer, and what to do about it.

An operator's walk filled the disk of PostgreSQL's data directory, then gave the server fewer
connections than the services held: both times every request was answered 503
``database-unavailable`` (rightly: nothing was committed, and a retry later goes through), and
the services' log said, hundreds of times, only ``database unavailable (request cs-…):
OperationalError`` or ``database unavailable while checking a token: OperationalError``. The
server's own words ("could not extend file …: No space left on device", "sorry, too many
clients already") were nowhere in countersign's lines, nor what to do. Now each line names
the cause in the server's words and the step to take (free space, raise max_connections,
start the server); the answers to clients are as before, without the server's words.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import psycopg
from countersign.infrastructure.entrypoints.http import auth
from countersign.infrastructure.persistence.unavailable import NoConnectionError
from countersign.infrastructure.sweepers import run_pass, sweepers
from eventsourcing.persistence import OperationalError

from tests.attacks.conftest import Api, assert_no_leak, problem
from tests.conftest import AVA, TO_CARD
from tests.support.proposing import propose

DISK_FULL = 'could not extend file "base/16384/49612": No space left on device'
TOO_MANY = (
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
    "FATAL:  sorry, too many clients already"
)


def _disk_full(*args: Any, **kwargs: Any) -> Any:
    """What a commit or a read meets when the data directory's disk is full: the driver's
    DiskFull (SQLSTATE 53100), raised as the library's OperationalError (pg_pool.py)."""
    try:
        raise psycopg.errors.DiskFull(DISK_FULL)
    except psycopg.Error as error:
        raise OperationalError(str(error)) from error


def _too_many_clients(*args: Any, **kwargs: Any) -> Any:
    """What connecting meets when the server has no connection left (max_connections)."""
    raise psycopg.OperationalError(TOO_MANY)


def _no_connection(*args: Any, **kwargs: Any) -> Any:
    raise NoConnectionError("couldn't get a connection after 5.00 sec")


def _lines(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def test_a_full_disk_is_said_in_the_log_with_what_to_do_and_not_to_the_client(
    api: Api, monkeypatch, caplog
):
    proposal_id = api.propose()
    monkeypatch.setattr(api.cs.access, "card", _disk_full)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        answer = api.get(f"/api/v1/proposals/{proposal_id}")

    status, body = problem(answer)
    assert status == 503
    assert body["type"].endswith(":database-unavailable")
    assert "No space left" not in answer.text
    assert_no_leak(answer.text)
    [line] = _lines(caplog, "countersign.http")
    assert DISK_FULL in line
    assert "the database server's disk is full: free space" in line


def test_a_server_out_of_connections_is_said_at_the_token_check(api: Api, monkeypatch, caplog):
    monkeypatch.setattr(auth, "authenticate", _too_many_clients)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        answer = api.get("/api/v1/inbox")

    assert answer.status_code == 503
    assert "too many clients" not in answer.text
    [line] = _lines(caplog, "countersign.http")
    assert line.startswith("database unavailable while checking a token: ")
    assert "sorry, too many clients already" in line
    assert "raise max_connections" in line


def test_a_worker_pass_without_a_connection_says_what_to_check(cs, monkeypatch, caplog):
    monkeypatch.setattr(cs.sweepers, "reconcile", _no_connection)

    with caplog.at_level(logging.WARNING, logger="countersign.worker"):
        assert run_pass(sweepers(cs, 5.0), 1).failed == ["reconcile"]

    [line] = _lines(caplog, "countersign.worker")
    assert line.startswith("reconcile pass: the database is unavailable (NoConnectionError: ")
    assert "check that PostgreSQL is running" in line
    assert line.endswith("; the next pass tries again")


def test_an_approval_whose_service_record_meets_an_outage_is_a_warning_not_an_error(
    api: Api, monkeypatch, caplog
):
    """The walk's restarts under load: an approval executed, then its line in
    ``api_service_actions`` met the server gone, and the log said ``ERROR could not record
    service:billing's approve`` with a 30-line traceback, as a defect would be said. The
    approval stands (it is in the event stream, with the token that made it), and the line
    now says so, once, with the reason."""
    from countersign.infrastructure.entrypoints.http import answers

    proposal_id = api.propose()
    monkeypatch.setattr(answers, "record_action", _too_many_clients)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        answer = api.post(f"/api/v1/proposals/{proposal_id}/approve")

    assert answer.status_code == 200
    assert answer.json()["result"] == "executed"
    [record] = [r for r in caplog.records if r.name == "countersign.http"]
    assert record.levelname == "WARNING"
    assert record.exc_info is None
    line = record.getMessage()
    assert "could not record" in line
    assert "sorry, too many clients already" in line
    assert "the approve stands, in the event stream" in line


def test_a_reconcile_pass_that_meets_a_full_disk_is_one_warning_not_an_error_per_proposal(
    cs, seeded, clock, monkeypatch, caplog
):
    """The walk's full disk: every lost refund the reconciler took up failed its commit, and
    each was logged ``ERROR reconciling … failed, correlation id …`` with a traceback (the
    server's CONTEXT quoting the insert function's SQL), every pass, as a defect would be.
    The database not answering is the whole pass's: one warning saying why and what to do,
    as the other sweepers say it, and the proposals are left for the next pass."""
    lost = propose(cs, seeded, "refund-lost-response")
    assert cs.proposals.approve(lost, AVA).status == "reconciling"
    monkeypatch.setattr(cs.store, "decide", _disk_full)

    with caplog.at_level(logging.WARNING):
        assert run_pass(sweepers(cs, 5.0), 1).failed == ["reconcile"]

    assert [r.levelname for r in caplog.records] == ["WARNING"]
    [line] = _lines(caplog, "countersign.worker")
    assert line.startswith("reconcile pass: the database is unavailable (OperationalError: ")
    assert "the database server's disk is full" in line
    monkeypatch.undo()
    assert cs.access.card(lost, AVA).status == "reconciling"  # the next pass's


def _sqlite_disk_full(*args: Any, **kwargs: Any) -> Any:
    """What a commit or a read meets on the embedded SQLite database when its disk is full:
    sqlite3's own error (SQLITE_FULL, here from a page limit), raised as the library's
    OperationalError, as its SQLite datastore raises it."""
    with sqlite3.connect(":memory:") as connection:
        connection.execute("CREATE TABLE t (x)")
        connection.execute("PRAGMA max_page_count = 2")
        try:
            connection.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
        except sqlite3.OperationalError as error:
            raise OperationalError(str(error)) from error
    raise AssertionError("the page limit did not stop the insert")


def test_a_full_disk_under_sqlite_says_so_not_to_check_postgresql(api: Api, monkeypatch, caplog):
    """The embedded default: the disk that holds the SQLite file full. The line said 'check
    that PostgreSQL is running and reachable at COUNTERSIGN_DATABASE_URL's host and port',
    a server the deployment does not have."""
    proposal_id = api.propose()
    monkeypatch.setattr(api.cs.access, "card", _sqlite_disk_full)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        answer = api.get(f"/api/v1/proposals/{proposal_id}")

    assert answer.status_code == 503
    assert "disk is full" not in answer.text
    [line] = _lines(caplog, "countersign.http")
    assert "OperationalError: database or disk is full" in line
    assert "PostgreSQL" not in line
    assert "the disk that holds the SQLite database file is full: free space there" in line


def _only_reserved_slots(*args: Any, **kwargs: Any) -> Any:
    """What connecting meets, as a role that is not a superuser (a service's own), when the
    server has only its reserved connections left: PostgreSQL 15's words for SQLSTATE 53300,
    which a failed connection's error carries only in its text."""
    raise psycopg.OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  '
        "remaining connection slots are reserved for non-replication superuser connections"
    )


def test_a_server_out_of_connections_for_a_services_role_is_said_too(api: Api, monkeypatch, caplog):
    """'sorry, too many clients already' is what a superuser meets; the role the services
    connect as is refused sooner, in other words, and its line said only to check that
    PostgreSQL runs and is reachable."""
    monkeypatch.setattr(auth, "authenticate", _only_reserved_slots)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        answer = api.get("/api/v1/inbox")

    assert answer.status_code == 503
    assert "reserved" not in answer.text
    [line] = _lines(caplog, "countersign.http")
    assert "remaining connection slots are reserved" in line
    assert "the database server has no connection left: raise max_connections" in line


def test_an_mcp_proposal_whose_service_record_meets_an_outage_names_the_token(
    cs, seeded, monkeypatch, caplog
):
    """The MCP server said its own line for the same outage (``could not record an MCP
    proposal``), without the token's name the JSON API's line gives: one warning, worded as
    the API's, naming the service and its action; the proposal stands."""
    from countersign.infrastructure.entrypoints.mcp import http_app, transports
    from countersign.infrastructure.identity.tokens import issue_token

    from tests.mcp_client import over_http, structured
    from tests.servers import serving

    monkeypatch.setattr(transports, "record_action", _too_many_clients)
    bearer = issue_token(
        cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent"
    ).token
    arguments = {"resource_id": seeded["orders"]["refund-ok"], **TO_CARD}

    async def proposing(session: Any) -> dict[str, Any]:
        tool = "propose_order_refund_missing_discount"
        return structured(await session.call_tool(tool, arguments))

    with (
        caplog.at_level(logging.WARNING, logger="countersign.mcp"),
        serving(http_app(cs), lifespan="on") as running,
    ):
        created = over_http(running.base, bearer, proposing)

    assert created["status"] == "pending"
    [record] = [r for r in caplog.records if r.name == "countersign.mcp"]
    assert (record.levelname, record.exc_info) == ("WARNING", None)
    line = record.getMessage()
    assert line.startswith("could not record service:agent's mcp.propose [cs-")
    assert "the mcp.propose stands, in the event stream" in line
    assert "sorry, too many clients already" in line
