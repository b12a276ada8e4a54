"""Attention's, the notifications' and open work's rows stay exactly what they were while
their handlers get cheaper (issue 27, s21-handlers): every row of their tables rebuilt from
each release's golden stream is compared with a digest taken from the code before (main
b485298), in batches of 1,000 (through the writer process) and of 2 (a proposal's events
spread over batches, so rows kept in a batch are read from the one before). The cheaper
texts of ids and notification ids are the very texts ``str`` and ``uuid5`` make.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import UUID, uuid4, uuid5

import pytest
from countersign.infrastructure.projection_engine.rows import SqlRows
from countersign.projections import base
from countersign.projections.attention import ITEMS, Attention
from countersign.projections.notifications import (
    _NAMESPACE,
    PROPOSALS,
    Notifications,
    notification_id,
)

from tests.support.golden_tables import rebuilt_digests

#: Per golden stream, per table: rows and the digest of their SQLite ``quote()``d values,
#: sorted, as rebuilt by the code before (b485298; the same in batches of 1,000, 7 and 2).
#: Attention's version 3 (a newer proposal for the same thing follows one up, in whatever
#: conversation: ``attention_slots``) changed its items on purpose: ``followed_up`` on ten
#: rows of a41ffac and caf348e that needed no attention anyway, and one needing it no more,
#: caf348e's failed e-mail send beb99277, sent again (58c283d7, another interaction) and
#: carried out; the digests of items and slots are version 3's.
BEFORE = {
    "golden_0a9997d": {
        "attention_items": (5, "d5f4af87e8445c4b"),
        "attention_threads": (5, "be432e0d58a0f835"),
        "attention_slots": (0, "e3b0c44298fc1c14"),
        "notifications": (6, "1a24674aba6ee841"),
        "notification_proposals": (5, "f12ad2a9fe280a47"),
        "webhook_endpoints": (0, "e3b0c44298fc1c14"),
        "open_proposals": (3, "6906bbad14b74293"),
    },
    "golden_a41ffac": {
        "attention_items": (15, "a0fc448bfeeca438"),
        "attention_threads": (14, "a0a28ed6682d945f"),
        "attention_slots": (11, "209dcb45ba8301c2"),
        "notifications": (17, "cd67500bcf02de1d"),
        "notification_proposals": (15, "3bacbaed7439a916"),
        "webhook_endpoints": (0, "e3b0c44298fc1c14"),
        "open_proposals": (6, "abfcf027b5e2c2b9"),
    },
    "golden_caf348e": {
        "attention_items": (21, "3524deaae47b8993"),
        "attention_threads": (20, "8a06f4b56f4c3ade"),
        "attention_slots": (12, "72479efa755a1cd8"),
        "notifications": (23, "b61753bb4521a9a1"),
        "notification_proposals": (21, "ef1f68ffea13a6ba"),
        "webhook_endpoints": (1, "b9545eecf03b1c0e"),
        "open_proposals": (6, "dba7008f9fa8cfd0"),
    },
}


@pytest.mark.parametrize("release", sorted(BEFORE))
@pytest.mark.parametrize("batch_size", [1000, 2])
def test_rebuilt_rows_are_those_of_the_code_before(
    release: str, batch_size: int, tmp_path: Path
) -> None:
    # Notifications' version 3 added ``requested_through`` to its two tables: the digests
    # leave it out, and every golden stream was written before it was recorded (None: the
    # e-mail reads the member's own proposal, tests/test_notification_emails.py).
    digests = rebuilt_digests(
        release,
        tmp_path,
        ("attention", "notifications", "open_work"),
        batch_size,
        without=("requested_through",),
    )
    assert digests == BEFORE[release]


@pytest.mark.parametrize(
    "uuid",
    [
        UUID(int=0),
        UUID(int=1),
        UUID(int=(1 << 128) - 1),
        UUID("00000000-0000-4000-8000-00000000abcd"),
        *(uuid4() for _ in range(50)),
    ],
)
def test_an_ids_text_is_strs(uuid: UUID) -> None:
    base._ID_TEXTS.clear()
    assert base.id_text(uuid) == str(uuid)
    assert base.id_text(uuid) == str(uuid)  # remembered
    assert base.uuid_text(uuid) == str(uuid) == f"{uuid}"


def test_the_text_of_another_kind_of_id_is_its_own_str() -> None:
    class Shown(UUID):
        def __str__(self) -> str:
            return "shown"

    base._ID_TEXTS.clear()
    assert base.id_text(Shown(int=5)) == "shown"
    assert base.uuid_text(Shown(int=5)) == "shown"
    assert base.uuid_text("an id stored as text") == "an id stored as text"


def test_an_id_stored_as_text_is_its_own_text_and_pushes_no_uuid_out() -> None:
    """A plain ``str`` id (decoded anew at every event) is given back as it is, and never
    takes a place in the memory of UUIDs' texts, which would push the aggregates' out."""
    base._ID_TEXTS.clear()
    kept = uuid4()
    assert base.id_text(kept) == str(kept)
    for _ in range(3 * base._ID_TEXTS_MAX):
        text = str(uuid4())
        assert base.id_text(text) is text
    assert list(base._ID_TEXTS.values()) == [(kept, str(kept))]

    class Tagged(str):
        def __str__(self) -> str:
            return "tagged"

    assert base.id_text(Tagged("x")) == "tagged"  # a subclass is still its own ``str``


def test_a_notification_id_is_the_uuid5_of_the_proposal_and_version() -> None:
    for _ in range(200):
        proposal_id, version = str(uuid4()), len(str(uuid4())) + 1
        expected = "msg_" + uuid5(_NAMESPACE, f"{proposal_id}/{version}").hex
        assert notification_id(proposal_id, version) == expected
    # the namespace's hash is copied, never fed: the same id twice
    assert notification_id("p", 1) == notification_id("p", 1)


def _event(proposal: UUID, **fields: Any) -> SimpleNamespace:
    return SimpleNamespace(originator_id=proposal, **fields)


def _rows(overlay: Any = None) -> SqlRows:
    """Rows of an empty SQLite database that is never read (every key is in ``overlay`` or
    known to be missing)."""

    class NoCursor:
        def execute(self, *args: Any) -> Any:
            return SimpleNamespace(fetchone=lambda: None)

    tables = (*Attention.tables, *Notifications.tables)
    return SqlRows(NoCursor(), tables, "sqlite", overlay)  # type: ignore[arg-type]


def _as_row(projection: Any, table: str, stored: Any) -> dict[str, Any]:
    """A row as a batch wrote it (a dict, or its values in column order: ``put_values``),
    as a dict of its columns."""
    if isinstance(stored, tuple):
        shape = next(t for t in projection.tables if t.name == table)
        return dict(zip(shape.column_names(), stored, strict=True))
    assert isinstance(stored, dict)
    return dict(stored)


def test_an_item_and_a_proposal_of_an_earlier_batch_are_read_changed_and_put_again() -> None:
    """A row kept in a batch's own dict is put at its end; the next batch reads it from the
    one before (as the overlay), changes a copy and puts that, leaving the first as it was."""
    proposal = uuid4()
    at = datetime(2026, 12, 3, tzinfo=UTC)
    proposed = _event(
        proposal,
        organization_id=uuid4(),
        interaction_id="conversation",
        section="members",
        kind="update_member",
        requested_by="assistant",
        timestamp=at,
        originator_version=1,
    )
    attention, notifications = Attention(), Notifications()
    first = _rows()
    attention.proposed(proposed, 1, first)
    notifications.proposed(proposed, 1, first)
    attention.end_batch(first)
    notifications.end_batch(first)
    key = (str(proposal),)
    stored = first.written[ITEMS][key]
    before = _as_row(attention, ITEMS, stored)

    second = _rows(first.written)
    failed = _event(proposal, timestamp=at.replace(hour=1), originator_version=2)
    attention.failed(failed, 2, second)
    approved = _event(proposal, approved_by="manager", originator_version=3)
    notifications.approved(approved, 3, second)
    attention.end_batch(second)
    notifications.end_batch(second)

    item = _as_row(attention, ITEMS, second.written[ITEMS][key])
    assert (item["status"], item["open"], item["since"]) == ("failed", True, failed.timestamp)
    # the earlier batch's row is untouched
    assert _as_row(attention, ITEMS, first.written[ITEMS][key]) == before
    changed = _as_row(notifications, PROPOSALS, second.written[PROPOSALS][key])
    assert changed["approvers"] == ["manager"]
    earlier = _as_row(notifications, PROPOSALS, first.written[PROPOSALS][key])
    assert earlier["approvers"] == []


def test_a_batch_that_only_reads_a_proposal_puts_nothing() -> None:
    """Notifications read a proposal for an outcome and an approval it already has; only a
    change is put."""
    proposal = uuid4()
    first = _rows()
    notifications = Notifications()
    proposed = _event(
        proposal,
        organization_id=uuid4(),
        section="members",
        kind="update_member",
        requested_by="assistant",
        timestamp=datetime.now(tz=UTC),
        originator_version=1,
    )
    notifications.proposed(proposed, 1, first)
    notifications.approved(_event(proposal, approved_by="m"), 2, first)
    notifications.end_batch(first)
    second = _rows(first.written)
    notifications.approved(_event(proposal, approved_by="m"), 3, second)  # already there
    notifications.end_batch(second)
    assert second.written[PROPOSALS] == {}
