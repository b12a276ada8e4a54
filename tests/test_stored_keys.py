"""A stored event whose key a writer of the database changed to something that is no key: its
``originator_id`` not a UUID (SQLite's TEXT column holds anything; PostgreSQL's is uuid-typed
and cannot hold one), or its ``originator_version`` not a whole number from 1 (SQLite's
INTEGER column holds text and decimals; PostgreSQL's bigint holds 0 and negatives).

``audit verify`` names it as a problem of its own (``malformed_keys``: the log position, the
stable code, the stored value shown safely), in English and French, and goes on checking the
rest: the proposal the event was moved out of then shows its own gap. ``audit anchor`` makes
no anchor of it (exit 2, one line naming the position and ``countersign audit verify``);
``history`` answers with the damaged-record error; the projections stop at the event as at an
undecodable one, and ``projections skip`` passes it. Never a traceback. Both databases where
the column allows the value."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.club.organization import Organization
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, BACKENDS
from tests.support.proposing import propose
from tests.test_audit_anchor import _verify, run
from tests.test_audit_verify import _sql

__all__ = ["run"]

#: A topic in countersign's own package that names no class.
NO_CLASS = "countersign.domain.proposal:Proposal.Nope"


def _position(cs: Countersign, proposal_id: str, version: int = 1) -> int:
    at = "rowid" if cs.database.kind == "sqlite" else "notification_id"
    found = _sql(
        cs,
        f"SELECT {at} FROM {{table}} WHERE originator_id=? AND originator_version=?",
        UUID(proposal_id),
        version,
    )
    return int(found[0][0])


def _set(cs: Countersign, column: str, value: Any, position: int) -> None:
    at = "rowid" if cs.database.kind == "sqlite" else "notification_id"
    _sql(cs, f"UPDATE {{table}} SET {column}=? WHERE {at}=?", value, position)


def _decided_and_pending(cs: Countersign, seeded: Any) -> tuple[str, str]:
    """An approved (executed) proposal, whose first event the test damages, and a pending
    one of the same club after it."""
    damaged = propose(cs, seeded)
    report = cs.proposals.approve(damaged, AVA)
    assert report.status == "succeeded", report
    pending = propose(cs, seeded, order="refund-declined")
    return damaged, pending


def on(names: str, rows: list[tuple[Any, ...]], ids: list[str]) -> pytest.MarkDecorator:
    """Each case on the backends its value fits (a row's first item; the backends this run
    tests among them), not on every backend with a skip where the column cannot hold it:
    PostgreSQL's ``originator_id`` is uuid-typed (no "zz"), its version bigint (no "x")."""
    kept = [(row, name) for row, name in zip(rows, ids, strict=True) if row[0] in BACKENDS]
    return pytest.mark.parametrize(
        f"database_url,{names}" if names else "database_url",
        [row if names else row[0] for row, _ in kept],
        ids=[f"{row[0]}-{name}" for row, name in kept],
        indirect=["database_url"],
    )


#: A test whose damage only SQLite's columns can hold.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text
        assert "Internal error. Reference" not in text


@SQLITE_ONLY
def test_an_event_whose_stream_id_is_not_a_uuid_is_named_by_verify(cs, seeded, run, tmp_path):
    damaged, pending = _decided_and_pending(cs, seeded)
    anchor = tmp_path / "before.jsonl"
    assert run("audit", "anchor", "--out", str(anchor))[0] == 0
    position = _position(cs, damaged)
    _set(cs, "originator_id", "zz", position)

    code, document = _verify(run, None)

    assert code == 5, document
    assert document["malformed_keys"] == [
        {
            "log_position": position,
            "code": "originator_id_malformed",
            "value": "'zz'",
            "problem": f"the stored event at log position {position} has a stream id that "
            "is not a UUID ('zz')",
        }
    ]
    # The stream the event was moved out of shows its own gap; the others are checked.
    assert [(b["proposal_id"], b["version"]) for b in document["broken_links"]] == [(damaged, 1)]
    assert document["proposals_checked"] == 2
    code, out, err = run("audit", "verify")
    assert code == 5
    _no_traceback(out, err)
    assert (
        f"  the stored event at log position {position} has a stream id that is not a UUID "
        "('zz'): restore it from a backup"
    ) in err
    assert f"  proposal {damaged} version 1: event removed (version gap)" in err
    code, out, err = run("audit", "verify", "--language", "fr")
    assert code == 5
    _no_traceback(out, err)
    assert (
        f"  l'événement enregistré à la position {position} du journal a un identifiant de "
        "flux qui n'est pas un UUID ('zz') : restaurez-le depuis une sauvegarde"
    ) in err

    # Against the anchor made before: the same, and the anchor's own findings.
    code, document = _verify(run, anchor)
    assert code == 5, document
    assert [m["log_position"] for m in document["malformed_keys"]] == [position]
    code, out, err = run("audit", "verify", "--anchor", str(anchor))
    assert code == 5
    _no_traceback(out, err)
    assert f"  the stored event at log position {position} has a stream id that is not" in err
    assert pending != damaged


