"""The handlers' shortcuts of s31-handlers (issue 27) keep every row as it was.

A batch's own rows are found by the number of the proposal's UUID (``uuid.int``), not by the
id's text: ``audit_trail``'s proposals and counts, ``analytics``' facts, ``open_work``'s rows,
and the key of ``handback``'s and ``attention``'s kept rows (``KeptRows.texts``).
``analytics`` remembers each day's text (``_day_text``). The golden digests
(``tests/test_handler_rows.py`` and the cards', audit's and analytics' golden tests) hold the
rows; the tests below fail if a shortcut is not taken (a batch reads again, or makes the id's
text again, for a proposal it already has) or takes another proposal's or day's value.
"""

from __future__ import annotations

import ast
import sys
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.domain.messages import credential_note
from countersign.infrastructure.projection_engine.rows import SqlRows
from countersign.projections import analytics, base
from countersign.projections.analytics import Analytics
from countersign.projections.attention import Attention
from countersign.projections.audit_trail import AuditTrail
from countersign.projections.base import Projection
from countersign.projections.handback import Handback
from countersign.projections.open_work import OpenWork

from tests.test_s30_rebuild import _lifecycle, _NoCursor, _rebuilt

QUORUM = {"rule": {"operation": "update_member", "approvals": 2}, "approvals_required": 2}
STEPS = ("Proposed", "Approved", "Approved", "Claimed", "Revalidated", "Declined")

#: Per projection, the tables whose rows of a proposal the batch has made it must not read.
OWN_TABLES: dict[type[Projection], set[str]] = {
    AuditTrail: {"audit_proposals", "audit_approval_counts"},
    Analytics: {"proposal_facts"},
    OpenWork: {"open_proposals"},
    Attention: {"attention_items"},
    Handback: {"handback_proposals"},
}


class _CountedRows(SqlRows):
    """``SqlRows`` that notes the table of every ``get``."""

    def __init__(self, projection: Projection) -> None:
        super().__init__(_NoCursor(), projection.tables, "sqlite")  # type: ignore[arg-type]
        self.reads: list[str] = []

    def get(self, table: str, key: tuple[Any, ...]) -> Any:
        self.reads.append(table)
        return super().get(table, key)


@pytest.mark.parametrize("kind", list(OWN_TABLES), ids=lambda kind: kind.name)
def test_a_batch_finds_its_own_proposal_by_the_ids_value(
    kind: type[Projection], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each event carries a new UUID object equal to the proposal's (as the mapper makes
    them): the batch neither reads its own rows of the proposal again nor makes the id's text
    again after ``Proposed``, and the rows are those of one UUID object for every event."""
    proposal = uuid4()
    module = sys.modules[kind.__module__]
    made: list[Any] = []
    real = module.aggregate_text

    def counted(uuid: Any) -> str:
        made.append(uuid)
        return real(uuid)  # type: ignore[no-any-return]

    monkeypatch.setattr(module, "aggregate_text", counted)
    projection = kind()
    rows = _CountedRows(projection)
    for position, event in enumerate(
        _lifecycle(lambda: UUID(int=proposal.int), UTC, QUORUM, STEPS), start=1
    ):
        projection.process(event, position, rows)
    projection.end_batch(rows)
    assert not OWN_TABLES[kind] & set(rows.reads), rows.reads
    assert len(made) == 1, made
    monkeypatch.undo()
    same = _rebuilt(_lifecycle(lambda: proposal, UTC, QUORUM, STEPS), (kind,))
    fresh = _rebuilt(_lifecycle(lambda: UUID(int=proposal.int), UTC, QUORUM, STEPS), (kind,))
    assert fresh == same
    assert repr(str(proposal)) in repr(same)


def test_two_proposals_of_one_batch_keep_their_own_rows() -> None:
    """Two proposals' lifecycles interleaved in one batch: each keeps its own rows (the
    same as each alone gives), found by its own number."""
    first, second = uuid4(), uuid4()
    one = _lifecycle(lambda: first, UTC, QUORUM, STEPS)
    other = _lifecycle(lambda: second, UTC, None, STEPS[:4])
    for event in other:
        event.interaction_id = "conversation-2"
    kinds = tuple(OWN_TABLES)
    interleaved = [event for pair in zip(one, other, strict=False) for event in pair]
    interleaved += one[len(other) :]
    together = _rebuilt(interleaved, kinds)
    for name, tables in _rebuilt(one, kinds).items():
        for table, stored in tables.items():
            for row in stored:
                if table not in {"audit_events", "handback_messages", "proposal_approvals"}:
                    assert row in together[name][table], (name, table, row)
    claimed = [row for row in together["open_work"]["open_proposals"] if row[0][0] == "str"]
    assert {row[0][1] for row in claimed} == {repr(str(second))}  # the first one was declined


def test_each_proposal_counts_in_its_own_day(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proposals of one batch stamped on three days, two on the same day: each fact's
    ``proposed_day`` and roll-up row is its own day's, whatever days were remembered before
    it; the memory of days stays within its bound."""
    monkeypatch.setattr(analytics, "_DAYS_MAX", 2)
    analytics._DAYS.clear()
    start = datetime(2026, 12, 5, 23, 59, 59, tzinfo=UTC)
    offsets = (
        timedelta(0),
        timedelta(seconds=2),
        timedelta(seconds=3),
        timedelta(days=1, seconds=2),
    )
    events = []
    for offset in offsets:
        for event in _lifecycle(uuid4, UTC, None, ("Proposed",)):
            event.timestamp = start + offset
            events.append(event)
    rebuilt = _rebuilt(events, (Analytics,))["analytics"]
    days = [fact[6] for fact in rebuilt["proposal_facts"]]
    assert days == [
        ("str", repr(d)) for d in ("2026-12-05", "2026-12-06", "2026-12-06", "2026-12-07")
    ]
    roll_ups = sorted((row[0][1], row[4][1]) for row in rebuilt["daily_outcomes"])
    assert roll_ups == [("'2026-12-05'", "1"), ("'2026-12-06'", "2"), ("'2026-12-07'", "1")]
    assert len(analytics._DAYS) <= 2
    analytics._DAYS.clear()


def test_an_ids_text_names_every_byte_in_its_place() -> None:
    """``uuid_text`` makes the text from the UUID's bytes in groups (4, 2, 2, 2 and 6): a
    UUID whose every byte differs is written as ``str`` writes it, and so is each UUID with
    a single byte set, at each place."""
    every = UUID("00112233-4455-6677-8899-aabbccddeeff")
    assert base.uuid_text(every) == str(every)
    for place in range(16):
        one = UUID(int=0xA5 << (8 * place))
        assert base.uuid_text(one) == str(one)


@pytest.mark.parametrize(
    ("credential", "note"),
    [
        (None, ""),
        ("", ""),
        ("person", ""),
        ("unknown", ""),
        ("person:someone", ""),
        ("approver_token:billing", "billing"),
        ("passkey", "(passkey)"),
    ],
)
def test_an_approvals_note_in_the_trail_is_as_before(credential: Any, note: str) -> None:
    """The trail's approval summary says how an approval was given unless a person gave it
    (``credential_note`` is not called for none or ``person``, which it words as nothing)."""
    events = _lifecycle(uuid4, UTC, None, ("Proposed", "Approved"))
    events[1].credential = credential
    trail = _rebuilt(events, (AuditTrail,))["audit_trail"]["audit_events"]
    summary = ast.literal_eval(trail[1][8][1])  # the repr of a str
    assert summary == ("approved " + credential_note(credential)).strip()
    assert note in summary
