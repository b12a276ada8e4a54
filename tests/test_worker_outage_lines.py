"""The worker says when the database answers again after an outage, once, as the projection
runner does: an operator following its log saw the outage's warnings stop and nothing else
(h5's operator hour)."""

from __future__ import annotations

import logging
import threading

import pytest
from countersign.infrastructure.persistence.unavailable import NoConnectionError
from countersign.infrastructure.sweepers import Sweeper, run_schedule


def test_a_sweeper_that_finds_the_database_again_says_so_once(caplog: pytest.LogCaptureFixture):
    answers = iter(
        [
            NoConnectionError("couldn't get a connection after 1.00 sec"),
            NoConnectionError("again"),
            2,
            0,
            0,
        ]
    )

    def reconcile() -> int:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    stop = threading.Event()
    passes: list[int] = []

    def on_pass(report) -> None:
        passes.append(report.number)
        if len(passes) == 5:
            stop.set()

    caplog.set_level(logging.WARNING, logger="countersign")
    run_schedule(
        [Sweeper("reconcile", "settled", reconcile), Sweeper("expire", "expired", lambda: 0)],
        stop,
        0.0,
        on_pass,
    )

    said = [r.getMessage() for r in caplog.records]
    unavailable = [line for line in said if "the database is unavailable" in line]
    again = [line for line in said if "answers again" in line]
    assert len(unavailable) == 2
    assert again == ["reconcile pass: the database answers again; carrying on"]
    assert said.index(again[0]) > said.index(unavailable[-1])
