"""A real headless Chromium against the app served by uvicorn on 127.0.0.1.

Ava signs in, asks the order assistant about Olivia's missed early-bird discount, opens the
proposal card's review page, approves it (its button names the refund; a card refund is
confirmed once more) and sees the outcome; a second tab that still shows the button approves
again and sees the same stored outcome. On a phone the decision is on screen without
scrolling; an unknown path is a styled page. No JavaScript is needed
by the pages; the browser also reports no Content-Security-Policy violation. Screenshots go
to ``test-artifacts/`` (desktop and phone sizes, English and French).

Chromium is Debian's (``/usr/bin/chromium``) driven by Playwright's Python package; Playwright
never downloads a browser here. Without Chromium this test skips locally and FAILS when CI is
set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from countersign.application.ports import Clock
from countersign.domain.times import local_time
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, DRAFT, REFUND, TO_CARD
from tests.servers import serving
from tests.support.club_day import start_within_one_club_day
from tests.support.proposing import propose
from tests.test_settling import stuck_claim

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
MESSAGE = "Olivia missed her early-bird discount"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def _browser_or_fail() -> Any:
    """Playwright's sync API, if it and Chromium are here; else skip (fail under CI)."""
    problem = None
    if not CHROMIUM.exists():
        problem = f"{CHROMIUM} is missing (apt-get install -y chromium chromium-driver)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = problem or "the playwright package is missing (pip install -e '.[dev]')"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the browser test cannot run: {problem}")
        pytest.skip(problem)
    return sync_playwright


@dataclass
class Served:
    base_url: str
    cs: Countersign
    seeded: dict[str, Any]
    passwords: dict[str, str]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The JSON API and the pages on one SQLite file, served by uvicorn in a thread."""
    with served_from(tmp_path) as running:
        yield running


@contextmanager
def served_from(tmp_path: Path, clock: Clock | None = None) -> Iterator[Served]:
    """The seeded app on a SQLite file in ``tmp_path``, served until the block ends (on
    ``clock``, when the test moves time itself)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'browser.db'}", model="scripted")
    cs = bootstrap(settings, clock=clock)
    seeded = seed(cs)
    passwords = seed_passwords(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)  # plain http://127.0.0.1
    try:
        with serving(app) as running:
            yield Served(running.base, cs, seeded, passwords)
    finally:
        cs.close()


def _other_pending_work(served: Served) -> None:
    """Two more proposals so the inbox shows a list, as it would on a busy day."""
    cs, seeded = served.cs, served.seeded
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["account-credit"],
        request={**TO_CARD, "destination": "account_credit"},
    )
    cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=DRAFT,
        resource_id=seeded["broadcast_forms"]["granite"],
        request={
            "filters": {"leagues": ["Monday Night Open", "Sunday Mixed Doubles"]},
            "subject": "Ice schedule for December",
            "body": (
                "Hello curlers,\n\nThe December draw schedule is posted.\n\nSee you on the ice!"
            ),
        },
    )