@SQLITE_ONLY
def test_an_anchor_is_not_made_of_a_log_with_a_stream_id_that_is_not_a_uuid(
    cs, seeded, run, tmp_path
):
    damaged, _pending = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged, 3)
    _set(cs, "originator_id", "x" * 500, position)
    out_path = tmp_path / "a.jsonl"

    code, out, err = run("audit", "anchor", "--out", str(out_path))

    assert code == 2, err
    _no_traceback(out, err)
    assert err.strip().count("\n") == 0, err  # one line
    assert (
        f"the stored event at log position {position} has a stream id that is not a UUID "
        f"({('x' * 500)!r:.39}…), so no anchor was made: `countersign audit verify` names "
        "every such event; restore it from a backup"
    ) in err
    assert not out_path.exists()
    code, _out, err = run("audit", "anchor", "--out", str(out_path), "--language", "fr")
    assert code == 2
    assert f"l'événement enregistré à la position {position} du journal" in err


@on(
    "value",
    [
        ("sqlite", "x"),
        ("sqlite", 0),
        ("sqlite", -1),
        ("sqlite", 1.5),
        ("postgres", 0),
        ("postgres", -1),
    ],
    ["text", "zero", "negative", "decimal", "zero", "negative"],
)
def test_an_event_whose_version_is_no_positive_whole_number(cs, seeded, run, tmp_path, value):
    damaged, pending = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged)
    _set(cs, "originator_version", value, position)

    code, document = _verify(run, None)

    assert code == 5, document
    assert document["malformed_keys"] == [
        {
            "log_position": position,
            "code": "originator_version_malformed",
            "value": repr(value),
            "problem": f"the stored event at log position {position} has a version that is "
            f"not a whole number from 1 ({value!r})",
        }
    ]
    assert [b["proposal_id"] for b in document["broken_links"]] == [damaged]
    assert document["proposals_checked"] == 2
    code, out, err = run("audit", "verify")
    assert code == 5
    _no_traceback(out, err)
    assert (
        f"  the stored event at log position {position} has a version that is not a whole "
        f"number from 1 ({value!r}): restore it from a backup"
    ) in err
    code, out, err = run("audit", "verify", "--language", "fr")
    assert (
        f"  l'événement enregistré à la position {position} du journal a une version qui "
        f"n'est pas un nombre entier à partir de 1 ({value!r}) : restaurez-le depuis une "
        "sauvegarde"
    ) in err

    code, out, err = run("audit", "anchor", "--out", str(tmp_path / "a.jsonl"))
    assert code == 2, err
    _no_traceback(out, err)
    assert f"the stored event at log position {position} has a version that is not" in err
    assert "`countersign audit verify`" in err

    code, out, err = run("history", damaged)
    assert code == 1, out
    _no_traceback(out, err)
    assert "a stored record this needs cannot be read (altered or damaged)" in err
    assert "`countersign audit verify` names the damaged proposals" in err
    for command in (("history", pending), ("show", pending, "--as", AVA)):
        code, out, err = run(*command)
        assert code == 0, err
        assert pending in out


@on(
    "column",
    [
        ("sqlite", "originator_id"),
        ("sqlite", "originator_version"),
        ("postgres", "originator_version"),
    ],
    ["id", "version", "version"],
)
def test_the_projections_stop_at_an_event_with_a_malformed_key_and_a_skip_passes_it(
    cs, seeded, run, column
):
    value = "zz" if column == "originator_id" else -1
    damaged, pending = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged)
    _set(cs, column, value, position)

    code, out, err = run("projections", "rebuild")

    assert code == 1, out + err
    _no_traceback(out, err)
    assert f"stopped at notification {position} (Proposal.Proposed of " in err
    code_said = "originator_id" if column == "originator_id" else "originator_version"
    assert f"): StoredKeyError [{code_said}_malformed]. Nothing after it" in " ".join(err.split())
    assert f"'countersign projections skip {position} --reason TEXT'" in err
    code, out, err = run("projections", "skip", str(position), "--reason", "restored elsewhere")
    assert code == 0, out + err
    code, out, err = run("projections", "rebuild")
    assert code == 0, out + err
    granite = str(Organization.create_id("granite"))
    inbox = cs.read_models.inbox(granite, cs.clock.now())["items"]  # the test's clock
    assert pending in [item["proposal_id"] for item in inbox]


