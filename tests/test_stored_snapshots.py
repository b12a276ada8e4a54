"""Stored snapshots (infrastructure/persistence/stored_snapshots.py): a cold load starts from
the newest snapshot and replays only the events after it, and gets exactly what replaying
every event gets; a snapshot is a cache, so one that cannot be read is ignored."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization
from countersign.domain.club.passkeys import PasskeyRing
from countersign.domain.errors import ConcurrencyConflictError
from countersign.infrastructure.persistence import store_sql, stored_snapshots
from countersign.infrastructure.persistence.event_store import EventSourcedStore
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

FORM = BroadcastForm.create_id(Organization.create_id("granite"))


def _cold(cs: Any, interval: int = stored_snapshots.SNAPSHOT_INTERVAL) -> EventSourcedStore:
    """A store holding nothing yet: what a new process has."""
    return EventSourcedStore(cs.app, snapshot_interval=interval)


def _replayed(cs: Any, aggregate_id: UUID) -> Aggregate:
    """Every event replayed (the library's repository has no snapshot store)."""
    aggregate: Aggregate = cs.app.repository.get(aggregate_id)
    return aggregate


def _state(aggregate: Aggregate) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k != "_pending_events"}


def _stored(cs: Any, aggregate_id: UUID) -> list[int]:
    """The versions of the aggregate's stored snapshots."""
    return [s.originator_version for s in cs.app.snapshot_recorder.select_events(aggregate_id)]


def _store_snapshot(cs: Any, aggregate: Aggregate) -> None:
    cs.app.snapshot_recorder.insert_events([stored_snapshots.take(cs.app.mapper, aggregate)])


def _use_form(store: EventSourcedStore, drafts: int) -> None:
    """Apply drafts and send each: three events a round."""
    for n in range(drafts):
        form = store.get(FORM, BroadcastForm)
        form.apply_draft({"leagues": ["Thursday Seniors"]}, f"Draft {n}", "Body", uuid4())
        proposal = uuid4()
        form.start_send(proposal, form.drafts_applied, f"key:{proposal}", recipients=3)
        form.settle_send(proposal, delivery_ref=f"msg_{n}", sent_by="ava@example.org")
        store.save(form)


def _snapshotted_ids(cs: Any) -> dict[UUID, str]:
    ids: dict[UUID, str] = {}
    for notification in cs.app.recorder.select_notifications(1, limit=100_000):
        cls = notification.topic.rsplit(".", 1)[0]
        if cls in stored_snapshots.SNAPSHOTTED:
            ids[UUID(str(notification.originator_id))] = cls
    return ids


def test_a_cold_load_from_a_snapshot_equals_replaying_every_event(cs, seeded):
    _use_form(cs.store, 2)
    ids = _snapshotted_ids(cs)
    classes = set(ids.values())
    assert {get_topic(BroadcastForm), get_topic(Organization)} <= classes
    for aggregate_id in ids:
        _store_snapshot(cs, _replayed(cs, aggregate_id))
    for aggregate_id, cls in ids.items():
        loaded = _cold(cs).get(aggregate_id, Aggregate)
        assert _state(loaded) == _state(_replayed(cs, aggregate_id)), cls
    # ... and after more events than the snapshot holds.
    _use_form(cs.store, 2)
    assert _stored(cs, FORM) == [3 * 2 + 1]
    assert _state(_cold(cs).get(FORM, BroadcastForm)) == _state(_replayed(cs, FORM))


def test_a_commit_crossing_the_interval_stores_a_snapshot_of_what_it_wrote(cs, seeded):
    store = _cold(cs, interval=5)
    _use_form(store, 2)  # versions 4, 7: crosses 5
    assert _stored(cs, FORM) == [7]
    _use_form(store, 2)  # versions 10, 13: crosses 10, and the older snapshot goes
    assert _stored(cs, FORM) == [10]
    loaded = _cold(cs).get(FORM, BroadcastForm)
    assert loaded.version == 13
    assert _state(loaded) == _state(_replayed(cs, FORM))


def test_the_approve_cycle_reads_no_snapshot_when_the_process_holds_the_aggregate(cs, seeded):
    store = _cold(cs)
    _use_form(store, 2)
    held = store.get(FORM, BroadcastForm)
    cs.app.snapshot_recorder.insert_events(
        [StoredEvent(originator_id=FORM, originator_version=held.version, topic="x", state=b"")]
    )
    # Held aggregates are caught up from their version: no snapshot is read at all.
    assert store._select([(FORM, held.version)], ()) == []


