"""``audit verify`` checks the stored snapshots (infrastructure/audit/snapshot_check.py): a
snapshot is a cache, but a cold load starts from it, so a writer who edits one (here a club's,
its refund policy lowered to one approval) changes what every cold process decides while each
event, link and anchor still holds. Each stored snapshot must be its events replayed; one that
is not is named, on SQLite and PostgreSQL, in English and French."""

from __future__ import annotations

from countersign.domain.club.organization import Organization
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.persistence.event_store import EventSourcedStore
from countersign.infrastructure.persistence.stored_events import _table_name

from tests.test_audit_anchor import _verify, run
from tests.test_audit_verify import _sql
from tests.test_stored_snapshots import _replayed, _store_snapshot

__all__ = ["run"]

REFUND = "order.refund_missing_discount"


def _snapshots_table(cs: Countersign) -> str:
    return _table_name(cs.app.snapshot_recorder)


def test_a_club_snapshot_edited_to_lower_a_policy_fails_audit_verify(cs, seeded, run):
    club = Organization.create_id("granite")
    _store_snapshot(cs, _replayed(cs, club))  # as a commit across the interval leaves it
    code, document = _verify(run, None)
    assert code == 0, document  # an honest snapshot: its events replayed

    forged = _replayed(cs, club)
    assert forged.policies[REFUND]["approvals"] == 2  # seeded: two approvers above $100
    forged._policies = {**forged.policies, REFUND: {**forged.policies[REFUND], "approvals": 1}}
    table = _snapshots_table(cs)
    _sql(cs, f"DELETE FROM {table} WHERE originator_id=?", club)
    _store_snapshot(cs, forged)
    cold = EventSourcedStore(cs.app).get(club, Organization)
    assert cold.approval_policy(REFUND).approvals == 1  # what a cold process now decides on

    code, document = _verify(run, None)

    assert code == 5
    snapshots = document["snapshots"]
    assert (snapshots["ok"], snapshots["not_as_events"]) == (False, 1)
    assert snapshots["checked"] >= 1
    [difference] = snapshots["differences"]
    assert difference == {
        "stream_id": str(club),
        "kind": "Organization",
        "version": forged.version,
        "problem": "changed",
    }
    code, out, err = run("audit", "verify")
    assert (code, "OK" in out) == (5, False)
    assert "audit verify: SNAPSHOTS CHANGED: 1 of" in err
    assert f"  Organization stream {club}: its snapshot at version {forged.version} (changed)" in (
        err
    )
    code, _out, err = run("audit", "verify", "--language", "fr")
    assert "audit verify : INSTANTANÉS MODIFIÉS : 1 des" in err
    said = f"  flux Organization {club} : son instantané à la version {forged.version} (modifié)"
    assert said in err
    assert "Traceback" not in err


def test_the_snapshots_check_says_its_progress_once_it_runs_a_while(cs, seeded, run, monkeypatch):
    """Each stored snapshot is a replay of its aggregate: thousands take a while, so the check
    says how far it is on stderr, counted against the snapshots stored, in the reader's
    language (a short one, within ``VERIFY_QUIET_FOR``, stays silent)."""
    from countersign.infrastructure.entrypoints.cli import projections

    for slug in ("granite", "maple"):
        _store_snapshot(cs, _replayed(cs, Organization.create_id(slug)))
    code, _out, err = run("audit", "verify")
    assert code == 0
    assert "snapshots" not in err  # within the quiet seconds: nothing said
    monkeypatch.setattr(projections, "VERIFY_QUIET_FOR", 0.0)

    code, _out, err = run("audit", "verify")

    assert code == 0
    assert "audit verify: stored snapshots: 2/2 snapshots, " in err
    code, _out, err = run("audit", "verify", "--language", "fr")
    assert code == 0
    assert "audit verify : instantanés stockés : 2/2 instantanés, " in err
