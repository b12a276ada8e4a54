"""The README's JSON API walk, as a newcomer runs it: the tokens its `tokens issue` block
issues, then its curl block's calls, each with the token its variable names.

A variable is read as a newcomer reads it: ``X=cst_...  # the <name> token`` is the token
issued under that name; one whose comment names no token (``# from `tokens issue```) is the
first one the README issued. The walk proposes with one and approves with the other, and
the proposal must be created and then executed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

README = Path(__file__).resolve().parents[1] / "README.md"

_ISSUE = re.compile(
    r"countersign tokens issue --org (?P<org>\S+) --as (?P<member>\S+) --name (?P<name>\S+)"
    r"\s*\\?\s*--permissions (?P<permissions>\S+)(?P<approver>\s+--approver)?"
)
_VARIABLE = re.compile(r"^(?P<var>[A-Z_]+)=cst_\.\.\.\s*#\s*(?P<comment>.*)$", re.M)
_CALL = re.compile(
    r"curl -s -X POST \S+?(?P<path>/api/v1/proposals\S*)[^\n]*?\\?\n?[^\n]*?"
    r"Bearer \$(?P<var>[A-Z_]+)"
)


def _walk() -> tuple[list[dict[str, Any]], dict[str, str], list[tuple[str, str]]]:
    text = README.read_text(encoding="utf-8")
    issued = [m.groupdict() for m in _ISSUE.finditer(text)]
    start = text.index("ORDER=$(countersign seed --json")
    block = text[text.rindex("```sh", 0, start) : text.index("```\n", start)]
    variables: dict[str, str] = {}
    for found in _VARIABLE.finditer(block):
        named = [t["name"] for t in issued if f"the {t['name']} token" in found["comment"]]
        variables[found["var"]] = named[0] if named else issued[0]["name"]
    calls = [(m["path"], m["var"]) for m in _CALL.finditer(block)]
    return issued, variables, calls


def test_the_readme_names_its_tokens_and_calls():
    issued, variables, calls = _walk()
    assert [t["name"] for t in issued][:2] == ["chat-agent", "billing"]
    assert [path for path, _ in calls] == [
        "/api/v1/proposals",
        "/api/v1/proposals/PROPOSAL_ID/approve",
    ]
    assert {var for _, var in calls} <= set(variables)


def test_the_readme_api_walk_proposes_and_then_approves(cs: Countersign, seeded: dict[str, Any]):
    issued, variables, calls = _walk()
    tokens = {
        t["name"]: issue_token(
            cs,
            t["org"],
            t["name"],
            t["permissions"].split(","),
            issued_by=t["member"],
            kind="approver" if t["approver"] else "agent",
        ).token
        for t in issued
    }
    (propose_path, proposer), (approve_path, approver) = calls
    body = {
        "operation": "order.refund_missing_discount",
        "resource_id": seeded["orders"]["refund-ok"],
        "request": {
            "payment": "P1",
            "line_item": "L1",
            "discount": "D1",
            "destination": "original_payment_method",
        },
    }
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        created = client.post(
            propose_path,
            json=body,
            headers={"Authorization": f"Bearer {tokens[variables[proposer]]}"},
        )
        assert created.status_code == 201, created.text
        path = approve_path.replace("PROPOSAL_ID", created.json()["proposal_id"])
        approved = client.post(
            path, headers={"Authorization": f"Bearer {tokens[variables[approver]]}"}
        )
    assert approved.status_code == 200, approved.text
    assert approved.json()["result"] == "executed"
