"""The webhooks page: the club's endpoints with their health (last attempt, error rate, next
retry), adding and removing one from the page, the dead letters and the Redeliver button."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
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
    assert re.search(r"\w+Error\b", main) is None  # never an exception's name
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


def test_a_dead_letter_of_a_removed_endpoint_says_so_and_offers_no_redelivery(web):
    """It kept its Redeliver button after its endpoint was removed, and redelivering it put
    it back in line to fail again at once: nothing is there to deliver it to."""
    dead_letter(web)
    [endpoint] = Webhooks(web.cs).endpoints(None, "granite")
    Webhooks(web.cs).remove(None, "granite", endpoint["endpoint_id"])
    [dead] = Webhooks(web.cs).deliveries(None, "granite", dead_only=True)
    browser = web.browser(AVA)

    for language, removed, notice in [
        ("en", "Endpoint removed: not redelivered", "Not redelivered: its endpoint was removed"),
        ("fr", "Point de réception retiré\u00a0: pas de renvoi", "Non renvoyée\u00a0: son point"),
    ]:
        page = _section(browser.get("/webhooks", **{"Accept-Language": language}), "dead-letters")
        assert removed in page
        assert dead["delivery_id"] not in page  # no Redeliver button
        assert 'value="all"' not in page  # nor "Redeliver all": nothing it could put back
        done = browser.form(
            "/webhooks/redeliver", {"delivery": dead["delivery_id"]}, from_page="/webhooks"
        )
        assert done.status_code == 303
        after = browser.get("/webhooks", **{"Accept-Language": language})
        assert notice in after.text.replace("&#39;", "'")
    [still] = Webhooks(web.cs).deliveries(None, "granite", dead_only=True)
    assert len(still["attempt_log"]) == 1


def test_redeliver_all_from_a_page_shown_before_the_endpoint_was_removed_says_why(web):
    """The page still offering "Redeliver all" (opened before the endpoint was removed, in
    another tab) read "There was no such dead letter" for the one it listed."""
    dead_letter(web)
    browser = web.browser(AVA)
    [endpoint] = Webhooks(web.cs).endpoints(None, "granite")
    Webhooks(web.cs).remove(None, "granite", endpoint["endpoint_id"])

    for language, notice in [
        ("en", "No dead letter was put back: there are none, or only ones to endpoints removed"),
        ("fr", "Aucune lettre morte remise en file\u00a0: il n'y en a pas, ou seulement"),
    ]:
        done = browser.form("/webhooks/redeliver", {"delivery": "all"}, from_page="/webhooks")
        assert done.status_code == 303
        after = browser.get("/webhooks", **{"Accept-Language": language})
        assert notice in after.text.replace("&#39;", "'")


NBSP = "\N{NO-BREAK SPACE}"


def _section(page: Any, section_id: str) -> str:
    found = re.search(rf'<section [^>]*id="{section_id}".*?</section>', page.text, re.S)
    assert found, page.text[:500]
    return re.sub(r"[ \t\n]+", " ", found.group(0))


def test_each_endpoint_shows_its_last_attempt_error_rate_and_next_retry(web, clock: FakeClock):
    """Failing deliveries are not 'delivered or on their way': the page says they fail, per
    endpoint, and when they are tried next."""
    port = free_port()
    Webhooks(web.cs).add(None, "granite", f"http://127.0.0.1:{port}/hooks")
    web.propose("refund-ok")
    web.propose("refund-two-approvers")
    sender = notification_sender(web.cs, NotifySettings(max_attempts=5))
    assert sender.run_once().delivered == 0  # both failed, both to be tried again
    browser = web.browser(AVA)

    page = browser.get("/webhooks")
    endpoint = _section(page, "endpoints")
    assert "Failing</span>" in endpoint
    assert "Added by the operator, from the command line" in endpoint
    assert "<dt>Last attempt</dt><dd>failed: could not connect · 2026-11-30 04:00 EST</dd>" in (
        endpoint
    )
    assert "<dt>Error rate, last 24 h</dt><dd>100% · 2 failed of 2</dd>" in endpoint
    assert re.search(
        r"<dt>Next retry</dt><dd>2026-11-30 04:0\d EST · 2 to try again</dd>", endpoint
    ), endpoint
    dead = _section(page, "dead-letters")
    assert "everything was delivered" not in dead
    assert "No dead letters yet, but deliveries are failing: 2 will be tried again" in dead

    # The receiver works again: the retries deliver, and the endpoint reads healthy.
    clock.advance(hours=1)
    with receiving(port=port):
        assert sender.run_once().delivered == 2
    healed = browser.get("/webhooks")
    endpoint = _section(healed, "endpoints")
    assert "Delivering</span>" in endpoint
    assert "<dt>Last attempt</dt><dd>delivered · 2026-11-30 05:00 EST</dd>" in endpoint
    assert "<dt>Error rate, last 24 h</dt><dd>50% · 2 failed of 4</dd>" in endpoint
    assert "None: nothing is waiting to be tried again" in endpoint
    assert "No dead letters: everything was delivered or is on its way." in _section(
        healed, "dead-letters"
    )

    french = browser.get("/webhooks", **{"Accept-Language": "fr"})
    endpoint = _section(french, "endpoints")
    assert "Fonctionne</span>" in endpoint
    assert "Ajouté par l&#39;opérateur, en ligne de commande" in endpoint
    assert f"livré · 30{NBSP}nov.{NBSP}2026, 5{NBSP}h{NBSP}00 HNE" in endpoint
    assert f"50{NBSP}% · 2 en échec sur 4" in endpoint


def test_a_manager_adds_an_endpoint_sees_its_secret_once_and_removes_it(web):
    browser = web.browser(AVA)
    url = "https://93.184.215.14/countersign"  # public; nothing is posted when it is added
    page = browser.form("/webhooks", {"url": f"  {url} "}, from_page="/webhooks")
    assert page.status_code == 201  # the page itself answers, with the secret
    [endpoint] = Webhooks(web.cs).endpoints(None, "granite")
    assert (endpoint["url"], endpoint["added_by"]) == (url, AVA)

    secret = _section(page, "new-secret")
    assert "Endpoint added" in secret
    shown = re.search(r'<textarea id="secret" [^>]*readonly[^>]*>(whsec_[^<]+)</textarea>', secret)
    assert shown, secret
    with web.cs.sql.transaction() as cursor:
        stored = cursor.execute("SELECT secret FROM webhook_secrets").fetchone()
    assert stored[0] == shown.group(1)  # the one that signs
    listed = _section(page, "endpoints")
    assert url in listed
    assert "Added by Ava Lindqvist" in listed
    assert "No attempts yet</span>" in listed
    assert "<dt>Last attempt</dt><dd>None yet</dd>" in listed
    again = browser.get("/webhooks")  # shown once
    assert 'id="new-secret"' not in again.text
    assert shown.group(1) not in again.text

    # Remove it, from its own form.
    removed = browser.form(
        "/webhooks/remove", {"endpoint": endpoint["endpoint_id"]}, from_page="/webhooks"
    )
    assert removed.status_code == 303
    after = browser.get("/webhooks")
    assert "The endpoint was removed: it receives nothing more." in after.text
    assert Webhooks(web.cs).endpoints(None, "granite") == []
    with web.cs.sql.transaction() as cursor:
        assert cursor.execute("SELECT COUNT(*) FROM webhook_secrets").fetchone()[0] == 0
    twice = browser.form(
        "/webhooks/remove", {"endpoint": endpoint["endpoint_id"]}, from_page="/webhooks"
    )
    assert twice.status_code == 303
    assert "There was no such endpoint; nothing was changed." in browser.get("/webhooks").text


def session_rows(web: Web) -> list[str]:
    """Every browser session's stored one-shot values, as the database holds them."""
    with web.cs.sql.transaction() as cursor:
        return [data for (data,) in cursor.execute("SELECT data FROM web_sessions").fetchall()]


