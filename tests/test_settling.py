"""A lost provider answer says how long it has waited and, once overdue, what to do, on every
backend.

The reconciler settles a lost answer at its next pass, and a claim whose process died once
the lease has passed; so by the lease (60 s) and one pass (10 s) after the approval, a
running reconciler has had its chance. The sweepers' schedules record their passes, which
tells the two overdue cases apart: the provider has not answered yet (a reconciler runs and
asks again), or nothing runs one ("Nothing is settling it: an operator must start the
worker"). The review page, the status page and the inbox's Needs attention list say it, in
English and French, in the club's time zone (granite: America/Toronto, 04:00 at the tests'
09:00 UTC).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from countersign.application.ports import SweeperPass
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings
from countersign.infrastructure.sweepers import run_pass, sweepers

from tests.conftest import AVA, REFUND
from tests.support.proposing import propose
from tests.test_web_pages import Web, _cards, _main, web_for

UNATTENDED = (
    "Nothing is settling it: an operator must start the worker (countersign worker), which "
    "asks the provider what happened. Until then, do not do it again another way: it may "
    "already have happened."
)
UNATTENDED_FR = (
    "Rien ne la règle\u00a0: un opérateur doit démarrer le service d'arrière-plan (countersign "
    "worker), qui demande au fournisseur ce qui s'est passé. D'ici là, ne la refaites pas "
    "autrement\u00a0: elle a peut-être déjà eu lieu."
)
PROVIDER_SILENT = (
    "The provider has not confirmed it yet: countersign asks again every 10 seconds. Do not do "
    "it again another way: it may already have happened."
)


def _lost(cs: Countersign, seeded: dict[str, Any]) -> str:
    lost = propose(cs, seeded, "refund-lost-response")
    assert cs.proposals.approve(lost, AVA).status == "reconciling"
    return lost


class DiesAfterItsClaim(Exception):
    """The approving process dies between its claim commit and the provider call."""


class CrashAfterClaim:
    """FaultPoints that end the approval right after its claim commit."""

    def reached(self, point: str) -> None:
        if point == "after_claim_commit":
            raise DiesAfterItsClaim


def stuck_claim(
    database_url: str,
    clock: FakeClock,
    seeded: dict[str, Any],
    order: str = "refund-ok",
    operation: str = REFUND,
) -> str:
    """A refund (or ``operation``) claimed by a process that died before calling the
    provider: executing."""
    dying = bootstrap(Settings(database_url=database_url), clock=clock, faults=CrashAfterClaim())
    try:
        stuck = propose(dying, seeded, order, operation=operation)
        with pytest.raises(DiesAfterItsClaim):
            dying.proposals.approve(stuck, AVA)
        assert dying.cards.card(stuck, AVA).status == "executing"
    finally:
        dying.close()
    return stuck


# -- the schedule records its passes --------------------------------------------------------------


def test_each_sweeper_records_the_passes_it_finishes_and_a_failed_one_is_not(
    cs, seeded, clock, monkeypatch
):
    report = run_pass(sweepers(cs, 5.0), 1)
    assert report.failed == []
    for name in ("reconcile", "expire", "notify"):
        assert cs.sweeper_passes.last(name) == SweeperPass(clock.now(), timedelta(seconds=5))

    def broken() -> list[Any]:
        raise RuntimeError("the provider's lookups are down")

    first = clock.now()
    clock.advance(seconds=30)
    monkeypatch.setattr(cs.sweepers, "reconcile", broken)
    assert run_pass(sweepers(cs, 5.0), 2).failed == ["reconcile"]
    assert cs.sweeper_passes.last("reconcile") == SweeperPass(first, timedelta(seconds=5))
    assert cs.sweeper_passes.last("expire") == SweeperPass(clock.now(), timedelta(seconds=5))


# -- how long it has waited, and whether anything settles it -------------------------------------


def test_a_lost_answer_is_overdue_after_the_lease_and_one_pass(cs, seeded, clock):
    lost = _lost(cs, seeded)
    waiting = cs.access.review(lost, AVA).settling
    assert waiting is not None
    assert (waiting.since, waiting.waited, waiting.overdue, waiting.unattended) == (
        clock.now(),
        timedelta(0),
        False,
        False,
    )
    clock.advance(seconds=69)
    assert cs.access.review(lost, AVA).settling.overdue is False  # type: ignore[union-attr]
    clock.advance(seconds=1)
    overdue = cs.access.review(lost, AVA).settling
    assert overdue is not None
    assert (overdue.waited, overdue.overdue, overdue.reconciler_running) == (
        timedelta(seconds=70),
        True,
        False,
    )
    assert overdue.unattended


def test_a_running_reconciler_whose_provider_has_not_answered_is_not_unattended(cs, seeded, clock):
    lost = _lost(cs, seeded)
    clock.advance(minutes=9)
    cs.sweeper_passes.record("reconcile", clock.now(), timedelta(seconds=10))
    running = cs.access.review(lost, AVA).settling
    assert running is not None
    assert (running.overdue, running.reconciler_running, running.unattended) == (
        True,
        True,
        False,
    )
    # A schedule that stopped passing (two intervals and a minute's grace) no longer runs.
    clock.advance(seconds=81)
    assert cs.access.review(lost, AVA).settling.unattended  # type: ignore[union-attr]


def test_a_settled_or_pending_proposal_waits_on_nothing(cs, seeded, clock):
    lost = _lost(cs, seeded)
    cs.sweepers.reconcile()
    assert cs.access.review(lost, AVA).settling is None
    assert cs.access.review(propose(cs, seeded), AVA).settling is None


# -- the pages -----------------------------------------------------------------------------------


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def test_the_reconciling_page_says_since_when_and_past_the_lease_what_to_do(web, clock):
    lost = _lost(web.cs, web.seeded)
    ava = web.browser(AVA)

    clock.advance(seconds=30)
    early = _main(ava.get(f"/proposals/{lost}"))
    assert '<p class="waiting" id="waiting">Waiting since 04:00, 1 min.</p>' in early
    assert "settling-alert" not in early

    clock.advance(minutes=9)  # 9 min 30 s: no reconciler ever passed
    for path in (f"/proposals/{lost}", f"/proposals/{lost}/status"):
        page = _main(ava.get(path))
        assert "Waiting since 04:00, 9 min." in page
        assert f'<p class="alert tone-bad settling-alert" id="settling-alert">{UNATTENDED}' in (
            page.replace("&#39;", "'")
        )
    french = ava.get(f"/proposals/{lost}", **{"Accept-Language": "fr"}).text
    assert "En attente depuis 4 h 00, 9 min." in french
    assert UNATTENDED_FR in french.replace("&#39;", "'")

    # The worker starts; the provider still has not answered its lookups.
    web.cs.sweeper_passes.record("reconcile", clock.now(), timedelta(seconds=10))
    page = _main(ava.get(f"/proposals/{lost}"))
    assert f'<p class="alert tone-warn settling-alert" id="settling-alert">{PROVIDER_SILENT}' in (
        page
    )
    assert "Nothing is settling it" not in page


def test_needs_attention_lists_an_overdue_claim_and_says_nothing_settles_it(
    web: Web, database_url, clock
):
    lost = _lost(web.cs, web.seeded)
    stuck = stuck_claim(database_url, clock, web.seeded)
    ava = web.browser(AVA)

    # Within the lease a claim is simply executing: nobody needs to look at it yet.
    inbox = ava.get("/")
    assert _cards(inbox, "attention") == [lost]
    review = _main(ava.get(f"/proposals/{stuck}"))
    assert "Approved and executing." in review
    assert "Waiting since 04:00, 1 min." in review

    clock.advance(seconds=70)
    inbox = ava.get("/")
    assert sorted(_cards(inbox, "attention")) == sorted([lost, stuck])
    assert 'Needs attention <span class="count-badge hot">2</span>' in _main(inbox)
    line = (
        '<span class="detail settling unattended">Waiting since 04:00, 1 min. Nothing is '
        "settling it: an operator must start the worker.</span>"
    )
    assert _main(inbox).count(line) == 2
    overdue = _main(ava.get(f"/proposals/{stuck}")).replace("&#39;", "'")
    assert UNATTENDED in overdue
    assert "Approved, but no outcome has been recorded" in overdue
    # The worker's reconciler replays the dead claim's request under its key: settled.
    web.cs.sweepers.reconcile()
    web.cs.sweeper_passes.record("reconcile", clock.now(), timedelta(seconds=10))
    assert _cards(ava.get("/"), "attention") == []


def test_a_pass_the_database_did_not_answer_is_one_warning_not_an_internal_error(
    cs, seeded, monkeypatch, caplog
):
    """The worker's passes while sessions were ended under load: each was logged at ERROR
    as "notify pass failed, correlation id …" with a traceback, as a defect would be, while
    the projection runner said the database was unavailable and carried on."""
    from eventsourcing.persistence import OperationalError

    def cut_off() -> list[Any]:
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(cs.sweepers, "reconcile", cut_off)
    with caplog.at_level("WARNING", logger="countersign.worker"):
        assert run_pass(sweepers(cs, 5.0), 1).failed == ["reconcile"]

    [record] = [r for r in caplog.records if r.name == "countersign.worker"]
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        "reconcile pass: the database is unavailable (OperationalError: terminating connection"
        " due to administrator command: the server ended the session or is restarting; the next"
        " requests connect again); the next pass tries again"
    )
    assert record.exc_info is None


def test_the_apis_status_says_nothing_settles_it_as_the_page_does(cs, seeded, clock):
    """The outcome's status_path (the API, and the status an MCP client or an assistant's
    model reads) kept saying "countersign is confirming it with the card provider" with no
    worker running, while the page said an operator must start the worker."""
    from countersign.infrastructure.entrypoints.http import create_app
    from countersign.infrastructure.identity.tokens import issue_token
    from fastapi.testclient import TestClient

    lost = _lost(cs, seeded)
    token = issue_token(cs, "granite", "ops", ["orders.refund"], issued_by=AVA, kind="approver")
    with TestClient(create_app(cs)) as client:

        def status() -> dict[str, Any]:
            answer = client.get(
                f"/api/v1/proposals/{lost}/status",
                headers={"Authorization": f"Bearer {token.token}"},
            )
            assert answer.status_code == 200
            return dict(answer.json())

        waiting = status()
        assert waiting["settling"] == "waiting"
        assert waiting["waiting_since"] == clock.now().isoformat()
        assert "operator" not in waiting["message"]
        clock.advance(minutes=2)
        unattended = status()
        assert unattended["settling"] == "unattended"
        assert unattended["message"].endswith(UNATTENDED)
        assert cs.access.status(lost, AVA, "fr").message.endswith(UNATTENDED_FR)
        assert unattended["message"].startswith(waiting["message"])
        cs.sweeper_passes.record("reconcile", clock.now(), timedelta(seconds=10))
        silent = status()
        assert (silent["settling"], silent["message"]) == ("provider_silent", waiting["message"])
    french = cs.access.status(lost, AVA, "fr")
    assert french.settling == "provider_silent"
    # MCP's proposal_status tool answers the same two fields (its strict schema had neither).
    from countersign.infrastructure.entrypoints.mcp.answers import STATUS_SCHEMA
    from countersign.infrastructure.entrypoints.mcp.answers import status as mcp_status

    shown = mcp_status(cs.access.status(lost, AVA)).structured_content
    assert shown is not None
    assert (shown["settling"], shown["waiting_since"]) == ("provider_silent", french.waiting_since)
    assert {"settling", "waiting_since"} <= set(STATUS_SCHEMA["properties"])
    assert cs.access.status(propose(cs, seeded), AVA).settling is None  # pending
