"""Attack: the same member declines one proposal twice at the same moment.

Exactly one decline is recorded and answers ``declined``; the other answers like any repeat
(``not_approvable`` / ``not_pending``), and the API's service-action log says so: one
``declined`` row, not two for one Declined event. Raced in one process (two threads over one
wiring, as two server threads are) and across two wirings of one database (two processes),
through the Python API and through the JSON API, on every backend. Both declines are held
just before their commit until both have decided, so the race is lost every time.

Two servers in one process are two event loops in two threads. FastAPI builds each
application's route models on its first request, inside ``warnings.catch_warnings()``, and
Python's warning filters are process-wide and not thread-safe: two first requests at once
could leave one thread without FastAPI's "ignore" filter, and under the suite's
``filterwarnings = error`` pydantic's warning became a 500. That was this file's flake (the
surviving decline then waited 60 s at the barrier for a partner that had already failed).
So each server answers one read before the race, and a racer that fails breaks the barrier
at once, so a failure shows its own cause instead of a timeout.

A commit whose connection drops after it committed is retried by the PostgreSQL recorder;
that retry is refused as a duplicate, and it is the one case where a refusal is our own
write: the store tells it from another writer's by comparing what is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token, service_actions
from countersign.infrastructure.persistence import pg_statements
from eventsourcing.persistence import OperationalError
from fastapi.testclient import TestClient

from tests.conftest import AVA, count_events
from tests.support.proposing import propose

RACE_TIMEOUT = 60  # generous: a loaded CI machine may be slow to bring both threads to the barrier


@contextmanager
def _both_decide_before_either_commits(
    monkeypatch: pytest.MonkeyPatch, *wirings: Countersign
) -> Iterator[threading.Barrier]:
    """The first two proposal commits (across ``wirings``) wait for each other: both declines
    have read the proposal as pending and decided before either is stored."""
    barrier = threading.Barrier(2, timeout=RACE_TIMEOUT)
    held: list[int] = []
    lock = threading.Lock()
    for cs in wirings:
        real_save = cs.store.save

        def save(*aggregates: Any, final: bool = False, _real: Any = real_save) -> None:
            if any(isinstance(a, Proposal) for a in aggregates):
                with lock:
                    hold = len(held) < 2
                    held.append(1)
                if hold:
                    barrier.wait()
            _real(*aggregates, final=final)

        monkeypatch.setattr(cs.store, "save", save)
    yield barrier
    assert len(held) == 2, "both declines must have reached their commit"


def _race(barrier: threading.Barrier, *calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` at once; the first to fail breaks the barrier, so the other stops too."""

    def guarded(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except BaseException:
            barrier.abort()
            raise

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(guarded, call) for call in calls]
        return [future.result(timeout=RACE_TIMEOUT) for future in futures]


