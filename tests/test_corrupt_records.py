"""A corrupt stored contract is a terminal failure with a correlation id, never an execution;
an unreadable stored event fails closed."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any
from uuid import UUID

import pytest
from countersign.application.errors import CorruptRecordError
from countersign.domain.proposal import Proposal
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, events_table
from tests.support.proposing import propose


def _rewrite_state(cs, proposal_id: str, version: int, change) -> None:
    """Edit one stored event's JSON directly in SQL, as an attacker or a bad migration would."""
    table = events_table(cs)
    key = UUID(proposal_id)
    if cs.database.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(cs.database.sqlite_path)
        row = conn.execute(
            f"SELECT state FROM {table} WHERE originator_id=? AND originator_version=?",
            (key.hex, version),
        ).fetchone()
        state = change(json.loads(row[0]))
        conn.execute(
            f"UPDATE {table} SET state=? WHERE originator_id=? AND originator_version=?",
            (json.dumps(state).encode(), key.hex, version),
        )
        conn.commit()
        conn.close()
        return
    import psycopg

    db = cs.database
    with psycopg.connect(host=db.host, port=db.port, user=db.user, dbname=db.dbname) as conn:
        row = conn.execute(
            f"SELECT state FROM {table} WHERE originator_id=%s AND originator_version=%s",
            (key, version),
        ).fetchone()
        state = change(json.loads(bytes(row[0])))
        conn.execute(
            f"UPDATE {table} SET state=%s WHERE originator_id=%s AND originator_version=%s",
            (json.dumps(state).encode(), key, version),
        )


def _fresh(cs, clock):
    """A new process's view: no aggregate cache."""
    return bootstrap(Settings(database_url=cs.settings.database_url), clock=clock)


def test_arguments_that_do_not_decode_are_a_terminal_failure(cs, seeded, clock, caplog):
    proposal_id = propose(cs, seeded)

    def corrupt(state):
        state["arguments"]["amount_cents"] = "lots"
        return state

    _rewrite_state(cs, proposal_id, 1, corrupt)
    other = _fresh(cs, clock)
    try:
        with caplog.at_level(logging.ERROR, logger="countersign"):
            report = other.proposals.approve(proposal_id, AVA)
        again = other.proposals.approve(proposal_id, AVA)
    finally:
        other.close()

    assert report.result == "executed"
    assert report.status == "failed"
    correlation_id = report.outcome["correlation_id"]
    assert report.outcome == {"kind": "terminal_failure", "correlation_id": correlation_id}
    assert correlation_id in caplog.text  # the same reference is in the logs
    assert correlation_id in report.message
    assert "will not be retried" in report.message
    assert "Traceback" not in report.message
    assert again.outcome == report.outcome
    assert cs.sandbox.refunds() == []
    failed = cs.audit.history(proposal_id)["events"][-1]
    assert (failed["type"], failed["error_class"]) == ("Failed", "UndecodableContractError")


def _approving_elsewhere_is_refused(cs: Any, clock: Any, proposal_id: str) -> Any:
    """Approving the proposal in another process is refused as a damaged record: the error."""
    other = _fresh(cs, clock)
    try:
        with pytest.raises(CorruptRecordError) as corrupt:
            other.proposals.approve(proposal_id, AVA)
    finally:
        other.close()
    return corrupt


def test_a_tampered_topic_fails_closed_without_importing_it(cs, seeded, clock):
    proposal_id = propose(cs, seeded)
    table = events_table(cs)
    key = UUID(proposal_id)
    topic = "os:system"
    if cs.database.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(cs.database.sqlite_path)
        conn.execute(f"UPDATE {table} SET topic=? WHERE originator_id=?", (topic, key.hex))
        conn.commit()
        conn.close()
    else:
        import psycopg

        db = cs.database
        with psycopg.connect(host=db.host, port=db.port, user=db.user, dbname=db.dbname) as conn:
            conn.execute(f"UPDATE {table} SET topic=%s WHERE originator_id=%s", (topic, key))
    corrupt = _approving_elsewhere_is_refused(cs, clock, proposal_id)
    assert corrupt.value.correlation_id.startswith("cs-")
    assert "os" not in str(corrupt.value).split("reference")[0]


def test_the_class_a_created_event_names_is_never_imported_from_outside_the_domain(
    cs, seeded, clock, monkeypatch
):
    """The stored topic is checked, and a created event names the class it makes in a field
    of its own too (``originator_topic``), which the library resolved, importing whatever
    module it named: a writer of the database could make every reader import any module
    installed. Now it is read like a tampered topic: a damaged record, nothing imported."""
    monkeypatch.delitem(sys.modules, "this", raising=False)
    proposal_id = propose(cs, seeded)

    def made_by_another_module(state):
        return {**state, "originator_topic": "this:Zen"}

    _rewrite_state(cs, proposal_id, 1, made_by_another_module)
    corrupt = _approving_elsewhere_is_refused(cs, clock, proposal_id)
    assert "this" not in sys.modules
    assert corrupt.value.correlation_id.startswith("cs-")


