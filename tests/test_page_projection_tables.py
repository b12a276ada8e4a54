"""A page view brings the inbox's read models up to the log without making their tables: the
process's first page makes (or checks) them, later ones send no DDL and take no schema lock
(``TablesInPlace``, ``Countersign.catch_up``), on every backend. Another process's rebuild of
those projections, finished, stopped after its reset, or part-way, leaves the next page with
the right counts; one that drops the tables between a page's catch-up and its reads makes that
page answer 503 (the database unavailable for a moment), never 500.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.web.site import INBOX_PROJECTIONS
from countersign.infrastructure.persistence.sql import Cursor
from countersign.infrastructure.projection_engine.together import rebuild_together

from tests.conftest import AVA
from tests.test_web_pages import Browser, Web, _cards, web_for

#: A statement that changes the schema, or takes the schema lock (PostgreSQL).
DDL = re.compile(r"\s*(CREATE|DROP|ALTER)\b|.*pg_advisory", re.IGNORECASE)


def _statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement sent through the SQL helper from now on (the projections' all go
    through it: their tables, positions and rows)."""
    sent: list[str] = []
    execute = Cursor.execute

    def counting(self: Cursor, sql: str, params: Any = ()) -> Cursor:
        sent.append(sql)
        return execute(self, sql, params)

    monkeypatch.setattr(Cursor, "execute", counting)
    return sent


def _awaiting(page: Any) -> int:
    found = re.search(r"(\d+) awaiting your decision", page.text)
    assert found, "the navigation has no counts"
    return int(found.group(1))


def _attention(page: Any) -> int:
    found = re.search(r"(\d+) needing attention", page.text)
    return int(found.group(1)) if found else 0


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _in_time(call: Callable[[], Any], seconds: float = 30.0) -> Any:
    """``call()``'s answer; fails (rather than hang the suite) if it has none in ``seconds``."""
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert answers, f"no answer in {seconds} s"
    return answers[0]


def test_a_second_page_view_makes_no_table_and_still_shows_what_is_new(web: Web, monkeypatch):
    browser = web.browser(AVA)
    before = _awaiting(browser.get("/"))  # the process's first page: the tables are checked
    sent = _statements(monkeypatch)
    again = browser.get("/account/passkeys")
    assert again.status_code == 200
    assert _awaiting(again) == before
    assert [s for s in sent if DDL.match(s)] == []

    proposal_id = web.propose()
    sent.clear()
    inbox = browser.get("/")
    assert inbox.status_code == 200
    assert _awaiting(inbox) == before + 1
    assert proposal_id in _cards(inbox, "awaiting")
    assert [s for s in sent if DDL.match(s)] == []
    assert any("projection_tracking" in s for s in sent)  # it did catch up


def test_an_inbox_view_catches_the_inbox_up_once_for_its_lists_and_its_counts(
    web: Web, monkeypatch
):
    browser = web.browser(AVA)
    browser.get("/")  # the process's first page: the tables are checked
    proposal_id = web.propose()
    caught_up: list[tuple[str, ...]] = []
    catch_up = web.cs.catch_up

    def counting(names: Any) -> None:
        caught_up.append(tuple(names))
        catch_up(names)

    monkeypatch.setattr(web.cs, "catch_up", counting)
    inbox = browser.get("/")
    assert inbox.status_code == 200
    assert caught_up == [tuple(INBOX_PROJECTIONS)]
    # The one catch-up serves both: the new proposal is listed and counted.
    assert proposal_id in _cards(inbox, "awaiting")
    assert _awaiting(inbox) == len(_cards(inbox, "awaiting"))

    caught_up.clear()
    other = browser.get("/account/passkeys")  # a page with the counts only
    assert other.status_code == 200
    assert caught_up == [tuple(INBOX_PROJECTIONS)]


def _state(browser: Browser) -> tuple[int, int, list[str], list[str]]:
    inbox = browser.get("/")
    assert inbox.status_code == 200
    return (
        _awaiting(inbox),
        _attention(inbox),
        _cards(inbox, "awaiting"),
        _cards(inbox, "attention"),
    )


def _needing_attention(web: Web) -> str:
    lost = web.propose("refund-lost-response")
    web.cs.proposals.approve(lost, AVA)
    return lost


def test_a_page_after_another_process_rebuilt_the_inbox_projections_counts_right(
    web: Web, other: Countersign
):
    browser = web.browser(AVA)
    lost = _needing_attention(web)
    pending = web.propose()
    awaiting, attention, listed, needing = _state(browser)
    assert pending in listed
    assert lost in needing

    rebuild_together(other.projection_runners(list(INBOX_PROJECTIONS)))
    assert _state(browser) == (awaiting, attention, listed, needing)

    newer = web.propose("account-credit")
    assert _state(browser) == (awaiting + 1, attention, [newer, *listed], needing)


def _reset_only(runner: Any) -> None:
    """The first transaction of ``runner.reset``: its tables dropped and its position gone,
    as a rebuild has them between its reset and its next step, or when it stopped there."""
    runner.setup = lambda **_: None
    try:
        runner.reset()
    finally:
        del runner.setup


@pytest.mark.parametrize("part_way", [False, True], ids=["stopped_after_reset", "part_way"])
def test_a_page_during_another_process_s_rebuild_counts_right(
    web: Web, other: Countersign, part_way: bool
):
    browser = web.browser(AVA)
    lost = _needing_attention(web)
    pending = web.propose()
    expected = _state(browser)
    assert pending in expected[2]
    assert lost in expected[3]

    runners = other.projection_runners(list(INBOX_PROJECTIONS), batch_size=5)
    for runner in runners:
        _reset_only(runner)
    if part_way:
        for runner in runners:
            runner.setup()  # the rest of the reset
            runner.run_batch()  # and the rebuild's first few events
    assert _in_time(lambda: _state(browser)) == expected
    assert _state(browser) == expected


def test_a_page_whose_tables_another_process_drops_after_its_catch_up_does_not_fail(
    web: Web, other: Countersign, monkeypatch
):
    """The page read its positions, then another process's rebuild dropped the tables (its
    reset) before the page read them: the page says the database cannot answer right now."""
    browser = web.browser(AVA)
    pending = web.propose()
    expected = _state(browser)
    assert pending in expected[2]
    site_catch_up = web.cs.catch_up

    def caught_up_then_dropped(names: Any) -> None:
        site_catch_up(names)
        for runner in other.projection_runners(list(INBOX_PROJECTIONS)):
            _reset_only(runner)

    monkeypatch.setattr(web.cs, "catch_up", caught_up_then_dropped)
    page = browser.get("/")
    monkeypatch.undo()
    assert page.status_code == 503, page.text
    assert _state(browser) == expected