def _warm(client: TestClient, token: str, proposal_id: str) -> None:
    """One read, so the server has built its routes before the race (see the docstring)."""
    response = client.get(
        f"/api/v1/proposals/{proposal_id}", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text


def _unchanged_but_one_decline(cs: Countersign, before: int, proposal_id: str) -> None:
    """One Declined (with its RevisionRequired) was stored, nothing else; the chain holds."""
    assert count_events(cs, "Proposal.Declined") == 1
    assert count_events(cs) == before + 2
    history = [e["type"] for e in cs.audit.history(proposal_id)["events"]]
    assert history == ["Proposed", "Declined", "RevisionRequired"]
    report = verify(cs.app, cs.sql)
    assert report.ok, report.to_json()


def _one_declined_one_repeat(answers: list[dict[str, Any]]) -> None:
    assert sorted(a["result"] for a in answers) == ["declined", "not_approvable"], answers
    repeat = next(a for a in answers if a["result"] == "not_approvable")
    assert (repeat["reason"], repeat["status"]) == ("not_pending", "declined")
    declined = next(a for a in answers if a["result"] == "declined")
    assert declined["outcome"]["reason"]["code"] == "declined_by_manager"


# -- the Python API -----------------------------------------------------------------------


def test_two_threads_declining_at_once_decline_once(cs, seeded, monkeypatch):
    proposal_id = propose(cs, seeded)
    before = count_events(cs)

    with _both_decide_before_either_commits(monkeypatch, cs) as barrier:
        reports = _race(
            barrier,
            lambda: cs.proposals.decline(proposal_id, AVA, "no"),
            lambda: cs.proposals.decline(proposal_id, AVA, "no"),
        )

    _one_declined_one_repeat([r.to_json() for r in reports])
    _unchanged_but_one_decline(cs, before, proposal_id)


def test_two_processes_declining_at_once_decline_once(cs, other, seeded, monkeypatch):
    proposal_id = propose(cs, seeded)
    assert other.store.read(UUID(proposal_id), Proposal).status == "pending"  # both have read it
    before = count_events(cs)

    with _both_decide_before_either_commits(monkeypatch, cs, other) as barrier:
        reports = _race(
            barrier,
            lambda: cs.proposals.decline(proposal_id, AVA, "no"),
            lambda: other.proposals.decline(proposal_id, AVA, "no"),
        )

    _one_declined_one_repeat([r.to_json() for r in reports])
    _unchanged_but_one_decline(cs, before, proposal_id)


# -- the JSON API and its service-action log ----------------------------------------------


def _decline_over_http(client: TestClient, token: str, proposal_id: str) -> dict[str, Any]:
    response = client.post(
        f"/api/v1/proposals/{proposal_id}/decline",
        headers={"Authorization": f"Bearer {token}"},
        json={"note": "no"},
    )
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def _logged_declines(cs: Countersign) -> list[str]:
    return sorted(a["result"] for a in service_actions(cs, "granite") if a["action"] == "decline")


def test_two_api_requests_declining_at_once_are_logged_once_as_declined(cs, seeded, monkeypatch):
    proposal_id = propose(cs, seeded)
    token = issue_token(
        cs, "granite", "decline-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    before = count_events(cs)

    with (
        TestClient(create_app(cs), raise_server_exceptions=False) as client,
        _both_decide_before_either_commits(monkeypatch, cs) as barrier,
    ):
        _warm(client, token, proposal_id)
        answers = _race(
            barrier,
            lambda: _decline_over_http(client, token, proposal_id),
            lambda: _decline_over_http(client, token, proposal_id),
        )

    _one_declined_one_repeat(answers)
    assert _logged_declines(cs) == ["declined"]  # the repeat changed nothing: no row
    _unchanged_but_one_decline(cs, before, proposal_id)


def test_two_servers_declining_at_once_are_logged_once_as_declined(cs, other, seeded, monkeypatch):
    proposal_id = propose(cs, seeded)
    token = issue_token(
        cs, "granite", "decline-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    before = count_events(cs)

    with (
        TestClient(create_app(cs), raise_server_exceptions=False) as first,
        TestClient(create_app(other), raise_server_exceptions=False) as second,
        _both_decide_before_either_commits(monkeypatch, cs, other) as barrier,
    ):
        _warm(first, token, proposal_id)
        _warm(second, token, proposal_id)
        answers = _race(
            barrier,
            lambda: _decline_over_http(first, token, proposal_id),
            lambda: _decline_over_http(second, token, proposal_id),
        )

    _one_declined_one_repeat(answers)
    assert _logged_declines(cs) == ["declined"]  # the repeat changed nothing: no row
    _unchanged_but_one_decline(cs, before, proposal_id)


# -- our own commit, retried ----------------------------------------------------------------


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)  # only it retries
def test_a_decline_whose_commit_was_retried_after_it_committed_is_still_ours(
    cs, seeded, monkeypatch
):
    """The connection drops just after the decline committed; the library's retry is then
    refused as a duplicate of our own write. That is not someone else's decline."""
    proposal_id = propose(cs, seeded)
    token = issue_token(
        cs, "granite", "decline-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    before = count_events(cs)
    recorder: Any = cs.app.recorder
    real_run = pg_statements.run_then
    dropped: list[bool] = []

    # The recorder runs its insert, and the transaction that waits for the disk after it, on
    # the connection's libpq object (pg_statements).
    def flaky_run(conn: Any, statement: Any, params: Any, then: Any) -> Any:
        result = real_run(conn, statement, params, then)
        if statement is recorder._insert_statement and not dropped:
            dropped.append(True)  # committed, then the connection is lost
            raise OperationalError("server closed the connection unexpectedly")
        return result

    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        monkeypatch.setattr(pg_statements, "run_then", flaky_run)
        answer = _decline_over_http(client, token, proposal_id)
        monkeypatch.undo()
        repeat = _decline_over_http(client, token, proposal_id)

    assert dropped
    assert answer["result"] == "declined"
    assert (repeat["result"], repeat["reason"]) == ("not_approvable", "not_pending")
    assert _logged_declines(cs) == ["declined"]  # the repeat changed nothing: no row
    _unchanged_but_one_decline(cs, before, proposal_id)