def test_the_new_secret_is_never_in_the_session_store(web):
    """The secret is shown on the answer to the form and kept in no session row: not before
    it is seen, not after, not if the browser never looks at the page again."""
    browser = web.browser(AVA)
    page = browser.form("/webhooks", {"url": "https://93.184.215.14/hooks"}, from_page="/webhooks")
    with web.cs.sql.transaction() as cursor:
        [(secret,)] = cursor.execute("SELECT secret FROM webhook_secrets").fetchall()
    assert session_rows(web)  # the manager's session is stored...
    assert not [row for row in session_rows(web) if secret in row]  # ...without the secret
    assert f">{secret}</textarea>" in page.text
    french = browser.get("/webhooks", **{"Accept-Language": "fr"})
    assert secret not in french.text
    assert not [row for row in session_rows(web) if secret in row]


def test_a_secret_an_earlier_version_left_in_a_session_row_is_erased_at_start(web):
    """An earlier version carried the secret to the page after a redirect in the session row,
    where it stayed until that page was seen: the pages erase what is left as they start."""
    browser = web.browser(AVA)
    browser.get("/webhooks")
    left = {"url": "https://93.184.215.14/hooks", "secret": "whsec_bGVmdCBpbiBhIHNlc3Npb24="}
    with web.cs.sql.transaction() as cursor:
        cursor.execute(
            "UPDATE web_sessions SET data = ?",
            (json.dumps({"webhook_secret": left, "flash": {"kind": "redelivered"}}),),
        )
    assert [row for row in session_rows(web) if left["secret"] in row]
    mount_pages(create_app(web.cs), web.cs, secure_cookies=False)  # a start
    assert session_rows(web)
    assert not [row for row in session_rows(web) if left["secret"] in row]
    assert all("redelivered" in row for row in session_rows(web))  # the rest is kept
    assert left["secret"] not in browser.get("/webhooks").text


