"""A proposal whose stored events cannot be read at all (the database refuses the read, as a
damaged SQLite page does, or a row's state is gone) is named by ``audit verify`` in words an
auditor understands, never as "version None", and the check goes on to the other proposals,
on SQLite and PostgreSQL, in English and French. ``--json`` keeps its stable code
(``events_unreadable``, verify.py ``PROBLEMS``) and a null version."""

from __future__ import annotations

import sqlite3
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder

from tests.support.proposing import propose
from tests.test_audit_anchor import _verify, run
from tests.test_audit_verify import _sql

__all__ = ["run"]


def _refused(monkeypatch: Any, proposal_id: str) -> None:
    """The database refuses to return this proposal's events ("database disk image is
    malformed": a damaged page), every other read answered."""
    for recorder in (SQLiteAggregateRecorder, PostgresAggregateRecorder):
        original = recorder.select_events

        def select_events(self: Any, originator_id: Any, *args: Any, _o: Any = original, **kw: Any):
            if str(originator_id) in (proposal_id, UUID(proposal_id).hex):
                error = sqlite3 if isinstance(self, SQLiteAggregateRecorder) else psycopg
                raise error.DatabaseError("database disk image is malformed")
            return _o(self, originator_id, *args, **kw)

        monkeypatch.setattr(recorder, "select_events", select_events)


def test_a_proposal_whose_events_cannot_be_read_at_all_is_named_so(cs, seeded, run, monkeypatch):
    damaged = propose(cs, seeded)
    sound = propose(cs, seeded, order="refund-declined")
    _refused(monkeypatch, damaged)

    code, document = _verify(run, None)

    assert code == 5, document
    [broken] = document["broken_links"]
    assert broken == {
        "proposal_id": damaged,
        "version": None,
        "code": "events_unreadable",
        "error": "DatabaseError",
        "problem": "stored events are unreadable (DatabaseError)",
    }
    assert document["proposals_checked"] == 2  # the other one checked still
    assert sound != damaged
    code, _out, err = run("audit", "verify")
    assert code == 5
    assert "None" not in err
    assert (
        f"  proposal {damaged}: its stored events cannot be read at all (DatabaseError), so no "
        "event of it can be shown or checked: restore them from a backup"
    ) in err
    code, _out, err = run("audit", "verify", "--language", "fr")
    assert code == 5
    assert "None" not in err
    assert (
        f"  proposition {damaged} : ses événements enregistrés ne peuvent pas être lus du tout "
        "(DatabaseError), et aucun de ses événements ne peut être montré ni vérifié : "
        "restaurez-les depuis une sauvegarde"
    ) in err


def test_an_event_whose_state_is_gone_is_named_not_a_crash(cs, seeded, run):
    """A writer (or a bad migration) sets an event's stored state to NULL: on PostgreSQL the
    library cannot read the proposal's events at all, on SQLite that one event; either way
    the check names the proposal and says nothing of a version it cannot know."""
    damaged = propose(cs, seeded)
    _sql(
        cs,
        "UPDATE {table} SET state=NULL WHERE originator_id=? AND originator_version=1",
        UUID(damaged),
    )

    code, _out, err = run("audit", "verify")

    assert code == 5, err
    assert "Traceback" not in err
    assert "None" not in err
    if cs.database.kind == "sqlite":
        assert f"  proposal {damaged} version 1: stored event is unreadable" in err
    else:
        assert f"  proposal {damaged}: its stored events cannot be read at all (TypeError)" in err


def test_the_history_of_a_proposal_whose_state_is_gone_says_where_to_look(cs, seeded, run):
    """``history``, an auditor's command, says the record cannot be read and that
    ``audit verify`` names it, as ``show`` does: no traceback, no bare internal error."""
    damaged = propose(cs, seeded)
    _sql(
        cs,
        "UPDATE {table} SET state=NULL WHERE originator_id=? AND originator_version=1",
        UUID(damaged),
    )

    code, out, err = run("history", damaged)

    assert code == 1, err
    assert out == ""
    assert "Traceback" not in err
    assert (
        "Internal error: a stored record this needs cannot be read (altered or damaged); "
        "nothing was changed. `countersign audit verify` names the damaged proposals"
    ) in err
    code, _out, err = run("history", damaged, "--language", "fr")
    assert "`countersign audit verify` nomme les propositions endommagées" in err
