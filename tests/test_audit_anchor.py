"""Anchors (docs/design.md, "Seals"): ``audit anchor`` writes every proposal's last link for
keeping outside the database, and ``audit verify --anchor`` names a proposal removed, cut
back or rewritten since. Seals alone cannot show a stream cut back: every remaining event
still verifies, and ``audit verify`` without the anchor says OK (each test below that cuts a
stream shows it), since the writer removed the audit trail's copy of the links too.

The writer works on the database directly, on both backends (tests/test_audit_verify.py's
helpers); every command is run as a user would, through ``main``, reading what it prints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.seals import SealKeys
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA
from tests.test_audit_verify import _forge, _sql
from tests.test_event_seals import K1, K2, SECRET_1, SECRET_2, _propose, _types

KEYS = {"k1": f"k1:{SECRET_1}", "k2": f"k2:{SECRET_2}"}


@pytest.fixture
def run(database_url: str, capsys: Any, monkeypatch: Any) -> Any:
    """Run one ``countersign`` command on the test's database, holding the seal keys named
    (``keys``: "k1", "k2" or None): its exit status, stdout and stderr."""

    def command(*argv: str, keys: str | None = "k1") -> tuple[int, str, str]:
        if keys is None:
            monkeypatch.delenv("COUNTERSIGN_SEAL_KEYS", raising=False)
        else:
            monkeypatch.setenv("COUNTERSIGN_SEAL_KEYS", KEYS[keys])
        capsys.readouterr()
        code = main([*argv, "--database", database_url])
        out, err = capsys.readouterr()
        return code, out, err

    return command


def _anchor(run: Any, tmp_path: Path, keys: str | None = "k1", name: str = "a.jsonl") -> Path:
    path = tmp_path / name
    code, out, err = run("audit", "anchor", "--out", str(path), keys=keys)
    assert code == 0, err
    assert out == ""
    return path


def _verify(run: Any, anchor: Path | None, keys: str | None = "k1") -> tuple[int, Any]:
    extra = ("--anchor", str(anchor)) if anchor is not None else ()
    code, out, err = run("audit", "verify", "--json", *extra, keys=keys)
    return code, json.loads(out) if out else err


def _cut(cs: Countersign, proposal_id: str, from_version: int) -> None:
    """A writer deletes a stream's events from ``from_version`` on (1: the whole stream),
    and the audit trail's copy of their links, so nothing else in the database shows it."""
    _sql(
        cs,
        "DELETE FROM {table} WHERE originator_id=? AND originator_version>=?",
        UUID(proposal_id),
        from_version,
    )
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "DELETE FROM audit_events WHERE proposal_id = ? AND version >= ?",
            (proposal_id, from_version),
        )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _proposals(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An anchor's proposal lines (the other streams' follow them)."""
    return [line for line in lines if "proposal_id" in line]


def _decided(cs: Countersign, seeded: dict[str, Any], keys: SealKeys | None = K1) -> Any:
    """Three proposals (one declined, one succeeded, one pending) by processes holding
    ``keys``: their ids."""
    declined = _propose(cs, seeded, order="refund-declined")
    cs.proposals.decline(declined, AVA, "not this one")
    succeeded = _propose(cs, seeded)
    assert cs.proposals.approve(succeeded, AVA).status == "succeeded"
    pending = _propose(cs, seeded, order="refund-stale")
    return declined, succeeded, pending


def test_an_untouched_store_is_as_anchored_and_the_anchor_names_its_key_never_its_secret(
    cs, seeded, deployments, run, tmp_path
):
    declined, succeeded, pending = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)

    header, *lines, end = _lines(path)
    entries = _proposals(lines)
    assert header["signed"] is True
    assert header["key_id"] == "k1"
    assert header["proposals"] == end["proposals"] == len(entries) == 3
    assert lines[: len(entries)] == entries  # the proposals first, then the other streams
    assert end["streams"] == len({line["stream_id"] for line in lines[len(entries) :]}) > 0
    assert SECRET_1 not in path.read_text()
    assert [e["proposal_id"] for e in entries] == sorted([declined, succeeded, pending])
    for entry in entries:
        events = list(cs.app.events.get(UUID(entry["proposal_id"])))
        assert entry["version"] == len(events)
        assert entry["chain"] == events[-1].chain
        assert entry["event"] == type(events[-1]).__name__
        assert entry["organization_id"] == str(events[0].organization_id)

    code, document = _verify(run, path)
    assert code == 0
    anchor = document["anchor"]
    assert anchor["ok"]
    assert anchor["proposals_checked"] == 3
    assert anchor["differences"] == []
    code, out, _err = run("audit", "verify", "--anchor", str(path))
    assert code == 0
    assert "Anchor: every stream as anchored at log position" in out
    assert "signed with key 'k1'): 3 proposals and " in out


def test_a_deleted_decline_is_named_with_the_version_it_was_cut_back_from(
    cs, seeded, deployments, run, tmp_path
):
    declined, _, _ = _decided(deployments(K1), seeded)
    versions = len(_types(cs, declined))
    path = _anchor(run, tmp_path)
    last_kept = _types(cs, declined).index("RevisionRequired")  # Declined, then the outcome
    _cut(cs, declined, last_kept)
    assert _types(cs, declined) == ["Proposed"]  # pending again, for people to approve

    assert _verify(run, None)[0] == 0  # every remaining seal verifies: nothing else shows it
    code, document = _verify(run, path)
    assert code == 5
    [difference] = document["anchor"]["differences"]
    assert difference["proposal_id"] == declined
    assert difference["problem"] == "cut_back"
    assert difference["removed_from"] == last_kept
    assert difference["anchored_version"] == versions
    assert difference["stored_version"] == last_kept - 1
    code, _out, err = run("audit", "verify", "--anchor", str(path))
    assert code == 5
    assert "audit verify: NOT AS ANCHORED: 1 proposal of the anchor made" in err
    assert (
        f"proposal {declined}: cut back: events {last_kept} to {versions} removed, the last "
        f"anchored RevisionRequired (the stream now ends at version {last_kept - 1})"
    ) in err
    assert "Traceback" not in err


def test_a_deleted_success_is_named_and_proposals_made_after_the_anchor_pass(
    cs, seeded, deployments, run, tmp_path
):
    _, succeeded, pending = _decided(deployments(K1), seeded)
    versions = len(_types(cs, succeeded))
    path = _anchor(run, tmp_path)
    # After the anchor: a new proposal, and the anchored pending one approved (longer now).
    later = _propose(deployments(K1), seeded, order="refund-two-approvers")
    deployments(K1).proposals.decline(pending, AVA)
    _cut(cs, succeeded, versions)

    code, document = _verify(run, path)
    assert code == 5
    [difference] = document["anchor"]["differences"]
    assert (difference["proposal_id"], difference["problem"]) == (succeeded, "cut_back")
    assert difference["anchored_event"] == "Succeeded"
    assert difference["removed_from"] == versions
    assert later not in json.dumps(document["anchor"]["differences"])
    # Listed only as what the anchor does not cover (tests/test_anchor_rules.py).
    made_since = [u for u in document["anchor"]["unanchored"]["listed"] if u["made_after_anchor"]]
    assert [u["proposal_id"] for u in made_since] == [later]
    code, _out, err = run("audit", "verify", "--anchor", str(path))
    assert f"proposal {succeeded}: cut back: event {versions} removed, the last anchored " in err


def test_a_whole_stream_deleted_is_named_removed(cs, seeded, deployments, run, tmp_path):
    _, succeeded, _ = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    _cut(cs, succeeded, 1)

    assert _verify(run, None)[0] == 0
    code, document = _verify(run, path)
    assert code == 5
    [difference] = document["anchor"]["differences"]
    assert (difference["proposal_id"], difference["problem"]) == (succeeded, "removed")
    assert difference["stored_version"] is None
    err = run("audit", "verify", "--anchor", str(path))[2]
    assert f"proposal {succeeded}: removed: no stream (anchored at version" in err


def test_without_keys_an_unsigned_anchor_still_shows_a_link_rewritten(cs, seeded, run, tmp_path):
    _, succeeded, _ = _decided(cs, seeded, keys=None)
    path = _anchor(run, tmp_path, keys=None)
    header, *_, end = _lines(path)
    assert header["signed"] is False
    assert header["key_id"] is None
    assert end["mac"] is None
    last = len(_types(cs, succeeded))

    def another_result(state: dict[str, Any]) -> None:
        state["outcome"]["result"]["forged"] = True

    _forge(cs, succeeded, last, another_result)  # its link made again: the chain holds

    assert _verify(run, None, keys=None)[0] == 0
    code, document = _verify(run, path, keys=None)
    assert code == 5
    [difference] = document["anchor"]["differences"]
    assert (difference["proposal_id"], difference["problem"]) == (succeeded, "rewritten")
    err = run("audit", "verify", "--anchor", str(path), keys=None)[2]
    assert f"proposal {succeeded}: rewritten: its link at version {last} (Succeeded)" in err


def test_without_keys_a_stream_cut_back_is_shown(cs, seeded, run, tmp_path):
    declined, _, _ = _decided(cs, seeded, keys=None)
    path = _anchor(run, tmp_path, keys=None)
    _cut(cs, declined, 2)

    assert _verify(run, None, keys=None)[0] == 0
    code, document = _verify(run, path, keys=None)
    assert code == 5
    [difference] = document["anchor"]["differences"]
    assert (difference["problem"], difference["removed_from"]) == ("cut_back", 2)
    assert document["anchor"]["signed"] is False
    # With keys held now, an unsigned anchor is still checked, and said to be unsigned
    # (where seals are required, it is refused: tests/test_anchor_rules.py).
    _cut(cs, declined, 1)
    fresh = _anchor(run, tmp_path, keys=None, name="fresh.jsonl")
    code, out, _err = run("audit", "verify", "--anchor", str(fresh), keys="k1")
    assert code == 0
    assert "(made " in out
    assert "UNSIGNED though seal keys are configured, accepted only because signed anchors " in out


def test_a_stream_cut_back_then_extended_by_sealed_events_is_named_rewritten(
    cs, seeded, deployments, run, tmp_path
):
    declined, _, _ = _decided(deployments(K1), seeded)
    anchored = len(_types(cs, declined))
    path = _anchor(run, tmp_path)
    _cut(cs, declined, 2)  # pending again, then approved by a process holding the key
    assert deployments(K1).proposals.approve(declined, AVA).result == "executed"
    assert len(_types(cs, declined)) >= anchored  # as long as anchored, or longer

    assert _verify(run, None)[0] == 0  # every event sealed, every link holds
    code, document = _verify(run, path)
    assert code == 5
    [difference] = document["anchor"]["differences"]
    assert (difference["proposal_id"], difference["problem"]) == (declined, "rewritten")


def _rewrite_anchor(path: Path, change: Any) -> None:
    """A writer edits an anchored proposal's line and makes the integrity line's SHA-256
    again (the signature they cannot make)."""
    header, *entries, end = path.read_text().splitlines()
    entry = json.loads(entries[0])
    change(entry)
    entries[0] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    body = "".join(line + "\n" for line in (header, *entries))
    ending = json.loads(end)
    ending["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    path.write_text(body + json.dumps(ending) + "\n")


def test_a_signed_anchor_edited_is_refused_naming_the_fix(cs, seeded, deployments, run, tmp_path):
    _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    edited = path.read_text().replace('"version":', '"version":1', 1)
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(edited)
    code, out, err = run("audit", "verify", "--anchor", str(damaged))
    assert code == 2
    assert "the anchor's lines do not match its integrity line: it was damaged or edited" in err

    def longer(entry: dict[str, Any]) -> None:
        entry["version"] += 1

    _rewrite_anchor(path, longer)
    code, out, err = run("audit", "verify", "--anchor", str(path))
    assert code == 2
    assert "error: --anchor: the anchor's signature (key 'k1') does not match its lines" in err
    assert SECRET_1 not in err + out
    assert "Traceback" not in err
    code, out, err = run("audit", "verify", "--json", "--anchor", str(path))
    assert code == 2
    assert json.loads(out)["error"] == "usage"


def test_an_anchor_under_a_key_not_held_is_named_as_such(cs, seeded, deployments, run, tmp_path):
    _decided(deployments(K2), seeded)
    path = _anchor(run, tmp_path, keys="k2")
    code, _out, err = run("audit", "verify", "--anchor", str(path), keys="k1")
    assert code == 2
    assert "the anchor is signed with key 'k2', which is not configured: list it in" in err
    code, _out, err = run("audit", "verify", "--anchor", str(path), keys=None)
    assert code == 2
    assert "signed with key 'k2', and no seal keys are configured" in err
    assert SECRET_2 not in err


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "is not an anchor"),
        ("not json\n", "is not an anchor"),
        ('{"countersign_anchor": 3}\n', "another format (3, this release reads 1 and 2)"),
        (None, "the anchor ends before its integrity line: it is incomplete"),
        ("cut", "is cut short"),
        ("entry", "line 2 of the anchor is not an anchored proposal"),
        ("x" * 100_000, "is not an anchor"),  # read 4,096 bytes at a time, never whole
        ("long", "the anchor's line 2 is cut short"),
    ],
)
def test_a_malformed_anchor_is_a_usage_error(cs, seeded, run, tmp_path, content, said):
    made = _anchor(run, tmp_path, keys=None, name="made.jsonl")
    header, *rest = made.read_text().splitlines(keepends=True)
    if content is None:  # the integrity line lost
        content = header
    elif content == "cut":
        content = made.read_text()[:-5]
    elif content == "long":
        content = header + '{"proposal_id": "' + "x" * 100_000 + '"}\n' + "".join(rest)
    elif content == "entry":
        content = header + '{"proposal_id": "x"}\n' + "".join(rest)
    path = tmp_path / "anchor.jsonl"
    path.write_text(content)
    code, _out, err = run("audit", "verify", "--anchor", str(path), keys=None)
    assert code == 2
    assert said in err
    assert "Traceback" not in err


def test_a_missing_file_and_an_existing_out_are_usage_errors(cs, run, tmp_path):
    code, _out, err = run("audit", "verify", "--anchor", str(tmp_path / "none.jsonl"))
    assert code == 2
    assert "the anchor file cannot be read (No such file or directory)" in err
    path = _anchor(run, tmp_path)
    kept = path.read_bytes()
    code, _out, err = run("audit", "anchor", "--out", str(path))
    assert code == 2
    assert "exists: an anchor is kept, never replaced; name a new file" in err
    assert path.read_bytes() == kept


def test_the_anchor_goes_to_stdout_by_default_and_is_the_same_each_run(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    code, first, err = run("audit", "anchor")
    assert code == 0
    assert "audit anchor: 3 proposals and " in err
    assert " other streams (" in err
    assert "signed with seal key 'k1'" in err
    second = run("audit", "anchor")[1]
    # Made at another time; the same proposals, in the same order, with the same links.
    assert first.splitlines()[1:-1] == second.splitlines()[1:-1]
    path = tmp_path / "from-stdout.jsonl"
    path.write_text(first)
    assert _verify(run, path)[0] == 0


def test_the_proposals_are_read_a_page_at_a_time_in_the_order_of_their_ids(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    from countersign.infrastructure.persistence import proposal_heads

    ids = _decided(deployments(K1), seeded)
    whole = _lines(_anchor(run, tmp_path, name="whole.jsonl"))
    monkeypatch.setattr(proposal_heads, "PAGE", 2)  # three proposals: two pages
    paged = _anchor(run, tmp_path, name="paged.jsonl")

    assert [e["proposal_id"] for e in _proposals(_lines(paged))] == sorted(ids)
    assert _lines(paged)[1:-1] == whole[1:-1]
    assert _verify(run, paged)[0] == 0


def test_proposals_changing_below_the_head_as_they_are_read_leave_no_anchor(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    from countersign.infrastructure.persistence.proposal_heads import ProposalHeads

    _decided(deployments(K1), seeded)
    counted = ProposalHeads.count
    # One more counted than read: as an event committed late below the head, or one removed.
    monkeypatch.setattr(ProposalHeads, "count", lambda self: counted(self) + 1)
    path = tmp_path / "a.jsonl"
    code, _out, err = run("audit", "anchor", "--out", str(path))
    assert code == 1
    assert "Busy:" in err
    assert "try again" in err
    assert not path.exists()  # no half-written anchor is left to be kept


def test_an_anchor_changed_after_it_was_read_is_refused_not_checked(
    cs, seeded, deployments, run, tmp_path
):
    """The file is read twice (its integrity, then each proposal against the store): one
    swapped in between, its signature never checked, must not decide the verdict. Here the
    line of the stream cut back is gone from the second read."""
    from countersign.infrastructure.audit.anchor import AnchorFileError, read_anchor
    from countersign.infrastructure.audit.anchor_check import check_anchor

    declined, _, _ = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    _cut(cs, declined, 2)
    anchor = read_anchor(path, K1)
    assert not check_anchor(cs.app, anchor).ok  # as read and checked: the cut is named
    kept = [line for line in path.read_text().splitlines() if declined not in line]
    path.write_text("".join(line + "\n" for line in kept))

    with pytest.raises(AnchorFileError, match="changed while it was checked"):
        check_anchor(cs.app, anchor)


def test_an_anchor_swapped_while_the_chain_is_verified_is_a_usage_error(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    """``audit verify --anchor`` reads the anchor, verifies the whole chain (minutes on a
    large log), then checks the anchor's proposals: a file swapped meanwhile is refused, with
    the fix, not a traceback and not a verdict."""
    from countersign.infrastructure.audit import verify as verifying

    declined, _, _ = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    _cut(cs, declined, 2)
    real = verifying.verify

    def verify_while_swapped(*args: Any, **kwargs: Any) -> Any:
        kept = [line for line in path.read_text().splitlines() if declined not in line]
        path.write_text("".join(line + "\n" for line in kept))
        return real(*args, **kwargs)

    monkeypatch.setattr(verifying, "verify", verify_while_swapped)
    code, out, err = run("audit", "verify", "--anchor", str(path))
    assert code == 2
    assert "--anchor: a.jsonl changed while it was checked" in err
    assert "OK" not in out + err
    assert "Traceback" not in err


@pytest.mark.parametrize("damage", ["no_link", "unreadable", "topic"])
def test_a_damaged_last_event_stops_the_anchor_with_what_names_it(
    cs, seeded, deployments, run, tmp_path, damage
):
    """A writer changed a proposal's last event: its link taken out, its bytes unreadable, or
    its topic one whose event name is no class's (written into the anchor as it was, it made
    the whole anchor one its own check refuses, which showed only when it was checked). No
    anchor is written (one naming no link would be refused by its own check as not what
    ``audit anchor`` wrote), no internal error: what is damaged, that nothing was changed, and
    that ``audit verify`` names it."""
    from tests.test_audit_verify import _rewrite_state

    declined, _, _ = _decided(deployments(K1), seeded)
    last = len(_types(cs, declined))
    if damage == "no_link":
        _rewrite_state(cs, declined, last, lambda state: state.pop("chain"))
    elif damage == "topic":
        _sql(
            cs,
            "UPDATE {table} SET topic=? WHERE originator_id=? AND originator_version=?",
            "countersign.domain.proposal:Proposal.Declined by no one",
            UUID(declined),
            last,
        )
    else:
        _sql(
            cs,
            "UPDATE {table} SET state=? WHERE originator_id=? AND originator_version=?",
            b"\x00not json",
            UUID(declined),
            last,
        )
    path = tmp_path / "a.jsonl"

    code, out, err = run("audit", "anchor", "--out", str(path))

    assert (code, out) == (1, "")
    assert not path.exists()
    assert "a stored record this needs cannot be read (altered or damaged); nothing was " in err
    assert "`countersign audit verify` names the damaged proposals" in err
    assert "Traceback" not in err


def _remade(path: Path, header_change: Any = None, entry_change: Any = None) -> None:
    """An unsigned anchor edited, its SHA-256 made again (nothing else proves it)."""
    header, *entries, end = path.read_text().splitlines()
    document = json.loads(header)
    if header_change is not None:
        header_change(document)
    header = json.dumps(document, sort_keys=True, separators=(",", ":"))
    if entry_change is not None:
        entry = json.loads(entries[0])
        entry_change(entry)
        entries[0] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    body = "".join(line + "\n" for line in (header, *entries))
    ending = json.loads(end)
    ending["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    path.write_text(body + json.dumps(ending) + "\n")


@pytest.mark.parametrize("field", ["made_at", "event"])
def test_an_anchors_text_cannot_write_to_the_operators_terminal(
    cs, seeded, deployments, run, tmp_path, field
):
    """What the command prints of an anchor (when it was made, each proposal's last event)
    is countersign's own text: an unsigned anchor edited to hold a line of its own or a
    terminal's control sequence is refused as not one countersign writes, never printed."""
    declined, _, _ = _decided(deployments(None), seeded)
    path = _anchor(run, tmp_path, keys=None)
    _cut(cs, declined, 2)
    forged = "2026-12-07\x1b[2J\naudit verify: OK, every link holds"

    def header(document: dict[str, Any]) -> None:
        document["made_at"] = forged

    def entry(document: dict[str, Any]) -> None:
        document["event"] = forged

    if field == "made_at":
        _remade(path, header_change=header)
    else:
        _remade(path, entry_change=entry)
    code, out, err = run("audit", "verify", "--anchor", str(path), keys=None)
    assert code == 2
    assert "\x1b" not in out + err
    assert "audit verify: OK" not in out + err
    assert "not one countersign writes" in err or "is not an anchored proposal" in err
