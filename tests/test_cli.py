"""The command line: one JSON document per command, exit 0 whenever processed."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import TO_CARD


@pytest.fixture
def cli(database_url, capsys):
    def run(*argv: str, status: int = 0):
        code = main([*argv, "--json", "--database", database_url])
        out = capsys.readouterr().out
        assert code == status, out
        return json.loads(out)

    return run


@pytest.fixture
def seeded_cli(cli, seeded_database):
    """``cli``, and what ``seed`` printed. It runs on a copy of the seeded template
    (``seeded_database``), where it changes nothing (idempotent) but the people's passwords:
    an empty database made and seeded by the command cost half a second a test on
    PostgreSQL."""
    return cli, cli("seed")


def test_seed_is_idempotent_and_prints_the_documented_shape(cli):
    first = cli("seed")
    assert cli("seed") == first
    assert [o["slug"] for o in first["organizations"]] == ["granite", "maple"]
    assert {u["email"] for u in first["users"]} == {
        "ava@granite.example",
        "ben@granite.example",
        "noah@granite.example",
        "mia@maple.example",
    }
    assert {
        "refund-ok",
        "refund-lost-response",
        "refund-declined",
        "provider-outage",
        "account-credit",
        "maple-refund",
    } <= set(first["orders"])
    assert set(first["broadcast_forms"]) == {"granite", "maple"}
    assert set(first["rosters"]) == {"granite", "maple"}


def test_orders_show_gives_references_and_no_provider_ids(seeded_cli):
    cli, data = seeded_cli
    order = cli("orders", "show", data["orders"]["refund-ok"], "--org", "granite")
    assert order["line_items"][0]["ref"] == "L1"
    assert order["discounts"][0] == {
        "ref": "D1",
        "name": "Early-bird 15% discount",
        "line_item": "L1",
        "applied": False,
        "eligibility": "Registered on 2026-08-18, before the 2026-09-01 early-bird deadline",
        "value_cents": 4800,
    }
    assert order["payments"][0]["refundable_cents"] == 34500
    assert "ch_" not in json.dumps(order)
    assert cli("orders", "show", data["orders"]["maple-refund"], "--org", "granite") == (
        _no_order("granite", data["orders"]["maple-refund"])
    )
    # By its order number too, as the pages take it: the club's own orders only.
    assert cli("orders", "show", "refund-ok", "--org", "granite") == order
    for foreign in ("maple-refund", "refund-ok"):
        club = "granite" if foreign == "maple-refund" else "maple"
        assert cli("orders", "show", foreign, "--org", club) == _no_order(club, foreign)


def _no_order(club: str, reference: str) -> dict[str, str]:
    """What --json says of an order the club has by neither number nor id."""
    return {
        "error": "not_found",
        "resource": "order",
        "message": f'Not found: {club} has no order whose number or id is "{reference}". Name '
        "the order by its number, as the registration system shows it, or by its id; "
        f"`countersign orders show NUMBER --org {club}` shows one.",
    }


def test_an_order_number_written_like_an_id_is_still_an_order_number(seeded_cli, database_url):
    """A club whose order numbers are UUIDs (imported from another system) finds each by its
    number, as the pages take it; another club's number names nothing."""
    from countersign.application.authorization import organization_by_slug
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.demo.seed import _order
    from countersign.infrastructure.settings import Settings

    cli, _ = seeded_cli
    number = "0b7e2a4c-3f1d-4e8a-9c55-2d6f1a7b9e10"
    cs = bootstrap(Settings(database_url=database_url))
    try:
        granite = organization_by_slug(cs.store, "granite")
        order = _order(cs, granite, number, "Uma Imported", "uma@granite.example", None, "cash")
    finally:
        cs.close()
    assert order.id != UUID(number)
    shown = cli("orders", "show", number, "--org", "granite")
    assert shown["order_id"] == str(order.id)
    assert shown["participant"] == "Uma Imported"
    assert cli("orders", "show", str(order.id), "--org", "granite") == shown
    assert cli("orders", "show", number, "--org", "maple") == _no_order("maple", number)