def test_a_snapshot_never_hides_a_later_event(cs, seeded, other):
    _use_form(cs.store, 1)
    _store_snapshot(cs, _replayed(cs, FORM))
    _use_form(other.store, 2)  # another process moves on, storing no snapshot
    loaded = _cold(cs).get(FORM, BroadcastForm)
    assert loaded.version == 1 + 3 * 3
    assert _state(loaded) == _state(_replayed(cs, FORM))


def test_a_snapshot_newer_than_the_events_is_ignored(cs, seeded):
    _use_form(cs.store, 1)
    ahead = _replayed(cs, FORM)
    ahead.__dict__["_version"] = 1000
    ahead.__dict__["subject"] = "from the future"
    _store_snapshot(cs, ahead)
    loaded = _cold(cs).get(FORM, BroadcastForm)
    assert loaded.version == 4
    assert _state(loaded) == _state(_replayed(cs, FORM))


def _tampered(cs: Any, topic: str, state: bytes) -> StoredEvent:
    version = _replayed(cs, FORM).version
    return StoredEvent(originator_id=FORM, originator_version=version, topic=topic, state=state)


def _snapshot_state(cs: Any, **changes: Any) -> bytes:
    stored = stored_snapshots.take(cs.app.mapper, _replayed(cs, FORM))
    state = cs.app.mapper.transcoder.decode(stored.state)
    for key, value in changes.items():
        if key == "class_version":
            state["state"]["class_version"] = value
        else:
            state[key] = value
    encoded: bytes = cs.app.mapper.transcoder.encode(state)
    return encoded


@pytest.mark.parametrize(
    "kind",
    ["foreign event topic", "foreign class", "not a snapshotted class", "garbage", "future"],
)
def test_an_unreadable_snapshot_is_ignored_and_the_events_replayed(cs, seeded, caplog, kind):
    _use_form(cs.store, 2)
    snapshot_topic = stored_snapshots.SNAPSHOT_TOPIC
    stored = {
        "foreign event topic": lambda: _tampered(cs, "os:system", _snapshot_state(cs)),
        "foreign class": lambda: _tampered(
            cs, snapshot_topic, _snapshot_state(cs, topic="builtins:dict")
        ),
        "not a snapshotted class": lambda: _tampered(
            cs, snapshot_topic, _snapshot_state(cs, topic="countersign.domain.proposal:Proposal")
        ),
        "garbage": lambda: _tampered(cs, snapshot_topic, b"\x00not json"),
        "future": lambda: _tampered(cs, snapshot_topic, _snapshot_state(cs, class_version=9)),
    }[kind]()
    cs.app.snapshot_recorder.insert_events([stored])
    with caplog.at_level(logging.WARNING, logger="countersign.store"):
        loaded = _cold(cs).get(FORM, BroadcastForm)
    assert _state(loaded) == _state(_replayed(cs, FORM))
    assert "ignored the stored snapshot" in caplog.text


def test_a_snapshot_from_an_older_class_version_is_upcast(cs, seeded, monkeypatch):
    _use_form(cs.store, 1)
    _store_snapshot(cs, _replayed(cs, FORM))  # written under class version 1

    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state["subject"] = state["subject"].upper()

    monkeypatch.setattr(BroadcastForm, "class_version", 2, raising=False)
    monkeypatch.setattr(BroadcastForm, "upcast_v1_v2", staticmethod(upcast_v1_v2), raising=False)
    loaded = _cold(cs).get(FORM, BroadcastForm)
    assert loaded.subject == "DRAFT 0"
    assert loaded.version == 4


def test_two_processes_committing_across_the_interval_leave_one_consistent_snapshot(
    cs, seeded, other
):
    first, second = _cold(cs, interval=5), EventSourcedStore(other.app, snapshot_interval=5)
    _use_form(first, 1)  # version 4
    mine, theirs = first.get(FORM, BroadcastForm), second.get(FORM, BroadcastForm)
    for form, n in ((mine, 1), (theirs, 2)):
        form.apply_draft({}, f"Draft {n}", "Body", uuid4())
    first.save(mine)  # version 5: crosses the interval
    with pytest.raises(ConcurrencyConflictError):
        second.save(theirs)  # based on version 4: refused, and no snapshot stored
    assert _stored(cs, FORM) == [5]
    # Both store the same version (a retried commit): the second is a cache miss, not an error.
    second._store_snapshots([first.get(FORM, BroadcastForm)])
    assert _stored(cs, FORM) == [5]
    _use_form(second, 2)  # versions 8, 11: the commit to 11 crosses 10
    assert _stored(cs, FORM) == [11]
    for store in (_cold(cs), EventSourcedStore(other.app)):
        assert _state(store.get(FORM, BroadcastForm)) == _state(_replayed(cs, FORM))


