"""The one event-sourced application: proposals and club aggregates in a single stream.

``EventSourcedStore`` adapts ``CountersignApplication`` (app.py) to the domain's
``AggregateStore`` port and translates the library's errors into domain errors; what a
decision has read is kept per thread in decision_reads.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

from countersign.application.errors import CorruptRecordError
from countersign.application.ports import Answer, Commit, Reads, StoredEventView
from countersign.domain.errors import ConcurrencyConflictError, NotFoundError, StaleReadError
from countersign.domain.ports import Repository
from countersign.domain.seals import SealKeys
from countersign.infrastructure.persistence import event_seals, store_sql, stored_snapshots
from countersign.infrastructure.persistence.aggregate_copy import (
    _FROZEN,
    TAKES,
    Pending,
    collected,
    copy_aggregate,
    freeze,
    taken_or_copied,
)
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.decision_reads import (
    DecisionReads,
    ReadAlong,
    ThreadReads,
)
from countersign.infrastructure.persistence.recorders import (
    EXPECTED_VERSIONS,
    ReadSetChangedError,
)
from countersign.infrastructure.persistence.snapshot_cache import SnapshotCache
from countersign.infrastructure.persistence.stored_events import (
    _UNREADABLE,
    _corrupt,
    _table_name,
    applied,
    event_views,
    historical,
    ids_with_events,
    is_domain_class,
    replayed,
    replayed_at,
)
from countersign.infrastructure.persistence.unit_of_work import StoreUnitOfWork
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    IntegrityError,
    PersistenceError,
    StoredEvent,
)

log = logging.getLogger("countersign.store")

A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")


#: How many aggregates' snapshots a store keeps (least recently used forgotten first). A
#: decision's aggregates (a club's organization, form and slot, the proposal being approved)
#: are read again at once; a proposal a person approves later is read back in one query.
#: A proposal's snapshot is a few kilobytes and every cycle leaves one, so this is most of
#: what a long-running client keeps: 128 would keep about 0.6 MB less, but the card cycle of
#: ``scripts/bench.py`` reads orders its own process made a few hundred commits earlier, and
#: cost 1.3-1.4% more instructions (docs/speed.md, "Client memory").
SNAPSHOTS = 256


class EventSourcedStore:
    """The application's AggregateStore port, over CountersignApplication.

    Every read is one query that catches a snapshot up (or loads the aggregate whole); every
    commit leaves a snapshot of what it wrote, so the next command on the same aggregates
    reads nothing at all. Decisions (``decide``) run in
    infrastructure/persistence/unit_of_work.py: while one runs, this store serves its reads
    (``reading``) and records them, and its commit passes them to the recorder, which checks
    them inside the commit (infrastructure/persistence/recorders.py).
    """

    def __init__(
        self,
        app: CountersignApplication,
        cache_size: int = SNAPSHOTS,
        snapshot_interval: int = stored_snapshots.SNAPSHOT_INTERVAL,
        seals: SealKeys | None = None,
    ) -> None:
        self.app = app
        #: Seal keys: what it stores is sealed, what it reads checked (event_seals.py).
        self.seals = seals
        self._local = ThreadReads()
        self._snapshots = SnapshotCache(cache_size)
        self._unit_of_work = StoreUnitOfWork(self)
        #: Events between two stored snapshots of a snapshotted aggregate (stored_snapshots.py).
        self.snapshot_interval = snapshot_interval
        self._table = _table_name(app.recorder)
        self._snapshot_table = _table_name(app.snapshot_recorder)
        #: The aggregates read outside a decision by the request this context answers, by id
        #: (``one_request``); None outside one. The context holds the dict itself, so the
        #: threads that run the request's work (each given a copy of the context) share it.
        self._request_reads: ContextVar[dict[UUID, Aggregate] | None] = ContextVar(
            f"countersign_request_reads_{id(self)}", default=None
        )
        #: What the request's next query also fetches (``read_along``), and what it fetched
        #: so and did not find; None outside one.
        self._request_along: ContextVar[ReadAlong | None] = ContextVar(
            f"countersign_request_along_{id(self)}", default=None
        )

    @property
    def _reads(self) -> DecisionReads:
        return self._local.reads

    def decide(self, reads: Reads, decision: Callable[[Repository], Commit[T] | Answer[T]]) -> T:
        return self._unit_of_work.decide(reads, decision)

    @contextmanager
    def one_request(self) -> Iterator[None]:
        """The reads of one request, outside decisions: the first read of an aggregate queries
        (it is fresh, as every read outside a decision is) and later reads of it in the same
        request take what that one read, with no query. So the organization the token's
        check read is the one the proposal's check reads, a moment later, instead of a second
        round trip for the same fresh state. What the request commits replaces it (a read
        after the commit queries again); a decision reads as it always does, unaffected."""
        token = self._request_reads.set({})
        along = self._request_along.set(ReadAlong())
        try:
            yield
        finally:
            self._request_along.reset(along)
            self._request_reads.reset(token)

    def read_along(self, aggregate_id: UUID) -> None:
        """In a request (``one_request``): its next query, whatever it reads, also fetches
        this aggregate, which a later read in the request then takes (or finds absent) with
        no query of its own. For what the request will surely read: the API's proposal
        named in the path comes with the caller's organization, which the token's check
        reads first. Outside a request, nothing."""
        along = self._request_along.get()
        if along is not None:
            along.ids.append(aggregate_id)

    def reading(
        self,
        aggregate_ids: Sequence[UUID],
        *,
        held: bool,
        targets: frozenset[type[Aggregate]] = frozenset(),
    ) -> DecisionReads:
        """The reads of one decision, in this thread: these aggregates are fetched in one
        round trip first. ``held``: reads may come from the snapshots this process holds.

        Every read in the block is recorded, with its version, and a save in the block
        passes them to the recorder, which refuses the commit (StaleReadError) if any of
        them moved on, except aggregates of the ``targets`` types.

        A context manager: ``with store.reading(...) as reads:``, whose end forgets them.
        (Not one made by ``contextlib.contextmanager``: its generator costs about five
        Python calls a decision.)"""
        reads = self._local.reads  # an attribute, not the property's call
        if reads.open:
            raise RuntimeError("a decision is already running in this thread")
        reads.open, reads.held, reads.targets = True, held, targets
        try:
            wanted: dict[int, UUID] = {}
            for i in aggregate_ids:  # a loop: a comprehension is a function made and called
                wanted[i.int] = i
            if held:
                preloaded = reads.preloaded
                for key, snapshot in self._snapshots.get_many(wanted).items():
                    preloaded[key] = snapshot
                    reads.from_held.add(key)
                    del wanted[key]
            if wanted:
                loaded = self._load_many(list(wanted.values()))
                for key, aggregate_id in wanted.items():
                    aggregate = loaded.get(aggregate_id)
                    if aggregate is None:
                        reads.absent.add(key)
                    else:
                        reads.preloaded[key] = aggregate
        except BaseException:
            reads.close()
            raise
        return reads

    def read_in_this_request(self, reads: DecisionReads) -> bool:
        """Whether the decision reading ``reads`` read nothing older than the request it
        serves read itself (``one_request``): every aggregate it took from a held snapshot,
        the request had queried during its run at that version or an older one. Such a
        decision rests on state the database held after the request arrived, as one on
        fresh reads does, so its answer stands without running it again."""
        request = self._request_reads.get()
        if request is None:
            return False
        for key in reads.from_held:
            if key not in reads.versions:
                continue  # fetched, never read
            seen = request.get(reads.read_ids[key])
            version = reads.versions[key]
            if seen is None or version is None or seen.version > version:
                return False
        return True

    def _load_many(self, aggregate_ids: list[UUID]) -> dict[UUID, Aggregate]:
        """Catch every snapshot up (or load the aggregate whole) with ONE query. An aggregate
        this process does not hold starts from its newest stored snapshot, read in the same
        query (stored_snapshots.py); an unreadable one costs a second query, of its events."""
        since = self._snapshots.generation()
        bases: dict[UUID, Any] = {i: self._snapshots.get(i) for i in aggregate_ids}
        cold = [i for i, base in bases.items() if base is None]
        changed: set[UUID] = set()
        try:
            stored = self._select(
                [(i, base.version) for i, base in bases.items() if base is not None], cold
            )
            replay: set[UUID] = set()
            for is_snapshot, event in stored:
                originator_id = UUID(str(event.originator_id))
                if originator_id in replay:
                    continue
                if is_snapshot:
                    try:
                        bases[originator_id] = stored_snapshots.revive(
                            self.app.mapper, event, is_domain_class
                        )
                    except (stored_snapshots.UnreadableSnapshotError, *_UNREADABLE) as error:
                        stored_snapshots.ignored(event, error)
                        replay.add(originator_id)
                    else:
                        changed.add(originator_id)
                    continue
                self._apply(bases, changed, originator_id, event)
            if replay:
                for event in self._select_after([(i, 0) for i in replay]):
                    self._apply(bases, changed, UUID(str(event.originator_id)), event)
        except PersistenceError:
            raise  # the database out of reach (``unavailable``), not a record that is bad
        except _UNREADABLE as error:
            raise _corrupt(aggregate_ids, error, self.app) from None
        loaded = {i: aggregate for i, aggregate in bases.items() if aggregate is not None}
        for aggregate_id in changed & loaded.keys():
            self._snapshots.put(aggregate_id, loaded[aggregate_id], since)
        return loaded

    def _apply(
        self, bases: dict[UUID, Any], changed: set[UUID], originator_id: UUID, event: StoredEvent
    ) -> None:
        if originator_id not in changed:
            changed.add(originator_id)
            if bases[originator_id] is not None:  # never catch a snapshot up in place
                bases[originator_id] = copy_aggregate(bases[originator_id])
        domain_event: Any = self.app.mapper.to_domain_event(event)
        # Its own aggregate's, and each event after ``Proposed`` checked against its seal.
        bases[originator_id] = applied(self.seals, bases[originator_id], domain_event)

    def _select_after(self, after: list[tuple[UUID, int]]) -> list[StoredEvent]:
        """The events of each aggregate past its version, in order of aggregate and version."""
        return [event for _, event in self._select(after, ())]

    def _select(
        self, after: list[tuple[UUID, int]], cold: Sequence[UUID]
    ) -> list[tuple[bool, StoredEvent]]:
        """The events of each aggregate in ``after`` past its version; for each aggregate in
        ``cold``, its newest stored snapshot that no event outruns (True: a snapshot, first)
        and its events after it. In order of aggregate and version."""
        return store_sql.select_events(
            self.app.recorder, self._table, self._snapshot_table, after, cold
        )

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self.get(aggregate_id, as_type, shared=True)

    def get(  # noqa: C901 - the read recorded inline (a call a read)
        self,
        aggregate_id: UUID,
        as_type: type[A],
        version: int | None = None,
        *,
        shared: bool = False,
    ) -> A:
        """``shared`` gives the immutable snapshot itself: for reading only."""
        if version is not None:
            aggregate: Any = historical(self.app, aggregate_id, version)
        else:
            reads = self._local.reads  # an attribute, not the property's call
            key = aggregate_id.int
            aggregate = reads.preloaded.get(key)
            if aggregate is None and reads.held:
                aggregate = self._snapshots.get(aggregate_id)
                if aggregate is not None:
                    reads.from_held.add(key)
            # Outside a decision, in a request: what the request read already (one_request).
            request = None if reads.open else self._request_reads.get()
            if aggregate is None and request is not None:
                aggregate = request.get(aggregate_id)
            if aggregate is None and key not in reads.absent:
                if request is None:
                    aggregate = self._load_many([aggregate_id]).get(aggregate_id)
                else:
                    aggregate = self._request_read(request, aggregate_id)
            if aggregate is None:
                reads.missed(aggregate_id, key, as_type)
            else:
                # ``DecisionReads.saw``, inline (a Python call for each of a cycle's ten reads).
                versions = reads.versions
                if reads.open and key not in versions:
                    versions[key] = aggregate._version
                    reads.read_ids[key] = aggregate._id
                    if type(aggregate) in reads.targets:
                        reads.unchecked.add(key)
                if shared:
                    # Read-only, even if it was not kept as a snapshot (most are frozen
                    # already: freeze's own first test, inline, spares the call).
                    reference = _FROZEN.get(id(aggregate))
                    if reference is None or reference() is not aggregate:
                        freeze(aggregate)
                elif reads.open and TAKES and isinstance(aggregate, as_type):
                    # For a decision: the snapshot itself, if only the cache held it.
                    drop = self._snapshots.drop
                    aggregate = taken_or_copied(aggregate, aggregate_id, drop, reads.preloaded)
                else:
                    aggregate = copy_aggregate(aggregate)
        if aggregate is None or not isinstance(aggregate, as_type):
            raise NotFoundError.of(as_type)  # as a foreign one's: "broadcast form"
        return aggregate

    def _request_read(self, request: dict[UUID, Aggregate], aggregate_id: UUID) -> Aggregate | None:
        """A read outside a decision, in a request: one query, with what ``read_along``
        named; what it finds is the request's (``one_request``), and what it fetched along
        and did not find is absent for the rest of the request (until the request writes it)."""
        along = self._request_along.get()
        wanted = [aggregate_id]
        if along is not None:
            if aggregate_id in along.absent:
                return None
            for i in along.ids:
                if i != aggregate_id:
                    wanted.append(i)
            along.ids = []
        try:
            loaded = self._load_many(wanted)
        except CorruptRecordError:
            if len(wanted) == 1:
                raise
            # One damaged record does not fail the read of another fetched with it (a
            # proposal named in the path, with the token's club): each is read on its own.
            wanted = [aggregate_id]
            loaded = self._load_many(wanted)
        for i in wanted:
            found = loaded.get(i)
            if found is not None:
                request[i] = found
            elif along is not None and i != aggregate_id:
                along.absent.add(i)
        return loaded.get(aggregate_id)

    def save(self, *aggregates: Aggregate, final: bool = False) -> None:
        """``final``: the caller is done with these objects; after the commit they become the
        snapshots themselves (no copy) and refuse any further command."""
        reads = self._local.reads  # an attribute, not the property's call
        # What Application.save does for us (no snapshotting, no in-process subscribers),
        # without its per-object protocol checks.
        pending, written = collected(aggregates)
        self._forget_read(reads, written)
        # What this commit relied on without writing it (what it writes, the primary key
        # checks; an aggregate passed here unchanged is only read): the recorder verifies it
        # under the writers' lock.
        expected = reads.relied_on(written)
        if self.seals is not None:
            event_seals.seal_new(self.seals, pending)  # each event after Proposed (event_seals.py)
        to_stored_event = self.app.mapper.to_stored_event
        stored: list[StoredEvent] = []
        for _, events in pending:
            for event in events:
                stored.append(to_stored_event(event))
        since = self._snapshots.generation()
        try:
            if stored:
                self.app.recorder.insert_events(stored, **{EXPECTED_VERSIONS: expected})
        except IntegrityError:
            if not self._committed_already(stored):
                for aggregate_id in written.values():
                    self._snapshots.drop(aggregate_id)
                raise ConcurrencyConflictError("an aggregate changed since it was read") from None
        except ReadSetChangedError as stale:
            if not self._committed_already(stored):
                for aggregate_id in [*expected, *written.values()]:
                    key = aggregate_id.int
                    self._snapshots.drop(aggregate_id)
                    reads.preloaded.pop(key, None)
                    reads.versions.pop(key, None)
                    reads.read_ids.pop(key, None)
                log.info("commit refused, %s", stale)
                raise StaleReadError(str(stale)) from None
        self._keep(pending, final, since)

    def _forget_read(self, reads: DecisionReads, written: dict[int, UUID]) -> None:
        """Whatever happens to a commit of ``written``, the preloaded state of each is no
        longer the latest, nor what the request read (or found absent) before it."""
        request = self._request_reads.get()
        along = self._request_along.get()
        for key, aggregate_id in written.items():
            reads.preloaded.pop(key, None)
            reads.absent.discard(key)
            if request is not None:
                request.pop(aggregate_id, None)
            if along is not None:
                along.absent.discard(aggregate_id)

    def _keep(self, pending: Pending, final: bool, since: int) -> None:
        """What a commit wrote becomes the snapshot this process holds (and, every
        ``snapshot_interval`` events of a snapshotted class, a stored one)."""
        reads = self._local.reads  # an attribute, not the property's call
        versions = reads.versions
        kept: list[tuple[UUID, Aggregate]] = []
        to_store: list[Aggregate] = []
        snapshotted_classes = stored_snapshots._SNAPSHOTTED_CLASSES
        for aggregate, events in pending:
            if not events:
                continue
            if final:
                freeze(aggregate)
                snapshot: Aggregate = aggregate
            else:
                # The caller keeps its object and may change it further: the snapshot is a copy.
                snapshot = copy_aggregate(aggregate)
            aggregate_id = aggregate._id
            kept.append((aggregate_id, snapshot))
            key = aggregate_id.int
            if key in versions:
                versions[key] = aggregate._version
            # ``crossed``'s own first test, inline: most classes are known not to be
            # snapshotted, and the call costs more than the answer.
            if snapshotted_classes.get(type(snapshot)) is not False and stored_snapshots.crossed(
                snapshot, len(events), self.snapshot_interval
            ):
                to_store.append(snapshot)
        # One call and one hold of the cache's lock for the commit's aggregates, in order.
        self._snapshots.put_many(kept, since)
        if to_store:
            self._store_snapshots(to_store)

    def _store_snapshots(self, aggregates: list[Aggregate]) -> None:
        """Store snapshots of what a commit just wrote. They are a cache: if another process
        stored the same version first, or the write fails, nothing is lost (the events are
        committed), so the commit's caller never hears of it."""
        snapshots = [stored_snapshots.take(self.app.mapper, a) for a in aggregates]
        try:
            store_sql.replace_snapshots(
                self.app.snapshot_recorder, self._snapshot_table, aggregates, snapshots
            )
        except (IntegrityError, PersistenceError) as error:
            log.warning("stored no snapshot of %s (%s)", aggregates[0].id, type(error).__name__)

    def _committed_already(self, stored: list[StoredEvent]) -> bool:
        """Whether this commit is in the log already. The library retries an insert whose
        connection dropped, and if the first try had committed, the retry is refused (by the
        primary key, or by the read-set check if a read aggregate moved on meanwhile) because
        of our own write. The first event decides: a commit is stored whole or not at all, and
        its bytes (timestamp included) are ours alone."""
        first = stored[0]
        found = self._select_after([(UUID(str(first.originator_id)), first.originator_version - 1)])
        return bool(found) and (found[0].originator_version, found[0].topic, found[0].state) == (
            first.originator_version,
            first.topic,
            first.state,
        )

    def history(self, aggregate_id: UUID) -> list[StoredEventView]:
        events = list(self.app.events.get(aggregate_id))
        if not events:
            raise NotFoundError("history")
        return event_views(events)

    def recorded(
        self, aggregate_id: UUID, as_type: type[A]
    ) -> tuple[A, list[StoredEventView], Callable[[int], A]]:
        """The aggregate from its stored events alone, those events, and what makes it as it
        was at one of their versions from the same rows: one read, no snapshot held here."""
        stored = self._select_after([(aggregate_id, 0)])
        aggregate, events = replayed(self.app, self.seals, stored)
        if aggregate is None or not isinstance(aggregate, as_type):
            raise NotFoundError.of(as_type)
        return aggregate, events, partial(replayed_at, self.app, self.seals, stored)

    def ids_with_events(
        self, aggregate_class: type[Aggregate], event_names: Sequence[str]
    ) -> Iterator[UUID]:
        return ids_with_events(self.app, aggregate_class, event_names)
