"""The card of a proposal not executed because what it asked for already holds, in a real
Chromium at desktop and phone sizes, in English and French.

The same removal of Noah from Thursday Seniors, once held under the subject the last release
gave it and once proposed since, both approved: the second changes nothing, and its card says
there is nothing to do, in muted tones, with no "ask for a new proposal" button and no Edit;
the edit page, opened anyway (an old tab, a bookmark), goes back to the card, which says
there is nothing to edit; the inbox shows nothing needing attention. Screenshots go to
``test-artifacts/already-so/`` (``<language>-<size>-card.png``, ``-edit.png`` and
``-inbox.png``) for a person to look at. Without Chromium this test skips locally and FAILS
when CI is set (``tests/test_browser_e2e.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from countersign.domain.contracts.remove_member import RemoveMember

from tests.conftest import AVA
from tests.test_browser_e2e import ARTIFACTS, PHONE, Served, _fits_the_screen, served_from
from tests.test_browser_governance import _sign_in

SHOTS = ARTIFACTS / "already-so"
DESKTOP = {"width": 1280, "height": 800}
REMOVE = "roster.remove_member"
OUT_OF_SENIORS = {"member": "Noah Fraser", "league": "Thursday Seniors"}
WORDS = {
    "en": (
        "Nothing to do",
        "Nothing to do: it was already so",
        "Nothing was changed. Noah Fraser no longer plays in Thursday Seniors. That is already "
        "what this proposal asked for, so nothing is left to do.",
        "Nothing needs attention.",
        "There is nothing to edit: what this proposal asked for was already so, and nothing "
        "is left to do. For a different change, ask for a new proposal.",
    ),
    "fr": (
        "Rien à faire",
        "Rien à faire : c'était déjà le cas",
        "Rien n'a été modifié. Noah Fraser ne joue plus dans Thursday Seniors. C'est déjà ce "
        "que demandait cette proposition ; il ne reste donc rien à faire.",
        "Rien à surveiller.",
        "Il n'y a rien à modifier : ce que demandait cette proposition était déjà le cas, et "
        "il ne reste rien à faire. Pour un autre changement, demandez une nouvelle proposition.",
    ),
}


def _read(page: Any, selector: str) -> str:
    """The first matching element's text as a person reads it (the French pages' no-break
    spaces before punctuation read as spaces)."""
    return " ".join(page.locator(selector).first.inner_text().split())


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, str]]:
    """The served app, and the removal approved second: already so."""
    with served_from(tmp_path) as running:
        cs, roster = running.cs, running.seeded["rosters"]["granite"]

        def remove() -> str:
            return cs.proposals.propose(
                organization="granite",
                actor=AVA,
                operation=REMOVE,
                resource_id=roster,
                request=OUT_OF_SENIORS,
            ).proposal_id

        with monkeypatch.context() as last_release:
            last_release.setattr(RemoveMember, "subject", lambda self, arguments: arguments.email)
            held = remove()
        since = remove()
        assert cs.proposals.approve(since, AVA).status == "succeeded"
        assert cs.proposals.approve(held, AVA).outcome["already_so"] is True
        yield running, held


def test_the_card_says_nothing_is_left_to_do_on_a_desktop_and_a_phone(
    served: tuple[Served, str], browser: Any
) -> None:
    running, already = served
    SHOTS.mkdir(parents=True, exist_ok=True)
    for language, size, viewport in (
        (language, size, viewport)
        for language in ("en", "fr")
        for size, viewport in (("desktop", DESKTOP), ("phone", PHONE))
    ):
        status, title, message, nothing, nothing_to_edit = WORDS[language]
        context = browser.new_context(viewport=viewport, locale="en-CA")
        page = context.new_page()
        _sign_in(page, running, AVA)
        path = f"/proposals/{already}"
        page.goto(running.base_url + path)
        if language == "fr":
            page.click(".lang button[value=fr]")
            page.wait_for_url(running.base_url + path)

        assert _read(page, "#status") == status
        assert "tone-muted" in (page.locator("#status").get_attribute("class") or "")
        assert _read(page, "#outcome-title") == title
        assert _read(page, "#outcome p") == message
        assert page.locator("#outcome .next-step").count() == 0
        # Nothing is owed: nothing to edit, approve or decline, nor a new proposal to ask for.
        assert page.locator(f'main a[href="{path}/edit"], main .edit-action').count() == 0
        assert page.locator("main form").count() == 0
        assert page.locator("main .next-step").count() == 0
        if size == "phone":
            _fits_the_screen(page)
        page.screenshot(path=str(SHOTS / f"{language}-{size}-card.png"), full_page=True)

        page.goto(running.base_url + path + "/edit")
        page.wait_for_url(running.base_url + path)
        assert _read(page, ".notice") == nothing_to_edit
        if size == "phone":
            _fits_the_screen(page)
        page.screenshot(path=str(SHOTS / f"{language}-{size}-edit.png"), full_page=True)

        page.goto(running.base_url + "/")
        assert _read(page, "#attention").endswith(nothing)
        page.screenshot(path=str(SHOTS / f"{language}-{size}-inbox.png"), full_page=True)
        context.close()
