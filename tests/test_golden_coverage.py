"""Every event type countersign can store is in a golden stream (issue 16, suite 5).

The golden streams (``tests/fixtures/golden_<commit>/``, read by tests/test_golden_streams.py)
show that today's code reads what earlier releases wrote. They only show it for the event types
they hold: an event type added since the newest one was written is read by no such test, and
a change of its shape would go unnoticed. So the event types are listed from the code itself
(every event class of every aggregate in ``countersign.domain``, the only package a stored
topic of countersign's own may name), and each must be in the SQLite file and in the
PostgreSQL dump of at least one golden stream. A new event type therefore comes with a new
golden stream (a ``make.py`` in the style of ``golden_caf348e``'s, run once at that commit).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import countersign.domain
import pytest
from countersign.domain.club.passkeys import PasskeyRing
from countersign.domain.proposal import Proposal
from eventsourcing.domain import Aggregate, event
from eventsourcing.utils import get_topic

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = sorted(FIXTURES.glob("golden_*"))
#: Events stored before the ``countersign`` namespace (up to 0a9997d) name ``domain.…``.
_LEGACY = "domain."
_DUMPED_TOPIC = re.compile(r"'((?:countersign\.)?domain\.[\w.]+:[\w.]+)'")


def _subclasses(cls: type) -> Iterable[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def domain_aggregates() -> list[type[Aggregate]]:
    """Every aggregate class defined in countersign's domain (each module imported first)."""
    prefix = f"{countersign.domain.__name__}."
    for module in pkgutil.walk_packages(countersign.domain.__path__, prefix):
        importlib.import_module(module.name)
    found = {cls for cls in _subclasses(Aggregate) if cls.__module__.startswith(prefix)}
    return sorted(found, key=get_topic)


def stored_event_topics(aggregates: Iterable[type[Aggregate]]) -> set[str]:
    """The topics the aggregates' events are stored under: each event class an aggregate
    defines (explicitly, or through ``@event``) but its ``Event`` base, and of its "created"
    event classes the one its ``__init__`` names (the library also defines its default
    ``Created`` beside it, which is never stored)."""
    topics = set()
    for aggregate in aggregates:
        events = [
            value
            for value in vars(aggregate).values()
            if inspect.isclass(value)
            and issubclass(value, aggregate.Event)
            and value is not aggregate.Event
        ]
        created = [cls for cls in events if issubclass(cls, Aggregate.Created)]
        if len(created) > 1:
            unused = [cls for cls in created if cls.__name__ == "Created"]
            events = [cls for cls in events if cls not in unused]
            created = [cls for cls in created if cls not in unused]
        assert len(created) == 1, f"{aggregate.__qualname__}: which event creates it? {created}"
        topics |= {get_topic(cls) for cls in events}
    return topics


def _today(topic: str) -> str:
    return f"countersign.{topic}" if topic.startswith(_LEGACY) else topic


def sqlite_topics(fixture: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{fixture / 'countersign.db'}?immutable=1", uri=True)
    try:
        rows = conn.execute("SELECT DISTINCT topic FROM stored_events").fetchall()
    finally:
        conn.close()
    return {_today(topic) for (topic,) in rows}


def postgres_topics(fixture: Path) -> set[str]:
    return {
        _today(topic) for topic in _DUMPED_TOPIC.findall((fixture / "postgres.sql").read_text())
    }


def test_the_domain_event_types_are_found_from_the_code():
    """The walk finds every aggregate and their events, whatever style they are written in:
    ``@event`` methods (the passkey ring's) and explicit event classes (the proposal's)."""
    aggregates = domain_aggregates()
    assert {Proposal, PasskeyRing} <= set(aggregates)
    topics = stored_event_topics(aggregates)
    assert get_topic(Proposal.ApprovalLapsed) in topics  # an explicit event class
    assert get_topic(Proposal.Proposed) in topics  # created through @event on __init__
    assert get_topic(PasskeyRing.PasskeyUsed) in topics  # an @event method
    assert get_topic(Proposal.Event) not in topics  # the base of the aggregate's events
    assert get_topic(Proposal.Created) not in topics  # never stored: Proposed is used
    for aggregate in aggregates:  # each one's events are found
        assert any(topic.startswith(f"{get_topic(aggregate)}.") for topic in topics), aggregate


def test_a_new_event_type_is_listed_whichever_way_it_is_written():
    class Ledger(Aggregate):
        @event("Opened")
        def __init__(self, name: str) -> None:
            self.name = name

        @event("Renamed")
        def rename(self, name: str) -> None:
            self.name = name

        class Closed(Aggregate.Event):
            reason: str

            def apply(self, aggregate: Ledger) -> None:
                pass

    names = {topic.rsplit(".", 1)[1] for topic in stored_event_topics([Ledger])}
    assert names == {"Opened", "Renamed", "Closed"}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_stored_event_type_of_the_domain_is_in_a_golden_stream(backend):
    read = sqlite_topics if backend == "sqlite" else postgres_topics
    golden: set[str] = set()
    for fixture in GOLDEN:
        golden |= read(fixture)
    missing = sorted(stored_event_topics(domain_aggregates()) - golden)
    assert not missing, (
        f"no golden stream ({backend}) holds these event types: {', '.join(missing)}. Write a "
        "golden stream of today's main that stores them (tests/fixtures/golden_<commit>/, its "
        "make.py in the style of golden_caf348e's) so that the next release is shown to read them"
    )
