"""What ``audit verify --anchor`` accepts of an anchor where seal keys are configured, and
what it says of the events an anchor does not cover (docs/design.md, "Anchors").

- Where every proposal must be sealed (``--require-seals``, ``COUNTERSIGN_SEALS_REQUIRED``),
  an unsigned anchor is refused: whoever can write where it is kept can make one of a store
  cut back, and it passed, said to be unsigned. An anchor signed with a retired key the
  configured keys still list passes, and says so; one signed with a key not listed fails.
- The events recorded after the anchor was made are counted, their proposals listed (a
  bounded list), and ``--max-unanchored N`` fails the check when there are more than N.

Every command is run as a user would, through ``main``, on both backends."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA
from tests.test_audit_anchor import KEYS, _anchor, _decided, _verify
from tests.test_event_seals import K1, K2_THEN_K1, SECRET_1, SECRET_2, _propose, _types

#: k2 seals now, k1 retired and still listed.
RING = {**KEYS, "k2,k1": f"k2:{SECRET_2},k1:{SECRET_1}"}

REQUIRED = "COUNTERSIGN_SEALS_REQUIRED"


@pytest.fixture
def run(database_url: str, capsys: Any, monkeypatch: Any) -> Any:
    """tests/test_audit_anchor.py's ``run``, with the key ring ``k2,k1`` too (``RING``), and
    ``COUNTERSIGN_SEALS_REQUIRED`` unset unless a test sets it."""
    monkeypatch.delenv(REQUIRED, raising=False)

    def command(*argv: str, keys: str | None = "k1") -> tuple[int, str, str]:
        if keys is None:
            monkeypatch.delenv("COUNTERSIGN_SEAL_KEYS", raising=False)
        else:
            monkeypatch.setenv("COUNTERSIGN_SEAL_KEYS", RING[keys])
        capsys.readouterr()
        code = main([*argv, "--database", database_url])
        out, err = capsys.readouterr()
        return code, out, err

    return command


def test_where_seals_are_required_an_unsigned_anchor_is_refused_saying_what_to_do(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    _decided(deployments(K1), seeded)
    unsigned = _anchor(run, tmp_path, keys=None)

    # Before: accepted, and said to be unsigned (exit 0).
    code, out, err = run("audit", "verify", "--require-seals", "--anchor", str(unsigned))
    assert code == 2
    assert "--anchor: a.jsonl is unsigned, and every anchor must be signed here" in err
    assert "`countersign audit anchor` wrote with the seal keys configured" in err
    assert "OK" not in out
    assert "Traceback" not in err
    monkeypatch.setenv(REQUIRED, "true")
    code, out, err = run("audit", "verify", "--json", "--anchor", str(unsigned))
    assert code == 2
    assert json.loads(out)["error"] == "usage"
    assert "COUNTERSIGN_SEALS_REQUIRED=true" in err
    # A signed one passes, where seals are required.
    signed = _anchor(run, tmp_path, name="signed.jsonl")
    code, document = _verify(run, signed)
    assert code == 0, document
    assert document["anchor"]["key_current"] is True


def test_without_the_requirement_an_unsigned_anchor_passes_and_says_it_could_be_signed(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    unsigned = _anchor(run, tmp_path, keys=None)

    code, out, _err = run("audit", "verify", "--anchor", str(unsigned))

    assert code == 0
    assert (
        "UNSIGNED though seal keys are configured, accepted only because signed anchors are "
        "not required here: it proves no more than the place it was kept"
    ) in out
    assert "--require-signed-anchor or --require-seals refuses it" in out
    assert _verify(run, unsigned)[1]["anchor"]["keys_configured"] is True


def test_an_anchor_signed_with_a_retired_key_still_listed_passes_and_says_so(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path, keys="k1")
    monkeypatch.setenv(REQUIRED, "true")

    code, out, _err = run("audit", "verify", "--anchor", str(path), keys="k2,k1")

    assert code == 0
    assert (
        "signed with key 'k1', a retired key the configured keys still list (not the sealing "
        "key): it verifies while they list it"
    ) in out
    document = _verify(run, path, keys="k2,k1")[1]["anchor"]
    assert (document["key_id"], document["key_current"]) == ("k1", False)
    # Once the key ring no longer lists it, the anchor fails, naming the key.
    code, _out, err = run("audit", "verify", "--anchor", str(path), keys="k2")
    assert code == 2
    assert "the anchor is signed with key 'k1', which is not configured" in err
    assert SECRET_1 not in err


def test_the_anchor_of_a_rotated_deployment_is_checked_under_its_new_sealing_key(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K2_THEN_K1), seeded)
    path = _anchor(run, tmp_path, keys="k2,k1")

    code, document = _verify(run, path, keys="k2,k1")

    assert code == 0, document
    assert (document["anchor"]["key_id"], document["anchor"]["key_current"]) == ("k2", True)
    assert _verify(run, path, keys="k1")[0] == 2  # k2 not listed: refused


def _after_the_anchor(cs: Any, seeded: dict[str, Any], deployments: Any, pending: str) -> Any:
    """After the anchor: a new proposal approved and carried out (its order's events are no
    proposal's), and the anchored pending one declined. The new one's id, and the proposals'
    events recorded."""
    later = _propose(deployments(K1), seeded, order="refund-two-approvers")
    assert deployments(K1).proposals.approve(later, AVA).status == "succeeded"
    deployments(K1).proposals.decline(pending, AVA)
    return later, len(_types(cs, later)) + len(_types(cs, pending)) - 1


def test_the_events_after_the_anchor_are_counted_and_their_proposals_listed(
    cs, seeded, deployments, run, tmp_path
):
    _, _, pending = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    later, events = _after_the_anchor(cs, seeded, deployments, pending)

    code, document = _verify(run, path)

    assert code == 0, document
    unanchored = document["anchor"]["unanchored"]
    assert unanchored["events"] == events
    assert (unanchored["proposals"], unanchored["new_proposals"]) == (2, 1)
    assert unanchored["after_log_position"] == document["anchor"]["log_position"]
    listed = {u["proposal_id"]: u for u in unanchored["listed"]}
    assert listed[later]["made_after_anchor"] is True
    assert (listed[later]["first_version"], listed[later]["events"]) == (1, len(_types(cs, later)))
    declined = listed[pending]
    assert declined["made_after_anchor"] is False
    assert declined["first_version"] == 2
    assert declined["last_version"] == len(_types(cs, pending))
    code, out, _err = run("audit", "verify", "--anchor", str(path))
    assert code == 0
    assert f"Not covered by it: {events} events of 2 proposals, 1 of them made since" in out
    assert f"  proposal {later}: made after it (events 1 to {len(_types(cs, later))})" in out
    assert f"  proposal {pending}: events 2 to {len(_types(cs, pending))} after it" in out


def test_an_anchor_of_the_latest_state_says_it_covers_every_event(
    cs, seeded, deployments, run, tmp_path
):
    _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)

    code, out, _err = run("audit", "verify", "--anchor", str(path))

    assert code == 0
    assert "No event was recorded after it (up to log position" in out
    assert _verify(run, path)[1]["anchor"]["unanchored"]["events"] == 0


def test_max_unanchored_fails_the_check_beyond_it_and_needs_an_anchor(
    cs, seeded, deployments, run, tmp_path
):
    _, _, pending = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    _, events = _after_the_anchor(cs, seeded, deployments, pending)

    code, out, err = run(
        "audit", "verify", "--anchor", str(path), "--max-unanchored", str(events - 1)
    )
    assert code == 5
    assert "OK" not in out
    assert (
        f"audit verify: UNANCHORED: {events} events of proposals recorded after the anchor made"
    ) in err
    assert f"more than --max-unanchored {events - 1}: make an anchor now" in err
    assert f"Not covered by it: {events} events of 2 proposals" in err
    code, out, _err = run(
        "audit", "verify", "--json", "--anchor", str(path), "--max-unanchored", "0"
    )
    assert code == 5
    document = json.loads(out)
    assert document["ok"] is False
    assert document["anchor"]["ok"] is False
    assert document["anchor"]["not_as_anchored"] == 0
    assert document["anchor"]["unanchored"]["max_unanchored"] == 0
    code, out, _err = run("audit", "verify", "--anchor", str(path), "--max-unanchored", str(events))
    assert code == 0
    code, _out, err = run("audit", "verify", "--max-unanchored", "5")
    assert code == 2
    assert "--max-unanchored counts the events recorded after an anchor" in err
    with pytest.raises(SystemExit) as refused:  # argparse's own usage error
        run("audit", "verify", "--anchor", str(path), "--max-unanchored", "-1")
    assert refused.value.code == 2


def test_the_count_is_read_a_window_at_a_time_its_list_bounded_with_its_progress(
    cs, seeded, deployments, run, tmp_path, monkeypatch
):
    """Each proposal is counted once however many windows its events span, the list stops at
    ``LISTED`` (the count does not), and a long count says its progress on stderr."""
    from countersign.infrastructure.audit import unanchored
    from countersign.infrastructure.entrypoints.cli import anchors

    _, _, pending = _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    later, events = _after_the_anchor(cs, seeded, deployments, pending)
    whole = _verify(run, path)[1]["anchor"]["unanchored"]
    monkeypatch.setattr(unanchored, "WINDOW", 1)
    monkeypatch.setattr(unanchored, "LISTED", 1)
    monkeypatch.setattr(anchors, "QUIET_FOR", 0.0)

    code, out, err = run("audit", "verify", "--anchor", str(path))

    assert code == 0
    assert f"Not covered by it: {events} events of 2 proposals" in out
    assert "  and 1 more (--json lists the first 1)" in out
    assert "audit verify --anchor: events after it:" in err
    paged = _verify(run, path)[1]["anchor"]["unanchored"]
    assert {k: v for k, v in paged.items() if k != "listed"} == {
        k: v for k, v in whole.items() if k != "listed"
    }
    assert paged["listed"] == whole["listed"][:1]
    assert paged["listed"][0]["proposal_id"] in (later, pending)


def test_a_proposal_with_a_gap_after_the_anchor_is_counted_once(
    cs, seeded, deployments, run, tmp_path
):
    """A writer removed an event recorded after the anchor from the middle of a stream (the
    chain's check names the gap): the events after it are still one proposal's, not two."""
    from tests.test_audit_verify import _sql

    _decided(deployments(K1), seeded)
    path = _anchor(run, tmp_path)
    later = _propose(deployments(K1), seeded, order="refund-two-approvers")
    assert deployments(K1).proposals.approve(later, AVA).status == "succeeded"
    versions = len(_types(cs, later))
    assert versions >= 4
    _sql(
        cs,
        "DELETE FROM {table} WHERE originator_id=? AND originator_version=?",
        UUID(later),
        3,
    )

    code, document = _verify(run, path)

    assert code == 5  # the gap
    unanchored = document["anchor"]["unanchored"]
    assert (unanchored["proposals"], unanchored["new_proposals"]) == (1, 1)
    assert unanchored["events"] == versions - 1
    [listed] = unanchored["listed"]
    assert (listed["proposal_id"], listed["first_version"]) == (later, 1)
