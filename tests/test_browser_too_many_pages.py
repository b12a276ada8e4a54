"""In the real browser: the page a person sees when they have as many pages loading at once
as they may (``COUNTERSIGN_REQUESTS_IN_FLIGHT``): 429, in their language, readable on a
desktop and a phone, saying nothing was done and what to do. Four of Ava's pages are held
inside the server (at their session's read) while the browser asks for a fifth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.attacks.test_requests_in_flight import HeldFirst, flooding
from tests.conftest import AVA
from tests.test_browser_a11y import _blocking
from tests.test_browser_e2e import ARTIFACTS, DESKTOP, PHONE, _fits_the_screen, served_from

SHOTS = ARTIFACTS / "too-many-pages"
WORDS = {
    "en": ("Too many pages at once", "Nothing was done; wait for them to open, then try again."),
    "fr": (
        "Trop de pages à la fois",
        "Rien n'a été fait ; attendez qu'elles s'ouvrent, puis réessayez.",
    ),
}


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_fifth_page_at_once_says_to_wait(
    tmp_path: Path, browser: Any, monkeypatch, language: str, size: str
) -> None:
    from axe_playwright_python.sync_playwright import Axe
    from countersign.infrastructure.entrypoints.web.sessions import Sessions

    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        viewport={"desktop": DESKTOP, "phone": PHONE}[size], locale=f"{language}-CA"
    )
    axe = Axe()
    context.add_init_script(script=axe.axe_script)
    page = context.new_page()
    with served_from(tmp_path) as site:
        page.goto(site.base_url + "/sign-in")
        page.fill("#email", AVA)
        page.fill("#password", site.passwords[AVA])
        page.locator("main button[type=submit]").click()
        page.wait_for_url(site.base_url + "/")
        cookie = next(c["value"] for c in context.cookies() if c["name"] == "countersign_session")
        held = HeldFirst(cookie, 4)
        monkeypatch.setattr(Sessions, "load", held.wrap(Sessions.load))
        jar = {"countersign_session": cookie}
        with (
            httpx.Client(base_url=site.base_url, cookies=jar, timeout=30) as tabs,
            flooding(lambda: tabs.get("/"), held, 4),
        ):
            answer = page.goto(site.base_url + "/")
            assert answer is not None
            assert answer.status == 429
            main = " ".join(page.locator("main").inner_text().split())
            assert WORDS[language][0] in main
            assert WORDS[language][1] in main
            _fits_the_screen(page)
            assert _blocking(axe, page) == []
            page.screenshot(path=str(SHOTS / f"{language}-{size}.png"), full_page=True)
    context.close()
