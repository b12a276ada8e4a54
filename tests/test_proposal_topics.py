"""domain/proposal.py was split (its statuses to proposal_status.py, its events after
``Proposed`` to proposal_events.py): what is stored still names, and resolves to, the same
classes, and today's code writes the same bytes.

- Every event of the aggregate is stored under ``countersign.domain.proposal:Proposal.<Name>``
  (the library's metaclass makes each event named in the class body the aggregate's own
  subclass, in the aggregate's module), and that topic, its legacy ``domain.`` form and the
  statuses' old topics resolve to today's classes.
- Every golden stream's proposal events decode to those classes, and each one stored at
  today's class version is written again to the bytes it was stored as.
- The stored snapshots written before the split (tests/fixtures/snapshots_c2035cb: proposals in
  every status, and pending slots) decode to the same aggregates, and a snapshot taken today
  of the same aggregates is the same bytes. The statuses are stored as their text, never by
  topic.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from countersign.domain import proposal_events, proposal_status
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.proposal import FINISHED, Proposal, ProposalStatus, SupersessionReason
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.persistence import stored_snapshots
from countersign.infrastructure.persistence.stored_events import is_domain_class
from countersign.infrastructure.settings import Settings
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.utils import get_topic, resolve_topic

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = sorted(path.name for path in FIXTURES.glob("golden_*"))
SNAPSHOTS = json.loads((FIXTURES / "snapshots_c2035cb" / "snapshots.json").read_text())
EVENTS = [
    "Proposed",
    "Approved",
    "ApprovalLapsed",
    "Claimed",
    "Revalidated",
    "Succeeded",
    "RevisionRequired",
    "Reconciling",
    "Failed",
    "Declined",
    "Expired",
    "Superseded",
]
_PREFIX = "countersign.domain.proposal:Proposal."
#: Events stored before the ``countersign`` namespace (up to 0a9997d) name ``domain.…``.
_LEGACY = re.compile(r"^domain\.")


def _open(tmp_path: Path, release: str) -> Countersign:
    copy = tmp_path / "golden.db"
    shutil.copyfile(FIXTURES / release / "countersign.db", copy)
    return bootstrap(Settings(database_url=f"sqlite:///{copy}"))


@pytest.fixture
def caf348e(tmp_path: Path) -> Iterator[Countersign]:
    cs = _open(tmp_path, "golden_caf348e")
    yield cs
    cs.close()


@pytest.mark.parametrize("name", EVENTS)
def test_each_event_is_stored_under_the_aggregates_topic_and_resolves_to_it(name: str):
    cls = getattr(Proposal, name)
    topic = _PREFIX + name
    assert (cls.__module__, cls.__qualname__) == ("countersign.domain.proposal", f"Proposal.{name}")
    assert get_topic(cls) == topic
    assert resolve_topic(topic) is cls
    assert resolve_topic("domain.proposal:Proposal." + name) is cls  # before the namespace
    assert issubclass(cls, Proposal.Event)
    if name != "Proposed":
        # The class defined in proposal_events.py is its base, never stored itself.
        assert issubclass(cls, getattr(proposal_events, name))
        assert getattr(proposal_events, name) is not cls


def test_the_statuses_are_the_same_classes_by_their_old_names():
    assert ProposalStatus is proposal_status.ProposalStatus
    assert SupersessionReason is proposal_status.SupersessionReason
    assert FINISHED is proposal_status.FINISHED
    for name in ("ProposalStatus", "SupersessionReason"):
        moved = getattr(proposal_status, name)
        assert resolve_topic(f"countersign.domain.proposal:{name}") is moved


def _stored_events(cs: Countersign) -> Iterator[StoredEvent]:
    start = 1
    while batch := cs.app.recorder.select_notifications(start, limit=500):
        yield from batch
        start = batch[-1].id + 1


@pytest.mark.parametrize("release", GOLDEN)
def test_every_golden_proposal_event_decodes_to_its_class_and_is_written_again_the_same(
    release: str, tmp_path: Path
):
    cs = _open(tmp_path, release)
    try:
        seen: set[str] = set()
        for stored in _stored_events(cs):
            today = _LEGACY.sub("countersign.domain.", stored.topic)
            if not today.startswith(_PREFIX):
                continue
            name = today.removeprefix(_PREFIX)
            event = cs.app.mapper.to_domain_event(stored)
            assert type(event) is getattr(Proposal, name), stored.topic
            assert get_topic(type(event)) == today
            assert is_domain_class(type(event))
            seen.add(name)
            written_at = json.loads(stored.state).get("class_version", 1)
            if written_at != getattr(type(event), "class_version", 1):
                continue  # upcast as it was read: today's shape is not what was stored
            again = cs.app.mapper.to_stored_event(event)
            assert (again.topic, again.state) == (today, stored.state), stored.topic
        assert {"Proposed", "Approved", "Claimed", "Succeeded"} <= seen
    finally:
        cs.close()


def _snapshot(entry: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        originator_id=UUID(entry["originator_id"]),
        originator_version=entry["originator_version"],
        topic=entry["topic"],
        state=entry["state"].encode("utf8"),
    )


@pytest.mark.parametrize("entry", SNAPSHOTS, ids=[entry["name"] for entry in SNAPSHOTS])
def test_a_snapshot_stored_before_the_split_decodes_and_is_taken_again_the_same(
    entry: dict[str, Any], caf348e: Countersign
):
    stored = _snapshot(entry)
    mapper = caf348e.app.mapper
    snapshot: Any = Mapper.to_domain_event(mapper, stored)
    if snapshot.topic in stored_snapshots.SNAPSHOTTED:
        # The store's own read of a stored snapshot (the pending slots).
        decoded = stored_snapshots.revive(mapper, stored, is_domain_class)
    else:
        decoded = snapshot.mutate(None)
    replayed = caf348e.app.repository.get(stored.originator_id)
    assert type(decoded) is type(replayed)
    assert type(replayed) in (Proposal, PendingSlot)
    assert (decoded.id, decoded.version) == (replayed.id, replayed.version)
    if isinstance(replayed, Proposal):
        assert decoded.status == replayed.status
        assert ProposalStatus(decoded.status) is replayed.status
        assert f'"status":"{replayed.status.value}"' in entry["state"]
    assert "ProposalStatus" not in entry["state"]  # the statuses are stored as their text
    taken = dataclasses.replace(
        stored_snapshots.Snapshot.take(replayed), timestamp=snapshot.timestamp
    )
    again = mapper.to_stored_event(taken)
    expected = stored.state
    if isinstance(replayed, Proposal):
        # Its events were stored before the requester's credential and seals were recorded:
        # it replays with neither, and a snapshot taken now says so after the resource's key.
        assert (replayed.requested_through, replayed.seal) == (None, None)
        expected = re.sub(
            rb'("resource_key":(?:null|"[^"]*"))',
            rb'\1,"requested_through":null,"seal":null',
            expected,
        )
    else:
        # Taken before version 2 (each hold's expiry, ``until``): upcast with none known, and
        # taken again now at version 2.
        assert replayed.until == {}
        assert expected.endswith(b"}}")
        expected = expected[:-2] + b',"until":{},"class_version":2}}'
    assert (again.topic, again.state) == (stored.topic, expected)


def test_each_status_is_also_read_by_its_own_name():
    """The aggregate and the approve path read the statuses as module globals (an enum class's
    attribute is dear in Python 3.11): each is the member itself."""
    for status in ProposalStatus:
        assert getattr(proposal_status, status.name) is status
