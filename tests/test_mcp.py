"""The propose-only MCP server, driven by the MCP SDK's own client over both transports.

Over stdio the client launches ``countersign mcp --org granite --as ava@...`` against a seeded
SQLite file, as Claude Desktop would; over streamable HTTP it talks to the server in a thread
with an API token, on every backend. Either way an agent lists its tools, proposes (countersign
computes the amount), reads the status and the card, and finds no way to execute: a person
approves by id, and only then does anything run, once.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.assistant.service import refusal
from countersign.application.authorization import Caller
from countersign.domain.club.organization import Permission
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.identity.tokens import issue_token, revoke_token, service_actions
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN, DRAFT, MIA, REFUND, TO_CARD
from tests.mcp_client import (
    COUNTERSIGN,
    error_of,
    over_http,
    over_stdio,
    structured,
    tool_names,
)
from tests.servers import serving
from tests.support.mcp_requests import initialize
from tests.test_web_pages import Browser

if TYPE_CHECKING:  # the MCP SDK and countersign's MCP server are imported by the tests and
    # fixtures that use them: collecting this module imports neither (docs/testing.md)
    from mcp import ClientSession

ALL = [str(p) for p in Permission] + ["email_broadcasts.send", "roster.manage"]
NOAH = "noah@granite.example"
A_DRAFT = {
    "filters": {"leagues": ["Monday Night Open"]},
    "subject": "Ice schedule",
    "body": "See you on Monday.",
}
#: What no tool may do, in any configuration: its name never says it.
FORBIDDEN_VERBS = ("approve", "decline", "execute", "revise", "claim", "reconcile", "expire")
READS = {
    "orders_get_order_investigation",
    "email_broadcasts_list_leagues",
    "email_broadcasts_count_audience",
    "roster_list_leagues",
    "roster_find_members",
    # and the read tools of the deployment's plug-ins' sections (COUNTERSIGN_PLUGINS)
    *(
        f"{section}_{tool.name}"
        for section, assistant in ASSISTANTS.items()
        if section not in {"orders", "email_broadcasts", "roster"}
        for tool in assistant.read_tools
    ),
}
PROPOSES = {"propose_" + kind.replace(".", "_") for kind in REGISTRY}
DRAFT_TOOL = "propose_email_broadcast_apply_draft"


def assert_propose_only(names: list[str]) -> None:
    for name in names:
        assert not any(verb in name.lower() for verb in FORBIDDEN_VERBS), name
    assert set(names) <= READS | PROPOSES | {"proposal_status"}


# -- over stdio, as Claude Desktop launches it --------------------------------------------------


@pytest.fixture
def sqlite_file(tmp_path: Path) -> tuple[str, Countersign, dict[str, Any]]:
    """A seeded SQLite file the server subprocess opens, and this process's view of it."""
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    cs = bootstrap(Settings(database_url=url))
    seeded = seed(cs)
    yield url, cs, seeded
    cs.close()


