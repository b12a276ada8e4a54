"""The audit trail's and analytics' rows stay exactly what they were while their handlers get
cheaper (issue 27): every row of their tables rebuilt from each release's golden stream is
compared with a digest taken from the code before; analytics' seconds are the floats
``round`` made; and what the handlers remember within a batch (a proposal's trail row, the
roll-up rows the batch moved proposals out of) is never carried into another batch.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import uuid4

import pytest
from countersign.projections.analytics import Analytics, _seconds
from countersign.projections.audit_trail import AuditTrail

from tests.support.golden_tables import rebuilt_digests

#: Per golden stream, per table: rows and the digest of their SQLite ``quote()``d values,
#: sorted, as rebuilt by the code before the handlers changed (1af7e67). ``proposal_facts``'
#: were taken again when the table gained ``already_so`` (analytics version 5): False in every
#: row, since no release of these streams could say it; every other table's rows unchanged.
BEFORE = {
    "golden_0a9997d": {
        "audit_proposals": (5, "c070c3757091b850"),
        "audit_approval_counts": (2, "d8841c28a217f2db"),
        "audit_events": (15, "1a1adbe9b17f9146"),
        "policy_changes": (0, "e3b0c44298fc1c14"),
        "permission_changes": (0, "e3b0c44298fc1c14"),
        "analytics_organizations": (2, "91a28b6e88e768e3"),
        "proposal_facts": (5, "3a24672ba6c3eb8e"),  # with already_so (below)
        "proposal_approvals": (2, "59b5d48b0b9b091c"),
        "daily_outcomes": (5, "f5ee75c98d034b42"),
    },
    "golden_a41ffac": {
        "audit_proposals": (15, "dced637275e77298"),
        "audit_approval_counts": (8, "f50ed14ddca74639"),
        "audit_events": (48, "693bd0347f579b0a"),
        # Taken again when the table gained require_passkey (each row False: no policy of
        # these releases required passkeys); every other table's rows are as before.
        "policy_changes": (1, "7ec687b167731d93"),
        "permission_changes": (0, "e3b0c44298fc1c14"),
        "analytics_organizations": (2, "91a28b6e88e768e3"),
        "proposal_facts": (15, "6f35c3d3aa10537b"),  # with already_so
        "proposal_approvals": (8, "b2d97755f0672134"),
        "daily_outcomes": (13, "6788cb8120c08ec8"),
    },
    "golden_caf348e": {
        "audit_proposals": (21, "5f32d0410a73b57f"),
        "audit_approval_counts": (13, "0e8ae183449960ff"),
        "audit_events": (77, "60172cb86a5f7cce"),
        "policy_changes": (2, "4be2985fcdc04db8"),  # with require_passkey, as above
        "permission_changes": (2, "4406062c8ac1dcc3"),
        "analytics_organizations": (2, "91a28b6e88e768e3"),
        "proposal_facts": (21, "c10a702345f2bdcc"),  # with already_so
        "proposal_approvals": (14, "269c7648a4415c4b"),
        "daily_outcomes": (17, "29352b559a0e8307"),
    },
}


@pytest.mark.parametrize("release", sorted(BEFORE))
@pytest.mark.parametrize("batch_size", [1000, 2])
def test_rebuilt_rows_are_those_of_the_code_before(
    release: str, batch_size: int, tmp_path: Path
) -> None:
    """In batches of 1,000 (a proposal's events in one batch) and of 2 (spread over many)."""
    digests = rebuilt_digests(release, tmp_path, ("audit_trail", "analytics"), batch_size)
    assert digests == BEFORE[release]


def test_seconds_are_the_floats_round_makes() -> None:
    """``_seconds`` counts whole microseconds instead of rounding a float to decimals; the
    floats are the same, ties of half a millisecond and very long times included."""
    since = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    picks = random.Random(27)
    micros = [0, 1, 499, 500, 501, 999, 1_000, 1_500, 2_500, 3_123_456, 2**50 - 1, 2**50]
    micros += [2**50 + 500, 10**16 + 1, -1, -500, -1_500, -3_123_456]
    for _ in range(20_000):
        whole = picks.choice([10**3, 10**6, 10**9, 10**12, 10**14]) * picks.randrange(1, 1000)
        micros.append(whole + picks.choice([0, 1, 499, 500, 501, 999, picks.randrange(1000)]))
    for count in micros:
        until = since + timedelta(microseconds=count)
        expected = round((until - since).total_seconds(), 3)
        assert repr(_seconds(since, until)) == repr(expected), count


# -- What a batch remembers stays in that batch ------------------------------------------------


class _Rows:
    """The ``Rows`` port over plain dicts: one batch's rows over what earlier batches wrote."""

    def __init__(self, stored: dict[str, dict[tuple[Any, ...], dict[str, Any]]]) -> None:
        self.tables = {name: dict(rows) for name, rows in stored.items()}
        self.batch: dict[Any, Any] = {}

    def _table(self, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
        return self.tables.setdefault(table, {})

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        row = self._table(table).get(key)
        return None if row is None else dict(row)

    def put(self, table: str, row: dict[str, Any]) -> None:
        spec = next(t for p in (AuditTrail, Analytics) for t in p.tables if t.name == table)
        self._table(table)[tuple(row[k] for k in spec.key)] = dict(row)

    def update(self, table: str, key: tuple[Any, ...], **changes: Any) -> dict[str, Any] | None:
        row = self._table(table).get(key)
        if row is None:
            return None
        row.update(changes)
        return dict(row)

    def delete(self, table: str, key: tuple[Any, ...]) -> None:
        self._table(table).pop(key, None)


class Proposed(SimpleNamespace):
    pass


class Approved(SimpleNamespace):
    pass


AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def _proposed(proposal: Any) -> Proposed:
    return Proposed(
        originator_id=proposal,
        originator_version=1,
        timestamp=AT,
        chain="c1",
        organization_id=uuid4(),
        kind="order.refund_missing_discount",
        section="orders",
        requested_by="ava@granite.example",
        preview={"amount_cents": 1200, "currency": "CAD"},
    )


def _approved(proposal: Any) -> Approved:
    return Approved(
        originator_id=proposal,
        originator_version=2,
        timestamp=AT + timedelta(minutes=5),
        chain="c2",
        approved_by="mia@granite.example",
    )


def test_the_audit_trail_reads_a_proposal_again_in_each_batch() -> None:
    """A batch that put a proposal and then failed is not written: the next batch, over the
    same stored rows, finds no such proposal, and its trail rows say so (as they did when
    every event read the proposal's row)."""
    trail, proposal = AuditTrail(), uuid4()
    failed = _Rows({})
    trail.proposed(_proposed(proposal), 1, failed)
    assert failed.tables["audit_proposals"]  # put, then the batch fails: nothing is written

    retried = _Rows({})
    trail.approved(_approved(proposal), 2, retried)
    trail.end_batch(retried)

    row = retried.tables["audit_events"][(2,)]
    assert (row["organization_id"], row["operation"]) == (None, None)
    assert row["summary"] == "approved"


def test_analytics_forgets_the_proposals_of_a_batch_that_failed() -> None:
    """A batch that proposed a proposal and then failed is not written, and what it noted for
    the roll-ups goes with it: the next batch rolls up its own proposals only."""
    analytics = Analytics()
    failed = _Rows({})
    analytics.proposed(_proposed(uuid4()), 1, failed)  # no end_batch: the batch fails

    retried = _Rows({})
    analytics.proposed(_proposed(uuid4()), 1, retried)
    analytics.end_batch(retried)

    roll_ups = [(key[3], row["proposals"]) for key, row in retried.tables["daily_outcomes"].items()]
    assert roll_ups == [("pending", 1)]


def test_the_audit_trail_counts_approvals_from_the_stored_count_in_each_batch() -> None:
    """A proposal needing two approvals, approved once in a written batch: a failed batch's
    second approval is not counted by the batch after it, which reads the stored count."""
    trail, proposal = AuditTrail(), uuid4()
    written = _Rows({})
    proposed = _proposed(proposal)
    proposed.policy = {"approvals_required": 2}
    trail.proposed(proposed, 1, written)
    trail.approved(_approved(proposal), 2, written)
    trail.end_batch(written)
    assert written.tables["audit_events"][(2,)]["summary"] == "approved (1 of 2)"

    failed = _Rows(written.tables)
    trail.approved(_approved(proposal), 3, failed)  # no end_batch: the batch fails
    assert failed.tables["audit_events"][(3,)]["summary"] == "approved (2 of 2)"

    retried = _Rows(written.tables)
    trail.approved(_approved(proposal), 3, retried)
    trail.end_batch(retried)
    assert retried.tables["audit_events"][(3,)]["summary"] == "approved (2 of 2)"
    assert retried.tables["audit_approval_counts"][(str(proposal),)]["approvals"] == 2


def test_analytics_batches_in_flight_side_by_side_each_roll_up_their_own() -> None:
    """Two batches of one shared projection in flight at once (the web server's threads catch
    projections up side by side): each keeps what it noted in its own rows (``rows.batch``),
    so neither loses the other's roll-ups, as one memory on the projection did."""
    analytics = Analytics()
    first, second = _Rows({}), _Rows({})
    analytics.proposed(_proposed(uuid4()), 1, first)
    analytics.proposed(_proposed(uuid4()), 1, second)
    analytics.proposed(_proposed(uuid4()), 2, first)
    analytics.end_batch(first)
    analytics.end_batch(second)

    for rows, proposed in ((first, 2), (second, 1)):
        roll_ups = rows.tables["daily_outcomes"]
        assert sorted(key[3] for key in roll_ups) == ["pending"] * proposed  # an org each
        assert sum(row["proposals"] for row in roll_ups.values()) == proposed
