"""Upgrade (issue 22): a token issued before tokens had kinds keeps working for what it did.

``tests/fixtures/tokens_417270c/`` is a database written by main at 417270c (its ``make.py``
says how): the seeded clubs and one API token, ``billing-bot``, in an ``api_tokens`` table
without a ``kind`` column. Opened by today's code, the table gains the column, the old token
is an approver token (the service that approved with it still approves), ``tokens list`` says
so, and the MCP server refuses it from now on.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import authenticate, list_tokens
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, TO_CARD
from tests.servers import serving
from tests.support.golden_postgres import GoldenPostgres

FIXTURE = Path(__file__).parent / "fixtures" / "tokens_417270c"


@pytest.fixture
def upgraded(
    database_url: str, golden_postgres: GoldenPostgres, tmp_path: Path
) -> Iterator[tuple[Countersign, dict[str, Any]]]:
    """Today's code on a copy of 417270c's database, an hour after it was written."""
    if database_url.startswith("sqlite"):
        copy = tmp_path / "tokens.db"
        shutil.copyfile(FIXTURE / "countersign.db", copy)
        database_url = f"sqlite:///{copy}"
        manifest = json.loads((FIXTURE / "manifest.json").read_text())
    else:
        database_url = golden_postgres.copy(FIXTURE / "postgres.sql")
        manifest = json.loads((FIXTURE / "manifest-postgres.json").read_text())
    clock = FakeClock(datetime.fromisoformat(manifest["written_at"]))
    clock.advance(hours=1)
    cs = bootstrap(Settings(database_url=database_url), clock=clock)
    yield cs, manifest
    cs.close()


def test_a_token_from_before_kinds_is_an_approver_token_and_still_approves(upgraded):
    cs, manifest = upgraded
    old = manifest["token"]
    principal = authenticate(cs, old)
    assert principal is not None
    assert (principal.name, principal.kind, principal.may_decide) == (
        "billing-bot",
        "approver",
        True,
    )
    assert [(t["name"], t["kind"]) for t in list_tokens(cs, "granite")] == [
        ("billing-bot", "approver")
    ]

    bearer = {"Authorization": f"Bearer {old}"}
    body = {
        "operation": REFUND,
        "resource_id": manifest["seed"]["orders"]["refund-ok"],
        "request": TO_CARD,
    }
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        made = client.post("/api/v1/proposals", headers=bearer, json=body)
        assert made.status_code == 201, made.text
        proposal_id = made.json()["proposal_id"]
        approved = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=bearer)
    assert approved.status_code == 200, approved.text
    assert approved.json()["result"] == "executed"
    assert len(cs.sandbox.refunds()) == 1
    card = cs.cards.card(proposal_id, AVA)
    assert card.approval_credentials == ["approver_token:billing-bot"]

    # The stored row keeps what 417270c wrote: no kind, read as an approver token.
    with cs.sql.transaction() as cursor:
        stored = cursor.execute(
            "SELECT kind FROM api_tokens WHERE token_id = ?", (manifest["token_id"],)
        ).fetchone()
    assert stored[0] is None


def test_mcp_refuses_a_token_from_before_kinds(upgraded):
    # countersign's MCP server imports the MCP SDK: here, so collecting this module imports
    # neither (docs/testing.md)
    from countersign.infrastructure.entrypoints.mcp import http_app

    cs, manifest = upgraded
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"},
        },
    }
    with serving(http_app(cs), lifespan="on") as served:
        answer = httpx2.post(
            f"{served.base}/mcp",
            json=hello,
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {manifest['token']}",
            },
            timeout=10,
        )
    assert answer.status_code == 401
    assert answer.json()["error"] == "approver_token"
    assert "Issue an agent token instead" in answer.json()["message"]
