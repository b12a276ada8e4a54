"""Issue 24's page items: what each page says matches what is true, in plain words, in English
and French. Through the ASGI app, on every backend.

The order panel after a refund, the review card's words (amounts only where there are some,
names rather than addresses, the time of a decline, a credit refund's button), the edit
form (an edit that changes nothing is refused; a proposal with nothing to edit offers no
Edit), the roster assistant, and a session ended from another device.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from countersign.domain.contracts import contracts_in
from countersign.domain.messages import proposal_headline
from countersign.domain.scope import Section
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, DRAFT, count_events
from tests.support.proposing import CANCEL, SEND, propose
from tests.test_web_pages import Web, web_for

NBSP = "\N{NO-BREAK SPACE}"
NOAH = "noah@granite.example"


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _discount(page: Any, name: str) -> str:
    """The order panel's line of one discount: its name, value and state."""
    found = re.search(
        rf"<strong>{re.escape(name)}</strong>.*?</li>", page.text.replace("\n", " "), re.S
    )
    assert found, page.text[:500]
    return re.sub(r"[ \t\n]+", " ", found.group(0))  # a non-breaking space stays


def test_a_refunded_discount_says_when_it_was_refunded_not_that_it_is_missing(web: Web):
    order = web.seeded["orders"]["refund-ok"]
    browser = web.browser(AVA)
    before = _discount(browser.get(f"/chat/orders/{order}"), "Early-bird 15% discount")
    assert "not applied" in before

    web.cs.proposals.approve(web.propose("refund-ok"), AVA)
    after = _discount(browser.get(f"/chat/orders/{order}"), "Early-bird 15% discount")
    # The day the refund was recorded (the event's own time), in the club's zone.
    assert re.search(r"Refunded \$48\.00 CAD on [A-Z][a-z]{2} \d{1,2}</span>", after), after
    assert "tone-ok" in after
    assert "not applied" not in after
    french = _discount(
        browser.get(f"/chat/orders/{order}", **{"Accept-Language": "fr"}), "Early-bird 15% discount"
    )
    assert re.search(
        rf"48,00{NBSP}\${NBSP}CA remboursés le (1er|\d{{1,2}}){NBSP}[a-zéû]+\.?</span>", french
    ), french
    assert "non appliquée" not in french


def _row(page: Any, label: str) -> str:
    """The value of one row of the review card's preview."""
    found = re.search(rf"<dt>{re.escape(label)}</dt>\s*<dd[^>]*>(.*?)</dd>", page.text, re.S)
    assert found, page.text[:500]
    return found.group(1)


def _send_proposal(web: Web) -> str:
    """A send of the ice-times draft (nine recipients), once the draft is in the form."""
    draft = propose(web.cs, web.seeded, operation=DRAFT)
    web.cs.proposals.approve(draft, AVA)
    return propose(web.cs, web.seeded, operation=SEND)


def test_a_send_lists_its_first_recipients_with_how_many_more_and_its_audience_in_french(
    web: Web,
):
    send = _send_proposal(web)
    browser = web.browser(AVA)
    english = browser.get(f"/proposals/{send}")
    first = _row(english, "First recipients")
    assert first.count("&lt;") == 5
    assert first.endswith("&gt; (+4 more)")
    assert _row(english, "Audience") == "members of Monday Night Open or Thursday Seniors"
    french = browser.get(f"/proposals/{send}", **{"Accept-Language": "fr"})
    assert _row(french, "Premiers destinataires").endswith("&gt; (+4 autres)")
    assert _row(french, "Destinataires") == (
        "membres des ligues Monday Night Open ou Thursday Seniors"
    )
    assert "members of" not in french.text


def _main_text(page: Any) -> str:
    found = re.search(r"<main.*</main>", page.text, re.S)
    assert found
    return re.sub(r"[ \t\n]+", " ", found.group(0))  # a non-breaking space stays


def test_only_a_card_with_amounts_says_the_application_computed_them(web: Web):
    browser = web.browser(AVA)
    refund = _main_text(browser.get(f"/proposals/{web.propose('refund-ok')}"))
    assert "The application computed every amount" in refund
    draft = _main_text(browser.get(f"/proposals/{propose(web.cs, web.seeded, operation=DRAFT)}"))
    assert "This is exactly what approval will do." in draft
    assert "computed every amount" not in draft
    french = _main_text(
        browser.get(
            f"/proposals/{propose(web.cs, web.seeded, operation=DRAFT)}",
            **{"Accept-Language": "fr"},
        )
    )
    assert "calculé chaque montant" not in french
    assert "L&#39;application revérifie tout avant d&#39;exécuter." in french


