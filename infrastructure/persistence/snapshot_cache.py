"""The store's in-process cache of immutable aggregate snapshots (``EventSourcedStore``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from uuid import UUID

from countersign.infrastructure.persistence.aggregate_copy import _FROZEN, freeze
from eventsourcing.domain import Aggregate


class SnapshotCache:
    """Immutable aggregate snapshots by id, least recently used evicted; thread-safe.

    A snapshot is never changed after it is stored: catching up copies it first and stores
    the copy. So a snapshot can be handed to readers without a copy, from any thread.

    A dropped snapshot (its aggregate moved on under a commit) leaves a tombstone: a snapshot
    of it that was read before the drop (``since`` an earlier ``generation()``) is refused, so
    a slow reader in another thread cannot put the old state back.

    Kept by each id's ``int``: an int's hash is C, a ``UUID``'s is a Python method.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[int, Aggregate] = OrderedDict()
        self._lock = threading.Lock()
        self._generation = 0
        #: aggregate id -> the generation at which it was last dropped (most recent last)
        self._dropped: OrderedDict[int, int] = OrderedDict()
        #: puts read at or before this generation may have lost their tombstone: refused
        self._forgotten = 0

    def generation(self) -> int:
        """Take this before reading what will be put, and pass it to ``put``."""
        # The lock's own methods, not ``with``, in the methods every read and commit calls:
        # ``with`` looks up two special methods each time.
        lock = self._lock
        lock.acquire()
        try:
            return self._generation
        finally:
            lock.release()

    def get(self, aggregate_id: UUID) -> Aggregate | None:
        key = aggregate_id.int
        lock = self._lock
        lock.acquire()
        try:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item
        finally:
            lock.release()

    def get_many(self, keys: Iterable[int]) -> dict[int, Aggregate]:
        """The snapshots held of these ids (given as their ``int``), by the same keys."""
        found: dict[int, Aggregate] = {}
        lock = self._lock
        lock.acquire()
        try:
            items = self._items
            for key in keys:
                item = items.get(key)
                if item is not None:
                    items.move_to_end(key)
                    found[key] = item
        finally:
            lock.release()
        return found

    def put(self, aggregate_id: UUID, aggregate: Aggregate, since: int) -> None:
        self.put_many(((aggregate_id, aggregate),), since)

    def put_many(self, aggregates: Iterable[tuple[UUID, Aggregate]], since: int) -> None:
        """``put`` of each (id, aggregate), in order, under one hold of the lock (a commit
        keeps what it wrote, two or three aggregates, in one call)."""
        lock = self._lock
        lock.acquire()
        try:
            items = self._items
            dropped = self._dropped
            forgotten = since < self._forgotten
            for aggregate_id, aggregate in aggregates:
                key = aggregate_id.int
                if forgotten or dropped.get(key, -1) > since:
                    continue  # dropped after it was read: older than what the store holds
                current = items.get(key)
                # The attributes behind the library's ``version`` property (a Python call).
                if current is not None and current._version > aggregate._version:
                    continue  # another thread stored a newer snapshot meanwhile
                # Shared from now on, however it got here (commit or load); a commit's final
                # save froze it already (freeze's own first test, inline, spares the call).
                reference = _FROZEN.get(id(aggregate))
                if reference is None or reference() is not aggregate:
                    freeze(aggregate)
                items[key] = aggregate
                items.move_to_end(key)
            while len(items) > self.size:
                items.popitem(last=False)
        finally:
            lock.release()

    def drop(self, aggregate_id: UUID) -> None:
        key = aggregate_id.int
        lock = self._lock  # its own methods, not ``with`` (two special methods): three a cycle
        lock.acquire()
        try:
            self._generation += 1
            self._items.pop(key, None)
            self._dropped[key] = self._generation
            self._dropped.move_to_end(key)
            while len(self._dropped) > self.size:
                _, generation = self._dropped.popitem(last=False)
                self._forgotten = max(self._forgotten, generation)
        finally:
            lock.release()
