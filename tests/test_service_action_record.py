"""The record of what a service did through the API (``api_service_actions``): written whole
before the answer goes out, and on PostgreSQL committed without waiting for the disk, for
its own transaction only (infrastructure/identity/tokens.py, ``record_action``): the token
checks and the sandbox's requests that share its connection afterwards commit as before."""

from __future__ import annotations

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token, service_actions
from fastapi.testclient import TestClient

from tests.conftest import AVA, TO_CARD
from tests.support.proposing import propose


def _durability(cs: Countersign) -> str:
    """How a commit on the connection the record uses waits for the disk, now."""
    with cs.sql.statements() as cursor:
        shown = "SHOW synchronous_commit" if cs.sql.is_postgres else "PRAGMA synchronous"
        row = cursor.execute(shown).fetchone()
    assert row is not None
    return str(row[0])


def _wait_for_the_disk(cs: Countersign) -> None:
    """The test databases do not wait, for speed: on PostgreSQL the record's connection is
    made to wait, so that a setting that outlived the record's transaction would show."""
    if cs.sql.is_postgres:
        with cs.sql.statements() as cursor:
            cursor.execute("SET synchronous_commit TO on")


def test_each_answer_is_recorded_and_the_connection_commits_as_before(cs, seeded):
    made = propose(cs, seeded, "refund-ok", request=TO_CARD)
    token = issue_token(cs, "granite", "bot", ["orders.refund"], issued_by=AVA, kind="approver")
    _wait_for_the_disk(cs)
    before = _durability(cs)
    assert before == ("on" if cs.sql.is_postgres else "2")
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        headers = {"Authorization": f"Bearer {token.token}"}
        for _ in range(2):
            answer = client.post(f"/api/v1/proposals/{made}/approve", headers=headers)
            assert answer.status_code == 200, answer.text

    recorded = [
        (action["service"], action["action"], action["target"], action["result"])
        for action in service_actions(cs, "granite")
    ]
    # The repeat answered the stored outcome and changed nothing: not recorded.
    assert recorded == [("service:bot", "approve", made, "executed")]
    assert _durability(cs) == before