def test_who_decided_reads_by_name_with_the_time_of_a_decline(web: Web):
    approved, declined = web.propose("refund-ok"), web.propose("refund-two-approvers")
    web.cs.proposals.approve(approved, AVA)
    web.cs.proposals.decline(declined, NOAH, "not this week")
    browser = web.browser(AVA)
    shown = _main_text(browser.get(f"/proposals/{approved}"))
    assert (
        "<dt>Approved by</dt><dd>Ava Lindqvist (ava@granite.example) · "
        '<span class="nowrap">2026-11-30 04:00 EST</span></dd>'
    ) in shown
    # A decline's time is its event's (the wall clock's, like "Proposed"), in the club's zone.
    refused = _main_text(browser.get(f"/proposals/{declined}"))
    assert re.search(
        r"<dt>Declined by</dt><dd>Noah Bergeron \(noah@granite\.example\) · "
        r'<span class="nowrap">\d{4}-\d\d-\d\d \d\d:\d\d E[SD]T</span></dd>',
        refused,
    ), refused
    french = _main_text(browser.get(f"/proposals/{declined}", **{"Accept-Language": "fr"}))
    assert re.search(
        rf"<dt>Refusée par</dt><dd>Noah Bergeron \(noah@granite\.example\) · "
        rf'<span class="nowrap">(1er|\d+){NBSP}\w+\.?{NBSP}\d{{4}}, '
        rf"\d+{NBSP}h{NBSP}\d\d H[NA]E</span>",
        french,
    ), french


def test_a_cancellation_to_account_credit_says_so_on_its_button(web: Web):
    proposal_id = propose(
        web.cs,
        web.seeded,
        "account-credit",
        operation=CANCEL,
        request={"destination": "account_credit"},
    )
    browser = web.browser(AVA)
    review = _main_text(browser.get(f"/proposals/{proposal_id}"))
    assert ">Cancel and credit $345.00 CAD to Sophie Martin&#39;s club account</button>" in review
    french = _main_text(browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}))
    assert f">Annuler et créditer 345,00{NBSP}${NBSP}CA au compte de Sophie Martin</button>" in (
        french
    )


def test_a_proposal_with_nothing_to_edit_offers_no_edit(web: Web):
    browser = web.browser(AVA)
    send = _send_proposal(web)
    assert f'href="/proposals/{send}/edit"' not in browser.get(f"/proposals/{send}").text
    refund = web.propose("refund-ok")
    assert f'href="/proposals/{refund}/edit"' in browser.get(f"/proposals/{refund}").text


def test_an_edit_that_changes_nothing_is_refused_and_says_so(web: Web):
    proposal_id = web.propose("refund-ok")
    browser = web.browser(AVA)
    form = browser.get(f"/proposals/{proposal_id}/edit")
    assert f'<a class="button" href="/proposals/{proposal_id}">Discard changes</a>' in form.text
    before = count_events(web.cs)
    same = {"payment": "P1", "line_item": "L1", "discount": "D1"}
    unchanged = browser.form(
        f"/proposals/{proposal_id}/edit",
        {**same, "destination": "original_payment_method"},
        f"/proposals/{proposal_id}/edit",
    )
    assert unchanged.status_code == 422
    assert (
        "Nothing was changed: this is what the proposal already asks for, so no new proposal "
        "was made." in _main_text(unchanged)
    )
    assert "could not be prepared" not in unchanged.text
    assert count_events(web.cs) == before
    assert web.proposal(proposal_id).status == "pending"
    french = browser.get(f"/proposals/{proposal_id}/edit", **{"Accept-Language": "fr"})
    assert "Annuler les modifications</a>" in french.text
    # A real change makes the revision.
    changed = browser.form(
        f"/proposals/{proposal_id}/edit",
        {**same, "destination": "account_credit"},
        f"/proposals/{proposal_id}/edit",
    )
    assert changed.status_code == 303
    assert web.proposal(proposal_id).status == "superseded"


def test_an_expiry_seconds_ago_reads_just_now(web: Web, clock):
    proposal_id = web.propose("refund-ok")
    expires_at = web.proposal(proposal_id).expires_at
    clock.advance(seconds=(expires_at - web.cs.clock.now()).total_seconds() + 5)
    browser = web.browser(AVA)
    assert "expired just now</strong>" in browser.get(f"/proposals/{proposal_id}").text
    french = browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}).text
    assert "a expiré à l&#39;instant</strong>" in french


def test_another_device_signed_out_everywhere_is_told_its_session_ended(web: Web):
    laptop, phone = web.browser(AVA), web.browser(AVA)
    done = laptop.form("/sign-out/everywhere", {})
    assert done.status_code == 303
    assert "You are signed out everywhere" in laptop.get("/sign-in").text

    sent = phone.get("/")
    assert (sent.status_code, sent.headers["location"]) == (303, "/sign-in")
    told = _main_text(phone.get("/sign-in"))
    assert (
        "Your session ended: signed out on every device, a new password, or unused for too "
        "long. Sign in again to continue."
    ) in told
    assert "Your session ended" not in phone.get("/sign-in").text  # said once

    tablet = web.browser(AVA)
    web.browser(AVA).form("/sign-out/everywhere", {})
    tablet.get("/proposals/00000000-0000-4000-8000-000000000000")
    french = _main_text(tablet.get("/sign-in", **{"Accept-Language": "fr"}))
    assert "Votre session a pris fin\N{NO-BREAK SPACE}: déconnexion de tous les appareils" in french


