"""What a test of a deployment names: the seeded members, the backends to run on, and a few
reads of the stored events. The fixtures (``countersign.infrastructure.testing.fixtures``)
and the conformance suite use these; so may any test."""

from __future__ import annotations

import os

from countersign.infrastructure.bootstrap import Countersign

#: The seeded managers (``countersign.infrastructure.demo.seed``): Ava and Ben of Granite,
#: Mia of Maple. Ava may propose and approve every built-in operation.
AVA = "ava@granite.example"
BEN = "ben@granite.example"
MIA = "mia@maple.example"

BACKENDS_ENV = "COUNTERSIGN_TEST_BACKENDS"


def backends() -> list[str]:
    """The backends every deployment fixture runs on: ``COUNTERSIGN_TEST_BACKENDS``,
    comma-separated, default ``sqlite,postgres``."""
    return [b.strip() for b in os.environ.get(BACKENDS_ENV, "sqlite,postgres").split(",")]


def count_events(cs: Countersign, topic_suffix: str = "") -> int:
    """How many events are stored (optionally of one event type, e.g. 'Proposal.Proposed')."""
    count = 0
    start = 1
    while True:
        batch = cs.app.recorder.select_notifications(start, limit=1000)
        if not batch:
            return count
        count += sum(1 for n in batch if n.topic.endswith(topic_suffix))
        start = batch[-1].id + 1


def events_table(cs: Countersign) -> str:
    """Where the stored events live: eventsourcing names the table per backend."""
    return "stored_events" if cs.database.kind == "sqlite" else "countersign_events"