def test_a_topic_that_names_no_class_is_named_safely_everywhere(cs, seeded, run, tmp_path):
    damaged, pending = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged, 2)
    _set(cs, "topic", NO_CLASS, position)

    code, document = _verify(run, None)
    assert code == 5
    [broken] = document["broken_links"]
    assert (broken["proposal_id"], broken["version"]) == (damaged, 2)
    assert document["proposals_checked"] == 2
    code, out, err = run("history", damaged)
    assert code == 1
    _no_traceback(out, err)
    assert "`countersign audit verify` names the damaged proposals" in err
    for argv in (("audit", "verify"), ("audit", "anchor", "--out", str(tmp_path / "a"))):
        code, out, err = run(*argv)
        _no_traceback(out, err)
    code, out, err = run("show", pending, "--as", AVA)
    assert code == 0, err
    # The audit trail stops at it (test_the_projections_stop_at_an_event_whose_topic_...):
    # the export says where, and what passes it.
    code, out, err = run("audit", "export")
    assert code == 1, out + err
    _no_traceback(out, err)
    assert f"stopped at notification {position} (Proposal.Nope of {damaged})" in err


@on(
    "column,value",
    [
        ("sqlite", "originator_id", "zz"),
        ("sqlite", "originator_version", -1),
        ("postgres", "originator_version", -1),
        ("sqlite", "topic", NO_CLASS),
        ("postgres", "topic", NO_CLASS),
    ],
    ["id", "version", "version", "topic", "topic"],
)
def test_another_proposals_review_page_of_the_same_club_still_opens(cs, seeded, column, value):
    from tests.test_web_pages import _main, web_for

    damaged, pending = _decided_and_pending(cs, seeded)
    web = web_for(cs, seeded)
    _set(cs, column, value, _position(cs, damaged))

    page = web.browser(AVA).get(f"/proposals/{pending}")

    assert page.status_code == 200, page.text
    assert "Traceback" not in page.text
    main = _main(page)
    assert "Awaiting approval" in main
    assert f'action="/proposals/{pending}/approve"' in main


@on(
    "column,values",
    [
        ("sqlite", "originator_id", ("zz", "zy")),
        ("sqlite", "originator_version", (0, -3)),
        ("postgres", "originator_version", (0, -3)),
    ],
    ["id", "version", "version"],
)
def test_an_event_with_a_malformed_key_added_after_the_anchor(
    cs, seeded, run, tmp_path, column, values
):
    """The anchor's check of what was added since reads the keys of the events after it:
    such an event is named as above, the check goes on, no traceback."""
    anchor = tmp_path / "before.jsonl"
    assert run("audit", "anchor", "--out", str(anchor))[0] == 0
    damaged, _pending = _decided_and_pending(cs, seeded)
    for version, value in zip((1, 3), values, strict=True):
        position = _position(cs, damaged, version)
        _set(cs, column, value, position)

    code, document = _verify(run, anchor)

    assert code == 5, document
    assert len(document["malformed_keys"]) == 2
    for argv in (("audit", "verify", "--anchor", str(anchor)), ("audit", "verify")):
        code, out, err = run(*argv)
        assert code == 5
        _no_traceback(out, err)
        assert f"  the stored event at log position {position} has a " in err


@on(
    "column,value",
    [
        ("sqlite", "originator_id", "0z"),
        ("sqlite", "originator_version", "x"),
        ("sqlite", "originator_version", 0),
        ("postgres", "originator_version", 0),
    ],
    ["id", "text-version", "zero-version", "zero-version"],
)
def test_an_anchored_club_stream_whose_event_key_is_no_key(
    cs, seeded, run, tmp_path, column, value
):
    """Another stream's event (the club's last) changed so after the anchor: the check of the
    anchored streams (their events read by id, a removed one's stream by its last version)
    names the stream as changed, the event by its position; no traceback."""
    anchor = tmp_path / "before.jsonl"
    assert run("audit", "anchor", "--out", str(anchor))[0] == 0
    club = str(Organization.create_id("granite"))
    [(last,)] = _sql(
        cs, "SELECT MAX(originator_version) FROM {table} WHERE originator_id=?", UUID(club)
    )
    position = _position(cs, club, last)
    _set(cs, column, value, position)

    code, document = _verify(run, anchor)

    assert code == 5, document
    assert [m["log_position"] for m in document["malformed_keys"]] == [position]
    assert club in json.dumps(document["anchor"])
    code, out, err = run("audit", "verify", "--anchor", str(anchor))
    assert code == 5
    _no_traceback(out, err)
    assert f"  the stored event at log position {position} has a " in err
    assert f"Organization stream {club}: " in err


def test_the_projections_stop_at_an_event_whose_topic_names_no_class(cs, seeded, run):
    """Its topic is countersign's own, and names no class: the projections passed it as an
    event type they do not handle, so the proposal's cards and trail lost that event (its
    approval, here) without a word. They now stop at it as at an undecodable event."""
    damaged, _pending = _decided_and_pending(cs, seeded)
    position = _position(cs, damaged, 2)
    _set(cs, "topic", NO_CLASS, position)

    code, out, err = run("projections", "rebuild")

    assert code == 1, out + err
    _no_traceback(out, err)
    assert f"stopped at notification {position} (Proposal.Nope of {damaged})" in err
    assert f"'countersign projections skip {position} --reason TEXT'" in err
    code, out, err = run("projections", "skip", str(position), "--reason", "restored elsewhere")
    assert code == 0, out + err
    assert run("projections", "rebuild")[0] == 0
