"""What a stored event may name, and how it is read: the topic allow-list (countersign's own
domain and the enabled plug-ins' declared packages, nothing else), the mapper that fails closed
on a foreign topic or a class version from the future, and the fields an event was written
with (what its hash-chain link covers).
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from uuid import UUID

from countersign.application.errors import CorruptRecordError, new_correlation_id
from countersign.application.ports import StoredEventView
from countersign.domain.seals import SealKeys
from countersign.infrastructure.persistence import event_seals
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, CanInitAggregate, EventSourcingError, Snapshot
from eventsourcing.persistence import (
    Mapper,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.utils import TopicError, get_topic, register_topic, resolve_topic

log = logging.getLogger("countersign.store")

#: Only classes of our own domain may be named by a stored topic: a tampered topic must not
#: make the reader import arbitrary code.
DOMAIN_PACKAGE = "countersign.domain"
#: Events stored before the ``countersign`` namespace (up to 0a9997d) name the same classes
#: ``domain.…``; the library resolves that package name to today's (its documented way to
#: move classes), so old and new events load as the same types.
LEGACY_DOMAIN_PACKAGE = "domain"
_BUILT_IN_PREFIXES = (f"{DOMAIN_PACKAGE}.", f"{LEGACY_DOMAIN_PACKAGE}.")
ALLOWED_TOPIC_PREFIXES: tuple[str, ...] = _BUILT_IN_PREFIXES
#: The packages whose classes a resolved topic may name: the domain's, and the event
#: packages of the deployment's plug-ins (``allow_event_packages``).
_CLASS_MODULE_PREFIXES: tuple[str, ...] = (f"{DOMAIN_PACKAGE}.",)
register_topic(LEGACY_DOMAIN_PACKAGE, importlib.import_module(DOMAIN_PACKAGE))


def allow_event_packages(packages: Sequence[str]) -> None:
    """Let stored topics name classes of these packages too (the plug-ins' declared event
    packages; bootstrap calls this once) and of no other: ``allow_event_packages(())`` is
    countersign's domain alone. A package is allowed with its subpackages, never a sibling
    whose name merely starts the same (``acme_invoices`` does not allow ``acme_invoicesx``)."""
    global ALLOWED_TOPIC_PREFIXES, _CLASS_MODULE_PREFIXES
    own = tuple(f"{package}." for package in packages)
    # A topic is "module:QualName": a class defined in the package itself is "package:…".
    ALLOWED_TOPIC_PREFIXES = (*_BUILT_IN_PREFIXES, *own, *(f"{p}:" for p in packages))
    _CLASS_MODULE_PREFIXES = (f"{DOMAIN_PACKAGE}.", *own)
    _CLASS_MODULES.clear()
    _CLASS_MODULES.update(packages)


_CLASS_MODULES: set[str] = set()


def stored_topics(aggregate_class: type[Aggregate], event_names: Sequence[str]) -> list[str]:
    """Every topic these events of this aggregate may be stored under: today's and the legacy."""
    topics = []
    for name in event_names:
        topic = f"{get_topic(aggregate_class)}.{name}"
        topics += [topic, LEGACY_DOMAIN_PACKAGE + topic.removeprefix(DOMAIN_PACKAGE)]
    return topics


def is_domain_class(cls: Any) -> bool:
    """Whether a resolved topic is one of the domain's own classes, or of a package an
    enabled plug-in declared (``allow_event_packages``)."""
    if not isinstance(cls, type):
        return False
    module = cls.__module__
    return module.startswith(_CLASS_MODULE_PREFIXES) or module in _CLASS_MODULES


def topic_allowed(topic: str) -> bool:
    """Whether a stored topic may be resolved at all (before anything is imported)."""
    return topic.startswith(ALLOWED_TOPIC_PREFIXES)


def names_no_class(topic: str) -> bool:
    """Whether a topic of the allowed packages names no class (a writer's edit: its event
    can never be read); False for any other topic (a plug-in's not enabled, say)."""
    if not topic_allowed(topic):
        return False
    try:
        resolve_topic(topic)
    except Exception:
        return True
    return False


_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def event_views(events: Sequence[Any]) -> list[StoredEventView]:
    """Domain events read from the store, as an auditor reads them."""
    return [
        StoredEventView(
            version=event.originator_version,
            type=type(event).__name__,
            at=getattr(event, "timestamp"),  # noqa: B009 - not on the library's protocol
            fields={k: v for k, v in vars(event).items() if k not in _ENVELOPE},
            topic=get_topic(type(event)),
        )
        for event in events
    ]


