"""The webhooks page, in Chromium, with a dead letter to an endpoint removed since beside one
to an endpoint still there: the first says it is not redelivered and offers no button, the
second keeps its Redeliver button, on a phone and on a desktop, in English and in French.
Without Chromium this test skips locally and FAILS when CI is set
(``tests/test_browser_e2e.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender

from tests.conftest import AVA, REFUND, TO_CARD
from tests.receivers import (
    LOOPBACK_NETWORKS,
    allow_loopback,  # noqa: F401 - autouse
    free_port,
)
from tests.test_browser_e2e import ARTIFACTS, DESKTOP, PHONE, Served, _fits_the_screen, served_from

SHOTS = ARTIFACTS / "webhooks"
REMOVED = {"en": "Endpoint removed: not redelivered", "fr": "Point de réception retiré"}
REDELIVER = {"en": "Redeliver", "fr": "Renvoyer"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder: Path = tmp_path_factory.mktemp("webhooks")
    with served_from(folder) as running:
        webhooks = Webhooks(running.cs, LOOPBACK_NETWORKS)
        gone = webhooks.add(None, "granite", f"http://127.0.0.1:{free_port()}/gone")
        webhooks.add(None, "granite", f"http://127.0.0.1:{free_port()}/down")
        running.cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=running.seeded["orders"]["refund-ok"],
            request=TO_CARD,
        )
        settings = NotifySettings(max_attempts=1, allowed_networks=LOOPBACK_NETWORKS)
        assert notification_sender(running.cs, settings).run_once().dead == 2
        webhooks.remove(None, "granite", gone.endpoint_id)
        yield running


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_removed_endpoints_dead_letter_offers_no_redelivery_on_a_phone_and_a_desktop(
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
        page.goto(served.base_url + "/webhooks#dead-letters")
        cards = page.locator("#dead-letters li.dead-letter")
        assert cards.count() == 2
        gone = cards.filter(has_text=REMOVED[language])
        kept = cards.filter(has_text="/down")
        assert gone.count() == 1
        assert kept.count() == 1
        assert gone.locator("button").count() == 0
        assert kept.get_by_role("button", name=REDELIVER[language], exact=True).is_visible()
        page.locator("#dead-letters").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{language}-{size}.png"), full_page=True)
        _fits_the_screen(page)
        context.close()
