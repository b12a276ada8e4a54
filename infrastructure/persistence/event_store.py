"""The one event-sourced application: proposals and club aggregates in a single stream.

``CountersignApplication`` is an eventsourcing ``Application`` with a guarded mapper;
``EventSourcedStore`` adapts it to the domain's ``AggregateStore`` port and translates the
library's errors into domain errors.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar
from uuid import UUID

from countersign.application.ports import Answer, Commit, Reads, StoredEventView
from countersign.domain.errors import ConcurrencyConflictError, NotFoundError, StaleReadError
from countersign.domain.ports import Repository
from countersign.infrastructure.persistence import aggregate_create, frozen_inits, stored_snapshots
from countersign.infrastructure.persistence.aggregate_copy import (
    _FROZEN,
    copy_aggregate,
    freeze,
)
from countersign.infrastructure.persistence.recorders import (
    EXPECTED_VERSIONS,
    ReadSetChangedError,
)
from countersign.infrastructure.persistence.snapshot_cache import SnapshotCache
from countersign.infrastructure.persistence.stored_events import (
    _ENVELOPE,
    _UNREADABLE,
    GuardedMapper,
    _corrupt,
    _table_name,
    is_domain_class,
    stored_topics,
)
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from countersign.infrastructure.persistence.unit_of_work import StoreUnitOfWork
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    AggregateRecorder,
    IntegrityError,
    Mapper,
    PersistenceError,
    StoredEvent,
    Transcoder,
)
from eventsourcing.sqlite import SQLiteAggregateRecorder

log = logging.getLogger("countersign.store")

A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")


class CountersignApplication(Application[UUID]):
    """Proposals and the club aggregates they act on, in one notification log."""

    name = "countersign"
    # No repository cache: EventSourcedStore keeps its own immutable snapshots (the library's
    # cache fast-forwards shared objects in place, which is unsafe to hand out across threads).
    env: ClassVar[dict[str, str]] = {}

    def __init__(self, env: Any = None) -> None:
        super().__init__(env)
        # The domain's events set their fields without a call each (frozen_inits.py).
        frozen_inits.install()
        # ... and its aggregates are created without the library's lookups on every call
        # (aggregate_create.py).
        aggregate_create.install()
        # Stored snapshots of the aggregates whose history grows (stored_snapshots.py), in a
        # table made like the events table. Not the library's snapshot store: its repository
        # would read snapshots past our guards.
        self.snapshot_recorder: AggregateRecorder = self.factory.aggregate_recorder(
            purpose="snapshots"
        )

    def construct_transcoder(self) -> Transcoder:
        # The library's JSON, written by orjson to the same bytes (transcoder.py).
        transcoder = FastJSONTranscoder()
        self.register_transcodings(transcoder)
        return transcoder

    def construct_mapper(self) -> Mapper[UUID]:
        return self.factory.mapper(
            transcoder=self.construct_transcoder(), mapper_class=GuardedMapper
        )


class _Reads:
    """What the decision running in one thread has read (see ``EventSourcedStore.reading``).

    Keyed by each id's ``int``, not the ``UUID``: the ``UUID``'s hash is a Python method
    (about 950 instructions under callgrind), an int's is C, and a cycle looks ids up here
    well over a hundred times. ``ids`` keeps the ``UUID`` of each id read."""

    def __init__(self) -> None:
        #: Whether a decision is running; only then are reads recorded.
        self.open = False
        #: Whether reads may come from the snapshots this process holds, without a query.
        self.held = False
        #: Fetched before the decision ran: its reads take these instead of querying.
        self.preloaded: dict[int, Aggregate] = {}
        #: Asked for in that same round trip and not found: a read of one finds nothing
        #: again without a second query (a new resource's pending slot, say). Creating one
        #: is checked by the primary key, as ever.
        self.absent: set[int] = set()
        #: Aggregate id -> the version the decision read (and based itself on); None for one
        #: it looked for and did not find (the commit is refused if it exists by then).
        self.versions: dict[int, int | None] = {}
        #: The ``UUID`` of each id in ``versions``, in the order they were read.
        self.read_ids: dict[int, UUID] = {}
        #: Aggregate types the decision only points at, and the ids it read of them.
        self.targets: frozenset[type[Aggregate]] = frozenset()
        self.unchecked: set[int] = set()
        #: The ids served from a held snapshot rather than by a query of this decision.
        self.from_held: set[int] = set()

    def saw(self, key: int, aggregate: Aggregate) -> None:
        if self.open and key not in self.versions:
            # The library's ``version`` and ``id`` are properties, a Python call each: their
            # attributes are read here, and wherever a commit reads them for every aggregate.
            self.versions[key] = aggregate._version
            self.read_ids[key] = aggregate._id
            if type(aggregate) in self.targets:
                self.unchecked.add(key)

    def missed(self, aggregate_id: UUID, key: int, as_type: type[Aggregate]) -> None:
        """The decision looked for this aggregate and it does not exist: deciding on its
        absence is relying on it, like a read (a commit that creates it is checked by the
        primary key instead)."""
        if self.open and as_type not in self.targets and key not in self.versions:
            self.versions[key] = None
            self.read_ids[key] = aggregate_id

    def __enter__(self) -> _Reads:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def relied_on(self, written: dict[int, UUID]) -> dict[UUID, int | None]:
        """What a commit that writes ``written`` (by their ``int``) relied on without writing
        it, by id: the version read (None: found absent). What it writes, the primary key
        checks; the ``targets`` it only points at are not checked."""
        read_ids = self.read_ids
        unchecked = self.unchecked
        expected: dict[UUID, int | None] = {}
        for key, version in self.versions.items():  # a loop: no comprehension's function
            if key not in written and key not in unchecked:
                expected[read_ids[key]] = version
        return expected

    def ids(self) -> list[UUID]:
        """Every aggregate the decision read so far."""
        return list(self.read_ids.values())

    def close(self) -> None:
        self.open = self.held = False
        self.preloaded = {}
        self.absent = set()
        self.versions = {}
        self.read_ids = {}
        self.targets = frozenset()
        self.unchecked = set()
        self.from_held = set()


class _Along:
    """A request's ``read_along``: ids for its next query, and those it fetched absent."""

    def __init__(self) -> None:
        self.ids: list[UUID] = []
        self.absent: set[UUID] = set()


