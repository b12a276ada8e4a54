"""A requester barred since a proposal was frozen, in a real headless Chromium.

Ava proposes a $128.00 refund (two managers above $100, the requester may approve); then the
club bars the requester. Noah's review page says nothing of sending it back and offers his
approval; Ava's says the club's policy asks another manager to approve it, and offers her
only to decline (test_policy_barred.py checks the same without a browser). In English and
French, at desktop and phone size; screenshots go to ``test-artifacts/policy-barred/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from countersign.application.authorization import Caller

from tests.conftest import AVA, REFUND
from tests.support.proposing import propose
from tests.test_browser_e2e import ARTIFACTS, DESKTOP, PHONE, Served, _fits_the_screen, served_from

NOAH = "noah@granite.example"
SHOTS = ARTIFACTS / "policy-barred"

SENT_BACK = {"en": "Send back for a new proposal", "fr": "Renvoyer pour une nouvelle proposition"}
BARRED = {
    "en": "the club's policy asks another manager to approve it",
    "fr": "la règle du club demande qu'un autre gestionnaire l'approuve",
}


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


def test_the_review_page_for_another_approver_and_for_the_requester(
    served: Served, browser: Any
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    proposal_id = propose(served.cs, served.seeded, "refund-two-approvers")  # Ava's, $128.00
    served.cs.policies.set(
        "granite", REFUND, 2, requester_may_approve=False, by=Caller(NOAH, "granite")
    )
    url = f"{served.base_url}/proposals/{proposal_id}"
    problems: list[str] = []

    for who, email in (("approver", NOAH), ("requester", AVA)):
        signed_in = browser.new_context(viewport=DESKTOP, locale="en-CA")
        page = signed_in.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        _sign_in(page, served, email)
        for language in ("en", "fr"):
            page.goto(url)
            page.click(f".lang button[value={language}]")
            page.wait_for_url(url)
            text = page.inner_text("main")
            assert SENT_BACK[language] not in text
            approve = page.locator(f'form[action="/proposals/{proposal_id}/approve"] button')
            if who == "approver":
                assert BARRED[language] not in text
                assert approve.count() == 1
                assert approve.is_visible()
            else:
                assert BARRED[language] in text
                assert page.locator("#barred").is_visible()
                assert approve.count() == 0
            page.screenshot(path=str(SHOTS / f"{who}-{language}-desktop.png"), full_page=True)
            phone = browser.new_context(
                viewport=PHONE, device_scale_factor=2, storage_state=signed_in.storage_state()
            )
            small = phone.new_page()
            small.goto(url)
            _fits_the_screen(small)
            small.screenshot(path=str(SHOTS / f"{who}-{language}-phone.png"), full_page=True)
            phone.close()
        signed_in.close()

    assert problems == [], f"the browser reported errors (CSP violations?): {problems}"
    assert served.cs.sandbox.refunds() == []
