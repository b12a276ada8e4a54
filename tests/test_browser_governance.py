"""Governance in a real headless Chromium against the app served by uvicorn on 127.0.0.1.

A refund above the seeded policy's $100.00 threshold needs two managers: Ava approves (nothing
runs, the page says it awaits another manager and offers her no second approval), Noah signs
in, sees her approval and the policy, approves and confirms: it succeeds with exactly one card
refund. Then an edit: Ava opens the Edit page of another refund, first sends a payment that is
not on the order (the problem shows next to the field, her choice of destination kept), then
sends the new destination: the new proposal shows what changed and the old one says it was
replaced, linking the new one. An approval that would withdraw another pending proposal says so
before, and the withdrawn one says why after. In English and French, at desktop and phone
size; screenshots go to ``test-artifacts/governance/``. No JavaScript is needed, and the
browser reports no error (a Content-Security-Policy violation would be one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AVA
from tests.support.proposing import BACK_TO_CARD, CANCEL, propose
from tests.test_browser_e2e import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Served,
    _fits_the_screen,
    served_from,
)

NOAH = "noah@granite.example"
SHOTS = ARTIFACTS / "governance"
REVIEW = re.compile(r".*/proposals/[0-9a-f-]{36}$")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with served_from(tmp_path) as running:
        yield running


def _sign_in(page: Any, served: Served, email: str) -> None:
    page.goto(served.base_url + "/sign-in")
    page.fill("#email", email)
    page.fill("#password", served.passwords[email])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(served.base_url + "/")


def _shot(page: Any, name: str, *, full: bool = True) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def _card_refunds(served: Served, proposal_id: str) -> int:
    return sum(
        1 for r in served.cs.sandbox.refunds() if r["metadata"]["proposal_id"] == proposal_id
    )


def test_two_managers_approve_a_large_refund_and_an_edit_replaces_a_proposal(
    served: Served, browser: Any
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    large = propose(served.cs, served.seeded, "refund-two-approvers")  # $128.00
    small = propose(served.cs, served.seeded, "refund-ok")  # $48.00, to edit
    problems: list[str] = []

    def watch(page: Any) -> Any:
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        return page

    # -- Ava: the first of two approvals ----------------------------------------------
    ava_context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    ava = watch(ava_context.new_page())
    _sign_in(ava, served, AVA)
    ava.goto(f"{served.base_url}/proposals/{large}")
    assert ava.locator("#quorum-title").inner_text() == "Approvals: 0 of 2"
    policy = ava.locator(".policy").inner_text()
    assert "above $100.00 CAD, 2 different managers must approve" in policy
    assert "Your approval will be 1 of 2" in ava.locator("#approve-hint").inner_text()
    _shot(ava, "01-two-approvers-pending")
    ava.click("button.approve")  # the first of two runs nothing: no confirmation
    ava.wait_for_url(f"{served.base_url}/proposals/{large}")
    assert "Your approval is recorded" in ava.locator(".notice").inner_text()
    assert ava.locator("#quorum-title").inner_text() == "Approvals: 1 of 2 — Ava Lindqvist"
    assert "awaits one more manager's approval" in ava.locator("#quorum").inner_text()
    assert ava.locator("button.approve").count() == 0
    assert ava.locator("#status").inner_text() == "Awaiting approval"
    _shot(ava, "02-first-approval-awaits-another")
    assert _card_refunds(served, large) == 0

    # -- Noah: the second approval runs it, once confirmed ----------------------------
    noah_context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    noah = watch(noah_context.new_page())
    _sign_in(noah, served, NOAH)
    noah.goto(f"{served.base_url}/proposals/{large}")
    assert noah.locator("#quorum-title").inner_text() == ("Approvals: 1 of 2 — Ava Lindqvist")
    _shot(noah, "03-second-manager-sees-the-first-approval")
    noah.click("button.approve")
    noah.wait_for_url(re.compile(r".*/approve\?asked=[0-9a-f]{32}$"))
    assert noah.locator("h1").inner_text() == "Confirm once more"
    noah.click("button >> text=Yes: Refund $128.00 CAD to Visa •••• 4242")
    noah.wait_for_url(f"{served.base_url}/proposals/{large}")
    assert noah.locator("#status").inner_text() == "Succeeded"
    assert noah.locator("#outcome-title").inner_text() == "Refund sent"
    approvals = noah.locator(".meta-list").inner_text()
    assert "2 of 2 — Ava Lindqvist, Noah Bergeron" in approvals
    _shot(noah, "04-second-approval-succeeded")
    assert _card_refunds(served, large) == 1
    noah.click(".lang button[value=fr]")
    noah.wait_for_url(f"{served.base_url}/proposals/{large}")
    assert noah.locator("#status").inner_text() == "Réussie"
    assert "2 sur 2 — Ava Lindqvist, Noah Bergeron" in (noah.locator(".meta-list").inner_text())
    _shot(noah, "05-second-approval-succeeded-fr")
    noah_context.close()

    # -- Ava edits the small refund's destination -------------------------------------
    ava.goto(f"{served.base_url}/proposals/{small}")
    ava.click("a.button >> text=Edit")
    ava.wait_for_url(f"{served.base_url}/proposals/{small}/edit")
    assert ava.locator("h1").inner_text() == "Edit the proposal"
    assert ava.locator("#field-destination").input_value() == "original_payment_method"
    assert "48.00" not in (ava.locator("main").inner_text())
    _shot(ava, "06-edit-form")
    # A payment the order does not have: refused next to its field, nothing lost.
    ava.fill("#field-payment", "P9")
    ava.select_option("#field-destination", "account_credit")
    reported = len(problems)
    ava.click("button >> text=Prepare the new proposal")
    ava.wait_for_url(f"{served.base_url}/proposals/{small}/edit")
    # The refused form is answered 422, which the browser reports; nothing else.
    assert [re.sub(r".*status of ", "", p) for p in problems[reported:]] == [
        "422 (Unprocessable Entity)"
    ]
    del problems[reported:]
    assert ava.locator("#form-problems").is_visible()
    assert ava.locator("#field-payment-errors").inner_text()
    assert ava.locator("#field-payment").get_attribute("aria-invalid") == "true"
    assert ava.locator("#field-destination").input_value() == "account_credit"
    _shot(ava, "07-edit-refused-next-to-the-field")
    ava.fill("#field-payment", "P1")
    ava.click("button >> text=Prepare the new proposal")
    ava.wait_for_url(REVIEW)
    revised_url = ava.url
    assert not revised_url.endswith(small)
    assert "prepared again from your changes" in ava.locator(".notice").inner_text()
    changes = ava.locator("#changes")
    assert changes.locator("tbody th").inner_text() == "Refund to"
    assert changes.locator("del").inner_text() == "Visa •••• 4242"
    assert "account" in changes.locator("ins").inner_text().lower()
    _shot(ava, "08-revision-shows-what-changed")
    assert ava.locator("#replaces-title").inner_text() == "It revises an earlier proposal"
    assert changes.locator("a").count() == 0  # the box above links the earlier version, once
    ava.locator("#replaces a >> text=Open the earlier proposal").click()
    ava.wait_for_url(f"{served.base_url}/proposals/{small}")
    assert ava.locator("#status").inner_text() == "Replaced"
    assert ava.locator("#replaced-title").inner_text() == "Replaced by a newer proposal"
    assert ava.locator("button.approve").count() == 0
    assert ava.locator("summary.decline").count() == 0
    _shot(ava, "09-old-version-replaced")
    ava.click("a >> text=Open the newer proposal")
    ava.wait_for_url(revised_url)

    # -- the same pages in French ------------------------------------------------------
    ava.click(".lang button[value=fr]")
    ava.wait_for_url(revised_url)
    assert ava.locator("#changes-title").inner_text() == "Ce qui a changé"
    _shot(ava, "10-revision-fr")
    ava.goto(f"{served.base_url}/proposals/{small}")
    assert ava.locator("#replaced-title").inner_text() == (
        "Remplacée par une proposition plus récente"
    )
    _shot(ava, "11-old-version-replaced-fr")
    ava.goto(revised_url + "/edit")
    assert ava.locator("h1").inner_text() == "Modifier la proposition"
    _shot(ava, "12-edit-form-fr")
    ava.goto(f"{served.base_url}/proposals/{large}")
    _shot(ava, "13-two-approvers-succeeded-fr")

    # -- phone size, in both languages ------------------------------------------------
    for language in ("en", "fr"):
        ava.goto(revised_url)
        ava.click(f".lang button[value={language}]")
        ava.wait_for_url(revised_url)
        phone = browser.new_context(
            viewport=PHONE, device_scale_factor=2, storage_state=ava_context.storage_state()
        )
        small_screen = watch(phone.new_page())
        for name, path in (
            ("revision", revised_url),
            ("replaced", f"{served.base_url}/proposals/{small}"),
            ("edit", revised_url + "/edit"),
            ("two-approvers", f"{served.base_url}/proposals/{large}"),
        ):
            small_screen.goto(path)
            _fits_the_screen(small_screen)
            _shot(small_screen, f"14-phone-{language}-{name}")
        phone.close()
    ava_context.close()

    assert problems == [], f"the browser reported errors (CSP violations?): {problems}"
    assert len(served.cs.sandbox.refunds()) == 1  # the edited refund was never approved
    assert Path(SHOTS / "08-revision-shows-what-changed.png").exists()


def test_an_approval_warns_of_what_it_withdraws_and_the_withdrawn_card_says_why(
    served: Served, browser: Any
) -> None:
    """Lucas Roy's order: a pending cancellation ($345.00 back), then a $48.00 discount
    refund. The refund's review and its confirmation step list the cancellation it would
    withdraw, linked; once the refund runs, the cancellation reads "Withdrawn", says which
    approval withdrew it and when, and links that refund. In English and French, at desktop
    and phone size."""
    shots = SHOTS / "withdrawal"
    shots.mkdir(parents=True, exist_ok=True)
    order = served.seeded["orders"]["refund-stale"]
    cancellation = propose(
        served.cs, served.seeded, operation=CANCEL, resource_id=order, request=BACK_TO_CARD
    )
    refund = propose(served.cs, served.seeded, "refund-stale")
    refund_url = f"{served.base_url}/proposals/{refund}"
    cancellation_url = f"{served.base_url}/proposals/{cancellation}"
    problems: list[str] = []

    def watch(page: Any) -> Any:
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        return page

    def shoot(page: Any, name: str) -> None:
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

    def at_phone_size(context: Any, name: str, url: str) -> None:
        phone = browser.new_context(
            viewport=PHONE, device_scale_factor=2, storage_state=context.storage_state()
        )
        small = watch(phone.new_page())
        small.goto(url)
        _fits_the_screen(small)
        shoot(small, name)
        phone.close()

    context = browser.new_context(viewport=DESKTOP, locale="en-CA")
    ava = watch(context.new_page())
    _sign_in(ava, served, AVA)

    # Before: the warning, in French first (the language switch is kept).
    ava.goto(refund_url)
    ava.click(".lang button[value=fr]")
    ava.wait_for_url(refund_url)
    assert ava.locator("#withdraws-lead").inner_text() == (
        "Approuver celle-ci retire aussi 1 proposition en attente sur cette commande\u00a0:"
    )
    shoot(ava, "01-refund-warns-fr")
    at_phone_size(context, "02-phone-refund-warns-fr", refund_url)
    ava.click(".lang button[value=en]")
    ava.wait_for_url(refund_url)
    warning = ava.locator("#withdraws")
    assert warning.locator("#withdraws-lead").inner_text() == (
        "Approving this also withdraws 1 pending proposal on this order:"
    )
    link = warning.locator("li a")
    assert link.inner_text() == "Cancel Lucas Roy's registration and refund $345.00 CAD"
    assert link.get_attribute("href") == f"/proposals/{cancellation}"
    described = ava.locator("button.approve").get_attribute("aria-describedby") or ""
    assert "withdraws-lead" in described.split()
    shoot(ava, "03-refund-warns-en")
    at_phone_size(context, "04-phone-refund-warns-en", refund_url)

    # The confirmation step says it again, next to what cannot be undone.
    ava.click("button.approve")
    ava.wait_for_url(re.compile(r".*/approve\?asked=[0-9a-f]{32}$"))
    assert ava.locator("h1").inner_text() == "Confirm once more"
    assert "Cancel Lucas Roy's registration" in ava.locator("#withdraws").inner_text()
    shoot(ava, "05-confirm-warns-en")
    ava.click("button >> text=Yes: Refund $48.00 CAD to Visa •••• 4242")
    ava.wait_for_url(refund_url)
    assert ava.locator("#status").inner_text() == "Succeeded"
    assert ava.locator("#withdraws").count() == 0

    # After: the cancellation says which approval withdrew it, and links it.
    ava.goto(cancellation_url)
    assert ava.locator("#status").inner_text() == "Withdrawn"
    assert ava.locator("#replaced-title").inner_text() == "This proposal will not run"
    why = ava.locator("#withdrawn-why").inner_text()
    assert why.startswith("Withdrawn: the $48.00 CAD refund approved at ")
    assert why.endswith("changed this order's balance. Propose it again if it is still wanted.")
    assert "newer proposal" not in ava.locator("main").inner_text()
    assert ava.locator("button.approve").count() == 0
    shoot(ava, "06-cancellation-withdrawn-en")
    at_phone_size(context, "07-phone-cancellation-withdrawn-en", cancellation_url)
    ava.click("a >> text=Open the proposal that withdrew it")
    ava.wait_for_url(refund_url)
    ava.goto(cancellation_url)
    ava.click(".lang button[value=fr]")
    ava.wait_for_url(cancellation_url)
    assert ava.locator("#status").inner_text() == "Retirée"
    assert (
        ava.locator("#withdrawn-why")
        .inner_text()
        .startswith("Retirée\u00a0: le remboursement de 48,00\u00a0$\u00a0CA approuvé à ")
    )
    shoot(ava, "08-cancellation-withdrawn-fr")
    at_phone_size(context, "09-phone-cancellation-withdrawn-fr", cancellation_url)
    context.close()

    assert problems == [], f"the browser reported errors (CSP violations?): {problems}"
    assert len(served.cs.sandbox.refunds()) == 1  # the refund's; the cancellation never ran