def test_an_event_from_a_newer_contract_version_is_not_silently_accepted(cs, seeded, clock):
    proposal_id = propose(cs, seeded)

    def from_the_future(state):
        state["class_version"] = 9
        return state

    _rewrite_state(cs, proposal_id, 1, from_the_future)
    other = _fresh(cs, clock)
    try:
        with pytest.raises(CorruptRecordError):
            other.store.get(UUID(proposal_id), Proposal)
    finally:
        other.close()


def test_arguments_changed_behind_the_preview_are_never_executed(cs, seeded, clock):
    proposal_id = propose(cs, seeded)

    def move_the_money(state):
        # Decodes fine, but the approver was shown a card refund to Visa 4242.
        state["arguments"]["destination"]["label"] = "someone else's card"
        return state

    _rewrite_state(cs, proposal_id, 1, move_the_money)
    other = _fresh(cs, clock)
    try:
        report = other.proposals.approve(proposal_id, AVA)
    finally:
        other.close()

    assert report.status == "failed"
    assert report.outcome["kind"] == "terminal_failure"
    assert cs.sandbox.refunds() == []
    failed = cs.audit.history(proposal_id)["events"][-1]
    assert failed["error_class"] == "ContractDigestMismatch"


def test_one_clubs_unreadable_record_keeps_every_other_club_signing_in(cs, seeded, clock, caplog):
    """Granite's first event made unreadable: Mia (Maple) still lists her club and signs in;
    Ava, whose only club is Granite, lists none, and the log names the reference."""
    from countersign.domain.club.organization import Organization

    from tests.conftest import MIA

    granite = Organization.create_id("granite")

    def unreadable(state):
        state.pop("name", None)
        state["time_zone"] = {"not": "a zone"}
        return {"_broken": state}  # no field the event needs: it cannot be constructed

    _rewrite_state(cs, str(granite), 1, unreadable)
    other = _fresh(cs, clock)
    try:
        with caplog.at_level(logging.ERROR, logger="countersign"):
            mias = other.club.clubs_of(MIA)
            avas = other.club.clubs_of(AVA)
    finally:
        other.close()
    assert [club.club for club in mias] == ["Maple Leaf Curling Centre"]
    assert avas == []
    assert "could not be read while listing" in caplog.text
    assert "reference cs-" in caplog.text


def test_mcp_says_internal_error_with_the_reference_for_an_unreadable_proposal(cs, seeded, clock):
    """Not "rejected", which tells a model to change its arguments and try again."""
    from countersign.application.authorization import Caller

    from tests.mcp_client import error_of
    from tests.test_held_for_people import _in_memory

    proposal_id = propose(cs, seeded)
    _rewrite_state(cs, proposal_id, 1, lambda state: {"_broken": state})
    other = _fresh(cs, clock)

    async def asking(session):
        return error_of(await session.call_tool("proposal_status", {"proposal_id": proposal_id}))

    try:
        answer = _in_memory(other, Caller(AVA, "granite"), asking)
    finally:
        other.close()
    assert answer["error"] == "internal_error"
    assert answer["correlation_id"].startswith("cs-")
    assert "message" not in answer


def test_projections_status_names_the_event_a_lagging_projection_stopped_on(
    cs, seeded, clock, capsys
):
    """docs/deploy.md sends an operator whose readiness fails for lag to `projections status`:
    it says which event stopped the projection, and what to do, as the runner's log does."""
    from countersign.infrastructure.entrypoints.cli import main

    from tests.test_audit_verify import _sql

    proposal_id = propose(cs, seeded)
    _sql(cs, "UPDATE {table} SET state=? WHERE originator_id=?", b"{not json", UUID(proposal_id))
    database = ["--database", cs.settings.database_url]

    assert main(["projections", "status", "browser_view", "--json", *database]) == 0
    [status] = json.loads(capsys.readouterr().out)
    assert status["lag"] > 0
    assert f"(Proposal.Proposed of {proposal_id}): " in status["stopped"]
    assert "fix the cause and run the projection again" in status["stopped"]

    assert main(["projections", "status", "handback", *database]) == 0
    out = capsys.readouterr().out
    assert "projection 'handback' stopped at notification" in out
    assert "Traceback" not in out


def test_the_command_line_says_a_damaged_record_is_one_and_where_to_look(cs, seeded, clock, capsys):
    """An auditor's `history` (or `show`) of a proposal whose stored event was altered said
    only "Internal error. Reference: …": it says the record does not read, that nothing
    changed, and that `audit verify` names it; --json keeps `internal_error` and the
    reference."""
    from countersign.infrastructure.entrypoints.cli import main

    proposal_id = propose(cs, seeded)
    _rewrite_state(cs, proposal_id, 1, lambda state: {"_broken": state})
    db = ["--database", cs.settings.database_url]
    for argv in (["history", proposal_id], ["show", proposal_id, "--as", AVA]):
        assert main([*argv, *db]) == 1, argv
        said = capsys.readouterr()  # a status other than 0: said on stderr
        assert said.err.startswith("Internal error: a stored record this needs cannot be read")
        assert "nothing was changed" in said.err
        assert "`countersign audit verify` names the damaged proposals" in said.err
        assert "cs-" in said.err
        assert "Traceback" not in said.out + said.err
    assert main(["history", proposal_id, "--json", *db]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["error"] == "internal_error"
    assert document["correlation_id"].startswith("cs-")
    assert document["correlation_id"] in document["message"]
