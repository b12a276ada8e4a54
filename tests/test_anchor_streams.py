"""Anchors cover every stream the store holds (docs/design.md, "Anchors"), not the proposals
alone: a writer who edits or deletes an event of a club's stream, or an order's, is named by
``audit verify --anchor`` with the stream and the event's version, and the other streams'
events recorded after the anchor are listed as not yet anchored. An anchor of format 1 (the
proposals alone, as the releases before wrote) still verifies, and says what it covers.

The writer works on the database directly, on both backends; every command is run as a user
would, through ``main``, reading what it prints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from uuid import UUID

from countersign.infrastructure.bootstrap import Countersign

from tests.test_anchor_rules import _after_the_anchor
from tests.test_audit_anchor import _anchor, _cut, _decided, _lines, _verify, run
from tests.test_audit_verify import _sql
from tests.test_event_seals import K1

__all__ = ["run"]  # the fixture, shared with tests/test_audit_anchor.py


def _club(seeded: dict[str, Any]) -> str:
    """The Granite club's stream: registered, then its members, its time zone, its policies."""
    return str(next(o["id"] for o in seeded["organizations"] if o["slug"] == "granite"))


def _edit(cs: Countersign, stream_id: str, version: int, old: bytes, new: bytes) -> None:
    """A writer edits one stored event's bytes in place (on either database)."""
    [(state,)] = _sql(
        cs,
        "SELECT state FROM {table} WHERE originator_id=? AND originator_version=?",
        UUID(stream_id),
        version,
    )
    assert old in bytes(state)
    _sql(
        cs,
        "UPDATE {table} SET state=? WHERE originator_id=? AND originator_version=?",
        bytes(state).replace(old, new),
        UUID(stream_id),
        version,
    )


def _versions(cs: Countersign, stream_id: str) -> int:
    [(last,)] = _sql(
        cs, "SELECT MAX(originator_version) FROM {table} WHERE originator_id=?", UUID(stream_id)
    )
    return int(last)