#: (aggregate class, event class) -> whether events of that class may follow in its streams.
_OWN: dict[tuple[type, type], bool] = {}


def applied(seals: SealKeys | None, base: Any, event: Any) -> Any:
    """``event``, read from the store, applied to ``base`` (None: its stream's first), with
    ``seals`` checked as a read checks them (event_seals.py). UnreadableEventError for an
    event countersign never stores in that stream: another of its aggregates' events, a
    second created one, the bare ``Event`` of its class, or a first that creates nothing
    (one a writer stored ran its ``apply`` on an object it was not written for, and,
    carrying no seal, unchecked). A plug-in's event (its declared package) is read, as the
    history lists it; after a sealed ``Proposed`` no seal vouches for it (event_seals.py)."""
    if base is None:
        if not isinstance(event, CanInitAggregate):
            raise UnreadableEventError(f"{type(event).__qualname__} cannot open a stream")
    else:
        key = (type(base), type(event))
        own = _OWN.get(key)
        if own is None:
            own = _OWN[key] = _follows(*key)
        if not own:
            raise UnreadableEventError(
                f"{type(event).__qualname__} is not an event of {type(base).__qualname__}"
            )
    if seals is None:
        return event.mutate(base)
    return event_seals.applied(seals, base, event)


def _follows(aggregate_class: Any, event_class: type) -> bool:
    own = getattr(aggregate_class, "Event", None)
    if not isinstance(own, type) or event_class is own:
        return False
    if issubclass(event_class, CanInitAggregate):
        return False
    return issubclass(event_class, own) or not event_class.__module__.startswith(
        f"{DOMAIN_PACKAGE}."
    )


def replayed(
    app: Application[UUID], seals: SealKeys | None, stored: Sequence[StoredEvent]
) -> tuple[Aggregate | None, list[StoredEventView]]:
    """One aggregate made from its ``stored`` events alone (None: it has none), each event
    after ``Proposed`` checked against its seal as a read checks it (event_seals.py), and those
    very events as an auditor reads them: what a history shows is what is checked, never a
    snapshot a process holds. CorruptRecordError if an event does not read."""
    aggregate: Any = None
    events: list[Any] = []
    try:
        for one in stored:
            event: Any = app.mapper.to_domain_event(one)
            events.append(event)
            aggregate = applied(seals, aggregate, event)
    except PersistenceError:
        raise  # the database out of reach, not a record that is bad
    except _UNREADABLE as error:
        raise _corrupt([UUID(str(stored[0].originator_id))], error, app) from None
    return aggregate, event_views(events)


def replayed_at(
    app: Application[UUID], seals: SealKeys | None, stored: Sequence[StoredEvent], version: int
) -> Any:
    """``replayed``'s aggregate as it was at ``version`` of its ``stored`` events (one of
    them), from those very rows."""
    return replayed(app, seals, [one for one in stored if one.originator_version <= version])[0]


class UnreadableEventError(Exception):
    """Raised when a stored event names a forbidden topic or a class version from the future."""


class UnwritableEventError(Exception):
    """Raised when an event of a class outside the allowed packages is about to be stored."""


