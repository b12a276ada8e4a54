"""A proposal not executed because what it asked for already holds ("already so").

The same removal of Noah from Thursday Seniors, proposed twice (once held under the subject
the last release gave it, so neither replaced the other), and both approved: whichever runs
first takes him out, and the other's recheck finds him already out. It fails closed as
before, changing nothing, and its outcome says ``already_so``: nothing is owed, so it leaves
Needs attention, in either order of approval. Here is what each reader is told: the manager
(the notice, the card, the inbox, the conversation and the history page, in English and
French), the assistant (the hand-back and the context of the next turn), an API client
(the card and a second approval), and the auditor (the stored history and the audit
trail). A removal that failed closed for another reason still needs attention.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from countersign.domain.contracts.remove_member import RemoveMember
from countersign.infrastructure.identity.tokens import issue_token

from tests.conftest import AVA
from tests.test_history_page import _events, _history
from tests.test_move_member import _ask, _roster
from tests.test_projections import catch_up_all
from tests.test_remove_member import ALREADY_OUT, ALREADY_OUT_FR, NOAH
from tests.test_web_pages import Web, _approve, _cards, _main, _notice, web_for

FR = {"Accept-Language": "fr"}
ASKED = "Take Noah Fraser out of Thursday Seniors"


@pytest.fixture
def web(cs: Any, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _read(fragment: str) -> str:
    """What a person reads of a piece of a page: its text, spaces flattened (the French
    pages' no-break spaces read as spaces)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _outcome(page: Any) -> str:
    found = re.search(r'<section class="outcome-panel.*?</section>', _main(page), re.S)
    assert found, _main(page)[:500]
    return found.group(0)


def _status(page: Any) -> str:
    found = re.search(r'id="status">(.*?)</span>', page.text, re.S)
    assert found, page.text[:500]
    return _read(found.group(1))


def _asked_for(page: Any) -> str | None:
    """The caption over the proposal's rows, if the page shows one."""
    found = re.search(r'<h2 class="preview-title"[^>]*>(.*?)</h2>', _main(page), re.S)
    return _read(found.group(1)) if found else None


def _twice(web: Web, monkeypatch: Any, approved_first: str) -> tuple[str, str]:
    """The same removal asked of the roster assistant twice, in two conversations, once
    before the upgrade (held under the last release's subject) and once since; the first
    in ``approved_first``'s order approved through the pages: (the one that ran, the one
    left to approve, which will find it already so)."""
    with monkeypatch.context() as last_release:
        last_release.setattr(RemoveMember, "subject", lambda self, arguments: arguments.email)
        held = _ask(web.cs, web.seeded, ASKED).proposal
    since = _ask(web.cs, web.seeded, ASKED).proposal
    assert held is not None
    assert since is not None
    first, second = (held, since) if approved_first == "held_before" else (since, held)
    browser = web.browser(AVA)
    assert _notice(_approve(browser, first["proposal_id"])) == (
        "Approved and done. Here is what happened."
    )
    return first["proposal_id"], second["proposal_id"]


@pytest.mark.parametrize("approved_first", ["held_before", "proposed_since"])
def test_the_manager_reads_that_nothing_is_left_to_do_and_nothing_needs_attention(
    web: Web, monkeypatch: Any, approved_first: str
) -> None:
    ran, already = _twice(web, monkeypatch, approved_first)
    browser = web.browser(AVA)

    page = _approve(browser, already)

    assert _notice(page) == (
        "Approved, but not executed: it was already so. Nothing is left to do."
    )
    assert _status(page) == "Nothing to do"
    outcome = _outcome(page)
    assert "tone-muted" in outcome
    assert _read(outcome) == f"Nothing to do: it was already so {ALREADY_OUT}"
    assert "next-step" not in outcome  # no "ask the assistant for a new proposal"
    # Its rows (members before 4, after 3) are what it asked for, not what was done.
    assert _asked_for(page) == "What it asked for (not carried out)"
    assert _asked_for(browser.get(f"/proposals/{ran}")) is None
    inbox = browser.get("/")
    assert _cards(inbox, "attention") == []
    assert "Nothing needs attention." in inbox.text
    # Both are among the recent decisions, as ever.
    recent = browser.get("/?view=recent").text
    assert f"/proposals/{ran}" in recent
    assert f"/proposals/{already}" in recent

    browser.form("/language", {"lang": "fr", "next": "/"})
    page = browser.get(f"/proposals/{already}")
    assert _status(page) == "Rien à faire"
    assert _read(_outcome(page)) == f"Rien à faire : c'était déjà le cas {ALREADY_OUT_FR}"
    assert _asked_for(page) == "Ce qu'elle demandait (non exécutée)"
    assert "Rien à surveiller." in browser.get("/").text


@pytest.mark.parametrize("approved_first", ["held_before", "proposed_since"])
def test_the_assistant_and_the_conversation_are_told_nothing_is_left_to_do(
    web: Web, monkeypatch: Any, approved_first: str
) -> None:
    _, already = _twice(web, monkeypatch, approved_first)
    cs = web.cs
    cs.proposals.approve(already, AVA)
    catch_up_all(cs)
    organization = cs.club.organization_id("granite")
    card = cs.cards.card(already, AVA)

    told = [
        (message["text_en"], message["text_fr"])
        for message in cs.read_models.handback(organization, card.interaction_id)
        if message["proposal_id"] == already and message["kind"] == "outcome"
    ]
    assert told == [(ALREADY_OUT, ALREADY_OUT_FR)]
    context = cs.read_models.revision_context(organization, card.interaction_id)
    assert context is not None
    assert context["context_en"].endswith(
        "Noah Fraser no longer plays in Thursday Seniors. That is already what it asked for: "
        "nothing is left to do."
    )
    chat = web.browser(AVA).get(
        f"/chat/roster/{web.seeded['rosters']['granite']}?interaction={card.interaction_id}"
    )
    assert chat.status_code == 200, chat.text[:500]
    assert (
        "The last proposal was not executed: Noah Fraser no longer plays in Thursday Seniors. "
        "That is already what it asked for, so nothing is left to do."
    ) in _read(chat.text)


def test_an_api_client_reads_the_marker_and_the_words_and_approving_again_changes_nothing(
    web: Web, monkeypatch: Any
) -> None:
    _, already = _twice(web, monkeypatch, "proposed_since")
    cs = web.cs
    token = issue_token(
        cs, "granite", "roster-bot", ["roster.manage"], issued_by=AVA, kind="approver"
    ).token
    client = web.browser().client
    headers = {"Authorization": f"Bearer {token}"}

    approved = client.post(f"/api/v1/proposals/{already}/approve", headers=headers)
    again = client.post(f"/api/v1/proposals/{already}/approve", headers=headers)
    card = client.get(f"/api/v1/proposals/{already}", headers=headers)

    assert approved.status_code == again.status_code == card.status_code == 200
    outcome = {
        "kind": "revision_required",
        "reason": {
            "code": "member_left_league",
            "params": {"member": "Noah Fraser", "league": "Thursday Seniors"},
        },
        "already_so": True,
    }
    assert (approved.json()["result"], approved.json()["status"]) == (
        "executed",
        "revision_required",
    )
    assert approved.json()["outcome"] == again.json()["outcome"] == card.json()["outcome"]
    assert card.json()["outcome"] == outcome
    assert again.json()["result"] == "already_completed"
    assert approved.json()["message"] == card.json()["message"] == ALREADY_OUT
    assert _roster(cs, web.seeded).leagues_of(NOAH) == ["Monday Night Open"]


def test_the_auditor_reads_it_in_the_history_and_the_audit_trail(
    web: Web, monkeypatch: Any
) -> None:
    _, already = _twice(web, monkeypatch, "held_before")
    cs = web.cs
    cs.proposals.approve(already, AVA)
    catch_up_all(cs)

    events = cs.audit.history(already)["events"]
    assert [event["type"] for event in events][-2:] == ["Claimed", "RevisionRequired"]
    assert events[-1]["outcome"]["already_so"] is True
    trail = list(cs.read_models.audit_trail(proposal_id=already))
    assert trail[-1]["summary"] == (
        "revision required (member_left_league, already so: nothing left to do): Noah Fraser "
        "no longer plays in Thursday Seniors."
    )
    assert _events(_history(web, already))[-1].startswith(
        "The application did not carry it out: what it asked for was already so, and nothing "
        "is left to do."
    )
    assert _read(_events(_history(web, already, **FR))[-1]).startswith(
        "L'application ne l'a pas exécutée : ce qu'elle demandait était déjà le cas, et il ne "
        "reste rien à faire."
    )


def test_an_analyst_counts_it_apart_from_the_revisions_that_still_owe_something(
    web: Web, monkeypatch: Any
) -> None:
    """``proposal_facts.already_so`` (docs/analytics.md): true for the proposal not executed
    because what it asked for already held, false for the one that ran and for every other."""
    ran, already = _twice(web, monkeypatch, "proposed_since")
    cs = web.cs
    cs.proposals.approve(already, AVA)
    catch_up_all(cs)

    with cs.sql.transaction() as cursor:
        rows = cursor.execute(
            "SELECT proposal_id, outcome, revision_reason, already_so FROM proposal_facts"
        ).fetchall()
    facts = {row[0]: (row[1], row[2], bool(row[3])) for row in rows}
    assert facts[already] == ("revision_required", "member_left_league", True)
    assert facts[ran] == ("succeeded", None, False)
    assert [fact[2] for pid, fact in facts.items() if pid not in (ran, already)] == [
        False for pid in facts if pid not in (ran, already)
    ]
