"""The inbox of a club whose plug-in was turned off while two of its proposals waited, in a
real Chromium, at desktop and phone sizes, in English and French: it says how many pending
proposals nobody can decide here, what to do and when the first expires, lists neither of
them, and fits the screen; axe-core finds no serious or critical violation. Screenshots go to
``test-artifacts/inbox-not-enabled/`` for a person to look at. Without Chromium this test
skips locally and FAILS when CI is set (``tests/test_browser_e2e.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.bootstrap import enable_plugins

from tests.conftest import AVA
from tests.test_browser_a11y import _blocking
from tests.test_browser_e2e import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Served,
    _fits_the_screen,
    served_from,
)
from tests.test_plugins import installed  # noqa: F401  (the sample plug-in, findable)

SHOTS = ARTIFACTS / "inbox-not-enabled"
WORDS = {
    "en": (
        "2 pending proposals of this club are of operations not enabled on this server",
        "turn the plug-in back on to decide them, or let them expire: the first expires ",
    ),
    "fr": (
        "2 propositions en attente de ce club relèvent d'opérations non activées sur ce serveur",
        "réactiver le module pour en décider, ou laissez-les expirer : la première expire le ",
    ),
}


@pytest.fixture(scope="module")
def site(
    installed: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """Ava's club, where the sample plug-in proposed two invoice changes before the
    deployment stopped naming it."""
    from sample_plugin.company import Invoice, InvoiceBook

    book = InvoiceBook(Path(os.environ["SAMPLE_PLUGIN_DATA"]) / "invoices.db")
    book.put(Invoice("INV-1", "granite", "Granite Hardware", 12_000))
    with served_from(Path(tmp_path_factory.mktemp("inbox"))) as served:
        enable_plugins(("sample",))
        served.cs.club.set_permissions("granite", AVA, sorted(PERMISSIONS))
        for operation, request in (
            ("sample.tag_invoice", {"tag": "late"}),
            ("sample.invoice_credit", {"amount_cents": 2500}),
        ):
            served.cs.proposals.propose(
                organization="granite",
                actor=AVA,
                operation=operation,
                resource_id="INV-1",
                request=request,
            )
        enable_plugins(())  # turned off, as on the deployment's next start
        yield served


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_inbox_says_two_proposals_await_a_plugin_turned_off(
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
    page.fill("#email", AVA)
    page.fill("#password", site.passwords[AVA])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(site.base_url + "/")

    notice = page.locator("#not-enabled")
    assert notice.is_visible()
    said = " ".join(notice.inner_text().split())
    assert said.startswith(WORDS[language][0])
    assert WORDS[language][1] in said
    assert "sample." not in page.locator("main").inner_text()  # neither is offered to decide
    _fits_the_screen(page)
    assert _blocking(axe, page) == []
    page.screenshot(path=str(SHOTS / f"{language}-{size}-inbox.png"), full_page=True)
    context.close()