class GuardedMapper(Mapper[UUID]):
    """The library's mapper, failing closed on foreign topics and future class versions.

    It writes events as the library's does, byte for byte, with less work per event: an
    event class's topic and class version are looked up once (the library asks for the
    class version with ``getattr`` and a default, and most classes have none: a formatted
    AttributeError raised and cleared for every event), and the StoredEvent is made from
    its fields' dict (the frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: event class -> (its topic, its class version if above 1, else 0, and for an event
        #: that may carry a seal (domain/proposal_events.py), the version it is written at
        #: without one (0 for 1), else None)
        self._classes: dict[type, tuple[str, int, int | None]] = {}

    def _class_facts(self, cls: type) -> tuple[str, int, int | None]:
        class_version = getattr(cls, "class_version", 1)
        unsealed = getattr(cls, "unsealed_version", None)
        topic = get_topic(cls)
        if not topic_allowed(topic) and not issubclass(cls, Snapshot):  # snapshots: revive()
            # Refused as it is written, not once it is stored: no process could read it back
            # (a plug-in that forgot its ``event_packages`` succeeded, then every read of its
            # record was an internal error naming nothing).
            raise UnwritableEventError(
                f"{topic} is outside the packages countersign reads events of: a plug-in "
                "names its events' package in its event_packages"
            )
        facts = (
            topic,
            class_version if class_version > 1 else 0,
            None if unsealed is None else (unsealed if unsealed > 1 else 0),
        )
        self._classes[cls] = facts
        return facts

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        cls = type(domain_event)
        facts = self._classes.get(cls)
        topic, class_version, unsealed = facts if facts is not None else self._class_facts(cls)
        state = domain_event.__dict__
        # An event that may carry a seal and has none (no seal keys: no field of its own)
        # is written as its version before seals was: the same bytes (proposal_events.py).
        if unsealed is not None and "seal" not in state:
            class_version = unsealed
        transcoder = self.transcoder
        if type(transcoder) is FastJSONTranscoder:
            # The library's dict of the state, its two pops and ``encode``, in one call
            # that copies the state once (the same bytes: tests/test_transcoder.py).
            stored_state = transcoder.encode_event(state, class_version)
        else:
            event_state = dict(state)
            del event_state["originator_id"]
            del event_state["originator_version"]
            if class_version:
                event_state["class_version"] = class_version
            stored_state = transcoder.encode(event_state)
        if self.compressor:
            stored_state = self.compressor.compress(stored_state)
        if self.cipher:
            stored_state = self.cipher.encrypt(stored_state)
        # The frozen dataclass's fields, in its order, written into the new instance's
        # ``__dict__`` (what its ``__init__`` does through ``object.__setattr__``).
        stored = _new_stored_event(StoredEvent)
        fields = stored.__dict__
        fields["originator_id"] = state["originator_id"]
        fields["originator_version"] = state["originator_version"]
        fields["topic"] = topic
        fields["state"] = stored_state
        return stored

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        if not topic_allowed(stored_event.topic):
            raise UnreadableEventError(f"topic not allowed: {stored_event.topic[:80]!r}")
        cls = resolve_topic(stored_event.topic)
        if not is_domain_class(cls):
            raise UnreadableEventError(f"topic not allowed: {stored_event.topic[:80]!r}")
        event = super().to_domain_event(stored_event)
        stored_version = _stored_class_version(self, stored_event)
        if stored_version > getattr(cls, "class_version", 1):
            raise UnreadableEventError(
                f"{stored_event.topic} was written by a newer version of countersign"
            )
        if issubclass(cls, CanInitAggregate):
            _check_maker(cls, event.__dict__.get("originator_topic"))
        return event


def _check_maker(cls: type, named: Any) -> None:
    """A created event makes the aggregate its ``originator_topic`` field names (the
    library resolves it, importing its module): only a class of the domain whose event it
    is, or UnreadableEventError before anything is imported on a stored field's say-so."""
    if isinstance(named, str) and topic_allowed(named):
        maker = resolve_topic(named)
        if is_domain_class(maker) and issubclass(cls, getattr(maker, "Event", ())):
            return
    raise UnreadableEventError(f"a created event names another class: {str(named)[:80]!r}")


_new_stored_event = object.__new__

_UNREADABLE = (
    UnreadableEventError,
    EventSourcingError,
    TopicError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
)


def _corrupt(
    aggregate_ids: Sequence[UUID],
    error: BaseException,
    app: Application[UUID] | None = None,
    recorder: Any = None,
) -> CorruptRecordError:
    """The error a read that met a damaged record raises, said in one ERROR line of the log:
    which event does not read (its position, version, topic and problem, where the store
    finds it: unreadable_events.py) and what to do. ``recorder``: where the events are read
    from without ``app`` (then only their keys are checked)."""
    from countersign.infrastructure.persistence.unreadable_events import (
        described,
        first_unreadable,
    )

    correlation_id = new_correlation_id()
    recorder = app.recorder if app is not None else recorder
    mapper = app.mapper if app is not None else None
    found = None if recorder is None else first_unreadable(recorder, mapper, aggregate_ids)
    log.error(
        "unreadable stored events for %s (%s), correlation id %s%s",
        ", ".join(str(i) for i in aggregate_ids),
        type(error).__name__,
        correlation_id,
        "" if found is None else ": " + described(found),
    )
    clubs = {} if app is None else stored_clubs(app, aggregate_ids)
    return CorruptRecordError(correlation_id, clubs, found)