class _ThreadReads(threading.local):
    """Each thread's ``_Reads``, made the first time the thread looks (``threading.local``
    runs ``__init__`` once in every thread that uses it)."""

    def __init__(self) -> None:
        self.reads = _Reads()


def _collected(
    aggregates: Sequence[Aggregate],
) -> tuple[list[tuple[Aggregate, Sequence[Any]]], dict[int, UUID]]:
    """Each aggregate with the events it collected, and the ids of those that have any (by
    their ``int``). Loops, not comprehensions (in ``save`` too): each comprehension is a
    function made and called, and a commit is a few aggregates and events."""
    pending: list[tuple[Aggregate, Sequence[Any]]] = []
    written: dict[int, UUID] = {}
    for aggregate in aggregates:
        events = aggregate.collect_events()
        pending.append((aggregate, events))
        if events:
            aggregate_id = aggregate._id
            written[aggregate_id.int] = aggregate_id
    return pending, written


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
        cache_size: int = 256,
        snapshot_interval: int = stored_snapshots.SNAPSHOT_INTERVAL,
    ) -> None:
        self.app = app
        self._local = _ThreadReads()
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
        self._request_along: ContextVar[_Along | None] = ContextVar(
            f"countersign_request_along_{id(self)}", default=None
        )

    @property
    def _reads(self) -> _Reads:
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
        along = self._request_along.set(_Along())
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
    ) -> _Reads:
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

    def read_in_this_request(self, reads: _Reads) -> bool:
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
        except _UNREADABLE as error:
            raise _corrupt(aggregate_ids, error) from None
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
        bases[originator_id] = domain_event.mutate(bases[originator_id])

    def _select_after(self, after: list[tuple[UUID, int]]) -> list[StoredEvent]:
        """The events of each aggregate past its version, in order of aggregate and version."""
        return [event for _, event in self._select(after, ())]

    def _select(
        self, after: list[tuple[UUID, int]], cold: Sequence[UUID]
    ) -> list[tuple[bool, StoredEvent]]:
        """The events of each aggregate in ``after`` past its version; for each aggregate in
        ``cold``, its newest stored snapshot that no event outruns (True: a snapshot, first)
        and its events after it. In order of aggregate and version."""
        recorder: Any = self.app.recorder
        sqlite = isinstance(recorder, SQLiteAggregateRecorder)
        mark = "?" if sqlite else "%s"
        columns = "originator_id, originator_version, topic, state"
        parts = []
        params: list[Any] = []
        if cold:
            marks = ", ".join(mark for _ in cold)
            # The newest snapshot of each cold aggregate not newer than its newest event.
            latest = (
                f"WITH latest AS (SELECT s.originator_id AS oid, MAX(s.originator_version) AS v "
                f"FROM {self._snapshot_table} s WHERE s.originator_id IN ({marks}) "
                f"AND s.originator_version <= (SELECT MAX(e.originator_version) "
                f"FROM {self._table} e WHERE e.originator_id = s.originator_id) "
                f"GROUP BY s.originator_id) "
            )
            parts.append(
                f"SELECT 0 AS kind, s.originator_id, s.originator_version, s.topic, s.state "
                f"FROM {self._snapshot_table} s JOIN latest l "
                f"ON s.originator_id = l.oid AND s.originator_version = l.v"
            )
            parts.append(
                f"SELECT 1 AS kind, e.originator_id, e.originator_version, e.topic, e.state "
                f"FROM {self._table} e LEFT JOIN latest l ON e.originator_id = l.oid "
                f"WHERE e.originator_id IN ({marks}) "
                f"AND e.originator_version > COALESCE(l.v, 0)"
            )
            ids = [i.hex if sqlite else i for i in cold]
            params += [*ids, *ids]
        if after:
            where = " OR ".join(
                f"(originator_id = {mark} AND originator_version > {mark})" for _ in after
            )
            parts.append(f"SELECT 1 AS kind, {columns} FROM {self._table} WHERE {where}")
            params += [v for i, version in after for v in (i.hex if sqlite else i, version)]
        if not parts:
            return []
        if cold:
            sql = latest + " UNION ALL ".join(parts) + " ORDER BY 2, 1, 3"
        else:  # the hot path, as it always was
            sql = f"SELECT 1 AS kind, {columns} FROM {self._table} WHERE {where} ORDER BY 2, 3"
        if sqlite:
            with recorder.datastore.transaction(commit=False) as cursor:
                cursor.execute(sql, params)
                rows = [tuple(r) for r in cursor.fetchall()]
        else:  # PostgreSQL (its module is imported only by a process that uses it)
            with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
                cursor.execute(sql, params, prepare=True)
                rows = [
                    (
                        r["kind"],
                        r["originator_id"],
                        r["originator_version"],
                        r["topic"],
                        r["state"],
                    )
                    for r in cursor.fetchall()
                ]
        return [
            (
                kind == 0,
                StoredEvent(
                    originator_id=UUID(str(originator_id)),
                    originator_version=int(version),
                    topic=topic,
                    state=bytes(state),
                ),
            )
            for kind, originator_id, version, topic, state in rows
        ]

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        return self.get(aggregate_id, as_type, shared=True)

    def get(
        self,
        aggregate_id: UUID,
        as_type: type[A],
        version: int | None = None,
        *,
        shared: bool = False,
    ) -> A:
        """``shared`` gives the immutable snapshot itself: for reading only."""
        if version is not None:
            aggregate: Any = self._historical(aggregate_id, version)
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
                reads.saw(key, aggregate)
                if shared:
                    # Read-only, even if it was not kept as a snapshot (most are frozen
                    # already: freeze's own first test, inline, spares the call).
                    reference = _FROZEN.get(id(aggregate))
                    if reference is None or reference() is not aggregate:
                        freeze(aggregate)
                else:
                    aggregate = copy_aggregate(aggregate)
        if aggregate is None or not isinstance(aggregate, as_type):
            raise NotFoundError(as_type.__name__)
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
        loaded = self._load_many(wanted)
        for i in wanted:
            found = loaded.get(i)
            if found is not None:
                request[i] = found
            elif along is not None and i != aggregate_id:
                along.absent.add(i)
        return loaded.get(aggregate_id)

    def _historical(self, aggregate_id: UUID, version: int) -> Aggregate | None:
        try:
            aggregate: Aggregate = self.app.repository.get(aggregate_id, version=version)
        except AggregateNotFoundError:
            return None
        except _UNREADABLE as error:
            raise _corrupt([aggregate_id], error) from None
        return aggregate

    def save(self, *aggregates: Aggregate, final: bool = False) -> None:
        """``final``: the caller is done with these objects; after the commit they become the
        snapshots themselves (no copy) and refuse any further command."""
        reads = self._local.reads  # an attribute, not the property's call
        # What Application.save does for us (no snapshotting, no in-process subscribers),
        # without its per-object protocol checks.
        pending, written = _collected(aggregates)
        self._forget_read(reads, written)
        # What this commit relied on without writing it (what it writes, the primary key
        # checks; an aggregate passed here unchanged is only read): the recorder verifies it
        # under the writers' lock.
        expected = reads.relied_on(written)
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

    def _forget_read(self, reads: _Reads, written: dict[int, UUID]) -> None:
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

    def _keep(
        self, pending: list[tuple[Aggregate, Sequence[Any]]], final: bool, since: int
    ) -> None:
        """What a commit wrote becomes the snapshot this process holds (and, every
        ``snapshot_interval`` events of a snapshotted class, a stored one)."""
        reads = self._local.reads  # an attribute, not the property's call
        to_store: list[Aggregate] = []
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
            key = aggregate_id.int
            self._snapshots.put(aggregate_id, snapshot, since)
            if key in reads.versions:
                reads.versions[key] = aggregate._version
            if stored_snapshots.crossed(snapshot, len(events), self.snapshot_interval):
                to_store.append(snapshot)
        if to_store:
            self._store_snapshots(to_store)

    def _store_snapshots(self, aggregates: list[Aggregate]) -> None:
        """Store snapshots of what a commit just wrote. They are a cache: if another process
        stored the same version first, or the write fails, nothing is lost (the events are
        committed), so the commit's caller never hears of it."""
        snapshots = [stored_snapshots.take(self.app.mapper, a) for a in aggregates]
        recorder: Any = self.app.snapshot_recorder
        try:
            if isinstance(recorder, SQLiteAggregateRecorder):
                recorder.insert_events(snapshots)
                # Only the newest is ever read, and each holds the whole state: the older go.
                where = " OR ".join(
                    "(originator_id = ? AND originator_version < ?)" for _ in aggregates
                )
                params = [v for a in aggregates for v in (a.id.hex, a.version)]
                with recorder.datastore.transaction(commit=True) as cursor:
                    cursor.execute(f"DELETE FROM {self._snapshot_table} WHERE {where}", params)
            else:
                self._replace_snapshots(recorder, snapshots)
        except (IntegrityError, PersistenceError) as error:
            log.warning("stored no snapshot of %s (%s)", aggregates[0].id, type(error).__name__)

    def _replace_snapshots(self, recorder: Any, snapshots: list[StoredEvent]) -> None:
        """PostgreSQL: the new snapshots inserted and the older ones of the same aggregates
        deleted in one statement, so one round trip and one commit (the library's insert and a
        DELETE in a transaction of its own took four round trips and two commits). Whole or
        not at all: if a snapshot of the same version is there already (another process
        stored it), nothing is deleted either, as before."""
        ids = [s.originator_id for s in snapshots]
        versions = [s.originator_version for s in snapshots]
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(
                f"WITH older AS (DELETE FROM {self._snapshot_table} AS s "
                "USING unnest(%s::uuid[], %s::bigint[]) AS n(id, version) "
                "WHERE s.originator_id = n.id AND s.originator_version < n.version) "
                f"INSERT INTO {self._snapshot_table} "
                "(originator_id, originator_version, topic, state) "
                "SELECT * FROM unnest(%s::uuid[], %s::bigint[], %s::text[], %s::bytea[])",
                (
                    ids,
                    versions,
                    ids,
                    versions,
                    [s.topic for s in snapshots],
                    [s.state for s in snapshots],
                ),
            )

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
        return [
            StoredEventView(
                version=event.originator_version,
                type=type(event).__name__,
                at=getattr(event, "timestamp"),  # noqa: B009 - not on the library's protocol
                fields={k: v for k, v in vars(event).items() if k not in _ENVELOPE},
            )
            for event in events
        ]

    def ids_with_events(
        self, aggregate_class: type[Aggregate], event_names: Sequence[str]
    ) -> Iterator[UUID]:
        topics = stored_topics(aggregate_class, event_names)
        seen: set[UUID] = set()
        start = 1
        while True:
            batch = self.app.recorder.select_notifications(start, limit=500, topics=topics)
            if not batch:
                return
            for notification in batch:
                originator_id = UUID(str(notification.originator_id))
                if originator_id not in seen:
                    seen.add(originator_id)
                    yield originator_id
            start = batch[-1].id + 1
