"""A following runner sees its projections' positions moved back by another process.

An operator's walk killed ``countersign projections rebuild`` (kill -9, as an impatient
operator's Ctrl-C or the OOM killer would end it) two seconds in, while ``countersign
projections run`` followed the log: the rebuild had set every projection back and brought it
to event 8,034 of 28,693. The runner, whose own idea of each position was the log's head,
went on polling the head alone and found nothing new: for as long as nothing was committed
its projections stayed 20,659 events behind, ``projections status`` said so, and ``/readyz``
failed on every API worker (lag above ``COUNTERSIGN_READY_MAX_LAG``), which a load balancer
answers by taking them all out, so that nothing could be committed to wake it. Only a
restart by hand, or a new event, moved it on. A caught-up runner now reads its projections'
stored positions again every little while, and carries on from them by itself.
"""

from __future__ import annotations

import threading
from typing import Any

from countersign.infrastructure.projection_engine import together

from tests.support.proposing import propose


def test_a_caught_up_runner_carries_on_after_a_rebuild_that_stopped_halfway(
    cs: Any, seeded: dict[str, Any]
):
    propose(cs, seeded)
    runners = cs.projection_runners(["audit_trail", "handback"])
    for runner in runners:
        runner.catch_up()
    head = runners[0].head()
    # Another process's rebuild of audit_trail, ended before its first batch: the projection
    # reset to nothing, and no event committed since.
    [rebuilt] = cs.projection_runners(["audit_trail"])
    rebuilt.reset()
    assert rebuilt.status().lag == head
    carried_on = threading.Event()

    def on_batch(name: str, processed: int) -> None:
        if name == "audit_trail":
            carried_on.set()

    stop = threading.Event()
    follower = threading.Thread(
        target=together.run_forever,
        args=(runners, stop, 0.01),
        kwargs={"on_batch": on_batch, "recheck": 0.05},
    )
    follower.start()
    try:
        carried_on.wait(30)
    finally:
        stop.set()
        follower.join(30)
    assert not follower.is_alive()
    assert rebuilt.status().lag == 0
    with cs.sql.transaction() as cursor:
        assert cursor.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0] > 0


def test_a_following_runner_makes_the_tables_a_rebuild_killed_before_its_setup_dropped(
    cs: Any, seeded: dict[str, Any]
):
    """A rebuild killed between its reset's commit and its ``setup``'s: the projection's
    tables and tracking row are gone. A following runner makes them again, as a page's runner
    does, and carries on from the log's start; before, it read position 0, its batch found no
    tracking row (a race, read again at once) and it spun on that, at a full core, writing
    nothing, until some other process made them."""
    propose(cs, seeded)
    runners = cs.projection_runners(["audit_trail", "handback"])
    for runner in runners:
        runner.catch_up()
    [audit_trail] = [runner for runner in runners if runner.name == "audit_trail"]
    with cs.sql.transaction() as cursor:  # what reset committed before it was killed
        for table in audit_trail.projection.tables:
            cursor.execute(f"DROP TABLE {table.name}")
        cursor.execute("DELETE FROM projection_tracking WHERE projection = 'audit_trail'")
    carried_on = threading.Event()

    def on_batch(name: str, processed: int) -> None:
        if name == "audit_trail":
            carried_on.set()

    stop = threading.Event()
    follower = threading.Thread(
        target=together.run_forever,
        args=(runners, stop, 0.01),
        kwargs={"on_batch": on_batch, "recheck": 0.05},
    )
    follower.start()
    try:
        carried_on.wait(10)
    finally:
        stop.set()
        follower.join(30)
    assert not follower.is_alive()
    assert carried_on.is_set()
    assert audit_trail.status().lag == 0
    with cs.sql.transaction() as cursor:
        assert cursor.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0] > 0