def historical(app: Application[UUID], aggregate_id: UUID, version: int) -> Aggregate | None:
    """The aggregate as it was at ``version`` (None: no such aggregate); CorruptRecordError
    if its events up to there do not read."""
    try:
        aggregate: Aggregate = app.repository.get(
            aggregate_id, version=version, projector_func=_projected
        )
    except AggregateNotFoundError:
        return None
    except PersistenceError:
        raise  # the database out of reach, not a record that is bad
    except _UNREADABLE as error:
        raise _corrupt([aggregate_id], error, app) from None
    return aggregate


def _projected(aggregate: Any, events: Iterable[Any]) -> Any:
    """The library's projection of an aggregate, each event applied as a read applies it."""
    for event in events:
        aggregate = applied(None, aggregate, event)
    return aggregate


def stored_clubs(app: Application[UUID], aggregate_ids: Sequence[UUID]) -> dict[UUID, UUID | None]:
    """The organization each aggregate's first stored event names (``organization_id``), read
    from its stored bytes alone, neither its topic resolved nor its event built: what a
    record that no longer reads still says of whose it is. Its JSON's own field if that
    reads; else the one organization id its bytes spell out in that field's stored form (a
    flipped byte elsewhere, a field gone); None where they name none (an organization's own
    record) or more than one, or do not read at all (a cipher's check failing). Only on the
    way to CorruptRecordError: one query per aggregate."""
    clubs: dict[UUID, UUID | None] = {}
    for aggregate_id in aggregate_ids:
        clubs[aggregate_id] = None
        try:  # (a state emptied, NULL: the library's read of it fails on PostgreSQL)
            first = app.recorder.select_events(aggregate_id, lte=1, limit=1)
            plain = _plain_state(app.mapper, first[0]) if first else b""
        except Exception:  # a cipher or compressor refusing damaged bytes: they name no one
            plain = b""
        if not isinstance(plain, bytes):  # none stored (SQLite reads a NULL state as None)
            plain = b""
        try:
            named = app.mapper.transcoder.decode(plain).get("organization_id")
            clubs[aggregate_id] = named if isinstance(named, UUID) else UUID(str(named))
            continue
        except _UNREADABLE:
            pass
        spelled = {UUID(found.decode()) for found in _STORED_CLUB.findall(plain)}
        if len(spelled) == 1:
            clubs[aggregate_id] = spelled.pop()
    return clubs


#: ``organization_id`` as the transcoder stores it (``UUIDAsHex``), whitespace allowed.
_STORED_CLUB = re.compile(
    rb'"organization_id"\s*:\s*\{\s*"_type_"\s*:\s*"uuid_hex"\s*,'
    rb'\s*"_data_"\s*:\s*"([0-9a-f]{32})"\s*\}'
)


def _table_name(recorder: Any) -> str:
    schema = getattr(getattr(recorder, "datastore", None), "schema", "")
    table = recorder.events_table_name
    return f'"{schema}"."{table}"' if schema else str(table)


def _plain_state(mapper: Mapper[UUID], stored_event: StoredEvent) -> bytes:
    state = stored_event.state
    if mapper.cipher:
        state = mapper.cipher.decrypt(state)
    if mapper.compressor:
        state = mapper.compressor.decompress(state)
    return state


def _stored_class_version(mapper: Mapper[UUID], stored_event: StoredEvent) -> int:
    state = _plain_state(mapper, stored_event)
    if b'"class_version"' not in state:
        return 1
    return int(mapper.transcoder.decode(state).get("class_version", 1))


def written_fields(mapper: Mapper[UUID], stored_event: StoredEvent) -> dict[str, Any]:
    """A stored event's fields as they were written, before any upcaster ran: what its
    hash-chain link covers. (The mapper's event has today's shape: an upcaster may have added
    or changed fields since.) Read it through the mapper first, so its guards apply."""
    state: dict[str, Any] = mapper.transcoder.decode(_plain_state(mapper, stored_event))
    state.pop("class_version", None)
    return state


def ids_with_events(
    app: Application[UUID], aggregate_class: type[Aggregate], event_names: Sequence[str]
) -> Iterator[UUID]:
    """The ids of the aggregates of ``aggregate_class`` with an event of these names, in the
    order of their first such event (``EventSourcedStore.ids_with_events``)."""
    topics = stored_topics(aggregate_class, event_names)
    seen: set[UUID] = set()
    start = 1
    while True:
        batch = app.recorder.select_notifications(start, limit=500, topics=topics)
        if not batch:
            return
        for notification in batch:
            originator_id = UUID(str(notification.originator_id))
            if originator_id not in seen:
                seen.add(originator_id)
                yield originator_id
        start = batch[-1].id + 1
