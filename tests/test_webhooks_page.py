"""The webhooks page: the club's endpoints and dead letters, and the Redeliver button."""

from __future__ import annotations

from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender

from tests.conftest import AVA, BEN, MIA
from tests.receivers import (
    allow_loopback,  # noqa: F401 - autouse
    free_port,
    receiving,
)
from tests.test_web_pages import Web, _main


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    return Web(cs=cs, seeded=seeded, passwords=seed_passwords(cs), app=app)


def dead_letter(web: Web) -> tuple[int, str]:
    """A granite endpoint that is down, and the dead letter a proposal made for it."""
    port = free_port()
    Webhooks(web.cs).add(None, "granite", f"http://127.0.0.1:{port}/hooks")
    proposal_id = web.propose()
    assert notification_sender(web.cs, NotifySettings(max_attempts=1)).run_once().dead == 1
    return port, proposal_id


def test_a_manager_sees_the_endpoints_and_dead_letters_and_redelivers_one(web):
    port, proposal_id = dead_letter(web)
    browser = web.browser(AVA)
    assert 'href="/webhooks"' in browser.get("/").text  # in the navigation
    page = browser.get("/webhooks")
    assert page.status_code == 200
    main = _main(page)
    assert f"http://127.0.0.1:{port}/hooks" in main
    assert "Dead letters" in main
    assert "Awaiting approval" in main
    assert "failed: could not connect" in main
    assert "Error" not in main
    assert f'href="/proposals/{proposal_id}"' in main
    assert "Redeliver all" in main

    [dead] = Webhooks(web.cs).deliveries(None, "granite", dead_only=True)
    # Without the session's CSRF token, nothing is redelivered.
    refused = browser.post("/webhooks/redeliver", {"delivery": dead["delivery_id"]})
    assert refused.status_code == 403
    assert len(Webhooks(web.cs).deliveries(None, "granite", dead_only=True)) == 1

    with receiving(port=port) as receiver:
        done = browser.form(
            "/webhooks/redeliver", {"delivery": dead["delivery_id"]}, from_page="/webhooks"
        )
        assert done.status_code == 303
        assert done.headers["location"] == "/webhooks"
        after = browser.get("/webhooks")
        assert "Put back in line" in after.text
        assert "No dead letters" in after.text
        assert notification_sender(web.cs, NotifySettings()).run_once().delivered == 1
        assert len(receiver.received) == 1


def test_the_page_reads_french(web):
    dead_letter(web)
    browser = web.browser(AVA)
    page = browser.get("/webhooks", **{"Accept-Language": "fr"})
    main = _main(page)
    assert "Lettres mortes" in main
    assert "En attente d'approbation" in main or "En attente d&#39;approbation" in main
    assert "Tout renvoyer" in main
    assert "Dead letters" not in main


def test_a_member_without_the_permission_is_refused_and_sees_no_link(web):
    dead_letter(web)
    browser = web.browser(BEN)
    assert 'href="/webhooks"' not in browser.get("/").text
    assert browser.get("/webhooks").status_code == 403
    assert browser.form("/webhooks/redeliver", {"delivery": "all"}).status_code == 403
    assert len(Webhooks(web.cs).deliveries(None, "granite", dead_only=True)) == 1


def test_another_clubs_dead_letters_are_out_of_reach(web):
    dead_letter(web)
    [dead] = Webhooks(web.cs).deliveries(None, "granite", dead_only=True)
    browser = web.browser(MIA)
    page = browser.get("/webhooks")
    assert page.status_code == 200
    assert dead["delivery_id"] not in page.text
    done = browser.form(
        "/webhooks/redeliver", {"delivery": dead["delivery_id"]}, from_page="/webhooks"
    )
    assert done.status_code == 303
    assert "There was no such dead letter" in browser.get("/webhooks").text
    assert len(Webhooks(web.cs).deliveries(None, "granite", dead_only=True)) == 1
