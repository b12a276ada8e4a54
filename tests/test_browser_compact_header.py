"""On a phone the header leaves the screen to the page: the brand, the language and signing
out on one line, the club's name under it, and every tab in sight, in English and in French
(a newcomer's walk found the French header and its wrapped tabs taking a third of the screen).
Without Chromium this test skips locally and FAILS when CI is set
(``tests/test_browser_e2e.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AVA
from tests.test_browser_e2e import ARTIFACTS, DESKTOP, PHONE, Served, _fits_the_screen, served_from

SHOTS = ARTIFACTS / "header"
#: The most of a 844 px phone screen the header may take: a fifth (it took 278 px in French).
MOST = 180


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder: Path = tmp_path_factory.mktemp("header")
    with served_from(folder) as running:
        yield running


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_header_is_compact_on_a_phone_with_every_tab_in_sight(
    served: Served, browser: Any, language: str
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    locale = "fr-CA" if language == "fr" else "en-CA"
    for size, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
        context = browser.new_context(viewport=viewport, locale=locale)
        page = context.new_page()
        page.goto(served.base_url + "/sign-in")
        page.fill("#email", AVA)
        page.fill("#password", served.passwords[AVA])
        page.locator("main button[type=submit]").first.click()
        page.wait_for_url(served.base_url + "/")
        for path in ("/", "/policies", "/members"):
            page.goto(served.base_url + path)
            page.screenshot(path=str(SHOTS / f"{language}-{size}-{path.strip('/') or 'inbox'}.png"))
            header = page.locator("header.topbar").bounding_box()
            assert header is not None
            if size == "phone":
                assert header["height"] <= MOST, (language, path, header["height"])
            # Every destination is there and in sight: none hidden, none scrolled away.
            tabs = page.locator(".tabs-main a")
            hrefs = {tab.get_attribute("href") for tab in tabs.all()}
            assert {"/", "/webhooks", "/members"} <= hrefs, (language, path, hrefs)
            assert len(hrefs) >= 5, hrefs  # the assistants' conversations too
            for tab in tabs.all():
                box = tab.bounding_box()
                assert box is not None, tab.inner_text()
                assert tab.is_visible(), tab.inner_text()
                assert box["x"] >= 0, (size, tab.inner_text())
                assert box["x"] + box["width"] <= viewport["width"], (size, tab.inner_text())
                assert box["y"] + box["height"] <= header["y"] + header["height"] + 1
            # The brand, the language and signing out share the first line.
            brand = page.locator("a.brand").bounding_box()
            sign_out = page.locator("form.signout button").bounding_box()
            assert brand is not None
            assert sign_out is not None
            middle = brand["y"] + brand["height"] / 2
            assert abs(middle - sign_out["y"] - sign_out["height"] / 2) < 8
            assert page.locator(".club").inner_text() == "Granite Curling Club"
            _fits_the_screen(page)
        context.close()