def test_propose_approve_show_history_round_trip(seeded_cli):
    cli, data = seeded_cli
    order_id = data["orders"]["refund-ok"]
    created = cli(
        "propose",
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--operation",
        "order.refund_missing_discount",
        "--resource",
        order_id,
        "--request",
        json.dumps(TO_CARD),
    )
    assert set(created) == {
        "proposal_id",
        "status",
        "operation",
        "preview",
        "expires_at",
        "supersedes",
        "revision_of",
        "approvals_required",
    }
    assert (created["supersedes"], created["revision_of"]) == ([], None)
    pid = created["proposal_id"]

    approved = cli("approve", pid, "--as", "ava@granite.example")
    assert set(approved) >= {"result", "proposal_id", "status", "outcome", "reason"}
    assert (approved["result"], approved["status"], approved["reason"]) == (
        "executed",
        "succeeded",
        None,
    )
    assert approved["outcome"]["kind"] == "succeeded"
    again = cli("approve", pid, "--as", "ava@granite.example")
    assert again["result"] == "already_completed"
    assert again["outcome"] == approved["outcome"]

    card = cli("show", pid, "--as", "ava@granite.example")
    assert card["status"] == "succeeded"
    assert card["approved_by"] == "ava@granite.example"
    history = cli("history", pid)
    assert [e["type"] for e in history["events"]] == [
        "Proposed",
        "Approved",
        "Claimed",
        "Revalidated",
        "Succeeded",
    ]
    assert [e["version"] for e in history["events"]] == [1, 2, 3, 4, 5]
    as_of = cli("history", pid, "--as-of", "1")
    assert as_of["as_of"]["status"] == "pending"
    assert as_of["as_of"]["preview"] == created["preview"]
    # A time as the history shows it (to the millisecond) holds the events shown at it: the
    # approval's, its claim's and what followed in that commit (an auditor's finding: they
    # fell after it, a thousandth of a second truncated).
    shown = _shown_time(history["events"][-1]["at"])
    assert cli("history", pid, "--as-of", shown)["as_of"]["version"] == 5
    refunds = cli("provider", "refunds")
    assert [(r["requests"], r["metadata"]["proposal_id"]) for r in refunds] == [(1, pid)]


def test_a_lost_answer_points_every_json_document_to_its_status_resource(seeded_cli):
    """The stored outcome holds facts; the documents the API and the CLI answer carry the
    API's route to the proposal's status, as they always did."""
    cli, data = seeded_cli
    created = cli(
        "propose",
        *("--org", "granite", "--as", "ava@granite.example"),
        *("--operation", "order.refund_missing_discount"),
        *("--resource", data["orders"]["refund-lost-response"], "--request", json.dumps(TO_CARD)),
    )
    pid = created["proposal_id"]
    uncertain = {
        "kind": "needs_reconciliation",
        "status_path": f"/api/v1/proposals/{pid}/status",
        "cause": "response_lost",
    }
    assert cli("approve", pid, "--as", "ava@granite.example")["outcome"] == uncertain
    assert cli("show", pid, "--as", "ava@granite.example")["outcome"] == uncertain
    history = cli("history", pid)
    assert history["events"][-1]["outcome"] == uncertain
    assert cli("history", pid, "--as-of", "5")["as_of"]["outcome"] == uncertain


def test_invalid_requests_are_processed_with_problems(seeded_cli):
    cli, data = seeded_cli
    answer = cli(
        "propose",
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--operation",
        "order.refund_missing_discount",
        "--resource",
        data["orders"]["refund-ok"],
        "--request",
        '{"payment": "P1", "amount_cents": 100',
        status=4,
    )
    assert answer["error"] == "invalid_request"
    assert answer["problems"][0]["field"] == "request"


def test_request_from_a_file_and_a_manual_refund_then_a_stale_approval(seeded_cli, tmp_path):
    cli, data = seeded_cli
    order_id = data["orders"]["refund-stale"]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(TO_CARD))
    created = cli(
        "propose",
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--operation",
        "order.refund_missing_discount",
        "--resource",
        order_id,
        "--request",
        f"@{request}",
    )
    manual = cli(
        "orders",
        "refund-manually",
        order_id,
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--payment",
        "P1",
        "--amount",
        "34500",
    )
    assert manual["payments"][0]["refundable_cents"] == 0
    approved = cli("approve", created["proposal_id"], "--as", "ava@granite.example")
    assert approved["outcome"]["reason"]["code"] == "payment_already_refunded"
    too_much = cli(
        "orders",
        "refund-manually",
        order_id,
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--payment",
        "P1",
        "--amount",
        "1",
    )
    assert too_much["error"] == "rejected"


