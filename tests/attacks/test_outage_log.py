"""An outage is one warning a while, not one for each request it fails
(infrastructure/observability/outages.py).

While the database was out of reach, every failed request logged its own warning: a minute
at a hundred requests a second wrote six thousand lines of the same reason. Each request is
still answered 503 with Retry-After; the log says each reason once, then how many like it
went unsaid."""

from __future__ import annotations

import logging
from typing import Any

from countersign.infrastructure.entrypoints.http import auth
from countersign.infrastructure.observability.outages import MOST, OutageLog

from tests.attacks.conftest import Api, Web, problem
from tests.attacks.test_database_unavailable import CUT, _cut
from tests.attacks.test_database_unavailable_reasons import _too_many_clients

LOG = logging.getLogger("countersign.test-outages")


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _said(caplog: Any, logger: str = LOG.name) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def test_one_reason_is_said_once_then_counted_until_the_next_time_it_is_said(caplog):
    clock = _Clock()
    outages = OutageLog(every=30, clock=clock)

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        for request in range(100):
            outages.warning(
                LOG, "OperationalError: gone", "database unavailable (request %s)", request
            )
        clock.now += 29.9
        outages.warning(LOG, "OperationalError: gone", "database unavailable (request %s)", 100)
        clock.now += 0.2
        outages.warning(LOG, "OperationalError: gone", "database unavailable (request %s)", 101)
        outages.warning(LOG, "OperationalError: gone", "database unavailable (request %s)", 102)

    assert _said(caplog) == [
        "database unavailable (request 0): OperationalError: gone",
        "database unavailable (request 101): OperationalError: gone (and 100 more like it "
        "since the last time this was logged)",
    ]


def test_another_reason_or_another_kind_of_warning_is_said_at_once(caplog):
    outages = OutageLog(every=30, clock=_Clock())

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        outages.warning(LOG, "OperationalError: gone", "database unavailable (request %s)", 1)
        outages.warning(LOG, "disk full: free space", "database unavailable (request %s)", 2)
        outages.warning(
            LOG, "OperationalError: gone", "database unavailable while checking a token"
        )
        outages.warning(LOG, "OperationalError: gone", "database unavailable (request %s)", 3)

    assert _said(caplog) == [
        "database unavailable (request 1): OperationalError: gone",
        "database unavailable (request 2): disk full: free space",
        "database unavailable while checking a token: OperationalError: gone",
    ]


def test_a_storm_of_distinct_reasons_is_remembered_within_a_bound(caplog):
    clock = _Clock()
    outages = OutageLog(every=30, clock=clock)

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        for n in range(MOST * 4):
            outages.warning(LOG, f"reason {n}", "database unavailable")
        # The longest quiet ones were forgotten, so said again; the latest still counted.
        outages.warning(LOG, "reason 0", "database unavailable")
        outages.warning(LOG, f"reason {MOST * 4 - 1}", "database unavailable")

    assert len(outages._said) <= MOST
    said = _said(caplog)
    assert len(said) == MOST * 4 + 1
    assert said[-1] == "database unavailable: reason 0"


def test_an_outage_under_many_api_requests_is_one_warning_and_every_client_is_told(
    api: Api, monkeypatch, caplog
):
    proposal_id = api.propose()
    monkeypatch.setattr(api.cs.access, "card", _cut)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        answers = [api.get(f"/api/v1/proposals/{proposal_id}") for _ in range(20)]

    assert {problem(answer)[0] for answer in answers} == {503}
    assert {answer.headers["retry-after"] for answer in answers} == {"5"}
    [line] = _said(caplog, "countersign.http")
    assert line.startswith("database unavailable (request ")
    assert CUT in line


def test_an_outage_at_the_token_check_is_one_warning(api: Api, monkeypatch, caplog):
    monkeypatch.setattr(auth, "authenticate", _too_many_clients)

    with caplog.at_level(logging.WARNING, logger="countersign.http"):
        statuses = {api.get("/api/v1/inbox").status_code for _ in range(10)}

    assert statuses == {503}
    [line] = _said(caplog, "countersign.http")
    assert line.startswith("database unavailable while checking a token: ")


def test_an_outage_under_many_page_requests_is_one_warning(web: Web, monkeypatch, caplog):
    proposal_id = web.propose()
    browser = web.member("ava@granite.example")
    monkeypatch.setattr(web.cs.access, "review", _cut)

    with caplog.at_level(logging.WARNING):
        statuses = {browser.get(f"/proposals/{proposal_id}").status_code for _ in range(10)}

    assert statuses == {503}
    said = [r.getMessage() for r in caplog.records if "database unavailable" in r.getMessage()]
    assert len(said) == 1, said