def test_sign_in_chat_review_approve_twice(served: Served, browser: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    _other_pending_work(served)
    order_id = served.seeded["orders"]["refund-ok"]
    problems: list[str] = []

    context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    page = context.new_page()
    page.on(
        "console",
        lambda message: problems.append(message.text) if message.type == "error" else None,
    )

    # Sign in: the inbox asks for it first.
    page.goto(served.base_url + "/")
    assert page.url.endswith("/sign-in")
    page.screenshot(path=str(ARTIFACTS / "01-sign-in.png"))
    page.fill("#email", AVA)
    page.fill("#password", served.passwords[AVA])
    page.click("button[type=submit] >> text=Sign in")
    page.wait_for_url(served.base_url + "/")
    assert page.locator("h1").inner_text() == "Inbox"
    assert page.locator("#awaiting .inbox-card").count() == 2
    assert page.locator("#attention").inner_text().endswith("Nothing needs attention.")
    page.screenshot(path=str(ARTIFACTS / "02-inbox.png"), full_page=True)

    # The order assistant for the seeded "refund-ok" order.
    page.goto(f"{served.base_url}/chat/orders/{order_id}")
    page.fill("#message", MESSAGE)
    page.click("button >> text=Send")
    card = page.locator(".proposal-card")
    card.wait_for()
    assert "$48.00 CAD" in card.inner_text()
    assert "Olivia Chen" in card.inner_text()
    assert MESSAGE in page.locator(".from-manager").inner_text()
    interaction = page.locator("input[name=interaction_id]").get_attribute("value")
    assert interaction
    assert re.fullmatch(r"[0-9a-f-]{36}", interaction)
    page.screenshot(path=str(ARTIFACTS / "03-chat-proposal-card.png"), full_page=True)

    # The review page, pending; a second tab opens it too, before anyone approves.
    card.locator("a >> text=Review and decide").click()
    page.wait_for_url(re.compile(r".*/proposals/[0-9a-f-]{36}$"))
    review_url = page.url
    assert page.locator("#status").inner_text() == "Awaiting approval"
    page.screenshot(path=str(ARTIFACTS / "04-review-pending.png"), full_page=True)
    second = context.new_page()
    second.goto(review_url)
    approve = "button.approve"
    assert page.locator(approve).inner_text() == (
        "Refund $48.00 CAD to Visa\N{NO-BREAK SPACE}••••\N{NO-BREAK SPACE}4242"
    )
    assert second.locator(approve).is_visible()

    # Approve: a card refund cannot be undone, so it is confirmed once more (a plain
    # form); then the outcome is shown on the review page.
    page.click(approve)
    page.wait_for_url(re.compile(re.escape(review_url) + r"/approve\?asked=[0-9a-f]{32}$"))
    assert page.locator("h1").inner_text() == "Confirm once more"
    assert "A card refund cannot be undone" in page.locator(".irreversible").inner_text()
    page.screenshot(path=str(ARTIFACTS / "05-confirm-card-refund.png"), full_page=True)
    assert served.cs.sandbox.refunds() == []
    page.click("button >> text=Yes: Refund $48.00 CAD to Visa •••• 4242")
    page.wait_for_url(review_url)
    assert page.locator("#status").inner_text() == "Succeeded"
    outcome = page.locator("#outcome").inner_text()
    assert outcome.startswith("Refund sent")
    assert "Refunded $48.00 CAD" in outcome
    assert page.locator(".notice").inner_text() == ("Approved and done. Here is what happened.")
    assert page.locator(approve).count() == 0
    page.screenshot(path=str(ARTIFACTS / "05-review-succeeded.png"), full_page=True)
    # The back button after approving: the confirmation was a page of its own, so the
    # browser loads it again (no "Confirm Form Resubmission"), and it now shows the
    # outcome; nothing runs again.
    page.go_back()
    assert page.url == review_url
    assert page.locator("#status").inner_text() == "Succeeded"
    assert page.locator(approve).count() == 0

    # Approving again from the second tab returns the same stored outcome.
    second.click(approve)
    second.wait_for_url(review_url)
    assert second.locator("#status").inner_text() == "Succeeded"
    assert second.locator("#outcome").inner_text() == outcome
    assert "already approved" in second.locator(".notice").inner_text()
    second.screenshot(path=str(ARTIFACTS / "06-second-tab-same-outcome.png"), full_page=True)

    # Exactly one refund reached the payment provider.
    refunds = served.cs.sandbox.refunds()
    assert len(refunds) == 1
    assert refunds[0]["amount_cents"] == 4800

    # The conversation shows the card with its outcome.
    page.goto(f"{served.base_url}/chat/orders/{order_id}?interaction={interaction}")
    assert "Succeeded" in page.locator(".proposal-card .pill").inner_text()
    page.screenshot(path=str(ARTIFACTS / "07-chat-after-approval.png"), full_page=True)

    # French, by the language switch kept in the session.
    page.goto(review_url)
    page.click(".lang button[value=fr]")
    page.wait_for_url(review_url)
    assert page.locator("#status").inner_text() == "Réussie"
    assert "Remboursement de 48,00\u00a0$\u00a0CA" in page.locator("#outcome").inner_text()
    page.screenshot(path=str(ARTIFACTS / "08-review-succeeded-fr.png"), full_page=True)
    page.click(".lang button[value=en]")
    page.wait_for_url(review_url)

    # Phone-sized screens, same session.
    phone = browser.new_context(
        viewport=PHONE, device_scale_factor=2, storage_state=context.storage_state()
    )
    small = phone.new_page()
    small.on(
        "console",
        lambda message: problems.append(message.text) if message.type == "error" else None,
    )
    small.goto(served.base_url + "/")
    _fits_the_screen(small)
    small.screenshot(path=str(ARTIFACTS / "09-phone-inbox.png"), full_page=True)
    small.goto(review_url)
    _fits_the_screen(small)
    small.screenshot(path=str(ARTIFACTS / "10-phone-review-succeeded.png"), full_page=True)
    small.goto(served.base_url + "/")
    small.locator(".inbox-card").first.click()
    small.wait_for_url(re.compile(r".*/proposals/[0-9a-f-]{36}$"))
    _fits_the_screen(small)
    # The decision is within reach without scrolling past the card.
    box = small.locator("button.approve").bounding_box()
    assert box is not None
    assert box["y"] + box["height"] <= PHONE["height"], box
    small.screenshot(path=str(ARTIFACTS / "11-phone-review-pending.png"))
    # Declining, the bar holds the note and its button, no approve button right above
    # them, and leaves most of the screen to the card; closing it brings approve back.
    small.click(".decline-box summary")
    assert small.locator("button.approve").is_hidden()
    bar = small.locator("#decide").bounding_box()
    assert bar is not None
    assert bar["height"] <= PHONE["height"] * 0.4, bar
    declining = small.locator(".decline-box button[type=submit]").bounding_box()
    assert declining is not None
    assert declining["y"] + declining["height"] <= PHONE["height"], declining
    small.screenshot(path=str(ARTIFACTS / "11b-phone-review-declining.png"))
    small.click(".decline-box summary")
    assert small.locator("button.approve").is_visible()
    small.goto(f"{served.base_url}/chat/orders/{order_id}?interaction={interaction}")
    _fits_the_screen(small)
    small.screenshot(path=str(ARTIFACTS / "12-phone-chat.png"), full_page=True)
    phone.close()

    # A path that names nothing is a page, not a JSON document. (A tab without the
    # console watch: the browser reports every 404 it loads.)
    lost = context.new_page()
    missing = lost.goto(served.base_url + "/inbox")
    assert missing is not None
    assert missing.status == 404
    assert lost.locator("h1").inner_text() == "Not found"
    lost.screenshot(path=str(ARTIFACTS / "13-not-found.png"))
    lost.close()

    # Signing out ends the session: the inbox asks for a sign-in again.
    page.click("button >> text=Sign out")
    page.wait_for_url(re.compile(r".*/sign-in$"))
    page.goto(served.base_url + "/")
    assert page.url.endswith("/sign-in")
    context.close()

    assert problems == [], f"the browser reported errors (CSP violations?): {problems}"


def _fits_the_screen(page: Any) -> None:
    """Nothing wider than the phone's screen: no sideways scrolling."""
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the page is {overflow}px wider than the screen"


def test_ava_asks_the_roster_assistant_to_move_a_member_and_approves_it(
    served: Served, browser: Any
) -> None:
    """The roster section, from its start link: the stand-in proposes the move Ava asked for,
    the review page shows the section's labels, and approving moves her in the roster."""
    ARTIFACTS.mkdir(exist_ok=True)
    problems: list[str] = []
    roster_id = served.seeded["rosters"]["granite"]

    context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    page = context.new_page()
    page.on(
        "console",
        lambda message: problems.append(message.text) if message.type == "error" else None,
    )
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", AVA)
    page.fill("#password", served.passwords[AVA])
    page.click("button[type=submit] >> text=Sign in")
    page.wait_for_url(served.base_url + "/")

    # The start link opens the roster assistant on the club's roster.
    page.click("a >> text=Change the league rosters")
    page.wait_for_url(f"{served.base_url}/chat/roster/{roster_id}")
    assert page.locator("h1").inner_text() == "Roster assistant"
    page.fill("#message", "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors")
    page.click("button >> text=Send")
    card = page.locator(".proposal-card")
    card.wait_for()
    shown = card.inner_text()
    assert "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors" in shown
    page.screenshot(path=str(ARTIFACTS / "roster-01-chat-card.png"), full_page=True)

    # The inbox lists it under the roster's own tab.
    page.goto(served.base_url + "/?section=roster")
    assert page.locator(".inbox-card").count() == 1
    assert "Roster" in page.locator("nav.segments").last.inner_text()

    # Review and approve.
    page.locator(".inbox-card").first.click()
    page.wait_for_url(re.compile(r".*/proposals/[0-9a-f-]{36}$"))
    review_url = page.url
    assert page.locator("#status").inner_text() == "Awaiting approval"
    review = page.locator("main").text_content() or ""
    assert "Move a member to another league" in review
    assert "To league: members after" in review
    page.screenshot(path=str(ARTIFACTS / "roster-02-review-pending.png"), full_page=True)
    # The approve button names the move; a move is local, so no confirmation step.
    page.click("button >> text=Move Olivia Chen to Thursday Seniors")
    page.wait_for_url(review_url)
    assert page.locator("#status").inner_text() == "Succeeded"
    assert "Member moved" in page.locator("#outcome").inner_text()
    assert "Olivia Chen now plays in Thursday Seniors (5 members)" in (
        page.locator("#outcome").inner_text()
    )
    page.screenshot(path=str(ARTIFACTS / "roster-03-review-succeeded.png"), full_page=True)
    leagues = {league["name"]: league for league in served.cs.club.leagues("granite")}
    assert leagues["Thursday Seniors"]["active_members"] == 5
    assert leagues["Sunday Mixed Doubles"]["active_members"] == 1

    # In French, the section's and the operation's own labels.
    page.click(".lang button[value=fr]")
    page.wait_for_url(review_url)
    assert page.locator("#status").inner_text() == "Réussie"
    assert "Ligue rejointe : membres après" in (page.locator("main").text_content() or "")
    assert "Olivia Chen joue maintenant dans Thursday Seniors" in (
        page.locator("#outcome").inner_text()
    )
    page.screenshot(path=str(ARTIFACTS / "roster-04-review-fr.png"), full_page=True)
    page.goto(served.base_url + "/?section=roster")
    assert "Effectifs" in page.locator("nav.segments").last.inner_text()
    page.click(".lang button[value=en]")
    context.close()

    assert problems == [], f"the browser reported errors (CSP violations?): {problems}"


def test_a_lost_answer_says_since_when_and_that_nothing_settles_it(
    tmp_path: Path, browser: Any
) -> None:
    """A card refund whose provider answer was lost, with nothing but the pages running (no
    worker, no sweeping serve: the app is served here without them): nine minutes later the
    review page, the status page and Needs attention say since when it waits and that an
    operator must start the worker, in English and French, at desktop and phone size. Once a
    worker passes and the provider still has not answered, it says that instead; once the
    reconciler settles it, the refund is sent."""
    shots = ARTIFACTS / "settling"
    shots.mkdir(parents=True, exist_ok=True)
    # Nine minutes ago, on the club's day of now (tests.support.club_day).
    began = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=9)
    clock = FakeClock(start_within_one_club_day(began, 9))
    problems: list[str] = []
    with served_from(tmp_path, clock) as served:
        lost = propose(served.cs, served.seeded, "refund-lost-response")
        assert served.cs.proposals.approve(lost, AVA).status == "reconciling"
        # And a claim whose approving process died before it called the provider.
        stuck = stuck_claim(served.cs.settings.database_url, clock, served.seeded)
        since = local_time(clock.now(), "America/Toronto")[11:16]  # the club's zone
        clock.advance(minutes=9)
        review_url = f"{served.base_url}/proposals/{lost}"
        context = browser.new_context(viewport=DESKTOP, locale="en-CA")
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(served.base_url + "/sign-in")
        page.fill("#email", AVA)
        page.fill("#password", served.passwords[AVA])
        page.click("button[type=submit] >> text=Sign in")
        page.wait_for_url(served.base_url + "/")

        # Needs attention lists both, with how long each has waited and why it still does.
        cards = page.locator("#attention .inbox-card")
        assert cards.count() == 2
        for index in range(2):
            assert (
                f"Waiting since {since}, 9 min. Nothing is settling it: an operator must "
                "start the worker." in cards.nth(index).inner_text()
            )
        page.screenshot(path=str(shots / "01-inbox-attention-en.png"), full_page=True)

        page.goto(review_url)
        assert page.locator("#status").inner_text() == "Confirming with the provider"
        assert page.locator("#outcome-title").inner_text() == (
            "Confirming with the card provider: do not refund again"
        )
        assert "reconciler" not in page.locator("main").inner_text()
        assert page.locator("#waiting").inner_text() == f"Waiting since {since}, 9 min."
        alert = page.locator("#settling-alert").inner_text()
        assert alert.startswith("Nothing is settling it: an operator must start the worker")
        page.screenshot(path=str(shots / "02-review-unattended-en.png"), full_page=True)
        page.goto(review_url + "/status")
        assert page.locator("#settling-alert").inner_text() == alert
        page.screenshot(path=str(shots / "03-status-unattended-en.png"), full_page=True)

        # The dead claim's page: executing, for nine minutes, and nothing settles it.
        page.goto(f"{served.base_url}/proposals/{stuck}")
        assert page.locator("#status").inner_text() == "Executing"
        assert "no outcome has been recorded" in page.locator("main").inner_text()
        assert "Refresh in a moment" not in page.locator("main").inner_text()
        assert page.locator("#waiting").inner_text() == f"Waiting since {since}, 9 min."
        assert page.locator("#settling-alert").inner_text() == alert
        page.screenshot(path=str(shots / "03-review-executing-unattended-en.png"), full_page=True)

        # French, by the language switch.
        page.goto(f"{served.base_url}/proposals/{stuck}")
        page.click(".lang button[value=fr]")
        page.wait_for_url(f"{served.base_url}/proposals/{stuck}")
        assert page.locator("#waiting").inner_text().startswith("En attente depuis ")
        page.screenshot(path=str(shots / "04-review-executing-unattended-fr.png"), full_page=True)
        page.goto(served.base_url + "/")
        page.screenshot(path=str(shots / "04-inbox-attention-fr.png"), full_page=True)
        page.goto(review_url)
        page.click(".lang button[value=fr]")
        page.wait_for_url(review_url)
        hour, minute = since.split(":")
        assert page.locator("#waiting").inner_text() == (
            f"En attente depuis {int(hour)} h {minute}, 9 min."
        )
        assert (
            page.locator("#settling-alert")
            .inner_text()
            .startswith("Rien ne la règle\u00a0: un opérateur doit démarrer")
        )
        page.screenshot(path=str(shots / "04-review-unattended-fr.png"), full_page=True)

        # Phone-sized, both languages.
        phone = browser.new_context(
            viewport=PHONE, device_scale_factor=2, storage_state=context.storage_state()
        )
        small = phone.new_page()
        small.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        for language in ("fr", "en"):
            small.goto(review_url)
            if small.locator("html").get_attribute("lang") != language:
                small.click(f".lang button[value={language}]")
                small.wait_for_url(review_url)
            _fits_the_screen(small)
            assert small.locator("#settling-alert").is_visible()
            small.screenshot(
                path=str(shots / f"05-phone-review-unattended-{language}.png"), full_page=True
            )
            small.goto(f"{served.base_url}/proposals/{stuck}")
            _fits_the_screen(small)
            small.screenshot(
                path=str(shots / f"05-phone-review-executing-{language}.png"), full_page=True
            )
        small.goto(served.base_url + "/")
        _fits_the_screen(small)
        small.screenshot(path=str(shots / "06-phone-inbox-attention-en.png"), full_page=True)
        phone.close()

        # A worker passes, and the provider has still not answered its lookups.
        served.cs.sweeper_passes.record("reconcile", clock.now(), timedelta(seconds=10))
        page.click(".lang button[value=en]")
        page.wait_for_url(review_url)
        silent = page.locator("#settling-alert").inner_text()
        assert silent.startswith("The provider has not confirmed it yet: countersign asks")
        page.screenshot(path=str(shots / "07-review-provider-silent-en.png"), full_page=True)

        # The reconciler settles both: one refund each, and the pages say so.
        served.cs.sweepers.reconcile()
        for url in (review_url, f"{served.base_url}/proposals/{stuck}"):
            page.goto(url)
            assert page.locator("#status").inner_text() == "Succeeded"
            assert page.locator("#waiting").count() == 0
        assert len(served.cs.sandbox.refunds()) == 2
        context.close()
    assert problems == [], f"the browser reported errors (CSP violations?): {problems}"


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_after_sending_the_answer_is_on_screen(
    served: Served, browser: Any, viewport: dict[str, int]
) -> None:
    """Sending a message lands the page on the turn just taken: what Ava wrote at the top of
    the screen and the assistant's answer below it, not the empty box under them (the
    answer above the screen, out of sight)."""
    context = browser.new_context(viewport=viewport, locale="en-CA")
    page = context.new_page()
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", AVA)
    page.fill("#password", served.passwords[AVA])
    page.click("button[type=submit] >> text=Sign in")
    page.wait_for_url(served.base_url + "/")
    # A conversation with a turn already in it, so that the page is longer than the screen.
    page.goto(f"{served.base_url}/chat/orders/{served.seeded['orders']['refund-ok']}")
    page.fill("#message", "Olivia never got her early-bird discount")
    page.click("button >> text=Send")
    page.wait_for_url(re.compile(r".*#latest$"))
    page.fill("#message", MESSAGE)
    page.click("button >> text=Send")
    page.wait_for_url(re.compile(r".*#latest$"))
    answer = page.locator(".proposal-card").last
    answer.wait_for()

    def on_screen(locator: Any) -> bool:
        box = locator.bounding_box()
        return box is not None and 0 <= box["y"] <= viewport["height"] - 20

    assert on_screen(page.locator(".from-manager").last.locator(".said")), "your message"
    assert on_screen(answer.locator(".card-head")), "the answer's card"
    assert page.locator(".from-manager").last.inner_text().endswith(MESSAGE)
    page.screenshot(path=str(ARTIFACTS / f"chat-after-send-{viewport['width']}.png"))