def test_roster_decline_reconcile_and_expire(seeded_cli):
    cli, data = seeded_cli
    leagues = cli("roster", "leagues", "--org", "granite")
    assert {"name": "Thursday Seniors", "active_members": 4, "capacity": 8} in leagues
    joined = cli(
        "roster",
        "join",
        "--org",
        "granite",
        "--league",
        "Thursday Seniors",
        "--name",
        "Grace Kim",
        "--email",
        "grace.kim@example.com",
    )
    assert joined["active_members"] == 5
    created = cli(
        "propose",
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--operation",
        "email_broadcast.apply_draft",
        "--resource",
        data["broadcast_forms"]["granite"],
        "--request",
        json.dumps(
            {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"}
        ),
    )
    declined = cli(
        "decline", created["proposal_id"], "--as", "ava@granite.example", "--note", "not now"
    )
    assert declined["outcome"]["reason"]["code"] == "declined_by_manager"
    assert cli("reconcile") == {"resolved": []}
    assert cli("expire") == {"expired": []}


def test_roster_leagues_show_each_capacity_and_a_full_league_takes_nobody(
    seeded_cli, database_url, capsys
):
    cli, data = seeded_cli
    assert cli("roster", "leagues", "--org", "granite") == [
        {"name": "Junior Program", "active_members": 3, "capacity": 12},
        {"name": "Monday Night Open", "active_members": 6, "capacity": 8},
        {"name": "Sunday Mixed Doubles", "active_members": 2, "capacity": 8},
        {"name": "Thursday Seniors", "active_members": 4, "capacity": 8},
    ]
    assert data["rosters"]["granite"] != data["rosters"]["maple"]

    def join(name: str, email: str):
        return cli(
            "roster",
            "join",
            "--org",
            "granite",
            "--league",
            "Monday Night Open",
            "--name",
            name,
            "--email",
            email,
        )

    assert join("Grace Kim", "grace.kim@example.com")["active_members"] == 7
    assert join("Owen Price", "owen.price@example.com")["active_members"] == 8
    refused = join("Ruth Lee", "ruth.lee@example.com")
    assert refused == {
        "error": "rejected",
        "message": "'Monday Night Open' is full (8 members)",
    }

    assert main(["roster", "leagues", "--org", "granite", "--database", database_url]) == 0
    text = capsys.readouterr().out
    assert "Monday Night Open: 8 members, capacity 8" in text
    assert "Junior Program: 3 members, capacity 12" in text


def test_bad_database_url_is_a_usage_error_with_the_fix(capsys):
    code = main(["seed", "--json", "--database", "mysql://x/y"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 2
    assert answer["error"] == "configuration"
    assert "sqlite:///" in answer["message"]


def test_the_console_script_runs_from_a_fresh_process(tmp_path: Path):
    script = Path(sys.executable).with_name("countersign")
    env = {**os.environ, "COUNTERSIGN_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    seeded = subprocess.run(
        [str(script), "seed", "--json"], capture_output=True, text=True, env=env, check=False
    )
    assert seeded.returncode == 0, seeded.stderr
    assert "granite" in json.loads(seeded.stdout)["broadcast_forms"]
    unknown = subprocess.run(
        [str(script), "approve", "0" * 32, "--as", "ava@granite.example", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert unknown.returncode == 0
    assert json.loads(unknown.stdout)["reason"] == "not_found"
    assert "Traceback" not in unknown.stderr


def test_the_demo_tells_the_whole_story(capsys, tmp_path):
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["demo", "--json", "--database", database]) == 0
    story = json.loads(capsys.readouterr().out)
    titles = [chapter["title"] for chapter in story["chapters"]]
    assert len(titles) == len(set(titles)) >= 12
    text = json.dumps(story)
    from countersign.domain.contracts import BUILT_IN, REGISTRY

    own = {contract.kind for contract in BUILT_IN}
    for kind, contract in REGISTRY.items():  # a scene for every operation of countersign's
        if kind in own or contract.demo_scene is not None:
            assert f'"operation": "{kind}"' in text, kind
        else:  # a plug-in's operation without a scene is named, not skipped silently
            title = contract.title.text("en")
            assert f"{title}: its contract declares no demo scene" in text, kind
    for phrase in (
        "Same stored outcome",
        "already been refunded",
        "confirming it with the card provider",
        "Nothing has been sent",
        "The audience changed",
        "Olivia Chen now plays in Thursday Seniors",
        "Lucas Roy already plays in Junior Program.",
        "proposal.reconciling",  # the history, by its events' stable names
        "Awaiting approval (1)",
        "Monday Night Open: 6 -> 5 members",
        "cancelled",
        "never a model paraphrase",
        "every hash-chain link holds",
        "Do not send the draft again",
        "Exactly one delivery",
        "already been sent",
    ):
        assert phrase in text, phrase
    # Every card of the story, a turn's too, says its times in Granite's own zone.
    expiries = re.findall(r"Expires +(\d{4}-\d\d-\d\d \d\d:\d\d \w+)", text)
    assert len(expiries) >= 8
    assert {expiry.rpartition(" ")[2] for expiry in expiries} == {"EST"}
    # The send whose answer was lost was settled by the reconciler: one delivery, one request.
    assert main(["provider", "deliveries", "--json", "--database", database]) == 0
    deliveries = json.loads(capsys.readouterr().out)
    assert [(d["status"], d["requests"]) for d in deliveries] == [("succeeded", 1)]


def test_what_the_demo_leaves_for_the_browser_is_dated_by_the_real_clock(capsys, tmp_path):
    """`demo --serve` serves the story's database by the system clock: the story's day that
    passes (a proposal that expires) must not leave later proposals dated a day ahead."""
    from datetime import UTC, datetime, timedelta

    from countersign.infrastructure.bootstrap import bootstrap

    database = f"sqlite:///{tmp_path / 'demo.db'}"
    before = datetime.now(UTC)
    assert main(["demo", "--json", "--database", database]) == 0
    capsys.readouterr()
    cs = bootstrap(database_url=database)
    try:
        for runner in cs.projection_runners():
            runner.catch_up()
        now = datetime.now(UTC)
        ttl = timedelta(seconds=cs.settings.proposal_ttl_seconds)
        granite = cs.club.organization_id("granite")
        items = cs.read_models.inbox(str(granite), now)["items"]
        assert items, "the demo leaves a proposal awaiting approval"
        for item in items:
            assert before <= item["proposed_at"] <= now
            assert item["expires_at"] <= now + ttl
    finally:
        cs.close()


def test_operations_lists_every_registered_operation_with_the_schema_assistants_see(cli):
    from countersign.application.assistant.sections import ASSISTANTS
    from countersign.domain.contracts import REGISTRY

    listed = cli("operations")

    assert [entry["kind"] for entry in listed] == list(REGISTRY)
    for entry in listed:
        assert set(entry) == {"kind", "section", "permission", "external", "request_schema"}
        contract = REGISTRY[entry["kind"]]
        assert entry["section"] == contract.section
        assert entry["permission"] == contract.permission
        assert entry["external"] is (contract.provider is not None)
        tools = {t["function"]["name"]: t for t in ASSISTANTS[contract.section].tools()}
        assert entry["request_schema"] == tools[contract.tool_name]["function"]["parameters"]
        assert entry["request_schema"]["additionalProperties"] is False
    refund = next(e for e in listed if e["kind"] == "order.refund_missing_discount")
    assert (refund["section"], refund["permission"], refund["external"]) == (
        "orders",
        "orders.refund",
        True,
    )


def test_operations_reads_for_people_without_json(database_url, capsys):
    assert main(["operations", "--database", database_url]) == 0
    out = capsys.readouterr().out
    assert "order.refund_missing_discount" in out
    assert "needs orders.refund" in out


def test_a_multi_line_value_keeps_its_lines_in_the_terminal_and_escapes_the_rest():
    from countersign.infrastructure.entrypoints.cli import render

    shown = render.box("Review", [("Body", "Hello curlers,\n\nSee you!\r\x1b[2J")]).splitlines()

    assert "Hello curlers," in shown[1]
    assert shown[2].strip("│ ") == ""  # the blank line between paragraphs
    assert "See you!\\r\\x1b[2J" in shown[3]  # other control characters stay escapes
    assert not any("\\n" in line for line in shown)


def test_a_history_says_its_times_are_utc_and_shows_them_so():
    """The cards show the club's zone; a history shows every event's time in UTC, and says
    so, whatever offset a time was given with (its text used to be cut, offset and all)."""
    from countersign.infrastructure.entrypoints.cli.listings import render_history

    text = render_history(
        {
            "proposal_id": "p-1",
            "events": [
                {"version": 1, "type": "Proposed", "at": "2026-12-05T16:46:21.898765-05:00"},
                {"version": 2, "type": "Approved", "at": "2026-12-05T21:47:00+00:00"},
            ],
        }
    )
    assert text.splitlines() == [
        "History of proposal p-1 (times in UTC)",
        "  v1   2026-12-05 21:46:21.898  Proposed",
        "  v2   2026-12-05 21:47:00.000  Approved",
    ]


def test_a_history_lists_each_event_by_its_stable_name_not_its_module():
    """The human history named each event by its class and then printed its topic, the
    module it is stored under, as one of its fields; it is named by its stable name now, as a
    client keys by it (``--json`` keeps the type and the topic too)."""
    from countersign.infrastructure.entrypoints.cli.listings import render_history

    text = render_history(
        {
            "proposal_id": "p-1",
            "events": [
                {
                    "version": 1,
                    "type": "Approved",
                    "event": "proposal.approved",
                    "topic": "countersign.domain.proposal:Proposal.Approved",
                    "at": "2026-12-05T21:47:00+00:00",
                    "approved_by": "ava@granite.example",
                },
            ],
        }
    )
    assert text.splitlines() == [
        "History of proposal p-1 (times in UTC)",
        "  v1   2026-12-05 21:47:00.000  proposal.approved",
        '         approved_by: "ava@granite.example"',
    ]


def test_a_password_is_set_for_a_member_and_refused_for_an_address_of_nobody(
    seeded_cli, database_url, monkeypatch
):
    """A mistyped address was answered "Password set" (exit 0) while the person's own
    password stayed as it was."""
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.identity.passwords import verify_password

    cli, _ = seeded_cli
    new = "a-long-enough-new-password"
    monkeypatch.setattr("sys.stdin", io.StringIO(new + "\n"))
    refused = cli("users", "set-password", "--as", "nobody@x.example", status=4)
    assert (refused["error"], refused["reason"]) == ("refused", "not_a_member")
    assert "member of no club" in refused["message"]

    monkeypatch.setattr("sys.stdin", io.StringIO(new + "\n"))
    done = cli("users", "set-password", "--as", "Ben@Granite.example")
    assert done == {"email": "ben@granite.example", "password_set": True, "sessions_ended": 0}
    cs = bootstrap(database_url=database_url)
    try:
        assert verify_password(cs, "ben@granite.example", new)
        assert not verify_password(cs, "nobody@x.example", new)
    finally:
        cs.close()


def test_the_demo_underlines_each_chapter_to_its_length(capsys):
    """From chapter 10 on, the underline was one character short."""
    from countersign.infrastructure.demo.story import Story

    story = Story(as_json=False)
    for number in range(1, 13):
        story.chapter(f"Chapter title {number}")
    lines = capsys.readouterr().out.splitlines()
    headings = [(line, lines[i + 1]) for i, line in enumerate(lines) if line[:1].isdigit()]
    assert len(headings) == 12
    for heading, underline in headings:
        assert underline == "=" * len(heading), heading


def _shown_time(at: str) -> str:
    """An event's time as ``history`` prints it: UTC, to the millisecond."""
    from countersign.infrastructure.entrypoints.cli.listings import _utc_time

    return _utc_time(at)


def test_the_terminal_history_shows_what_was_approved_whole_and_the_state_as_of(
    seeded_cli, database_url, capsys
):
    """The text history left out the arguments and preview, cut long fields short with
    "[...]", and --as-of said only the status (an auditor's findings)."""
    cli, data = seeded_cli
    pid = _propose_two_approver_refund(cli, data)
    cli("approve", pid, "--as", "ava@granite.example")
    capsys.readouterr()
    assert main(["history", pid, "--as-of", "2", "--database", database_url]) == 0
    text = capsys.readouterr().out
    assert "[...]" not in text
    assert "         arguments: " in text
    assert "         preview: " in text
    assert '"amount_cents": 12800' in text  # the preview's refund, whole
    assert "State as of v2: pending" in text
    assert 'approvals: ["ava@granite.example"]' in text
    assert "approvals_required: 2" in text
    assert "approved_by: null" in text  # one of two: nobody has approved it yet


@pytest.mark.parametrize(
    ("given", "held"),
    [
        ("2026-12-06", "2026-12-06T23:59:59.999999+00:00"),
        ("2026-12-06T06", "2026-12-06T06:59:59.999999+00:00"),  # an hour: it was its instant
        ("2026-12-06T06+05:00", "2026-12-06T01:59:59.999999+00:00"),
        ("2026-12-06T06:40", "2026-12-06T06:40:59.999999+00:00"),
        ("2026-12-06T06:40Z", "2026-12-06T06:40:59.999999+00:00"),
        ("2026-12-06 06:40:35", "2026-12-06T06:40:35.999999+00:00"),
        ("2026-12-06T06:40:35.081+00:00", "2026-12-06T06:40:35.081999+00:00"),
        ("2026-12-06T06:40:35.123456Z", "2026-12-06T06:40:35.123456+00:00"),
    ],
)
def test_as_of_takes_a_time_to_the_end_of_the_last_unit_it_gives(given, held):
    """A minute or a day held only its first instant (a review's finding)."""
    from datetime import datetime

    from countersign.infrastructure.entrypoints.cli.proposals import _version_or_time

    assert _version_or_time(given) == datetime.fromisoformat(held)


def test_as_of_names_no_approver_of_a_quorum_never_reached(seeded_cli, database_url, capsys):
    """One of two approved, then declined: its approval completed nothing (a review's
    finding: approved_by named her once it was no longer pending)."""
    cli, data = seeded_cli
    pid = _propose_two_approver_refund(cli, data)
    cli("approve", pid, "--as", "ava@granite.example")
    cli("decline", pid, "--as", "noah@granite.example", "--note", "no")
    state = cli("history", pid, "--as-of", "4")["as_of"]
    assert state["status"] == "declined"
    assert state["approvals"] == ["ava@granite.example"]
    assert state["approved_by"] is None


def _propose_two_approver_refund(cli, data) -> str:
    """Ava's refund on the order whose amount needs two managers; its id."""
    created = cli(
        "propose",
        "--org",
        "granite",
        "--as",
        "ava@granite.example",
        "--operation",
        "order.refund_missing_discount",
        "--resource",
        data["orders"]["refund-two-approvers"],
        "--request",
        json.dumps(TO_CARD),
    )
    return str(created["proposal_id"])


def test_propose_help_says_what_each_argument_takes(capsys):
    """A newcomer reading ``propose --help`` learns where kinds and ids come from."""
    with pytest.raises(SystemExit):
        main(["propose", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "`countersign operations` lists them" in shown
    assert (
        "the order: its number, as the registration system shows it (refund-ok), or its id; "
        "left out for the club's own roster or broadcast form" in shown
    )
    assert "a JSON object, or @ and a file holding it" in shown
    with pytest.raises(SystemExit):
        main(["approve", "--help"])
    assert "the member acting, by email" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "serve the web pages and the JSON API" in capsys.readouterr().out


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_not_found_says_what_to_check(database_url, capsys):
    """An order found, but a member the club does not have: the answer says what to check,
    not just "Not found." (an unknown id and another club's still answer alike; an order the
    club does not have says what to pass, tests/test_cli_resources.py)."""
    db = ["--database", database_url]
    assert main(["seed", *db]) == 0
    capsys.readouterr()
    propose = ["propose", "--org", "granite", "--as", "nobody@granite.example"]
    request = json.dumps(TO_CARD)
    argv = [*propose, "--operation", "order.refund_missing_discount", "--request", request]
    assert main([*argv, "--resource", "refund-ok", *db]) == 0
    assert capsys.readouterr().out.strip() == (
        "Not found: check the club, the member and the id named (an unknown one and another "
        "club's answer alike; `countersign seed` lists the demo's)."
    )
    assert main([*argv, "--resource", "refund-ok", "--json", *db]) == 0
    assert json.loads(capsys.readouterr().out) == {"error": "not_found"}


def test_an_approval_refused_as_expired_or_in_progress_says_what_to_do_next():
    """``countersign approve`` of an expired proposal said "Not approvable: expired." and of
    one another approval was executing "Not approvable: in progress.", and nothing more."""
    from countersign.infrastructure.entrypoints.cli.cards import render_report

    def refused(reason: str, language: str = "en") -> str:
        report = {"result": "not_approvable", "proposal_id": "P1", "reason": reason}
        return render_report({**report, "message": None}, "ava@granite.example", language)

    expired = refused("expired")
    assert expired.startswith("Not approvable: expired.\n  It expired before it was approved")
    assert "ask for a new proposal (the assistant, or countersign propose)" in expired
    running = refused("in_progress")
    assert "An approval is carrying it out right now; nothing more was done." in running
    assert "countersign show P1 --as ava@granite.example" in running
    assert "Do not do it again another way" in running
    assert "Une approbation est en train de l'exécuter" in refused("in_progress", "fr")
    # In French, the reason too (it read "Non approuvable : in progress.").
    assert refused("in_progress", "fr").startswith("Non approuvable : en cours d'exécution.")
    assert refused("not_pending", "fr").startswith("Non approuvable : plus en attente.")


def test_an_approval_refused_as_not_found_or_forbidden_says_what_to_do_next(
    seeded_cli, database_url, capsys
):
    """``countersign approve`` (and ``decline``) by a member of another club, of an id that
    does not exist, or by staff whose role does not decide it said "Not approvable: not
    found." and "Not approvable: forbidden." and nothing more, where ``show`` and ``revise``
    say what to check (found walking the README as a newcomer, hC). Nothing is recorded."""
    cli, _ = seeded_cli
    request = json.dumps(TO_CARD)
    proposed = cli(
        *("propose", "--org", "granite", "--as", "ava@granite.example"),
        *("--operation", "order.refund_missing_discount", "--resource", "refund-ok"),
        *("--request", request),
    )
    pid = proposed["proposal_id"]

    def said(*argv: str) -> str:
        assert main([*argv, "--database", database_url]) == 0
        return capsys.readouterr().out

    other_club = said("approve", pid, "--as", "mia@maple.example")
    assert other_club.startswith("Not approvable: not found.\n  Nothing was changed. Check the")
    assert "countersign inbox --org ORG --as mia@maple.example" in other_club
    unknown = said("decline", "00000000-0000-0000-0000-000000000000", "--as", "ava@granite.example")
    assert unknown.startswith("Not approvable: not found.\n  Nothing was changed.")
    staff = said("approve", pid, "--as", "ben@granite.example")
    assert staff.startswith("Not approvable: forbidden.\n  Nothing was changed: your role")
    assert "countersign members set-permissions" in staff
    staff_fr = said("decline", pid, "--as", "ben@granite.example", "--language", "fr")
    assert staff_fr.startswith("Non approuvable : non autorisée.\n  Rien n'a changé : votre rôle")
    assert "countersign inbox --org ORG --as mia" in said(
        "approve", pid, "--as", "mia@maple.example", "--language", "fr"
    )
    # Still pending: none of them recorded anything.
    assert cli("show", pid, "--as", "ava@granite.example")["status"] == "pending"


def test_a_password_too_short_is_refused_in_words_about_passwords(
    seeded_cli, database_url, capsys, monkeypatch
):
    """``users set-password`` with a short password said "The request did not fit this record,
    so nothing was prepared.", a proposal's words, above the precise line (found walking the
    README's commands as a newcomer, hC). It now says what a password needs, in French too."""
    for language, said in (
        ("en", "A password needs 12 to 1,024 characters; nothing was changed."),
        ("fr", "Un mot de passe compte de 12 à 1 024 caractères ; rien n'a changé."),
    ):
        monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
        argv = ["users", "set-password", "--as", "ben@granite.example", "--language", language]
        assert main([*argv, "--database", database_url]) == 4
        err = capsys.readouterr().err  # a refusal is said on stderr
        assert said in err
        assert "nothing was prepared" not in err
        assert "rien n'a été préparé" not in err


def test_a_chat_message_or_token_name_refused_is_said_in_its_own_words(
    seeded_cli, database_url, capsys
):
    """``chat --message`` with nothing written or past 2,000 characters, and ``tokens issue``
    with a malformed name, said "The request did not fit this record, so nothing was
    prepared." above the precise line, a proposal's words (found walking the README's
    commands as a newcomer, hC). Each now says what is wrong in the reader's language."""
    chat = ["chat", "--org", "granite", "--as", "ava@granite.example", "--section", "orders"]
    chat += ["--resource", "refund-ok", "--message"]
    issue = ["tokens", "issue", "--org", "granite", "--as", "ava@granite.example"]
    issue += ["--permissions", "orders.refund", "--name"]
    cases = (
        ([*chat, "   "], "en", "Write a message first: this one shows nothing; nothing was sent."),
        ([*chat, "x" * 2001], "en", "A message holds at most 2,000 characters; nothing was sent."),
        ([*chat, "x" * 2001], "fr", "Un message compte au plus 2 000 caractères ; rien n'a été"),
        ([*issue, "Bad Name!"], "en", "A token's name is 1 to 63 lowercase letters, digits,"),
        ([*issue, "Bad Name!"], "fr", "Le nom d'un jeton compte de 1 à 63 lettres minuscules,"),
    )
    for argv, language, said in cases:
        assert main([*argv, "--language", language, "--database", database_url]) == 4
        err = capsys.readouterr().err
        assert said in err, err
        assert "nothing was prepared" not in err
        assert "rien n'a été préparé" not in err


def test_a_broadcast_sent_to_one_recipient_says_one_recipient(seeded_cli):
    """Maple's Tuesday Draw has one member: the send's outcome said "Sent “…” to 1 recipients"
    and « … » a été envoyé à 1 destinataires (found sending a draft on the pages as Mia, a
    newcomer's walk, hC); its card's headline already said "1 destinataire"."""
    cli, _ = seeded_cli
    mia = ("--org", "maple", "--as", "mia@maple.example")
    draft = {"filters": {"leagues": ["Tuesday Draw"]}, "subject": "Ice closes early", "body": "Hi"}
    applied = cli(
        "propose",
        *mia,
        "--operation",
        "email_broadcast.apply_draft",
        "--request",
        json.dumps(draft),
    )
    cli("approve", applied["proposal_id"], "--as", "mia@maple.example")
    send = cli("propose", *mia, "--operation", "email_broadcast.send", "--request", "{}")
    report = cli("approve", send["proposal_id"], "--as", "mia@maple.example")

    assert report["message"] == (
        "Sent “Ice closes early” to 1 recipient (members of Tuesday Draw), once."
    )
    french = cli("show", send["proposal_id"], "--as", "mia@maple.example", "--language", "fr")
    assert french["message"] == (
        "« Ice closes early » a été envoyé à 1 destinataire (membres de la ligue Tuesday Draw), "
        "une seule fois."
    )


def test_handback_of_a_conversation_with_no_messages_says_what_that_means(
    seeded_cli, database_url, capsys
):
    """``countersign handback`` of a mistyped conversation id (or another club's) said "No
    messages." and nothing more, alike for a conversation whose proposals have no outcome yet
    (found following the README's commands as a newcomer, hC). It now says both, and where a
    conversation's id is shown."""
    seeded_cli[0]("seed")
    for language, said in (
        ("en", "No messages in this conversation: none of its proposals has an outcome yet, or"),
        ("fr", "Aucun message dans cette conversation : aucune de ses propositions n'a encore"),
    ):
        argv = ["handback", "int-typo", "--org", "granite", "--as", "ava@granite.example"]
        assert main([*argv, "--language", language, "--database", database_url]) == 0
        out = capsys.readouterr().out
        assert out.startswith(said), out
        assert "countersign chat" in out


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_joining_an_empty_league_counts_one_member(cli, database_url, capsys):
    from countersign.domain.club.roster import Roster
    from countersign.infrastructure.bootstrap import bootstrap
    from countersign.infrastructure.settings import Settings

    roster_id = cli("seed")["rosters"]["granite"]
    cs = bootstrap(Settings(database_url=database_url))
    try:
        roster = cs.store.get(UUID(roster_id), Roster)
        roster.add_league("Friday Fun", 4)
        cs.store.save(roster)
    finally:
        cs.close()
    join = ["roster", "join", "--org", "granite", "--league", "Friday Fun"]

    assert (
        main([*join, "--name", "Ann Li", "--email", "ann@example.com", "--database", database_url])
        == 0
    )
    assert capsys.readouterr().out == "Ann Li joined Friday Fun (1 member).\n"
    assert (
        main([*join, "--name", "Bo Li", "--email", "bo@example.com", "--database", database_url])
        == 0
    )
    assert capsys.readouterr().out == "Bo Li joined Friday Fun (2 members).\n"
