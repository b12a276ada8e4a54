"""The unit of work: how a decision's reads are served, its commit checked, and it retried.

``EventSourcedStore.decide`` runs here. The policy, in the order a decision meets it
(docs/concurrency.md tells why each part exists and which test guards it):

1. Its reads are fetched together, in one round trip for whatever this process does not
   hold: the ids the caller names, and what decisions with the same names read last time.
2. It runs first on the snapshots this process already holds, with no query.
3. An answer that commits nothing, and a refusal (a ``CountersignError``), are only given
   from fresh reads: decided on held snapshots, the decision runs again on fresh reads. (An
   answer is also given when every held snapshot it read is one the request it serves had
   itself read freshly, or newer: ``EventSourcedStore.read_in_this_request``.)
4. Its commit carries its read set; the recorder refuses it (``StaleReadError``) if any
   aggregate it read has moved on. A refused commit, or one that lost a race on an aggregate
   it writes, is decided again on fresh reads after a jittered, growing pause;
   ``ConcurrencyConflictError`` after ``ATTEMPTS`` such losses.
5. What a commit wrote becomes the shared snapshot itself, frozen: no copy is made.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from countersign.application.ports import Answer, Commit, Reads
from countersign.domain.errors import ConcurrencyConflictError, CountersignError
from countersign.domain.ports import Repository

if TYPE_CHECKING:
    from countersign.infrastructure.persistence.event_store import EventSourcedStore

log = logging.getLogger("countersign.store")

T = TypeVar("T")

#: How many lost races a decision takes before ConcurrencyConflictError.
ATTEMPTS = 12
#: How many read sets are remembered (the oldest learned are forgotten first). Most named
#: sets are one proposal's id, approved once: at 10,000 the hints alone grew a cycling
#: process by about 3 MB (280 bytes each), past the client's memory budget. The hint pays
#: off within a decision (its retry on fresh reads) and for the proposals being worked on
#: now; what this process held longer ago is no longer among its snapshots anyway
#: (``event_store.SNAPSHOTS``), so twice as many hints as snapshots are kept.
REMEMBERED = 512


def backoff(losses: int) -> float:
    """Seconds to wait before deciding again after ``losses`` lost races: random, so that
    racers part, and growing, so that a hot aggregate is given room (at most 0.2 s)."""
    return random.uniform(0, min(0.2, 0.002 * 2**losses))  # noqa: S311


class _ReadSets:
    """What decisions read, by the ids their callers named: fetched with them next time.

    Only a hint: a remembered id that a decision no longer reads is fetched for nothing,
    never checked (a commit checks what its decision actually read). Kept by the named
    ids' ``int``s: a tuple of ints hashes in C, a tuple of ``UUID``s calls the ``UUID``'s
    Python ``__hash__`` for each."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[_Key, tuple[UUID, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def with_remembered(self, named: tuple[UUID, ...], key: _Key | None = None) -> list[UUID]:
        """The named ids, each once, then what decisions named so read besides them.
        ``key``: ``_key(named)``, if the caller has it already."""
        # Loops and the lock's own methods, not comprehensions and ``with``: each
        # comprehension is a function made and called, and ``with`` looks up two special
        # methods (together about half of what these two cost, twice a cycle).
        if key is None:
            key = _key(named)
        lock = self._lock
        lock.acquire()
        try:
            remembered = self._items.get(key, ())
        finally:
            lock.release()
        if len(named) > 1:
            unique: dict[int, UUID] = {}
            for i in named:
                unique[i.int] = i
            named = tuple(unique.values())
        return [*named, *remembered]  # remembered ids are never among the named

    def remember(self, named: tuple[UUID, ...], read: Sequence[UUID]) -> None:
        extras: dict[int, UUID] = {}
        for i in read:
            extras[i.int] = i
        self.remember_read(named, extras)

    def remember_read(
        self, named: tuple[UUID, ...], read: Mapping[int, UUID], key: _Key | None = None
    ) -> None:
        """``remember``, given what the decision read by each id's ``int`` (its
        ``DecisionReads.read_ids``, in the order read), which is copied, not changed.
        ``key``: ``_key(named)``, if the caller has it already."""
        # Only what it read beyond the names: they are fetched anyway, and a decision on an
        # unknown id (a typo, a scanner) read nothing else, so it leaves nothing to remember.
        if key is None:
            key = _key(named)
        # In C: no ``int`` read nor item set in Python for each id; a dict's own ``copy``
        # (the decision's ``read_ids``), without ``dict()``'s class call, makes the same dict.
        extras = read.copy() if type(read) is dict else dict(read)
        if type(key) is int:
            extras.pop(key, None)
        else:
            for i in named:
                extras.pop(i.int, None)
        lock = self._lock
        lock.acquire()
        try:
            known = self._items.get(key, ())
            if len(known) == len(extras):
                for i in known:
                    if i.int not in extras:
                        break
                else:
                    return  # the same ids (each is there once)
            extra = tuple(extras.values())
            if not extra:
                del self._items[key]
                return
            # What it read last time, not all it ever read: a decision whose reads drift from
            # run to run (the proposal a supersession slot held) must not make every later
            # run fetch everything its predecessors read.
            self._items[key] = extra
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        finally:
            lock.release()


#: What the named ids' read set is kept under: one id's ``int`` (most decisions name one:
#: an int hashes for less than a tuple of it), or several ids' ``int``s in a tuple (an int
#: never equals a tuple, so the two kinds never meet).
_Key = int | tuple[int, ...]


def _key(named: tuple[UUID, ...]) -> _Key:
    """The key of what the named ids read."""
    if len(named) == 1:
        return named[0].int
    return tuple([i.int for i in named])


class StoreUnitOfWork:
    """The UnitOfWork port (application/ports.py) over one EventSourcedStore."""

    def __init__(self, store: EventSourcedStore) -> None:
        self.store = store
        self._read_sets = _ReadSets(REMEMBERED)

    def decide(self, reads: Reads, decision: Callable[[Repository], Commit[T] | Answer[T]]) -> T:
        named = tuple(reads.ids)
        key = _key(named)
        held = True  # first on the snapshots this process holds
        losses = 0
        while True:
            ids = self._read_sets.with_remembered(named, key)
            # ``with store.reading(...) as read:`` written out: its ``__enter__`` and
            # ``__exit__`` are two Python calls a decision; the block's end closes the reads
            # whichever way it is left, as ``__exit__`` did.
            read = self.store.reading(ids, held=held, targets=reads.targets)
            try:
                try:
                    decided = decision(self.store)
                except CountersignError:
                    if not held:
                        raise
                    held = False  # a refusal is only ever given from fresh reads
                    continue
                finally:
                    self._read_sets.remember_read(named, read.read_ids, key)
                if isinstance(decided, Answer):
                    # So is an answer that commits nothing, unless everything it took from
                    # held snapshots is what the request it serves had read freshly itself.
                    if not held or self.store.read_in_this_request(read):
                        return decided.answer
                    held = False
                    continue
                try:
                    # Done with these objects: they become the shared snapshots themselves.
                    self.store.save(*decided.aggregates, final=True)
                except ConcurrencyConflictError:
                    losses += 1  # a fact it read or writes moved on: decide again
                else:
                    return decided.answer
            finally:
                read.close()
            if losses >= ATTEMPTS:
                log.warning("a decision on %s lost %d races on shared facts", named, losses)
                raise ConcurrencyConflictError(
                    "the facts of this decision keep changing; try again"
                )
            held = False
            time.sleep(backoff(losses))
