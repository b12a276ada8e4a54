"""The inbox of a member who may read refunds but not approve them, in a real Chromium, at
desktop and phone sizes, in English and French: the refunds are listed as awaiting another
manager's decision, the roster move he may decide as awaiting his, and the menu counts his
alone; axe-core finds no serious or critical violation. Screenshots go to
``test-artifacts/inbox-whose-decision/`` for a person to look at. Without Chromium this test
skips locally and FAILS when CI is set (``tests/test_browser_e2e.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BEN
from tests.support.proposing import MOVE, propose
from tests.test_browser_a11y import _blocking
from tests.test_browser_e2e import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Served,
    _fits_the_screen,
    served_from,
)

SHOTS = ARTIFACTS / "inbox-whose-decision"
WORDS = {
    "en": {
        "mine": "Awaiting your decision",
        "followed": "Awaiting another manager's decision",
        "menu": "1 awaiting your decision",
    },
    "fr": {
        "mine": "En attente de votre décision",
        "followed": "En attente de la décision d'un autre gestionnaire",
        "menu": "1 en attente de votre décision",
    },
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The walk's Ben (audit.read and roster.manage), two refunds he may not approve and a
    roster move he may."""
    with served_from(Path(tmp_path_factory.mktemp("inbox"))) as served:
        served.cs.club.set_permissions("granite", BEN, ["audit.read", "roster.manage"])
        propose(served.cs, served.seeded, "refund-ok")
        propose(served.cs, served.seeded, "refund-two-approvers")
        propose(served.cs, served.seeded, operation=MOVE)
        yield served


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_refunds_he_may_not_approve_await_another_manager(
    site: Served, browser: Any, language: str, size: str
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    SHOTS.mkdir(parents=True, exist_ok=True)
    viewport = {"desktop": DESKTOP, "phone": PHONE}[size]
    context = browser.new_context(viewport=viewport, locale=f"{language}-CA")
    axe = Axe()
    context.add_init_script(script=axe.axe_script)
    page = context.new_page()
    page.goto(site.base_url + "/sign-in")
    page.fill("#email", BEN)
    page.fill("#password", site.passwords[BEN])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(site.base_url + "/")
    said = WORDS[language]

    mine = page.locator("#awaiting")
    assert _words(mine.locator("h2").inner_text()) == f"{said['mine']} 1"
    assert mine.locator(".inbox-card").count() == 1
    followed = page.locator("#followed")
    assert _words(followed.locator("h2").inner_text()) == f"{said['followed']} 2"
    assert followed.locator(".inbox-card").count() == 2
    assert followed.is_visible()
    badge = page.locator("nav .count-badge").first
    assert badge.get_attribute("title") == said["menu"]
    _fits_the_screen(page)
    assert _blocking(axe, page) == []
    page.screenshot(path=str(SHOTS / f"{language}-{size}-inbox.png"), full_page=True)
    context.close()


def _words(text: str) -> str:
    return " ".join(text.split())
