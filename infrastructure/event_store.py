"""The one event-sourced application: proposals and club aggregates in a single stream.

``CountersignApplication`` is an eventsourcing ``Application`` with a guarded mapper;
``EventSourcedStore`` adapts it to the domain's ``AggregateStore`` port and translates the
library's errors into domain errors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
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

    def get(self, aggregate_id: UUID, as_type: type[A], version: int | None = None) -> A:
        try:
            aggregate: Aggregate = self.app.repository.get(aggregate_id, version=version)
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
