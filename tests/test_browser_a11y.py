"""Every page kind, checked by axe-core in a real Chromium, at desktop and phone sizes, in
English and French: no serious or critical accessibility violation. The screenshot of a page
with one goes to ``test-artifacts/a11y/`` (``<language>-<size>-<page>.png``) for a person to
look at; with ``COUNTERSIGN_A11Y_SCREENSHOTS=1`` every page's does (a full-page screenshot of
each of the 36 pages cost about 5 s of each of the four checks, for files nobody read).

One server and one browser for the module. The outcomes are made through the application
(the payment sandbox's test cards decide them): a refund sent (which withdrew a pending
cancellation), one not executed (stale), a failure, one whose lost answer nothing has settled
for ten minutes, an outage before anything was applied, just approved, and a broadcast send
whose approving process died after its claim; and a pending refund that would withdraw a
pending cancellation, with its confirmation step. Without Chromium this test skips locally
and FAILS when CI is set (``tests/test_browser_e2e.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, DRAFT, REFUND, TO_CARD
from tests.receivers import (
    LOOPBACK,
    allow_loopback,  # noqa: F401 - autouse
    free_port,
)
from tests.servers import serving
from tests.support.club_day import start_within_one_club_day
from tests.support.proposing import BACK_TO_CARD, CANCEL, MOVE, SEND, propose
from tests.test_browser_e2e import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Served,
    _fits_the_screen,
)
from tests.test_settling import stuck_claim

SHOTS = ARTIFACTS / "a11y"
CONFIRMING = "Confirming with the card provider: do not refund again"
#: axe-core impacts that fail the test.
BLOCKING = {"serious", "critical"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    """The app with one proposal in each state a page shows; the paths of every page kind."""
    folder = tmp_path_factory.mktemp("a11y")
    # Ten minutes ago, so that a lost answer approved then is overdue now; on the club's day
    # of now (tests.support.club_day), since the pages' times leave out today's date.
    clock = FakeClock(start_within_one_club_day(datetime.now(UTC) - timedelta(minutes=10), 10))
    settings = Settings(database_url=f"sqlite:///{folder / 'a11y.db'}", model="scripted")
    cs = bootstrap(settings, clock=clock)
    seeded = seed(cs)
    passwords = seed_passwords(cs)

    # A draft in the broadcast form, and its send claimed by a process that died before it
    # called the e-mail service: executing, and overdue once the clock moves on.
    cs.proposals.approve(propose(cs, seeded, operation=DRAFT), AVA)
    executing = stuck_claim(settings.database_url, clock, seeded, operation=SEND)
    # A pending cancellation that the refund's success withdraws.
    withdrawn = propose(cs, seeded, "refund-ok", operation=CANCEL, request=BACK_TO_CARD)
    sent = propose(cs, seeded, "refund-ok")
    cs.proposals.approve(sent, AVA)
    # Refunded by hand after it was proposed: approving it executes nothing.
    stale = propose(cs, seeded, "refund-stale")
    cs.club.refund_manually("granite", seeded["orders"]["refund-stale"], AVA, "P1", 34500)
    failed, lost, outage = (
        propose(cs, seeded, order)
        for order in ("refund-declined", "refund-lost-response", "provider-outage")
    )
    for proposal_id in (stale, failed, lost):
        cs.proposals.approve(proposal_id, AVA)
    # Ten minutes on, with no reconciler running: the lost answer is overdue and nothing
    # settles it; the outage, approved now, has just started waiting.
    clock.advance(minutes=10)
    cs.proposals.approve(outage, AVA)
    # Under a policy of two approvals for every refund: one awaiting a second manager.
    cs.policies.set("granite", REFUND, 2, above_cents=None)
    awaiting = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["account-credit"],
        request={**TO_CARD, "destination": "account_credit"},
    ).proposal_id
    cs.proposals.approve(awaiting, AVA)
    # One approval again: a card refund that one click (and its confirmation) runs.
    cs.policies.set("granite", REFUND, 1, above_cents=None)
    pending = propose(cs, seeded, "refund-two-approvers")
    # Emma's card declined her refund; a cancellation and a new refund of her order now wait,
    # and the refund's review and confirmation warn of the cancellation it would withdraw.
    propose(cs, seeded, "refund-declined", operation=CANCEL, request=BACK_TO_CARD)
    withdrawing = propose(cs, seeded, "refund-declined")
    # A broadcast draft, edited: the earlier version is replaced, the new one shows changes.
    draft = {"filters": {"leagues": ["Monday Night Open"]}, "subject": "Ice", "body": "Hello"}
    replaced = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=DRAFT,
        resource_id=seeded["broadcast_forms"]["granite"],
        request=draft,
    ).proposal_id
    revised = cs.access.revise(replaced, AVA, {**draft, "subject": "Ice times"}).proposal_id

    # A roster move whose policy asks for a passkey, and Ava has none: the review page offers
    # to add one instead of an approval that cannot work.
    cs.policies.set("granite", MOVE, 1, require_passkey=True)
    needs_passkey = propose(cs, seeded, operation=MOVE)
    # For the approval policies page: a refund rule with a threshold, set after every refund
    # above was proposed, above all of their amounts: it asks no more of any of them (a rule
    # that did would send each back at its next approval, application/policy_recheck.py).
    cs.policies.set("granite", REFUND, 2, above_cents=100_000, requester_may_approve=False)

    # The webhooks page with an endpoint that is down, and its dead letters. (The module's
    # site is made before any test's own fixtures, so it allows loopback for itself.)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS", LOOPBACK)
        Webhooks(cs).add(None, "granite", f"http://127.0.0.1:{free_port()}/hooks/countersign")
        notification_sender(cs, NotifySettings(max_attempts=1)).run_once()
    paths = {
        "inbox": "/",
        "recent": "/?view=recent",
        "review-pending": f"/proposals/{pending}",
        "review-withdraws": f"/proposals/{withdrawing}",
        "review-awaiting": f"/proposals/{awaiting}",
        "review-replaced": f"/proposals/{replaced}",
        "review-withdrawn": f"/proposals/{withdrawn}",
        "review-revised": f"/proposals/{revised}",
        "review-needs-passkey": f"/proposals/{needs_passkey}",
        "edit-refund": f"/proposals/{pending}/edit",
        "edit-draft": f"/proposals/{revised}/edit",
        "review-sent": f"/proposals/{sent}",
        "review-not-executed": f"/proposals/{stale}",
        "review-failed": f"/proposals/{failed}",
        "review-reconciling": f"/proposals/{lost}",
        "review-outage": f"/proposals/{outage}",
        "review-executing": f"/proposals/{executing}",
        "status-reconciling": f"/proposals/{lost}/status",
        "status-waiting": f"/proposals/{outage}/status",
        "history-sent": f"/proposals/{sent}/history",
        "history-awaiting-as-of": f"/proposals/{awaiting}/history?as_of=2",
        "history-not-executed": f"/proposals/{stale}/history",
        "history-reconciling": f"/proposals/{lost}/history",
        "history-revised": f"/proposals/{revised}/history",
        "chat-orders": f"/chat/orders/{seeded['orders']['refund-ok']}",
        "chat-email": f"/chat/email_broadcasts/{seeded['broadcast_forms']['granite']}",
        "chat-roster": f"/chat/roster/{seeded['rosters']['granite']}",
        "webhooks": "/webhooks",
        "members": "/members",
        "policies": "/policies",
        "not-found": "/no-such-page",
    }
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    try:
        with serving(app) as running:
            yield Served(running.base, cs, seeded, passwords), paths
    finally:
        cs.close()


def _blocking(axe: Any, page: Any) -> list[str]:
    """The serious and critical violations axe-core finds on the page, one line each: run
    as the library's ``Axe.run`` runs it, on the axe-core its context's init script loaded."""
    from axe_playwright_python.sync_playwright import DEFAULT_OPTIONS

    options = axe._format_script_args(options=DEFAULT_OPTIONS)
    assert page.evaluate("typeof axe") == "object", "axe-core is not loaded in the page"
    found = page.evaluate(f"axe.run({options}).then(results => results)").get("violations", [])
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(str(node.get("target")) for node in v.get("nodes", [])[:3])
        for v in found
        if v.get("impact") in BLOCKING
    ]


#: One test a language and a size: the four take about 17 s each, and apart they spread over
#: the suite's workers (two of 34-38 s were its slowest, and ended the run).
@pytest.mark.parametrize("size", ["desktop", "phone"])
@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_page_passes_axe_at_desktop_and_phone_size(
    site: tuple[Served, dict[str, str]], browser: Any, language: str, size: str
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    served, paths = site
    SHOTS.mkdir(parents=True, exist_ok=True)
    axe = Axe()
    problems: dict[str, list[str]] = {}
    locale = "fr-CA" if language == "fr" else "en-CA"
    viewport = {"desktop": DESKTOP, "phone": PHONE}[size]
    context = browser.new_context(viewport=viewport, locale=locale)
    # axe-core in every document the context loads, before the page's own scripts (the
    # library's run() sent its 572 kB over for each check: about a tenth of a second each).
    context.add_init_script(script=axe.axe_script)
    page = context.new_page()
    page.goto(served.base_url + "/sign-in")
    assert page.locator("html").get_attribute("lang") == language
    _check(page, axe, problems, f"{language}-{size}-sign-in")
    page.fill("#email", AVA)
    page.fill("#password", served.passwords[AVA])
    page.locator("form.sign-in button[type=submit], main button[type=submit]").first.click()
    page.wait_for_url(served.base_url + "/")
    # Every tab is in sight at this size (on a phone they wrap, never scroll away).
    for tab in page.locator(".tabs-main a").all():
        box = tab.bounding_box()
        assert box is not None
        assert box["x"] >= 0, (size, tab.inner_text())
        assert box["x"] + box["width"] <= viewport["width"], (size, tab.inner_text())
    for name, path in paths.items():
        page.goto(served.base_url + path)
        _check(page, axe, problems, f"{language}-{size}-{name}")
    # The confirmation step of an irreversible refund (a plain form post), and
    # of one that also withdraws another proposal.
    for review, name in (("review-pending", "confirm"), ("review-withdraws", "")):
        page.goto(served.base_url + paths[review])
        page.click("button.approve")
        page.wait_for_url(re.compile(r".*/approve\?asked=[0-9a-f]{32}$"))
        _check(page, axe, problems, f"{language}-{size}-{name or 'confirm-withdraws'}")
    # The webhooks page's form: a refused URL, then an added endpoint's secret.
    page.goto(served.base_url + paths["webhooks"])
    page.fill("#url", "http://10.0.0.7/hooks")
    page.click("#add-endpoint button[type=submit]")
    page.wait_for_selector("#url-error")
    _check(page, axe, problems, f"{language}-{size}-webhooks-refused")
    page.fill("#url", f"https://93.184.215.14/hooks/{language}-{size}")
    page.click("#add-endpoint button[type=submit]")
    page.wait_for_selector("#new-secret")
    _check(page, axe, problems, f"{language}-{size}-webhooks-added")
    context.close()
    assert problems == {}, problems


#: Every checked page's screenshot, not only those of the pages that fail.
EVERY_SHOT = os.environ.get("COUNTERSIGN_A11Y_SCREENSHOTS", "").strip() not in ("", "0")


def _check(page: Any, axe: Any, problems: dict[str, list[str]], name: str) -> None:
    found = _blocking(axe, page)
    if found:
        problems[name] = found
    if found or EVERY_SHOT:
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_each_outcome_reads_as_what_it_is_with_its_next_step(
    site: tuple[Served, dict[str, str]], browser: Any
) -> None:
    """In a real browser: each outcome's headline and next step, the needs-attention list,
    the styled 404, and the French card with French money."""
    served, paths = site
    SHOTS.mkdir(parents=True, exist_ok=True)
    revise = "Ask the assistant for a new proposal"
    expected = {
        "review-sent": ("Refund sent", None),
        "review-not-executed": ("Not executed: nothing changed", revise),
        "review-failed": ("Not executed: the card was declined", revise),
        "review-reconciling": (CONFIRMING, "Follow the check"),
        "review-outage": (CONFIRMING, "Follow the check"),
    }
    context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    page = context.new_page()
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", AVA)
    page.fill("#password", served.passwords[AVA])
    page.locator("form.sign-in button[type=submit], main button[type=submit]").first.click()
    page.wait_for_url(served.base_url + "/")
    # Needs attention: every decided proposal that still needs a person (Emma's refund her
    # card declined no longer does: a newer refund of her order, withdrawing, followed it).
    attention = page.locator("#attention .inbox-card")
    assert attention.count() == 4, page.locator("#attention").inner_text()
    for name, (title, next_step) in expected.items():
        page.goto(served.base_url + paths[name])
        assert page.locator("#outcome-title").inner_text() == title, name
        step = page.locator("#outcome .next-step a")
        if next_step is None:
            assert step.count() == 0, name
        else:
            assert step.inner_text() == next_step, name
        assert "/api/" not in page.locator("#outcome").inner_text(), name
    page.goto(served.base_url + paths["review-outage"])
    assert "refunded nothing" in page.locator("#outcome").inner_text()
    assert page.locator("#waiting").inner_text().startswith("Waiting since ")
    assert page.locator("#settling-alert").count() == 0  # it has just started
    page.goto(served.base_url + paths["review-reconciling"])
    assert "answer was lost" in page.locator("#outcome").inner_text()
    assert page.locator("#waiting").inner_text().endswith(", 10 min.")
    assert (
        page.locator("#settling-alert")
        .inner_text()
        .startswith("Nothing is settling it: an operator must start the worker")
    )
    page.goto(served.base_url + paths["review-withdrawn"])
    assert page.locator("#status").inner_text() == "Withdrawn"
    assert (
        page.locator("#withdrawn-why")
        .inner_text()
        .startswith("Withdrawn: the $48.00 CAD refund approved at ")
    )
    # A styled page, not a problem document, for a path that is not there.
    missing = page.goto(served.base_url + "/no-such-page")
    assert missing is not None
    assert missing.status == 404
    assert page.locator("header.topbar").count() == 1
    assert "application/problem+json" not in (missing.headers.get("content-type") or "")
    # The French card, with French money.
    page.goto(served.base_url + paths["review-sent"])
    page.click(".lang button[value=fr]")
    page.wait_for_url(served.base_url + paths["review-sent"])
    assert page.locator("#outcome-title").inner_text() == "Remboursement envoyé"
    assert "48,00\u00a0$\u00a0CA" in page.locator("main").inner_text()
    page.screenshot(path=str(SHOTS / "outcome-sent-fr.png"), full_page=True)
    context.close()


@pytest.mark.parametrize(("language", "size"), [("en", "desktop"), ("fr", "phone")])
def test_an_auditor_reads_a_history_and_a_past_state_by_keyboard_alone(
    site: tuple[Served, dict[str, str]], browser: Any, language: str, size: str
) -> None:
    """Ben, given audit.read alone (no operation's permission), opens a carried-out refund's
    review page, reaches its history link by Tab and opens it with Enter, then the refund
    as it stood after its approval: nothing wider than the screen, in his language."""
    served, paths = site
    SHOTS.mkdir(parents=True, exist_ok=True)
    served.cs.club.set_permissions("granite", "ben@granite.example", ["audit.read"])
    viewport = {"desktop": DESKTOP, "phone": PHONE}[size]
    context = browser.new_context(viewport=viewport, locale=f"{language}-CA")
    page = context.new_page()
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", "ben@granite.example")
    page.fill("#password", served.passwords["ben@granite.example"])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(served.base_url + "/")
    review = paths["review-sent"]
    page.goto(served.base_url + review)
    assert page.locator("#decide").count() == 0  # an auditor decides nothing

    def tab_to(href: str) -> None:
        for _ in range(80):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.getAttribute('href')") == href:
                return
        raise AssertionError(f"the keyboard never reached {href}")

    tab_to(f"{review}/history")
    with page.expect_navigation(url=f"{served.base_url}{review}/history"):
        page.keyboard.press("Enter")
    heading = {"en": "5 events", "fr": "5 événements"}[language]
    assert page.locator("#events-title").inner_text() == heading
    first = page.locator("li.event .event-text").first.inner_text()
    assert first.startswith("Ava Lindqvist (ava@granite.example)")
    _fits_the_screen(page)
    tab_to(f"{review}/history?as_of=2#as-of")
    # With the focus ring on the link, for a person to look at.
    page.screenshot(path=str(SHOTS / f"{language}-{size}-history-keyboard.png"), full_page=True)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*\?as_of=2#as-of$"))
    title = {"en": "As it stood after event 2", "fr": "Telle qu'elle était après l'événement 2"}
    assert page.locator("#as-of-title").inner_text() == title[language]
    assert page.locator("li.event").count() == 2
    _fits_the_screen(page)
    page.screenshot(path=str(SHOTS / f"{language}-{size}-history-as-of.png"), full_page=True)
    context.close()