def test_an_agent_on_stdio_proposes_and_only_a_person_executes(sqlite_file):
    url, cs, seeded = sqlite_file
    order = seeded["orders"]["refund-ok"]

    async def proposing(session: ClientSession) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        refund = tools["propose_order_refund_missing_discount"]
        assert "amount_cents" not in json.dumps(refund.input_schema)
        assert refund.input_schema["required"][0] == "resource_id"
        assert refund.output_schema["properties"]["proposal_id"]["type"] == "string"
        read = await session.call_tool("orders_get_order_investigation", {"resource_id": order})
        assert structured(read)["participant"] == "Olivia Chen"
        created = structured(
            await session.call_tool(refund.name, {"resource_id": order, **TO_CARD})
        )
        draft = structured(await session.call_tool("propose_email_broadcast_apply_draft", A_DRAFT))
        pending = structured(
            await session.call_tool("proposal_status", {"proposal_id": created["proposal_id"]})
        )
        uri = f"countersign://proposals/{created['proposal_id']}"
        card = (await session.read_resource(uri)).contents[0].text
        card_json = json.loads((await session.read_resource(f"{uri}/card.json")).contents[0].text)
        listed = [str(r.uri) for r in (await session.list_resources()).resources]
        return {
            "names": list(tools),
            "created": created,
            "draft": draft,
            "pending": pending,
            "card": card,
            "card_json": card_json,
            "listed": listed,
        }

    seen, errors = over_stdio(url, proposing)

    assert_propose_only(seen["names"])
    assert set(seen["names"]) == READS | PROPOSES | {"proposal_status"}
    created = seen["created"]
    assert created["status"] == "pending"
    # The agent named references only; countersign computed the amount and froze the card.
    rows = {row["label"]: row["value"] for row in created["preview"]}
    assert rows["Refund amount"] == "$48.00 CAD"
    assert created["review_path"] == f"/proposals/{created['proposal_id']}"
    assert created["approvals_required"] == 1
    assert seen["draft"]["operation"] == DRAFT
    assert seen["pending"]["status"] == "pending"
    assert seen["pending"]["outcome_kind"] is None
    assert "Refund amount: $48.00 CAD" in seen["card"]
    # stdio acts as the named member, through the model: an assistant proposed it
    assert "Proposed by an assistant, through MCP (pytest-agent 1.0)" in seen["card"]
    assert seen["card_json"]["origin"] == {
        "channel": "mcp",
        "client": "pytest-agent",
        "client_version": "1.0",
    }
    assert seen["listed"] == [
        f"countersign://proposals/{seen['draft']['proposal_id']}",
        f"countersign://proposals/{created['proposal_id']}",
    ]
    assert "Traceback" not in errors
    # Nothing ran: the agent had no way to.
    assert cs.sandbox.refunds() == []

    approved = cs.access.approve(created["proposal_id"], Caller(AVA, "granite"))
    assert approved.result == "executed"
    again = cs.access.approve(created["proposal_id"], Caller(AVA, "granite"))
    assert again.result == "already_completed"
    assert len(cs.sandbox.refunds()) == 1

    async def checking(session: ClientSession) -> dict[str, Any]:
        return structured(
            await session.call_tool("proposal_status", {"proposal_id": created["proposal_id"]})
        )

    settled, _ = over_stdio(url, checking)
    assert (settled["status"], settled["outcome_kind"]) == ("succeeded", "succeeded")
    assert settled["message"] == cs.access.card(created["proposal_id"], AVA).message
    assert settled["message"].startswith("Refunded")
    assert len(cs.sandbox.refunds()) == 1


def test_a_member_without_permissions_gets_only_the_status_tool(sqlite_file):
    url, _, seeded = sqlite_file

    async def trying(session: ClientSession) -> tuple[list[str], dict[str, Any]]:
        refused = await session.call_tool(
            "propose_order_refund_missing_discount",
            {"resource_id": seeded["orders"]["refund-ok"], **TO_CARD},
        )
        return await tool_names(session), error_of(refused)

    (names, refused), _ = over_stdio(url, trying, email=BEN)

    assert names == ["proposal_status"]
    assert refused["error"] == "unknown_tool"


def test_stdio_refuses_to_start_for_a_non_member(sqlite_file, capsys):
    """A host that launches the server with the wrong club or member is told so on stderr,
    exit 2 (a configuration error): stdout is the protocol's, and a "Not found." there with
    exit 0 reached the client as a closed connection and nothing else."""
    url, _, _ = sqlite_file
    for org, who in (("granite", MIA), ("nosuch", AVA)):
        status = main(["mcp", "--database", url, "--org", org, "--as", who])
        out, err = capsys.readouterr()
        assert (status, out) == (2, "")
        assert f"{who} is not a member of a club '{org}'" in err
        assert "check --org" in err
        assert "--as" in err
    status = main(["mcp", "--database", url, "--org", "granite", "--as", MIA, "--json"])
    assert status == 2
    assert json.loads(capsys.readouterr().out)["error"] == "usage"
    assert main(["mcp", "--database", url, "--json"]) == 2


def test_http_refuses_a_bad_setting_before_saying_it_serves(sqlite_file, capsys, monkeypatch):
    """A wrong session setting stops the server with exit 2, and nothing said first that it
    was serving (the banner came before the refusal)."""
    url, _, _ = sqlite_file
    monkeypatch.setenv("COUNTERSIGN_MCP_SESSION_IDLE", "0")
    status = main(["mcp", "--http", "--port", "8409", "--database", url])
    out, err = capsys.readouterr()
    assert status == 2
    assert "COUNTERSIGN_MCP_SESSION_IDLE must be a positive whole number" in err
    assert "streamable HTTP at" not in out + err