def test_a_snapshot_that_cannot_be_stored_leaves_the_older_ones(cs, seeded, caplog):
    """Storing a snapshot and dropping the older ones of its aggregate go together: when the
    new one is refused (another process stored that version already), nothing is dropped,
    and the commit that crossed the interval stands."""
    store = _cold(cs, interval=5)
    _use_form(store, 2)  # versions 4, 7: the snapshot at 7
    form = store.get(FORM, BroadcastForm)
    form.apply_draft({}, "Draft", "Body", uuid4())
    form.apply_draft({}, "Draft again", "Body", uuid4())
    form.apply_draft({}, "Draft once more", "Body", uuid4())  # version 10: crosses 10
    taken = stored_snapshots.take(cs.app.mapper, _replayed(cs, FORM))
    cs.app.snapshot_recorder.insert_events(
        [StoredEvent(originator_id=FORM, originator_version=10, topic=taken.topic, state=b"")]
    )
    with caplog.at_level(logging.WARNING, logger="countersign.store"):
        store.save(form)
    assert "stored no snapshot" in caplog.text
    assert sorted(_stored(cs, FORM)) == [7, 10]
    assert _replayed(cs, FORM).version == 10


def _ring(cs: Any, renames: int) -> UUID:
    """A member's passkey ring renamed ``renames`` times, a hundred renames a commit (so the
    store keeps a snapshot of it as in use), then five more in a commit of their own."""
    ring = PasskeyRing(organization_id=uuid4(), email=f"{uuid4().hex}@example.org")
    ring.register(
        credential_id="key",
        public_key="pk",
        name="Phone",
        rp_id="example.org",
        sign_count=0,
        membership_id=None,
        at=datetime(2026, 12, 7, tzinfo=UTC),
    )
    cs.store.save(ring)
    for n in range(renames + 5):
        if n % 100 == 0 or n == renames:
            ring = cs.store.get(ring.id, PasskeyRing)
        ring.rename("key", f"Phone {n}")
        if (n + 1) % 100 == 0 or n + 1 in (renames, renames + 5):
            cs.store.save(ring)
    return ring.id


def _work_of_a_cold_load(cs: Any, aggregate_id: UUID) -> int:
    """What the database does for the one query of a cold load of this aggregate: on
    PostgreSQL the rows its plan's scans read (EXPLAIN ANALYZE), on SQLite its virtual
    machine's steps (counted by a progress handler called at each one)."""
    recorder = cs.app.recorder
    statement = store_sql.select_statement(
        recorder, cs.store._table, cs.store._snapshot_table, [], [aggregate_id]
    )
    assert statement is not None
    sql, params = statement
    if cs.database.kind == "sqlite":
        steps = [0]

        def step() -> int:
            steps[0] += 1
            return 0  # go on

        with recorder.datastore.transaction(commit=False) as wrapped:
            cursor = wrapped.sqlite_cursor  # the library's wrapper of sqlite3's own
            cursor.connection.set_progress_handler(step, 1)
            try:
                cursor.execute(sql, params).fetchall()
            finally:
                cursor.connection.set_progress_handler(None, 1)
        return steps[0]
    with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        (row,) = cursor.fetchall()
    plan = next(iter(row.values()))[0]["Plan"]
    read = 0
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        nodes += node.get("Plans", [])
        if "Relation Name" in node or "Index Name" in node:  # a scan of a table or index
            rows = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
            read += (rows + node.get("Rows Removed by Index Recheck", 0)) * node["Actual Loops"]
    return read


def test_a_cold_load_does_not_grow_with_the_history_before_its_snapshot(cs):
    """Two rings, one renamed 200 times and one 2,000 times, each with its snapshot and five
    events after it: a cold load reads one snapshot and five events of either, and the
    database does the same work for both (it once read every event of the aggregate to keep
    the ones after the snapshot: about 0.2 µs an event, 2 ms at 10,000)."""
    short, long = _ring(cs, 200), _ring(cs, 2000)
    for ring_id, version in ((short, 207), (long, 2007)):
        stored = _cold(cs)._select([], [ring_id])
        assert [(kind, e.originator_version) for kind, e in stored] == [
            (True, version - 5),
            *((False, v) for v in range(version - 4, version + 1)),
        ]
        assert _cold(cs).get(ring_id, PasskeyRing).passkeys["key"]["name"] == f"Phone {version - 3}"
    # Within a tenth (SQLite's steps differ by one or two with the ids' order); ten times the
    # history used to cost about ten times the work.
    work = {ring_id: _work_of_a_cold_load(cs, ring_id) for ring_id in (short, long)}
    assert work[long] <= work[short] * 1.1, work
