"""Stored snapshots: what spares a cold process from replaying an aggregate's whole history.

Some aggregates gain events with every use, forever: a broadcast form one per applied draft
and two per send, the roster one per move, an organization one per policy or permission
change, a pending slot one per proposal it holds, an account one per credit, a passkey ring one
per key. A process that has not held one yet (a new worker, a command, a server start) would
replay all of it. For these classes (``SNAPSHOTTED``, the one place they are named), the store
writes a snapshot of the aggregate, in the snapshots table beside the events table, right after
each commit that carries its version across a multiple of ``SNAPSHOT_INTERVAL``; a cold load
reads the newest snapshot and only the events after it, in the same query
(``EventSourcedStore._load_many``).

A snapshot is a cache, never the record:
- it is written after its commit, of the state that commit left: never newer than the events
  (and a load ignores, in SQL, any snapshot newer than the newest event of its aggregate);
- failing to write one fails nothing (it is logged);
- it is read through the same guards as events (only the library's ``Snapshot`` topic, naming a
  snapshotted class of the domain, and no class version from the future) and upcast like
  them (``upcast_vN_vN+1`` on the aggregate class, by the library's ``Snapshot.mutate``); one
  that cannot be read is ignored with a log line and the aggregate's events are replayed;
- it is never projected or chained: the notification log holds events only; ``audit verify``
  compares each with its events replayed (infrastructure/audit/snapshot_check.py), since a
  writer's edit of one would change what a cold load decides.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, Snapshot
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.utils import get_topic, resolve_topic

log = logging.getLogger("countersign.store")

#: Events between two snapshots of one aggregate: a cold load replays at most this many
#: (plus the commit that crossed it). A snapshot costs one extra insert per interval.
SNAPSHOT_INTERVAL = 100

#: The aggregate classes whose history grows with use, by topic (nothing is imported for
#: them). Proposals, orders and interactions are not here: their streams end.
SNAPSHOTTED: frozenset[str] = frozenset(
    {
        "countersign.domain.club.broadcasts:BroadcastForm",
        "countersign.domain.club.roster:Roster",
        "countersign.domain.club.organization:Organization",
        "countersign.domain.club.accounts:MemberAccount",
        "countersign.domain.club.passkeys:PasskeyRing",
        "countersign.domain.pending_slot:PendingSlot",
    }
)

SNAPSHOT_TOPIC = get_topic(Snapshot)


class UnreadableSnapshotError(Exception):
    """A stored snapshot names a foreign class or topic, or a class version from the future."""


#: Each aggregate class met -> whether its topic is in ``SNAPSHOTTED`` (a class's topic is
#: fixed; ``get_topic`` is a Python call, and every commit asks for each aggregate it wrote).
_SNAPSHOTTED_CLASSES: dict[type, bool] = {}


def crossed(aggregate: Aggregate, new_events: int, interval: int) -> bool:
    """Whether the commit that brought ``aggregate`` to its version (``new_events`` events)
    crossed a multiple of ``interval``, for a snapshotted class."""
    cls = type(aggregate)
    snapshotted = _SNAPSHOTTED_CLASSES.get(cls)
    if snapshotted is None:
        snapshotted = _SNAPSHOTTED_CLASSES[cls] = get_topic(cls) in SNAPSHOTTED
    if not snapshotted:
        return False
    version = aggregate._version  # the attribute behind the library's ``version`` property
    return (version - new_events) // interval < version // interval


def take(mapper: Mapper[UUID], aggregate: Aggregate) -> StoredEvent:
    """The stored snapshot of ``aggregate`` as it is now (its committed state)."""
    return mapper.to_stored_event(Snapshot.take(aggregate))


def revive(mapper: Mapper[UUID], stored: StoredEvent, is_domain_class: Any) -> Aggregate:
    """The aggregate a stored snapshot holds, upcast to today's class version; raises if the
    snapshot may not or cannot be read (the caller replays the events instead)."""
    if stored.topic != SNAPSHOT_TOPIC:
        raise UnreadableSnapshotError(f"not a snapshot topic: {stored.topic[:80]!r}")
    # The library's own mapping, past the guard that refuses every topic but the domain's:
    # the topic was checked above, and the class it names is checked below before use.
    snapshot: Any = Mapper.to_domain_event(mapper, stored)
    if snapshot.topic not in SNAPSHOTTED:
        raise UnreadableSnapshotError(f"not a snapshotted class: {str(snapshot.topic)[:80]!r}")
    cls = resolve_topic(snapshot.topic)
    if not is_domain_class(cls):
        raise UnreadableSnapshotError(f"not a domain class: {snapshot.topic!r}")
    if int(snapshot.state.get("class_version", 1)) > getattr(cls, "class_version", 1):
        raise UnreadableSnapshotError(f"{snapshot.topic} was written by a newer countersign")
    aggregate = snapshot.mutate(None)
    if not isinstance(aggregate, Aggregate) or aggregate.id != stored.originator_id:
        raise UnreadableSnapshotError("a snapshot of another aggregate")
    return aggregate


def ignored(stored: StoredEvent, error: BaseException) -> None:
    log.warning(
        "ignored the stored snapshot of %s at version %s (%s); replaying its events",
        stored.originator_id,
        stored.originator_version,
        type(error).__name__,
    )