def test_an_edited_club_event_is_named_by_its_stream_and_version(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    club = _club(seeded)
    path = _anchor(run, tmp_path)
    assert any(line.get("stream_id") == club for line in _lines(path))
    _edit(cs, club, 1, b"Granite Curling Club", b"Granite Curling Clux")

    assert _verify(run, None)[0] == 0  # no link covers a club's event: only the anchor shows it
    code, document = _verify(run, path)

    assert code == 5
    anchor = document["anchor"]
    assert (anchor["covers"], anchor["not_as_anchored"]) == ("every_stream", 0)
    assert anchor["streams_not_as_anchored"] == 1
    [difference] = anchor["stream_differences"]
    assert difference["stream_id"] == club
    assert (difference["kind"], difference["problem"], difference["version"]) == (
        "Organization",
        "changed",
        1,
    )
    code, out, err = run("audit", "verify", "--anchor", str(path))
    assert code == 5
    assert "OK" not in out
    assert "audit verify: NOT AS ANCHORED: 1 other stream of the anchor made" in err
    assert (
        f"  Organization stream {club}: event 1 (Registered) changed: it is not the event anchored"
    ) in err
    code, _out, err = run("audit", "verify", "--anchor", str(path), "--language", "fr")
    assert code == 5
    assert "audit verify : PAS COMME ANCRÉ : 1 autre flux de l'ancre faite le" in err
    assert (
        f"  flux Organization {club} : événement 1 (Registered) modifié : ce n'est pas "
        "l'événement ancré"
    ) in err
    assert "Traceback" not in err


def test_a_club_event_deleted_is_named_cut_back_or_a_gap_and_a_stream_deleted_removed(
    cs, seeded, deployments, run, tmp_path
):
    _, succeeded, _ = _decided(deployments(K1), seeded)
    club = _club(seeded)
    last = _versions(cs, club)
    order = str(seeded["orders"]["refund-declined"])
    path = _anchor(run, tmp_path)
    _sql(cs, "DELETE FROM {table} WHERE originator_id=? AND originator_version=?", UUID(club), 2)
    _sql(cs, "DELETE FROM {table} WHERE originator_id=?", UUID(order))
    _cut(cs, succeeded, 1)

    code, document = _verify(run, path)

    assert code == 5
    anchor = document["anchor"]
    named = {d["stream_id"]: d for d in anchor["stream_differences"]}
    assert (named[club]["problem"], named[club]["version"]) == ("gap", 2)
    assert (named[order]["problem"], named[order]["stored_version"]) == ("removed", None)
    assert [d["proposal_id"] for d in anchor["differences"]] == [succeeded]
    err = run("audit", "verify", "--anchor", str(path))[2]
    assert f"  Organization stream {club}: event 2 removed (the stream has a gap there)" in err
    assert f"  Order stream {order}: removed: no stream (anchored up to version" in err

    _sql(cs, "DELETE FROM {table} WHERE originator_id=? AND originator_version>=?", UUID(club), 4)
    cut = _verify(run, path)[1]["anchor"]["stream_differences"]
    assert [d["problem"] for d in cut if d["stream_id"] == club] == ["gap"]  # its first
    fresh = _anchor(run, tmp_path, name="fresh.jsonl")
    _sql(cs, "DELETE FROM {table} WHERE originator_id=? AND originator_version>=?", UUID(club), 3)
    [difference] = _verify(run, fresh)[1]["anchor"]["stream_differences"]
    assert (difference["problem"], difference["version"]) == ("cut_back", 3)
    assert difference["stored_version"] == 1
    err = run("audit", "verify", "--anchor", str(fresh))[2]
    assert (
        f"Organization stream {club}: cut back: its events from version 3 on are removed (the "
        "stream now ends at version 1)"
    ) in err
    assert last > 3


def test_the_other_streams_events_after_the_anchor_are_listed_as_not_yet_anchored(
    cs, seeded, deployments, run, tmp_path
):
    _, _, pending = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    head = _lines(path)[0]["log_position"]
    _after_the_anchor(cs, seeded, deployments, pending)  # a refund carried out: its order too

    code, document = _verify(run, path)

    assert code == 0, document
    streams = document["anchor"]["unanchored_streams"]
    assert streams["after_log_position"] == head
    assert streams["events"] > 0
    listed = {u["stream_id"]: u for u in streams["listed"]}
    assert len(listed) == streams["streams"] > 0
    assert "Order" in {u["kind"] for u in listed.values()}
    code, out, _err = run("audit", "verify", "--anchor", str(path))
    assert code == 0
    events, count = streams["events"], streams["streams"]
    other = "other stream" if count == 1 else "other streams"
    assert f"Not covered by it: {events} events of {count} {other}" in out
    shown = next(iter(listed.values()))
    assert f"  {shown['kind']} stream {shown['stream_id']}: " in out
    code, _out, err = run(
        "audit", "verify", "--anchor", str(path), "--max-unanchored", str(events - 1)
    )
    assert code == 5
    assert f"audit verify: UNANCHORED: {events} events of other streams recorded after" in err


def _as_format_1(made: Path, into: Path) -> Path:
    """The anchor the releases before wrote of the same store: its header and proposal lines
    (written the same way), no other stream's, its integrity line over them, signed by K1."""
    header, *lines, _end = _lines(made)
    proposals = [line for line in lines if "proposal_id" in line]
    header["countersign_anchor"] = 1
    body = b"".join(
        json.dumps(d, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        for d in (header, *proposals)
    )
    digest = hashlib.sha256(body).hexdigest()
    end = {
        "end": "countersign_anchor",
        "proposals": len(proposals),
        "sha256": digest,
        "mac": K1.sign_anchor(digest)["mac"],
    }
    into.write_bytes(body + json.dumps(end, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    return into


def test_an_anchor_of_format_1_still_verifies_and_says_it_covers_the_proposals_only(
    cs, seeded, deployments, run, tmp_path
):
    declined, _, _ = _decided(deployments(K1), seeded)
    old = _as_format_1(_anchor(run, tmp_path), tmp_path / "old.jsonl")

    code, document = _verify(run, old)
    assert code == 0, document
    anchor = document["anchor"]
    assert (anchor["format"], anchor["covers"]) == (1, "proposals_only")
    assert (anchor["proposals_checked"], anchor["streams_checked"]) == (3, None)
    assert anchor["unanchored_streams"] is None
    code, out, _err = run("audit", "verify", "--anchor", str(old))
    assert code == 0
    assert "Anchor of format 1 (made by an earlier release): 3 proposals as anchored" in out
    assert "signed with key 'k1'). It COVERS THE PROPOSALS ONLY: no other stream" in out
    out = run("audit", "verify", "--anchor", str(old), "--language", "fr")[1]
    assert "Elle NE COUVRE QUE LES PROPOSITIONS : aucun autre flux" in out

    # What it holds it still proves; what it does not hold, it says it did not check.
    _edit(cs, _club(seeded), 1, b"Granite Curling Club", b"Granite Curling Clux")
    assert _verify(run, old)[0] == 0
    _cut(cs, declined, 2)
    code, document = _verify(run, old)
    assert code == 5
    assert [d["proposal_id"] for d in document["anchor"]["differences"]] == [declined]


def test_an_auditor_can_demand_a_signed_anchor_whatever_the_deployment_requires(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    unsigned = _anchor(run, tmp_path, keys=None)
    signed = _anchor(run, tmp_path, name="signed.jsonl")

    code, out, _err = run("audit", "verify", "--anchor", str(unsigned), keys=None)
    assert code == 0
    assert "UNSIGNED, accepted only because signed anchors are not required here" in out
    code, out, err = run(
        "audit", "verify", "--anchor", str(unsigned), "--require-signed-anchor", keys=None
    )
    assert code == 2
    assert "OK" not in out
    assert "--anchor: a.jsonl is UNSIGNED, and --require-signed-anchor demands a signed" in err
    code, out, err = run(
        "audit", "verify", "--anchor", str(unsigned), "--require-signed-anchor", "--language", "fr"
    )
    assert code == 2
    assert "a.jsonl n'est PAS SIGNÉE, et --require-signed-anchor exige une ancre signée" in err
    # A seal key is a "clé de scellement" in every French text.
    assert "a écrite avec les clés de scellement configurées (elle la signe)" in err
    code, out, _err = run("audit", "verify", "--anchor", str(signed), "--require-signed-anchor")
    assert code == 0
    assert "signed with key 'k1'" in out
    code, _out, err = run("audit", "verify", "--require-signed-anchor")
    assert code == 2
    assert "--require-signed-anchor demands a signed anchor: give it with --anchor FILE" in err


def test_the_verdict_says_what_the_anchor_covers_and_whether_it_is_signed_in_french(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    unsigned = _anchor(run, tmp_path, keys=None)

    code, out, _err = run(
        "audit", "verify", "--anchor", str(unsigned), "--language", "fr", keys=None
    )

    assert code == 0
    assert out.startswith("audit verify : OK, ")
    assert "Ancre : chaque flux tel qu'ancré à la position " in out
    assert (
        "NON SIGNÉE, acceptée seulement parce que les ancres signées ne sont pas exigées ici"
    ) in out
    assert ": 3 propositions et " in out
    assert "autres flux (clubs, membres" in out


def test_a_long_stream_is_anchored_over_several_lines_and_named_at_the_event_changed(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    """A stream's events are written ``CHUNK`` to a line (256; 2 here): an event changed in a
    later line is named by its own version, and the lines hold the whole stream."""
    from countersign.infrastructure.audit import stream_lines

    _decided(deployments(K1), seeded)
    club = _club(seeded)
    monkeypatch.setattr(stream_lines, "CHUNK", 2)
    path = _anchor(run, tmp_path)
    lines = [line for line in _lines(path) if line.get("stream_id") == club]
    assert [(line["from_version"], line["version"]) for line in lines][:2] == [(1, 2), (3, 4)]
    assert lines[-1]["version"] == _versions(cs, club)
    assert _verify(run, path)[0] == 0
    [(state,)] = _sql(
        cs,
        "SELECT state FROM {table} WHERE originator_id=? AND originator_version=?",
        UUID(club),
        4,
    )
    _sql(
        cs,
        "UPDATE {table} SET state=? WHERE originator_id=? AND originator_version=?",
        bytes(state).replace(b"}", b',"forged":true}', 1),
        UUID(club),
        4,
    )

    code, document = _verify(run, path)

    assert code == 5
    [difference] = document["anchor"]["stream_differences"]
    assert (difference["stream_id"], difference["problem"], difference["version"]) == (
        club,
        "changed",
        4,
    )


def _slipped_in(cs: Countersign, stream_id: str, version: int, into: str, as_version: int) -> None:
    """A writer copies one stored event into ``into`` at ``as_version``, at a position of the
    notification log below the anchor's (a free one: it picks it), where neither the anchor's
    lines nor the count of the events after it look."""
    position = "rowid" if cs.database.kind == "sqlite" else "notification_id"
    [(low,)] = _sql(cs, f"SELECT MIN({position}) FROM {{table}}")
    _sql(
        cs,
        f"INSERT INTO {{table}} ({position}, originator_id, originator_version, topic, state) "
        "SELECT ?, ?, ?, topic, state FROM {table} WHERE originator_id=? AND originator_version=?",
        int(low) - 1,
        UUID(into),
        as_version,
        UUID(stream_id),
        version,
    )


def test_an_event_written_in_below_the_anchors_position_is_named(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    club = _club(seeded)
    last = _versions(cs, club)
    path = _anchor(run, tmp_path)
    _slipped_in(cs, club, last, into=club, as_version=last + 1)  # appended to the club's

    code, document = _verify(run, path)

    assert code == 5, document
    anchor = document["anchor"]
    assert anchor["ok"] is False
    assert anchor["added_before_position"] == 1
    code, out, err = run("audit", "verify", "--anchor", str(path))
    assert (code, "OK" in out) == (5, False)
    assert (
        "audit verify: NOT AS ANCHORED: 1 event at or before the anchor's position that it does "
        "not hold (written in since, at a position from before it; the anchor made"
    ) in err
    code, _out, err = run("audit", "verify", "--anchor", str(path), "--language", "fr")
    assert code == 5
    assert (
        "audit verify : PAS COMME ANCRÉ : 1 événement à la position de l'ancre ou avant qu'elle "
        "ne contient pas (écrit depuis, à une position d'avant elle ; l'ancre faite le"
    ) in err


def test_a_stream_written_in_below_the_anchors_position_is_counted(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    order = str(seeded["orders"]["refund-declined"])
    path = _anchor(run, tmp_path)
    forged = "0" * 8 + "-0000-4000-8000-" + "0" * 11 + "1"
    _slipped_in(cs, order, 1, into=forged, as_version=1)  # a whole new order's stream

    code, document = _verify(run, path)

    assert code == 5, document
    assert document["anchor"]["added_before_position"] == 1
    assert document["anchor"]["unanchored_streams"]["events"] == 0  # not after it: before


def _position_of(cs: Countersign, stream_id: str, version: int) -> int:
    position = "rowid" if cs.database.kind == "sqlite" else "notification_id"
    [(at,)] = _sql(
        cs,
        f"SELECT {position} FROM {{table}} WHERE originator_id=? AND originator_version=?",
        UUID(stream_id),
        version,
    )
    return int(at)


def test_the_events_written_in_below_the_anchors_position_are_listed_where_they_are(
    cs, seeded, deployments, run, tmp_path
):
    """An auditor is told which events the anchor does not hold, not only how many: each by
    its stream, its version and its position in the log, lowest position first."""
    declined, _succeeded, _pending = _decided(deployments(K1), seeded)
    club = _club(seeded)
    last, decided = _versions(cs, club), _versions(cs, declined)
    path = _anchor(run, tmp_path)
    _slipped_in(cs, club, last, into=club, as_version=last + 1)  # appended to the club's
    forged = "0" * 8 + "-0000-4000-8000-" + "0" * 11 + "1"
    order = str(seeded["orders"]["refund-declined"])
    _slipped_in(cs, order, 1, into=forged, as_version=1)  # a new order's stream
    _slipped_in(cs, declined, decided, into=declined, as_version=decided + 1)  # its last event
    club_at, forged_at, declined_at = (
        _position_of(cs, club, last + 1),
        _position_of(cs, forged, 1),
        _position_of(cs, declined, decided + 1),
    )

    code, document = _verify(run, path)

    assert code == 5, document
    anchor = document["anchor"]
    assert anchor["added_before_position"] == 3
    assert anchor["added_before_events"] == [
        {
            "log_position": declined_at,
            "stream_id": declined,
            "kind": "Proposal",
            "version": decided + 1,
            "event": "RevisionRequired",
            "anchored_version": decided,
        },
        {
            "log_position": forged_at,
            "stream_id": forged,
            "kind": "Order",
            "version": 1,
            "event": anchor["added_before_events"][1]["event"],
            "anchored_version": None,
        },
        {
            "log_position": club_at,
            "stream_id": club,
            "kind": "Organization",
            "version": last + 1,
            "event": anchor["added_before_events"][2]["event"],
            "anchored_version": last,
        },
    ]
    order_event = anchor["added_before_events"][1]["event"]
    assert order_event.isidentifier()
    code, _out, err = run("audit", "verify", "--anchor", str(path))
    assert code == 5
    assert (
        f"  proposal {declined}: event {decided + 1} (RevisionRequired) at log position "
        f"{declined_at}, after its anchored event {decided}\n"
        f"  Order stream {forged}: event 1 ({order_event}) at log position {forged_at}, in a "
        "stream the anchor does not hold\n"
        f"  Organization stream {club}: event {last + 1} "
    ) in err
    code, _out, err = run("audit", "verify", "--anchor", str(path), "--language", "fr")
    assert code == 5
    assert (
        f"  proposition {declined} : événement {decided + 1} (RevisionRequired) à la position "
        f"{declined_at} du journal, après son événement ancré {decided}\n"
        f"  flux Order {forged} : événement 1 ({order_event}) à la position {forged_at} du "
        "journal, dans un flux que l'ancre ne contient pas\n"
    ) in err


def test_the_events_written_in_below_the_anchors_position_are_listed_up_to_a_bound(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    order = str(seeded["orders"]["refund-declined"])
    path = _anchor(run, tmp_path)
    forged = "0" * 8 + "-0000-4000-8000-" + "0" * 11 + "2"
    for version in range(1, 26):  # 25 events of a stream made up below the position
        _slipped_in(cs, order, 1, into=forged, as_version=version)

    code, document = _verify(run, path)

    assert code == 5, document
    anchor = document["anchor"]
    assert anchor["added_before_position"] == 25
    listed = anchor["added_before_events"]
    assert [e["version"] for e in listed] == list(range(25, 0, -1))  # the lowest position first
    code, _out, err = run("audit", "verify", "--anchor", str(path))
    assert code == 5
    shown = [line for line in err.splitlines() if line.startswith(f"  Order stream {forged}:")]
    assert len(shown) == 20
    assert "  and 5 more (--json lists the first 25)" in err
    code, _out, err = run("audit", "verify", "--anchor", str(path), "--language", "fr")
    assert "  et 5 de plus (--json liste les 25 premiers)" in err


def test_an_event_written_in_below_the_position_is_listed_though_a_removal_evens_the_count(
    cs, seeded, deployments, run, tmp_path
):
    """A writer who removes an anchored event and puts one in at a position from before the
    anchor leaves as many events as it holds: the removal is named, and so is the addition."""
    _decided(deployments(K1), seeded)
    club = _club(seeded)
    last = _versions(cs, club)
    path = _anchor(run, tmp_path)
    _sql(cs, "DELETE FROM {table} WHERE originator_id=? AND originator_version=?", UUID(club), last)
    forged = "0" * 8 + "-0000-4000-8000-" + "0" * 11 + "3"
    _slipped_in(cs, club, 1, into=forged, as_version=1)

    code, document = _verify(run, path)

    assert code == 5, document
    anchor = document["anchor"]
    assert anchor["streams_not_as_anchored"] == 1
    assert anchor["added_before_position"] == 1
    [added] = anchor["added_before_events"]
    assert (added["stream_id"], added["version"], added["anchored_version"]) == (forged, 1, None)


def test_an_anchor_changed_before_the_events_added_are_located_is_refused(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    """Where the events added are is read from the anchor's lines a third time, its
    proposals and its other streams apart: a file changed in between (an other stream's line
    removed, so that its events would be listed as added) is refused, never listed from."""
    from countersign.infrastructure.audit import added_before, anchor_check

    _decided(deployments(K1), seeded)
    club = _club(seeded)
    path = _anchor(run, tmp_path)
    _slipped_in(cs, club, 1, into="0" * 8 + "-0000-4000-8000-" + "0" * 11 + "4", as_version=1)
    real = added_before.locate_added

    def located_once_changed(*args: Any, **kwargs: Any) -> Any:
        kept = [line for line in path.read_text().splitlines() if club not in line]
        path.write_text("".join(line + "\n" for line in kept))
        return real(*args, **kwargs)

    monkeypatch.setattr(anchor_check, "locate_added", located_once_changed)
    code, _out, err = run("audit", "verify", "--anchor", str(path))

    assert code == 2
    assert "--anchor: a.jsonl changed while it was checked" in err
    assert "Traceback" not in err
