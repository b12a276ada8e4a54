"""What ``audit verify`` says on the terminal when the chain is broken: each broken proposal,
what the auditor does next, and still what the anchor does not cover (the events recorded
after it), as an OK check says it. Each command is run as an auditor runs it, through
``main``, on both backends; the tamperer writes the database directly."""

from __future__ import annotations

from typing import Any

from tests.test_audit_anchor import _anchor, _decided, run  # noqa: F401 - fixture
from tests.test_audit_verify import _rewrite_state
from tests.test_event_seals import _propose


def _approver_changed(state: dict[str, Any]) -> None:
    state["approved_by"] = "ben@granite.example"


def test_a_broken_chain_still_says_what_came_after_the_anchor(
    cs,
    seeded,
    run,  # noqa: F811
    tmp_path,
):
    """The anchor's links held (no link was made again) and one proposal was made after it: a
    link broken inside an anchored stream must not hide that, and what the anchor cannot
    show, from the report a person reads (--json had it; the words left it out)."""
    _, succeeded, _ = _decided(cs, seeded, keys=None)
    path = _anchor(run, tmp_path, keys=None)
    later = _propose(cs, seeded, order="refund-lost-response")  # one event after the anchor
    _rewrite_state(cs, succeeded, 2, _approver_changed)  # its link not made again

    code, out, err = run("audit", "verify", "--anchor", str(path), keys=None)

    assert code == 5
    assert out == ""
    assert f"  proposal {succeeded} version 2: content or time does not match" in err
    assert "audit verify: Not covered by it: 1 event of 1 proposal, 1 of them made since, " in err
    # Not "none removed or changed since": the anchor vouches for links, and a content
    # changed under its link is the chain's finding.
    assert "none removed or changed" not in err
    assert f"  proposal {later}: made after it (event 1)" in err

    code, _, err = run("audit", "verify", "--anchor", str(path), "--language", "fr", keys=None)
    assert code == 5
    assert "audit verify : Non couvert par elle : 1 événement sur 1 proposition, " in err


def test_a_broken_chain_says_what_to_do_next_in_english_and_french(cs, seeded, run):  # noqa: F811
    _, succeeded, _ = _decided(cs, seeded, keys=None)
    _rewrite_state(cs, succeeded, 2, _approver_changed)

    code, _, err = run("audit", "verify", keys=None)
    assert code == 5
    assert err.splitlines()[-1] == (
        "  What to do: read each one with `countersign history ID` (what is stored now) and "
        'compare it with the same proposal in a backup made before (docs/deploy.md, "Backups '
        'and restore"); restore what was changed from it.'
    )
    code, _, err = run("audit", "verify", "--language", "fr", keys=None)
    assert code == 5
    assert err.splitlines()[-1] == (
        "  Que faire : lisez chacune avec `countersign history ID` (ce qui est enregistré "
        "maintenant), comparez-la à la même proposition dans une sauvegarde antérieure "
        "(docs/deploy.md, « Backups and restore ») et restaurez à partir de celle-ci ce qui a "
        "été modifié."
    )
