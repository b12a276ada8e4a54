"""A stored event of a proposal's stream that does not read (its version no whole number from
1, its state undecodable) is named where an operator or auditor meets it: ``history`` says
which event (its log position, version and topic), what is wrong and what to do, in English
and French, exit 1 and no traceback; the store's ERROR line says the same in one line; a page
that meets it logs one line, its traceback at DEBUG only."""

from __future__ import annotations

import json
import logging

import pytest
from countersign.infrastructure.bootstrap import bootstrap

from tests.conftest import AVA
from tests.test_stored_keys import _decided_and_pending, _no_traceback, _position, _set, on, run

__all__ = ["run"]

#: A state no event decodes from.
GARBLED = b"{not json"


@on(
    "column,value,shown,problem,problem_fr",
    [
        (
            "sqlite",
            "originator_version",
            "x",
            "'x'",
            "its version is not a whole number from 1",
            "sa version n'est pas un nombre entier à partir de 1",
        ),
        (
            "postgres",
            "originator_version",
            -1,
            "-1",
            "its version is not a whole number from 1",
            "sa version n'est pas un nombre entier à partir de 1",
        ),
        (
            "sqlite",
            "state",
            GARBLED,
            "2",
            "it does not decode (MapperDeserialisationError)",
            "il ne se décode pas (MapperDeserialisationError)",
        ),
        (
            "postgres",
            "state",
            GARBLED,
            "2",
            "it does not decode (MapperDeserialisationError)",
            "il ne se décode pas (MapperDeserialisationError)",
        ),
    ],
    ["version", "version", "state", "state"],
)
def test_history_names_the_event_that_does_not_read_and_what_to_do(
    cs, seeded, run, caplog, column, value, shown, problem, problem_fr
):
    damaged, pending = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged, 2)  # its Approved
    _set(cs, column, value, position)

    with caplog.at_level(logging.ERROR, logger="countersign.store"):
        code, out, err = run("history", damaged)

    assert code == 1, out
    _no_traceback(out, err)
    said = " ".join(err.split())  # the terminal's wrapping aside
    assert (
        f"The stored event at log position {position} (version {shown}, Proposal.Approved of "
        f"{damaged}) cannot be read: {problem}. Restore it from a backup (`countersign audit "
        "verify` names every damaged event); if it cannot be restored, `countersign "
        f"projections skip {position} --reason TEXT` passes it in every projection, recorded."
    ) in said
    # The store's one ERROR line says the same, with the reference the command printed.
    [line] = [r for r in caplog.records if r.name == "countersign.store"]
    assert line.levelno == logging.ERROR
    assert line.exc_info is None
    assert f"at log position {position} (version {shown}, Proposal.Approved of " in (
        line.getMessage()
    )
    assert f"`countersign projections skip {position} --reason TEXT`" in line.getMessage()
    reference = line.getMessage().split("correlation id ")[1].split(":")[0]
    assert reference in said

    code, out, err = run("history", damaged, "--language", "fr")
    assert code == 1
    _no_traceback(out, err)
    assert (
        f"L'événement enregistré à la position {position} du journal (version {shown}, "
        f"Proposal.Approved de {damaged}) ne peut pas être lu : {problem_fr}. Restaurez-le "
        "depuis une sauvegarde"
    ) in " ".join(err.split())
    assert f"`countersign projections skip {position} --reason TEXTE`" in " ".join(err.split())

    code, out, err = run("history", damaged, "--json")
    assert code == 1
    assert json.loads(out)["unreadable_event"] == {
        "log_position": position,
        "version": shown,
        "topic": "countersign.domain.proposal:Proposal.Approved",
        "code": "originator_version_malformed" if column != "state" else "event_unreadable",
    }
    code, out, err = run("history", pending)  # the other proposals read as ever
    assert code == 0, err


@on("", [("sqlite",), ("postgres",)], ["gap", "gap"])
def test_history_names_the_event_after_a_gap_left_by_a_removed_event(cs, seeded, run):
    damaged, _ = _decided_and_pending(cs, seeded)
    first, second = _position(cs, damaged, 1), _position(cs, damaged, 2)
    from tests.test_audit_verify import _sql

    _sql(cs, f"DELETE FROM {{table}} WHERE {_at(cs)}=?", first)

    code, out, err = run("history", damaged)

    assert code == 1, out
    _no_traceback(out, err)
    assert (
        f"The stored event at log position {second} (version 2, Proposal.Approved of "
        f"{damaged}) cannot be read: the version before it is missing (version gap)."
    ) in " ".join(err.split())


def _at(cs):
    return "rowid" if cs.database.kind == "sqlite" else "notification_id"


def _loud(caplog):
    """The records at WARNING and above, and whether any of them carries a traceback."""
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    return loud, [r for r in loud if r.exc_info]


@on("", [("sqlite",), ("postgres",)], ["inbox", "inbox"])
def test_the_inbox_logs_a_stopped_projection_in_one_line_and_its_traceback_at_debug(
    cs, seeded, caplog
):
    from tests.test_web_pages import web_for

    damaged, _ = _decided_and_pending(cs, seeded)
    web = web_for(cs, seeded)
    browser = web.browser(AVA)
    position = _position(cs, damaged, 2)
    _set(cs, "state", GARBLED, position)
    caplog.clear()

    with caplog.at_level(logging.DEBUG):
        page = browser.get("/")

    assert page.status_code == 503
    assert "Traceback" not in page.text
    loud, with_traceback = _loud(caplog)
    assert with_traceback == [], [r.getMessage() for r in with_traceback]
    counts = [r for r in loud if r.getMessage().startswith("the navigation's counts")]
    assert len(counts) == 1
    said = counts[0].getMessage()
    assert f"stopped at notification {position} (Proposal.Approved of {damaged})" in said
    assert "MapperDeserialisationError [event_unreadable]" in said  # audit verify's code
    assert f"'countersign projections skip {position} --reason TEXT'" in said
    # The traceback is there for whoever asks for it (DEBUG).
    assert any(r.exc_info for r in caplog.records if r.levelno == logging.DEBUG)
    # Said once a while, not once a page: the next pages are counted, not logged.
    for _ in range(3):
        assert browser.get("/").status_code == 503
    loud, _ = _loud(caplog)
    assert len([r for r in loud if r.getMessage().startswith("the navigation's counts")]) == 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_damaged_proposals_page_logs_one_line_naming_the_event(cs, seeded, caplog):
    from tests.test_web_pages import web_for

    damaged, _ = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged, 2)
    _set(cs, "state", GARBLED, position)
    # A process that never held the proposal (this one keeps the one it approved).
    fresh = bootstrap(cs.settings)
    browser = web_for(fresh, seeded).browser(AVA)
    caplog.clear()

    with caplog.at_level(logging.INFO):
        page = browser.get(f"/proposals/{damaged}")

    assert page.status_code == 500
    assert "Traceback" not in page.text
    loud, with_traceback = _loud(caplog)
    assert with_traceback == [], [r.getMessage() for r in with_traceback]
    store = [r for r in loud if r.name == "countersign.store"]
    assert store, [r.getMessage() for r in loud]
    said = store[0].getMessage()
    assert f"at log position {position} (version 2, Proposal.Approved of {damaged})" in said
    assert "[event_unreadable]" in said
    assert "restore it from a backup" in said
    reference = said.split("correlation id ")[1].split(":")[0]
    assert reference in page.text
    fresh.close()
