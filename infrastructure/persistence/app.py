"""The eventsourcing application under countersign's store: one notification log for
proposals and the club aggregates they act on, with the guarded mapper, the JSON transcoder
and a recorder for stored snapshots. ``EventSourcedStore`` (event_store.py) adapts it to the
domain's ports."""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from countersign.infrastructure.persistence import aggregate_create, frozen_inits
from countersign.infrastructure.persistence.stored_events import GuardedMapper
from countersign.infrastructure.persistence.transcoder import FastJSONTranscoder
from eventsourcing.application import Application
from eventsourcing.persistence import AggregateRecorder, Mapper, Transcoder


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