# -- over streamable HTTP, with API tokens -------------------------------------------------------


@pytest.fixture
def served(cs: Countersign, seeded: dict[str, Any]):
    from countersign.infrastructure.entrypoints.mcp import http_app

    with serving(http_app(cs), lifespan="on") as running:
        yield running


def token(cs: Countersign, permissions: list[str], *, org="granite", who=AVA, name="agent"):
    return issue_token(cs, org, name, permissions, issued_by=who, kind="agent").token


def test_an_agent_over_http_proposes_with_a_token_and_only_a_person_executes(cs, seeded, served):
    order = seeded["orders"]["refund-ok"]
    bearer = token(cs, ALL)

    async def proposing(session: ClientSession) -> dict[str, Any]:
        created = structured(
            await session.call_tool(
                "propose_order_refund_missing_discount", {"resource_id": order, **TO_CARD}
            )
        )
        draft = structured(await session.call_tool("propose_email_broadcast_apply_draft", A_DRAFT))
        status = structured(
            await session.call_tool("proposal_status", {"proposal_id": created["proposal_id"]})
        )
        uri = f"countersign://proposals/{created['proposal_id']}/card.json"
        card = json.loads((await session.read_resource(uri)).contents[0].text)
        return {
            "names": await tool_names(session),
            "created": created,
            "draft": draft,
            "status": status,
            "card": card,
        }

    seen = over_http(served.base, bearer, proposing)

    assert_propose_only(seen["names"])
    created = seen["created"]
    assert {row["label"]: row["value"] for row in created["preview"]}["Refund amount"] == (
        "$48.00 CAD"
    )
    assert seen["status"]["status"] == "pending"
    assert seen["card"]["origin_line"] == (
        "Proposed by the agent “agent” (agent token), through MCP (pytest-agent 1.0)"
    )
    assert seen["card"]["requested_through"] == "agent_token:agent"
    assert seen["draft"]["status"] == "pending"
    # The token's actions are logged under its name, as the JSON API logs its services'.
    logged = service_actions(cs, "granite")
    assert [(a["service"], a["action"]) for a in logged] == [("service:agent", "mcp.propose")] * 2
    assert cs.sandbox.refunds() == []

    assert cs.access.approve(created["proposal_id"], Caller(AVA, "granite")).result == "executed"
    cs.access.approve(created["proposal_id"], Caller(AVA, "granite"))
    assert len(cs.sandbox.refunds()) == 1

    async def checking(session: ClientSession) -> dict[str, Any]:
        return structured(
            await session.call_tool("proposal_status", {"proposal_id": created["proposal_id"]})
        )

    settled = over_http(served.base, bearer, checking)
    assert (settled["status"], settled["outcome_kind"]) == ("succeeded", "succeeded")
    assert settled["message"].startswith("Refunded")


def test_no_configuration_offers_a_tool_that_approves_or_executes(cs, seeded, served):
    configurations = [
        ALL,
        ["orders.refund"],
        ["email_broadcasts.prepare"],
        ["email_broadcasts.send"],
        ["roster.manage"],
        ["audit.read"],
        ["policies.manage"],
    ]
    seen = {}
    for number, permissions in enumerate(configurations):
        bearer = token(cs, permissions, name=f"agent-{number}")
        seen[tuple(permissions)] = over_http(served.base, bearer, tool_names)

    for names in seen.values():
        assert_propose_only(names)
        assert "proposal_status" in names
    assert set(seen[("orders.refund",)]) == {
        "orders_get_order_investigation",
        "propose_order_refund_missing_discount",
        "propose_order_cancel_registration",
        "proposal_status",
    }
    # Reading a section needs a permission to propose in it: the auditor gets the status only.
    assert seen[("audit.read",)] == ["proposal_status"]
    assert seen[("policies.manage",)] == ["proposal_status"]


def test_a_token_without_the_scope_cannot_call_the_tool_it_was_not_given(cs, seeded, served):
    bearer = token(cs, ["email_broadcasts.prepare"])
    order = seeded["orders"]["refund-ok"]

    async def trying(session: ClientSession) -> dict[str, Any]:
        return error_of(
            await session.call_tool(
                "propose_order_refund_missing_discount", {"resource_id": order, **TO_CARD}
            )
        )

    assert over_http(served.base, bearer, trying)["error"] == "unknown_tool"
    assert cs.sandbox.refunds() == []