def _chat(browser: Any, path: str, message: str) -> str:
    sent = browser.form(path, {"message": message, "interaction_id": ""})
    assert sent.status_code == 303, sent.text[:300]
    return _main_text(browser.get(sent.headers["location"].split("#")[0]))


def test_the_roster_assistant_names_whom_it_found_and_says_what_it_can_do(web: Web):
    roster = f"/chat/roster/{web.seeded['rosters']['granite']}"
    browser = web.browser(AVA)
    unnamed = _chat(browser, roster, "Move her to Thursday Seniors")
    assert "Which member should move, and to which league? The member search found: " in unnamed
    assert "Emma Singh, Ethan Clark" in unnamed
    assert "as the member search shows it" not in unnamed
    off_topic = _chat(browser, roster, "What is the weather tomorrow?")
    can = "; ".join(c.title.text("en").lower() for c in contracts_in(Section("roster")))
    assert can.startswith("move a member to another league")
    assert f"I could not find anything to propose from that. Here I can only propose: {can}." in (
        off_topic
    )
    # A move has no amount: the closing words do not claim one was computed.
    moved = _chat(browser, roster, "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors")
    assert "I prepared a proposal for your review." in moved
    assert "every amount" not in moved


def test_a_draft_for_one_member_says_one_recipient_in_both_languages(web: Web):
    """Maple's demo draft read "“Maple news” to 1 recipients" in the inbox."""
    mia = "mia@maple.example"
    draft = web.cs.proposals.propose(
        organization="maple",
        actor=mia,
        operation=DRAFT,
        resource_id=web.seeded["broadcast_forms"]["maple"],
        request={"filters": {"leagues": ["Tuesday Draw"]}, "subject": "Maple news", "body": "Hi"},
    ).proposal_id
    preview = web.cs.access.card(draft, mia).to_json()["preview"]
    english, french = (proposal_headline(DRAFT, preview, language) for language in ("en", "fr"))
    assert (english, french) == ("“Maple news” to 1 recipient", "« Maple news » à 1 destinataire")
    inbox = web.browser(mia).get("/", **{"Accept-Language": "en"})
    assert "to 1 recipient" in inbox.text
    assert "1 recipients" not in inbox.text


def test_french_elides_de_before_a_name_that_begins_with_a_vowel(web: Web):
    """The review page read "la remise manquée … de Ella Novak"; French writes d'Ella."""
    refund = propose(web.cs, web.seeded, "refund-two-approvers")
    web.cs.proposals.approve(refund, AVA)
    assert web.cs.proposals.approve(refund, "noah@granite.example").status == "succeeded"
    page = web.browser(AVA).get(f"/proposals/{refund}", **{"Accept-Language": "fr"})
    text = _main_text(page)
    assert "d'Ella Novak" in text or "d&#39;Ella Novak" in text, re.findall(r".{50}Ella.{10}", text)
    assert "de Ella" not in text
    english = _main_text(web.browser(AVA).get(f"/proposals/{refund}"))
    assert "Ella Novak" in english


def test_the_elision_is_the_de_before_a_value_filled_in_and_nothing_else():
    """A review found every "de" before a capital vowel elided, names' own particles and
    words quoted back to the model included ("Manuel d'Oliveira", "« Eva D'Angelis »")."""
    from countersign.domain.contracts.move_member_texts import MoveMemberTexts
    from countersign.domain.contracts.presentation import Localized, de
    from countersign.domain.contracts.remove_member_texts import RemoveMemberTexts
    from countersign.infrastructure.entrypoints.web.i18n import translator

    remise = Localized("the discount of {who}", "la remise de {who}")
    for who, said in (
        ("Olivia Chen", "la remise d'Olivia Chen"),
        ("Émile", "la remise d'Émile"),
        ("Yves", "la remise d'Yves"),
        ("Yasmine Haddad", "la remise de Yasmine Haddad"),
        ("Hélène", "la remise de Hélène"),
        ("Lucas Roy", "la remise de Lucas Roy"),
        ("un membre", "la remise de un membre"),
        ("Ana de Armas", "la remise d'Ana de Armas"),
    ):
        assert remise.text("fr", who=who) == said
        assert remise.filled(who=who).fr == said
    assert remise.text("en", who="Ella") == "the discount of Ella"
    assert (de("Ella"), de("Lucas")) == ("d'Ella", "de Lucas")

    moved = SimpleNamespace(member_name="Manuel de Oliveira", from_league="A", to_league="B")
    assert "Manuel de Oliveira" in MoveMemberTexts().headline(moved, "fr")
    problem = RemoveMemberTexts.request_problems["not_in_league"]
    assert "« Eva De Angelis »" in problem.text("fr", league="Lundi", member="Eva De Angelis")
    permissions = translator("fr")("members.permissions_of", name="Ana de Armas")
    assert permissions == "Permissions d'Ana de Armas"
