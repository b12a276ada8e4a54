"""The system clock reads the time at every call, in UTC (``SystemClock.now`` is
``datetime.now(UTC)`` called straight from the instance, with no method frame of its own)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from countersign.application.ports import Clock
from countersign.infrastructure.adapters.clock import SystemClock


def test_the_system_clock_reads_the_time_at_each_call_in_utc():
    clock: Clock = SystemClock()
    before = datetime.now(UTC)
    first = clock.now()
    time.sleep(0.002)
    second = clock.now()
    after = datetime.now(UTC)

    assert type(first) is datetime
    assert first.tzinfo is UTC
    assert second.tzinfo is UTC
    assert before <= first < second <= after


def test_every_system_clock_reads_the_same_wall_clock():
    one, other = SystemClock(), SystemClock()
    assert abs((one.now() - other.now()).total_seconds()) < 1