def test_invalid_arguments_are_tool_errors_carrying_the_model_loops_problems(cs, seeded, served):
    bearer = token(cs, ALL)
    order = seeded["orders"]["refund-ok"]
    wrong = {"resource_id": order, "payment": "P1", "amount_cents": 100}

    async def trying(session: ClientSession) -> dict[str, Any]:
        return {
            "wrong": error_of(
                await session.call_tool("propose_order_refund_missing_discount", wrong)
            ),
            "no_resource": error_of(
                await session.call_tool("propose_order_refund_missing_discount", TO_CARD)
            ),
            "read": error_of(await session.call_tool("roster_find_members", {"query": "x" * 101})),
            "status": error_of(await session.call_tool("proposal_status", {})),
        }

    seen = over_http(served.base, bearer, trying)

    try:
        REGISTRY[REFUND].parse_request({k: v for k, v in wrong.items() if k != "resource_id"})
    except InvalidRequestError as invalid:
        expected = refusal(invalid.problems, invalid.more_problems)
    assert seen["wrong"] == {"error": "invalid_request", **expected}
    assert {"field": "amount_cents", "message": "unknown field; remove it"} in expected["problems"]
    assert seen["no_resource"]["problems"] == [
        {"field": "resource_id", "message": "required: the id of the record, as a string"}
    ]
    assert seen["read"]["problems"][0]["field"] == "query"
    assert seen["status"]["problems"][0]["field"] == "proposal_id"
    # A read says nothing was read (it said a proposal's "nothing was prepared").
    assert "nothing was read" in json.dumps(seen["status"])
    assert "prepared" not in json.dumps(seen["status"])
    assert cs.sandbox.refunds() == []


def test_someone_elses_proposal_and_another_clubs_are_not_found(cs, seeded, served):
    order = seeded["orders"]["refund-ok"]
    maple = cs.access.propose(
        Caller(MIA, "maple"),
        operation=REFUND,
        resource_id=seeded["orders"]["maple-refund"],
        request=TO_CARD,
    ).proposal_id
    noahs = cs.access.propose(
        Caller(NOAH, "granite"), operation=REFUND, resource_id=order, request=TO_CARD
    ).proposal_id
    bearer = token(cs, ALL)

    async def asking(session: ClientSession) -> dict[str, Any]:
        answers = {}
        for name, pid in (("maple", maple), ("noah", noahs), ("unknown", str(uuid.uuid4()))):
            answers[name] = error_of(
                await session.call_tool("proposal_status", {"proposal_id": pid})
            )
            try:
                await session.read_resource(f"countersign://proposals/{pid}")
            except Exception as error:  # the SDK raises the server's JSON-RPC error
                answers[f"{name}_card"] = str(error)
        return answers

    seen = over_http(served.base, bearer, asking)

    assert seen["maple"] == seen["noah"] == seen["unknown"] == {"error": "not_found"}
    assert seen["maple_card"] == seen["noah_card"] == seen["unknown_card"] == "Resource not found"


HELLO = initialize("curl")


def post(base: str, message: dict[str, Any], **headers: str) -> httpx2.Response:
    """One JSON-RPC message, as a client without the SDK would send it."""
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx2.post(f"{base}/mcp", json=message, headers={**accept, **headers}, timeout=10)


def test_http_without_a_valid_token_is_401_and_the_sdk_client_cannot_connect(cs, seeded, served):
    revoked = issue_token(cs, "granite", "old", ALL, issued_by=AVA, kind="agent")
    revoke_token(cs, revoked.token_id)
    for authorization in (None, "Bearer nope", f"Bearer {revoked.token}", "Basic abc"):
        answer = post(
            served.base, HELLO, **({"Authorization": authorization} if authorization else {})
        )
        assert answer.status_code == 401, answer.text
        assert answer.headers["www-authenticate"].startswith('Bearer realm="countersign"')
        assert answer.json()["error"] == "unauthenticated"

    for bearer in (None, "cst_0123456789abcdef_" + "x" * 43):
        with pytest.raises(Exception) as refused:
            over_http(served.base, bearer, tool_names)
        # The SDK's client gets the 401 as an error response and never has a session.
        assert "Server returned an error response" in repr(refused.value)


