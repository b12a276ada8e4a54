"""A barred requester's inbox and its later pages, in a real Chromium, at desktop and phone
sizes, in English and French. Ava approved her $128.00 refund before the club barred
requesters from approving refunds above $100: it awaits another manager's decision, saying
why and that her approval no longer counts; her thirteen smaller refunds await hers, ten a
page. Page 2 shows the last three and where the other list ended; a page past the end says
so and leads back. axe-core finds no serious or critical violation. Screenshots go to
``test-artifacts/inbox-barred-pages/`` for a person to look at. Without Chromium this test
skips locally and FAILS when CI is set (``tests/test_browser_e2e.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from countersign.application.authorization import Caller
from countersign.domain.club.organization import Organization
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.demo.seed import _order

from tests.conftest import AVA, REFUND
from tests.support.proposing import propose
from tests.test_browser_a11y import _blocking
from tests.test_browser_e2e import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Served,
    _fits_the_screen,
    served_from,
)
from tests.test_policy_barred_readers import BARRED

SHOTS = ARTIFACTS / "inbox-barred-pages"
NOAH = "noah@granite.example"
WORDS = {
    "en": {
        "lapsed": "Your approval no longer counts",
        "menu": "13 awaiting your decision",
        "ends": "This list ends on page 1.",
        "past": "There is no page 9: the last is page 2.",
        "older": "Older",
        "newer": "Newer",
    },
    "fr": {
        "lapsed": "Votre approbation ne compte plus",
        "menu": "13 en attente de votre décision",
        "ends": "Cette liste s'arrête à la page 1.",
        "past": "Il n'y a pas de page 9 : la dernière est la page 2.",
        "older": "Plus anciennes",
        "newer": "Plus récentes",
    },
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_from(Path(tmp_path_factory.mktemp("inbox"))) as served:
        cs = served.cs
        barred = propose(cs, served.seeded, "refund-two-approvers")  # $128.00
        cs.proposals.approve(barred, AVA)
        granite = cs.store.get(Organization.create_id("granite"), Organization)
        for number in range(12):  # $48.00 each, one order each
            order = _order(cs, granite, f"o-{number}", f"M {number}", f"m{number}@x.example",
                           CARD_OK, "")  # fmt: skip
            served.seeded["orders"][f"o-{number}"] = str(order.id)
            propose(cs, served.seeded, f"o-{number}")
        propose(cs, served.seeded, "refund-ok")
        cs.policies.set("granite", REFUND, 2, above_cents=10_000, requester_may_approve=False,
                        by=Caller(NOAH, "granite"))  # fmt: skip
        yield served


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_barred_requester_reads_her_inbox_page_by_page(
    site: Served, browser: Any, language: str, size: str
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        viewport={"desktop": DESKTOP, "phone": PHONE}[size], locale=f"{language}-CA"
    )
    axe = Axe()
    context.add_init_script(script=axe.axe_script)
    page = context.new_page()
    page.goto(site.base_url + "/sign-in")
    page.fill("#email", AVA)
    page.fill("#password", site.passwords[AVA])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(site.base_url + "/")
    said = WORDS[language]

    def looked_at(name: str) -> None:
        _fits_the_screen(page)
        assert _blocking(axe, page) == []
        page.screenshot(path=str(SHOTS / f"{language}-{size}-{name}.png"), full_page=True)

    assert page.locator("#awaiting .inbox-card").count() == 10
    followed = page.locator("#followed .inbox-card")
    assert followed.count() == 1
    card = _words(followed.inner_text())
    assert said["lapsed"] in card
    assert BARRED[language] in card
    assert page.locator("nav .count-badge").first.get_attribute("title") == said["menu"]
    looked_at("page-1")

    page.locator(".pager a", has_text=said["older"]).click()
    page.wait_for_url("**/?page=2")
    assert page.locator("#awaiting .inbox-card").count() == 3
    assert page.locator("#followed .inbox-card").count() == 0
    assert said["ends"] in _words(page.locator("#followed").inner_text())
    looked_at("page-2")
    page.locator(".pager a", has_text=said["newer"]).click()
    page.wait_for_url("**/?page=1")
    assert page.locator("#awaiting .inbox-card").count() == 10

    page.goto(site.base_url + "/?page=9")
    assert said["past"] in _words(page.locator(".pager").inner_text())
    looked_at("past-the-end")
    page.locator(".pager a", has_text=said["newer"]).click()
    page.wait_for_url("**/?page=2")
    assert page.locator("#awaiting .inbox-card").count() == 3
    context.close()


def _words(text: str) -> str:
    return " ".join(text.split())