@pytest.mark.parametrize(
    ("url", "english", "french"),
    [
        (
            "http://169.254.169.254/latest/meta-data",
            "This URL leads to a private, loopback or otherwise internal address, or to this "
            "server itself. Webhooks are posted to other hosts&#39; public addresses only.",
            "Cette URL mène à une adresse privée, locale ou autrement interne, ou à ce serveur "
            "lui-même.",
        ),
        (
            "http://10.0.0.7:8080/hooks",
            "This URL leads to a private, loopback or otherwise internal address, or",
            "Cette URL mène à une adresse privée",
        ),
        ("ftp://hooks.example/x", "The URL must start with https:// (or http://).", "doit "),
        (
            "https://user:pw@hooks.example/x",
            "The URL must not carry a user name or password",
            "ni nom d&#39;utilisateur ni mot de passe",
        ),
    ],
)
def test_an_endpoint_the_guards_refuse_is_not_added_and_the_page_says_why(
    web, url: str, english: str, french: str
):
    """The same SSRF guards as the command line and the API: an internal address is refused
    at the form, with a clear reason and what was typed kept."""
    browser = web.browser(AVA)
    refused = browser.form("/webhooks", {"url": url}, from_page="/webhooks")
    assert refused.status_code == 422
    form = _section(refused, "add-endpoint")
    assert english in form
    assert 'aria-invalid="true"' in form
    assert f'value="{url}"' in form  # kept, to correct
    assert Webhooks(web.cs).endpoints(None, "granite") == []
    browser.form("/language", {"lang": "fr", "next": "/webhooks"})
    refused = browser.form("/webhooks", {"url": url}, from_page="/webhooks")
    assert french in _section(refused, "add-endpoint")


def test_only_a_webhook_manager_of_the_club_adds_or_removes(web):
    Webhooks(web.cs).add(None, "granite", "https://93.184.215.14/granite")
    [endpoint] = Webhooks(web.cs).endpoints(None, "granite")
    ben = web.browser(BEN)  # granite staff without webhooks.manage
    assert ben.form("/webhooks", {"url": "https://93.184.215.14/ben"}).status_code == 403
    assert ben.form("/webhooks/remove", {"endpoint": endpoint["endpoint_id"]}).status_code == 403
    mia = web.browser(MIA)  # a manager of another club
    done = mia.form(
        "/webhooks/remove", {"endpoint": endpoint["endpoint_id"]}, from_page="/webhooks"
    )
    assert done.status_code == 303
    assert "There was no such endpoint" in mia.get("/webhooks").text
    assert [e["url"] for e in Webhooks(web.cs).endpoints(None, "granite")] == [
        "https://93.184.215.14/granite"
    ]
    # Without the form's CSRF token nothing is added.
    ava = web.browser(AVA)
    assert ava.post("/webhooks", {"url": "https://93.184.215.14/forged"}).status_code == 403
    assert len(Webhooks(web.cs).endpoints(None, "granite")) == 1