def test_a_session_answers_only_the_token_that_opened_it(cs, seeded, served):
    granite = f"Bearer {token(cs, ALL)}"
    maple = f"Bearer {token(cs, ALL, org='maple', who=MIA, name='maple-agent')}"
    opened = post(served.base, HELLO, Authorization=granite)
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
    session["Mcp-Protocol-Version"] = "2025-06-18"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    stolen = post(served.base, listing, Authorization=maple, **session)
    assert stolen.status_code == 404
    assert "propose" not in stolen.text
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(served.base, initialized, Authorization=granite, **session).status_code == 202
    own = post(served.base, listing, Authorization=granite, **session)
    assert own.status_code == 200
    assert "propose_order_refund_missing_discount" in own.text


# -- the origin, wherever a proposal is shown ------------------------------------------------------


def test_the_origin_shows_on_the_cli_card_the_history_and_the_audit_trail(cs, seeded, capsys):
    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
        origin={"channel": "mcp", "client": "Claude Desktop", "client_version": "1.2"},
    )
    database = ["--database", cs.settings.database_url]

    main(["show", created.proposal_id, "--as", AVA, *database])
    assert "Proposed through MCP (Claude Desktop 1.2)" in capsys.readouterr().out
    main(["show", created.proposal_id, "--as", AVA, "--language", "fr", *database])
    assert "Proposée via MCP (Claude Desktop 1.2)" in capsys.readouterr().out

    history = cs.audit.history(created.proposal_id)
    assert history["events"][0]["origin"]["client"] == "Claude Desktop"
    for runner in cs.projection_runners(["audit_trail"]):
        runner.catch_up()
    with cs.sql.transaction() as cursor:
        summary = cursor.execute(
            "SELECT summary FROM audit_events WHERE proposal_id = ? AND event_type = 'Proposed'",
            (created.proposal_id,),
        ).fetchone()[0]
    assert summary == f"proposed {REFUND} through MCP (Claude Desktop 1.2)"


def test_the_review_page_says_it_came_through_mcp(cs, seeded):
    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
        origin={"channel": "mcp", "client": "<b>Claude</b>", "client_version": "1.2"},
    )
    plain = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-stale"],
        request=TO_CARD,
    )
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    browser = Browser(TestClient(app, follow_redirects=False))
    assert browser.sign_in(AVA, seed_passwords(cs)[AVA]).status_code == 303

    page = browser.get(f"/proposals/{created.proposal_id}").text
    assert "Proposed through MCP (bClaude/b 1.2)" in page  # no markup kept, none run
    french = browser.get(f"/proposals/{created.proposal_id}", **{"Accept-Language": "fr"}).text
    assert "Proposée via MCP (bClaude/b 1.2)" in french
    assert "Proposed through" not in browser.get(f"/proposals/{plain.proposal_id}").text


def test_a_client_name_cannot_go_on_in_the_applications_words(cs, seeded):
    """An MCP client names itself, so an agent writes its name: "Claude) — approved by Noah
    Okafor (noah@granite.example" closed the "(...)" the card, the review page and the audit
    trail show it in, and read on as the application's own words. Only a name's plain
    characters are kept (letters, digits, spaces, . _ - + /), at most 40."""
    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
        origin={
            "channel": "mcp",
            "client": "Claude) \u2014 approved by Noah Okafor (noah@granite.example",
            "client_version": "1.2; approved by Noah",
        },
    )

    assert cs.access.record(created.proposal_id, AVA)["origin"] == {
        "channel": "mcp",
        "client": "Claude approved by Noah Okafor noahgrani",
        "client_version": "1.2 approved by Noah",
    }
    kept = "Claude approved by Noah Okafor noahgrani 1.2 approved by Noah"
    for runner in cs.projection_runners(["audit_trail"]):
        runner.catch_up()
    with cs.sql.transaction() as cursor:
        summary = cursor.execute(
            "SELECT summary FROM audit_events WHERE proposal_id = ? AND event_type = 'Proposed'",
            (created.proposal_id,),
        ).fetchone()[0]
    assert summary == f"proposed {REFUND} through MCP ({kept})"


