"""Another club's proposal whose stored record does not read answers exactly like an unknown
id, through the API, the pages and the command line: it answered 500 (the damaged record's
"Internal error" and reference), which told a foreign member or token that the id names a
proposal. Its own club still gets the damaged record's answer, and nothing is written."""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

import pytest
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA, count_events
from tests.support.proposing import propose
from tests.test_corrupt_records import _fresh, _rewrite_state
from tests.test_http_api import ALL, problem
from tests.test_web_pages import web_for


@pytest.fixture
def damaged(cs, seeded, clock):
    """A fresh process's view (no cache) of the deployment, and Granite's proposal whose
    first stored event does not read (no field it needs: its club only spelled out inside)."""
    proposal_id = propose(cs, seeded)
    _rewrite_state(cs, proposal_id, 1, lambda state: {"_broken": state})
    other = _fresh(cs, clock)
    try:
        yield other, proposal_id
    finally:
        other.close()


def test_the_api_answers_another_clubs_damaged_proposal_as_an_unknown_id(damaged, seeded):
    cs, proposal_id = damaged
    maple = issue_token(cs, "maple", "maple-bot", ALL, issued_by=MIA, kind="approver").token
    granite = issue_token(cs, "granite", "granite-bot", ALL, issued_by=AVA, kind="approver").token
    before = count_events(cs)
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:

        def answers(token: str, some_id: str) -> list[Any]:
            base = f"/api/v1/proposals/{some_id}"
            headers = {"Authorization": f"Bearer {token}"}
            return [
                client.get(base, headers=headers),
                client.get(f"{base}/status", headers=headers),
                client.get(f"{base}/history", headers=headers),
                client.get(f"{base}/approval-challenge", headers=headers),
                client.post(f"{base}/approve", headers=headers),
                client.post(f"{base}/decline", headers=headers, json={"note": "no"}),
                client.post(f"{base}/revisions", headers=headers, json={"request": {}}),
            ]

        foreign = answers(maple, proposal_id)
        unknown = answers(maple, str(uuid.uuid4()))
        for f, u in zip(foreign, unknown, strict=True):
            assert problem(f) == problem(u), f.request.url
            assert f.status_code == 404
        own = client.get(
            f"/api/v1/proposals/{proposal_id}", headers={"Authorization": f"Bearer {granite}"}
        )
    status, body = problem(own)
    assert (status, body["type"]) == (500, "urn:countersign:problem:internal-error")
    assert count_events(cs) == before


def test_the_pages_answer_another_clubs_damaged_proposal_as_an_unknown_id(damaged, seeded):
    cs, proposal_id = damaged
    web = web_for(cs, seeded)
    mia = web.browser(MIA)
    token = mia.csrf("/")
    before = count_events(cs)

    def answers(some_id: str) -> list[tuple[int, str]]:
        out = []
        for method, path in (
            ("GET", "/proposals/{}"),
            ("GET", "/proposals/{}/status"),
            ("POST", "/proposals/{}/approve"),
            ("POST", "/proposals/{}/decline"),
        ):
            path = path.format(some_id)
            page = mia.get(path) if method == "GET" else mia.post(path, {"csrf_token": token})
            out.append((page.status_code, page.text))
        return out

    foreign, unknown = answers(proposal_id), answers(str(uuid.uuid4()))
    assert foreign == unknown
    assert {status for status, _ in foreign} == {404}
    own = web.browser(AVA).get(f"/proposals/{proposal_id}")
    assert own.status_code == 500
    assert re.search(r"cs-[0-9a-f]{16}", own.text)
    assert count_events(cs) == before


def test_the_command_line_answers_another_clubs_damaged_proposal_as_an_unknown_id(damaged, capsys):
    cs, proposal_id = damaged
    db = ["--database", cs.settings.database_url]
    before = count_events(cs)

    def said(some_id: str) -> list[tuple[int, str, str]]:
        out = []
        for argv in (
            ["show", some_id, "--as", MIA],
            ["approve", some_id, "--as", MIA],
            ["decline", some_id, "--as", MIA],
            ["show", some_id, "--as", MIA, "--json"],
            ["approve", some_id, "--as", MIA, "--json"],
        ):
            status = main([*argv, *db])
            captured = capsys.readouterr()
            out.append((status, captured.out, captured.err))
        return out

    unknown_id = str(uuid.uuid4())
    foreign = said(proposal_id)
    unknown = [
        (status, out.replace(unknown_id, proposal_id), err) for status, out, err in said(unknown_id)
    ]
    assert foreign == unknown
    assert "Internal error" not in json.dumps(foreign)

    assert main(["show", proposal_id, "--as", AVA, *db]) == 1
    own = capsys.readouterr().err
    assert own.startswith("Internal error: a stored record this needs cannot be read")
    assert count_events(cs) == before


def test_a_damaged_record_that_no_longer_names_its_club_is_no_ones(cs, seeded, clock, caplog):
    """Fail closed: a first event that does not read and names no club either is not found
    for anyone, its own club's token too, since no one can be shown to be of its club; its
    damage is in the log under the reference (and ``audit verify`` names it)."""
    proposal_id = propose(cs, seeded)

    def nameless(state: dict[str, Any]) -> dict[str, Any]:
        return {"_broken": {k: v for k, v in state.items() if k != "organization_id"}}

    _rewrite_state(cs, proposal_id, 1, nameless)
    other = _fresh(cs, clock)
    try:
        granite = issue_token(other, "granite", "bot", ALL, issued_by=AVA, kind="approver").token
        headers = {"Authorization": f"Bearer {granite}"}
        with (
            caplog.at_level(logging.ERROR, logger="countersign"),
            TestClient(create_app(other), raise_server_exceptions=False) as client,
        ):
            own = client.get(f"/api/v1/proposals/{proposal_id}", headers=headers)
            unknown = client.get(f"/api/v1/proposals/{uuid.uuid4()}", headers=headers)
    finally:
        other.close()
    assert problem(own) == problem(unknown)
    assert own.status_code == 404
    assert f"unreadable stored events for {proposal_id}" in caplog.text
