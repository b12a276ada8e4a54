"""The one event-sourced application: proposals and club aggregates in a single stream.

``CountersignApplication`` is an eventsourcing ``Application`` with a guarded mapper;
``EventSourcedStore`` adapts it to the domain's ``AggregateStore`` port and translates the
library's errors into domain errors.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    IntegrityError,
    Mapper,
    StoredEvent,
    Transcoder,
)
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.utils import get_topic, resolve_topic

from application.errors import CorruptRecordError
from application.proposals import new_correlation_id
from domain.errors import ConcurrencyConflictError, NotFoundError
from domain.ports import StoredEventView

log = logging.getLogger("countersign.store")

A = TypeVar("A", bound=Aggregate)

#: Only classes of our own domain may be named by a stored topic: a tampered topic must not
#: make the reader import arbitrary code.
ALLOWED_TOPIC_PREFIXES = ("domain.",)
_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


class UnreadableEventError(Exception):
    """Raised when a stored event names a forbidden topic or a class version from the future."""


class GuardedMapper(Mapper[UUID]):
    """The library's mapper, failing closed on foreign topics and future class versions."""

    def __init__(self, transcoder: Transcoder, compressor: Any = None, cipher: Any = None):
        super().__init__(transcoder=transcoder, compressor=compressor, cipher=cipher)

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        if not stored_event.topic.startswith(ALLOWED_TOPIC_PREFIXES):
            raise UnreadableEventError(f"topic not allowed: {stored_event.topic[:80]!r}")
        cls = resolve_topic(stored_event.topic)
        event = super().to_domain_event(stored_event)
        stored_version = _stored_class_version(self, stored_event)
        if stored_version > getattr(cls, "class_version", 1):
            raise UnreadableEventError(
                f"{stored_event.topic} was written by a newer version of countersign"
            )
        return event


def _stored_class_version(mapper: Mapper[UUID], stored_event: StoredEvent) -> int:
    state = stored_event.state
    if mapper.cipher:
        state = mapper.cipher.decrypt(state)
    if mapper.compressor:
        state = mapper.compressor.decompress(state)
    if b'"class_version"' not in state:
        return 1
    return int(mapper.transcoder.decode(state).get("class_version", 1))


class CountersignApplication(Application[UUID]):
    """Proposals and the club aggregates they act on, in one notification log."""

    name = "countersign"
    env = {
        "AGGREGATE_CACHE_MAXSIZE": "2000",
        "AGGREGATE_CACHE_FASTFORWARD": "y",
    }

    def construct_mapper(self) -> Mapper[UUID]:
        return self.factory.mapper(
            transcoder=self.construct_transcoder(), mapper_class=GuardedMapper
        )


class EventSourcedStore:
    """The domain's AggregateStore port, over CountersignApplication."""

    def __init__(self, app: CountersignApplication) -> None:
        self.app = app
        self._local = threading.local()

    @property
    def _preloaded(self) -> dict[UUID, Aggregate]:
        preloaded: dict[UUID, Aggregate] | None = getattr(self._local, "preloaded", None)
        if preloaded is None:
            preloaded = self._local.preloaded = {}
        return preloaded

    @contextmanager
    def preload(self, aggregate_ids: Sequence[UUID]) -> Iterator[None]:
        wanted = [i for i in dict.fromkeys(aggregate_ids) if i not in self._preloaded]
        loaded = self._load_many(wanted) if wanted else {}
        self._preloaded.update(loaded)
        try:
            yield
        finally:
            for aggregate_id in loaded:
                self._preloaded.pop(aggregate_id, None)

    def _load_many(self, aggregate_ids: list[UUID]) -> dict[UUID, Aggregate]:
        """Catch every cached aggregate up (or load it whole) with ONE query.

        Cached aggregates are shared, never mutated: one with new events is copied before
        the events are applied, and the copy replaces it in the cache.
        """
        cache: Any = self.app.repository.cache
        bases: dict[UUID, Any] = {}
        for aggregate_id in aggregate_ids:
            try:
                bases[aggregate_id] = cache.get(aggregate_id) if cache else None
            except KeyError:
                bases[aggregate_id] = None
        changed: set[UUID] = set()
        try:
            stored = self._select_after(
                [(i, base.version if base is not None else 0) for i, base in bases.items()]
            )
            for event in stored:
                originator_id = UUID(str(event.originator_id))
                if originator_id not in changed:
                    changed.add(originator_id)
                    bases[originator_id] = copy.deepcopy(bases[originator_id])
                domain_event: Any = self.app.mapper.to_domain_event(event)
                bases[originator_id] = domain_event.mutate(bases[originator_id])
        except (UnreadableEventError, ValueError, TypeError, KeyError, AttributeError):
            return {}  # fall back to one read per aggregate, which reports the corruption
        loaded = {i: aggregate for i, aggregate in bases.items() if aggregate is not None}
        if cache is not None:
            for aggregate_id in changed & loaded.keys():
                cache.put(aggregate_id, loaded[aggregate_id])
        return loaded

    def _select_after(self, after: list[tuple[UUID, int]]) -> list[StoredEvent]:
        recorder: Any = self.app.recorder
        table = recorder.events_table_name
        where = " OR ".join("(originator_id = {0} AND originator_version > {0})" for _ in after)
        sql = (
            f"SELECT originator_id, originator_version, topic, state FROM {table} "
            f"WHERE {where} ORDER BY originator_id, originator_version"
        )
        if isinstance(recorder, PostgresAggregateRecorder):
            params: list[Any] = [value for pair in after for value in pair]
            with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
                cursor.execute(sql.format("%s"), params, prepare=True)
                rows = [
                    (r["originator_id"], r["originator_version"], r["topic"], r["state"])
                    for r in cursor.fetchall()
                ]
        else:
            params = [value for i, version in after for value in (i.hex, version)]
            with recorder.datastore.transaction(commit=False) as cursor:
                cursor.execute(sql.format("?"), params)
                rows = [tuple(r) for r in cursor.fetchall()]
        return [
            StoredEvent(
                originator_id=UUID(str(originator_id)),
                originator_version=int(version),
                topic=topic,
                state=bytes(state),
            )
            for originator_id, version, topic, state in rows
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
        preloaded = self._preloaded.get(aggregate_id) if version is None else None
        if preloaded is not None:
            if not isinstance(preloaded, as_type):
                raise NotFoundError(as_type.__name__)
            return preloaded if shared else copy.deepcopy(preloaded)
        try:
            aggregate: Aggregate = self.app.repository.get(
                aggregate_id, version=version, deepcopy_from_cache=not shared
            )
        except AggregateNotFoundError:
            raise NotFoundError(as_type.__name__) from None
        except (UnreadableEventError, ValueError, TypeError, KeyError) as error:
            correlation_id = new_correlation_id()
            log.error(
                "unreadable stored events for %s (%s), correlation id %s",
                aggregate_id,
                type(error).__name__,
                correlation_id,
            )
            raise CorruptRecordError(correlation_id) from None
        if not isinstance(aggregate, as_type):
            raise NotFoundError(as_type.__name__)
        return aggregate

    def save(self, *aggregates: Aggregate) -> None:
        for aggregate in aggregates:
            # Whatever happens to this commit, the preloaded state is no longer the latest.
            self._preloaded.pop(aggregate.id, None)
        try:
            self.app.save(*aggregates)
        except IntegrityError:
            raise ConcurrencyConflictError("an aggregate changed since it was read") from None

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
        topics = [f"{get_topic(aggregate_class)}.{name}" for name in event_names]
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