def test_a_client_name_recorded_before_the_cleaning_is_shown_cleaned(
    cs, seeded, monkeypatch, capsys
):
    """A proposal recorded by an earlier release, which kept 80 printable characters of the
    client's name: its review page and its card show only the name's plain characters, as a
    new one records them (the event stays as it was stored)."""
    from countersign.application import proposals

    def as_before(origin: dict[str, str] | None) -> dict[str, str] | None:
        return origin and {key: value[:80] for key, value in origin.items()}

    monkeypatch.setattr(proposals, "clean_origin", as_before)
    created = cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
        origin={
            "channel": "mcp",
            "client": "Claude) \u2014 approved by Noah Okafor (noah@granite.example",
            "client_version": "1.2",
        },
    )
    monkeypatch.undo()
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    browser = Browser(TestClient(app, follow_redirects=False))
    assert browser.sign_in(AVA, seed_passwords(cs)[AVA]).status_code == 303

    shown = "MCP (Claude approved by Noah Okafor noahgrani 1.2)"
    page = browser.get(f"/proposals/{created.proposal_id}").text
    assert f"Proposed through {shown}" in page
    assert "approved by Noah Okafor (" not in page
    main(["show", created.proposal_id, "--as", AVA, "--database", cs.settings.database_url])
    card = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())  # the box's sides
    assert f"Proposed through {shown}" in card
    assert "approved by Noah Okafor (" not in card


def test_another_client_names_itself_in_the_origin(cs, seeded, served):
    from mcp_types import Implementation

    bearer = token(cs, ALL)

    async def proposing(session: ClientSession) -> str:
        created = structured(
            await session.call_tool("propose_email_broadcast_apply_draft", A_DRAFT)
        )
        return str(created["proposal_id"])

    pid = over_http(
        served.base, bearer, proposing, client=Implementation(name="claude-ai", version="0.1.0")
    )
    assert cs.access.record(pid, AVA)["origin"] == {
        "channel": "mcp",
        "client": "claude-ai",
        "client_version": "0.1.0",
    }


def test_the_sdks_high_level_client_on_the_newest_protocol_proposes_too(sqlite_file):
    """``mcp.Client`` speaks the 2026-07-28 protocol (no handshake: the client names itself on
    every request); the server serves it the same tools and records the same origin."""
    from mcp import Client, StdioServerParameters, stdio_client
    from mcp_types import Implementation

    url, cs, _ = sqlite_file
    params = StdioServerParameters(
        command=COUNTERSIGN, args=["mcp", "--database", url, "--org", "granite", "--as", AVA]
    )

    async def proposing() -> tuple[str | None, list[str], dict[str, Any]]:
        # Client(params) is Client(stdio_client(params)), whose errlog defaults to the
        # sys.stderr of when the SDK was first imported: now that is inside some test, perhaps
        # one with capsys (no fileno). The server's stderr goes to a file, as in over_stdio.
        with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:
            transport = stdio_client(params, errlog=errors)
            client_info = Implementation(name="newest", version="2")
            async with Client(transport, client_info=client_info) as c:
                names = [tool.name for tool in (await c.list_tools()).tools]
                created = await c.call_tool(DRAFT_TOOL, A_DRAFT)
                return c.session.protocol_version, names, structured(created)

    version, names, created = anyio.run(proposing)

    assert version == "2026-07-28"
    assert_propose_only(names)
    assert cs.access.record(created["proposal_id"], AVA)["origin"] == {
        "channel": "mcp",
        "client": "newest",
        "client_version": "2",
    }


def test_a_token_check_that_fails_unexpectedly_is_500_with_a_correlation_id(
    cs, seeded, served, monkeypatch, caplog
):
    """Whatever breaks in the gate answers in the MCP server's own JSON, with a reference the
    log holds too, never the SDK's plain "Internal Server Error" nor the exception."""
    from countersign.infrastructure.entrypoints.mcp import transports

    def broken(cs: Countersign, token: str) -> None:
        raise RuntimeError("SELECT secret FROM /var/lib/countersign")

    monkeypatch.setattr(transports, "authenticate", broken)
    answer = post(served.base, HELLO, Authorization=f"Bearer {token(cs, ALL)}")
    assert answer.status_code == 500
    document = answer.json()
    assert document["error"] == "internal_error"
    assert "correlation id" in document["message"]
    assert document["correlation_id"] in caplog.text
    assert "SELECT" not in answer.text
    assert "/var/lib" not in answer.text
