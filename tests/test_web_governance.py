"""Governance on the browser pages, through the ASGI app, on every backend.

The review page of a proposal a policy asks two managers to approve (what it needs, who
approved, what is left, the policy it was frozen under), a requester the policy bars, a
proposal a newer one replaced, and the edit form: generated from the contract's request,
prefilled, refusing what the contract refuses next to the field without losing anything,
and making a new revision that shows what changed. Another club's proposal is the same 404
as an unknown one; a form without its CSRF token changes nothing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.request_form import (
    request_of,
    shown,
    specs,
)
from countersign.infrastructure.entrypoints.web.views import proposal_view
from countersign.projections.browser_view import BrowserView

from tests.conftest import AVA, BEN, MIA, REFUND, count_events
from tests.test_web_pages import UNKNOWN, Browser, Web, _main, web_for

NOAH = "noah@granite.example"
CARD_COLUMNS = set(BrowserView.tables[0].column_names())
needs_governance_cards = pytest.mark.skipif(
    not {"approvals", "approvals_required", "superseded_by"} <= CARD_COLUMNS,
    reason="the browser_view projection has no governance columns yet (gov-proj branch)",
)


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _review(browser: Browser, proposal_id: str, **headers: str) -> str:
    page = browser.get(f"/proposals/{proposal_id}", **headers)
    assert page.status_code == 200, page.text[:300]
    return _main(page)


def _approve(browser: Browser, proposal_id: str, *, confirm: bool = False) -> Any:
    data = {"confirm": "yes"} if confirm else {}
    return browser.form(f"/proposals/{proposal_id}/approve", data, f"/proposals/{proposal_id}")


def _approve_button(main: str, proposal_id: str) -> bool:
    return f'action="/proposals/{proposal_id}/approve"' in main


def _edit(browser: Browser, proposal_id: str, data: dict[str, str]) -> Any:
    return browser.form(f"/proposals/{proposal_id}/edit", data, f"/proposals/{proposal_id}/edit")


def _input(main: str, name: str) -> str:
    """The value of the form's text input (or the selected option, or a textarea's text)."""
    found = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', main)
    if found:
        return found.group(1)
    select = re.search(rf'<select [^>]*name="{re.escape(name)}".*?</select>', main)
    if select:
        chosen = re.search(r'<option value="([^"]*)" selected>', select.group(0))
        return chosen.group(1) if chosen else ""
    area = re.search(rf'<textarea [^>]*name="{re.escape(name)}"[^>]*>(.*?)</textarea>', main, re.S)
    assert area, f"no field {name}"
    return area.group(1)


# -- quorum ---------------------------------------------------------------------------------------


def test_a_first_approval_awaits_another_manager_and_the_second_runs_it(web: Web) -> None:
    proposal_id = web.propose("refund-two-approvers")  # $128.00: above the $100.00 threshold
    ava, noah = web.browser(AVA), web.browser(NOAH)

    before = _review(ava, proposal_id)
    assert "Approvals: 0 of 2</h2>" in before
    assert (
        "When this was proposed, the club&#39;s rule for it was: above $100.00 CAD, "
        "2 different managers must approve."
    ) in before
    assert "Your approval will be 1 of 2: nothing runs until another manager approves too." in (
        before
    )

    # A first approval of two runs nothing, so there is nothing to confirm.
    first = _approve(ava, proposal_id)
    assert first.status_code == 303
    after = _review(ava, proposal_id)
    assert "Your approval is recorded. Nothing runs until another manager approves too." in after
    assert "Approvals: 1 of 2 — Ava Lindqvist</h2>" in after
    # French spacing (the raw page: _main folds every space, a non-breaking one too).
    after_french = ava.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}).text
    assert "Approbations\N{NO-BREAK SPACE}: 1 sur 2 — Ava Lindqvist</h2>" in after_french
    assert "You have approved it. It awaits one more manager&#39;s approval" in after
    assert not _approve_button(after, proposal_id)  # she already did
    assert f'action="/proposals/{proposal_id}/decline"' in after  # a decline still ends it
    assert web.cs.sandbox.refunds() == []

    # Her other tab, still showing the button, is told what happened.
    _approve(ava, proposal_id)
    again = _review(ava, proposal_id)
    assert "You have already approved this proposal, and an approval counts once" in again
    assert web.proposal(proposal_id).approvals == (AVA,)

    # Noah sees who approved and what is left; his approval runs it, once confirmed.
    his = _review(noah, proposal_id)
    assert "Approvals: 1 of 2 — Ava Lindqvist</h2>" in his
    assert "It awaits one more manager&#39;s approval; nothing runs until then." in his
    assert _approve_button(his, proposal_id)
    assert "You will confirm once more: this cannot be undone." in his
    asked = _approve(noah, proposal_id)
    assert asked.status_code == 303  # to the confirmation page, a page of its own
    confirm = noah.get(asked.headers["location"])
    assert confirm.status_code == 200
    assert "Confirm once more" in confirm.text
    assert web.cs.sandbox.refunds() == []
    done = _approve(noah, proposal_id, confirm=True)
    assert done.status_code == 303
    outcome = _review(noah, proposal_id)
    assert "Refund sent" in outcome
    assert "Approvals</dt><dd>2 of 2 — Ava Lindqvist, Noah Bergeron" in outcome
    assert len(web.cs.sandbox.refunds()) == 1

    # In French, the same facts.
    french = _review(noah, proposal_id, **{"Accept-Language": "fr"})
    assert "Approbations</dt><dd>2 sur 2 — Ava Lindqvist, Noah Bergeron" in french
    assert "au-delà de 100,00 $ CA, 2 gestionnaires différents doivent approuver" in (french)


def test_below_the_threshold_the_page_says_one_approval_is_enough(web: Web) -> None:
    proposal_id = web.propose("refund-ok")  # $48.00
    main = _review(web.browser(AVA), proposal_id)
    assert "This one is not above that amount: one manager&#39;s approval is enough." in main
    assert 'id="quorum"' not in main  # one approval: nothing to count
    assert "You will confirm once more" in main


def test_a_requester_the_policy_bars_sees_why_and_another_manager_approves(web: Web) -> None:
    web.cs.policies.set("granite", REFUND, 1, above_cents=None, requester_may_approve=False)
    proposal_id = web.propose("refund-ok", actor=AVA)
    ava = web.browser(AVA)

    own = _review(ava, proposal_id)
    assert not _approve_button(own, proposal_id)
    assert "You requested this proposal, and the club&#39;s policy asks another manager" in own
    assert "The person who requested it may not approve it." in own
    # Posting the form anyway (an old tab) changes nothing, and says why.
    _approve(ava, proposal_id)
    assert "the club&#39;s policy asks another manager to approve it" in _review(ava, proposal_id)
    assert web.proposal(proposal_id).status == "pending"

    noah = _review(web.browser(NOAH), proposal_id)
    assert _approve_button(noah, proposal_id)
    assert "You requested this proposal" not in noah
    french = _review(ava, proposal_id, **{"Accept-Language": "fr"})
    assert "Vous avez demandé cette proposition" in french


# -- supersession ---------------------------------------------------------------------------------


def test_a_replaced_proposal_links_the_newer_one_and_offers_no_decision(web: Web) -> None:
    older = web.propose("refund-ok")
    newer = web.propose("refund-ok")  # the same refund again: it replaces the older one
    ava = web.browser(AVA)

    main = _review(ava, older)
    assert '<span class="pill tone-muted" id="status">Replaced</span>' in main
    assert "Replaced by a newer proposal</h2>" in main
    assert f'<a class="button primary" href="/proposals/{newer}">Open the newer proposal</a>' in (
        main
    )
    assert not _approve_button(main, older)
    assert f'action="/proposals/{older}/decline"' not in main
    assert f"/proposals/{older}/edit" not in main

    _approve(ava, older)  # a tab opened before it was replaced
    assert "A newer proposal replaced this one" in _review(ava, older)
    assert web.proposal(older).status == "superseded"
    assert web.cs.sandbox.refunds() == []
    french = _review(ava, older, **{"Accept-Language": "fr"})
    assert "Remplacée par une proposition plus récente" in french


# -- edits ----------------------------------------------------------------------------------------


def test_the_edit_form_is_the_request_prefilled_and_never_an_amount(web: Web) -> None:
    proposal_id = web.propose("refund-ok")
    ava = web.browser(AVA)
    assert f'<a class="button" href="/proposals/{proposal_id}/edit"' in _review(ava, proposal_id)

    page = ava.get(f"/proposals/{proposal_id}/edit")
    assert page.status_code == 200
    main = _main(page)
    assert [_input(main, name) for name in ("payment", "line_item", "discount")] == [
        "P1",
        "L1",
        "D1",
    ]
    assert _input(main, "destination") == "original_payment_method"
    assert '<option value="account_credit">As credit on the club account</option>' in main
    assert '<label for="field-destination">Where the money goes</label>' in main
    names = set(re.findall(r' name="([^"]+)"', main))
    assert names == {"csrf_token", "payment", "line_item", "discount", "destination"}
    assert "48.00" not in main  # no derived value: the application computes it again
    # The random id and CSRF token aside, which can hold "4800" by chance.
    token = re.search(r'name="csrf_token" value="([^"]*)"', main)
    assert token is not None
    assert "4800" not in main.replace(proposal_id, "").replace(token.group(1), "")
    french = _main(ava.get(f"/proposals/{proposal_id}/edit", **{"Accept-Language": "fr"}))
    assert "Modifier la proposition" in french
    assert '<option value="account_credit">En crédit au compte du club</option>' in french


def test_an_edit_is_a_new_revision_that_shows_what_changed(web: Web) -> None:
    original = web.propose("refund-ok")
    ava = web.browser(AVA)
    form = {"payment": "P1", "line_item": "L1", "discount": "D1"}

    # An amount in the post is not a field of the form: it is ignored, never frozen.
    sent = _edit(ava, original, {**form, "destination": "account_credit", "amount_cents": "1"})
    assert sent.status_code == 303
    revised = sent.headers["location"].rsplit("/", 1)[-1]
    assert revised != original
    assert web.proposal(revised).preview["amount_cents"] == 4800
    assert web.proposal(revised).revision_of is not None

    main = _review(ava, revised)
    assert "Here is the new proposal, prepared again from your changes." in main
    changes = re.search(r'<section class="changes".*?</section>', main)
    assert changes, main
    assert "What changed</h2>" in changes.group(0)
    assert re.search(
        r'<th scope="row">Refund to</th> <td data-label="Before:"><del>Visa •••• 4242</del></td>'
        r' <td data-label="After:"><ins>[^<]*[Aa]ccount[^<]*</ins></td>',
        changes.group(0),
    ), changes.group(0)
    # Pending, the box above links the earlier version; "What changed" does not again.
    assert f'href="/proposals/{original}"' not in changes.group(0)
    assert main.count(f'href="/proposals/{original}"') == 1
    assert f'<a class="button" href="/proposals/{original}">Open the earlier proposal</a>' in main

    old = _review(ava, original)
    assert "Replaced by a newer proposal" in old
    assert f'href="/proposals/{revised}">Open the newer proposal' in old
    french = _review(ava, revised, **{"Accept-Language": "fr"})
    assert "Ce qui a changé" in french


def test_a_refused_edit_says_why_next_to_the_field_and_keeps_what_was_typed(web: Web) -> None:
    proposal_id = web.propose("refund-ok")
    ava = web.browser(AVA)
    before = count_events(web.cs)

    refused = _edit(
        ava,
        proposal_id,
        {"payment": "P9", "line_item": "L1", "discount": "D1", "destination": "account_credit"},
    )

    assert refused.status_code == 422
    main = _main(refused)
    assert "The new proposal could not be prepared, and nothing was changed." in main
    field = re.search(r'<div class="field invalid">.*?</div>', main)
    assert field, main
    assert 'for="field-payment"' in field.group(0)
    assert 'aria-invalid="true"' in field.group(0)
    error = re.search(r'<p class="field-error" id="field-payment-errors">([^<]+)</p>', main)
    assert error
    assert "P9" not in error.group(1)  # the people-worded sentence, never the input
    assert _input(main, "payment") == "P9"
    assert _input(main, "destination") == "account_credit"  # nothing typed is lost
    assert count_events(web.cs) == before
    assert web.proposal(proposal_id).status == "pending"

    # Markup typed into a field comes back as text.
    evil = _edit(
        ava,
        proposal_id,
        {"payment": '"><script>x</script>', "line_item": "L1", "discount": "D1"},
    )
    assert evil.status_code == 422
    assert "<script>x" not in evil.text
    assert "&#34;&gt;&lt;script&gt;x&lt;/script&gt;" in evil.text
    # A choice the form does not offer is refused like any other problem.
    odd = _edit(
        ava,
        proposal_id,
        {"payment": "P1", "line_item": "L1", "discount": "D1", "destination": "cash"},
    )
    assert odd.status_code == 422
    assert "an option this operation does not offer" in odd.text
    french = ava.post(
        f"/proposals/{proposal_id}/edit",
        {"payment": "P9", "line_item": "L1", "discount": "D1", "csrf_token": ava.csrf("/")},
        **{"Accept-Language": "fr"},
    )
    assert "La nouvelle proposition n&#39;a pas pu être préparée" in french.text
    assert count_events(web.cs) == before


def test_a_broadcast_draft_edits_its_leagues_one_per_line_and_its_body(web: Web) -> None:
    proposal_id = web.draft("Ice schedule", "Hello curlers,\n\nSee you Monday.")
    ava = web.browser(AVA)
    page = ava.get(f"/proposals/{proposal_id}/edit").text
    assert "<legend>Audience</legend>" in page
    assert _input(page, "filters.leagues") == "Monday Night Open"
    assert _input(page, "body") == "Hello curlers,\n\nSee you Monday."

    sent = _edit(
        ava,
        proposal_id,
        {
            "filters.leagues": "Monday Night Open\r\nSunday Mixed Doubles\r\n",
            "subject": "Ice schedule for December",
            "body": "Hello curlers,\r\n\r\nSee you Monday.",
        },
    )
    assert sent.status_code == 303, _main(sent)
    revised = sent.headers["location"].rsplit("/", 1)[-1]
    request = web.cs.access.record(revised, AVA)["request"]
    assert request == {
        "filters": {"leagues": ["Monday Night Open", "Sunday Mixed Doubles"]},
        "subject": "Ice schedule for December",
        "body": "Hello curlers,\n\nSee you Monday.",
    }
    changed = _review(ava, revised)
    assert "Ice schedule for December</ins>" in changed


def test_what_ran_cannot_be_edited(web: Web) -> None:
    proposal_id = web.propose("account-credit")
    web.cs.proposals.approve(proposal_id, AVA)
    ava = web.browser(AVA)
    assert f"/proposals/{proposal_id}/edit" not in _review(ava, proposal_id)

    form = ava.get(f"/proposals/{proposal_id}/edit")
    assert form.status_code == 303
    assert form.headers["location"] == f"/proposals/{proposal_id}"
    assert "This proposal can no longer be edited" in _review(ava, proposal_id)
    posted = _edit_from_review(ava, proposal_id, {"destination": "account_credit"})
    assert posted.status_code == 303
    assert posted.headers["location"] == f"/proposals/{proposal_id}"


def _edit_from_review(browser: Browser, proposal_id: str, data: dict[str, str]) -> Any:
    return browser.form(f"/proposals/{proposal_id}/edit", data, f"/proposals/{proposal_id}")


def test_a_declined_proposal_can_be_edited_into_a_new_one(web: Web) -> None:
    proposal_id = web.propose("refund-ok")
    web.cs.proposals.decline(proposal_id, AVA, "wrong destination")
    ava = web.browser(AVA)
    assert f'href="/proposals/{proposal_id}/edit"' in _review(ava, proposal_id)
    sent = _edit(
        ava,
        proposal_id,
        {"payment": "P1", "line_item": "L1", "discount": "D1", "destination": "account_credit"},
    )
    assert sent.status_code == 303
    assert web.proposal(proposal_id).status == "declined"  # it stays what it was


def test_another_clubs_proposal_edit_is_the_404_page_and_csrf_is_required(web: Web) -> None:
    maple = web.propose("maple-refund", actor=MIA, org="maple")
    granite = web.propose("refund-ok")
    ava = web.browser(AVA)
    before = count_events(web.cs)
    token = ava.csrf("/")

    unknown = ava.get(f"/proposals/{UNKNOWN}/edit")
    assert unknown.status_code == 404
    for path in (f"/proposals/{maple}/edit", "/proposals/not-an-id/edit"):
        page = ava.get(path)
        assert (page.status_code, page.text) == (404, unknown.text)
        posted = ava.post(path, {"csrf_token": token, "destination": "account_credit"})
        assert (posted.status_code, posted.text) == (404, unknown.text)
    assert "Not found" in unknown.text

    # Without the page's CSRF token: refused, nothing made.
    forged = ava.post(f"/proposals/{granite}/edit", {"destination": "account_credit"})
    assert forged.status_code == 403
    assert "This form expired" in forged.text
    # A member whose role does not decide refunds may not edit one either.
    ben = web.browser(BEN)
    assert ben.get(f"/proposals/{granite}/edit").status_code == 403
    assert ben.form(
        f"/proposals/{granite}/edit", {"destination": "account_credit"}
    ).status_code == (403)
    assert count_events(web.cs) == before
    assert web.proposal(granite).status == "pending"


# -- the form, from any contract ------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_every_request_field_and_choice_has_the_contracts_words_in_both_languages(
    kind: str,
) -> None:
    contract = REGISTRY[kind]
    fields = specs(contract.Request)
    everything = list(fields) + [c for s in fields for c in s.children]
    assert sorted(contract.request_fields) == sorted(s.path for s in everything)
    for spec in everything:
        words = contract.request_fields[spec.path]
        assert sorted(words.options) == sorted(str(o) for o in spec.options), spec.path
        texts = [words.label, *([words.hint] if words.hint else []), *words.options.values()]
        for text in texts:
            assert text.en.strip(), spec.path
            assert text.fr.strip(), spec.path


def test_a_proposal_kept_without_its_request_starts_from_a_blank_form() -> None:
    fields = specs(REGISTRY[REFUND].Request)
    assert shown(fields, None) == {
        "payment": "",
        "line_item": "",
        "discount": "",
        "destination": "",
    }
    # A blank required field is left out: the contract says what is missing.
    assert request_of(fields, shown(fields, None)) == ({}, {})


# -- the inbox ------------------------------------------------------------------------------------


def test_an_inbox_card_counts_its_approvals(web: Web) -> None:
    """From a card with the projection's governance columns (read with ``.get``: a card
    without them reads as one approval needed)."""
    proposal_id = web.propose("refund-two-approvers")
    web.cs.proposals.approve(proposal_id, AVA)
    record = web.cs.access.record(proposal_id, AVA)
    site = web.app.state.pages
    now = web.cs.clock.now()

    def card(language: str, fields: dict[str, Any]) -> str:
        t = translator(language)
        view = proposal_view(fields, t, language, now)
        return str(site.templates.get_template("_inbox_card.html").render(p=view, t=t))

    assert "1 of 2 approvals" in card("en", record)
    assert "Approbations\N{NO-BREAK SPACE}: 1 sur 2" in card("fr", record)
    old = {k: v for k, v in record.items() if k not in ("approvals", "approvals_required")}
    assert "approvals-line" not in card("en", old)


@needs_governance_cards
def test_the_inbox_counts_approvals_and_leaves_out_replaced_proposals(web: Web) -> None:
    two = web.propose("refund-two-approvers")
    web.cs.proposals.approve(two, AVA)
    older = web.propose("refund-ok")
    newer = web.propose("refund-ok")
    inbox = _main(web.browser(NOAH).get("/"))
    awaiting = re.search(r'<section class="inbox-list" id="awaiting".*?</section>', inbox)
    assert awaiting
    listed = re.findall(r'href="/proposals/([0-9a-f-]{36})"', awaiting.group(0))
    assert sorted(listed) == sorted([two, newer])
    assert older not in listed
    assert "1 of 2 approvals" in awaiting.group(0)


def _listed(inbox: str, list_id: str) -> list[str]:
    found = re.search(rf'<section class="inbox-list" id="{list_id}".*?</section>', inbox, re.S)
    return re.findall(r'href="/proposals/([0-9a-f-]{36})"', found.group(0)) if found else []


def test_what_you_approved_waits_on_others_and_is_not_asked_of_you_again(web: Web) -> None:
    two = web.propose("refund-two-approvers")
    other = web.propose("refund-ok")
    ava = web.browser(AVA)
    _approve(ava, two)  # 1 of 2

    page = ava.get("/")
    inbox = _main(page)
    assert _listed(inbox, "awaiting") == [other]
    assert _listed(inbox, "waiting") == [two]
    assert 'Awaiting your decision <span class="count-badge">1</span>' in inbox
    assert 'Waiting on others <span class="count-badge">1</span>' in inbox
    waiting = re.search(r'id="waiting".*?</section>', inbox, re.S)
    assert waiting
    assert "You approved it" in waiting.group(0)
    assert "1 of 2 approvals" in waiting.group(0)
    assert "Refund $128.00" not in waiting.group(0)  # no approve label: nothing to do
    assert "1 awaiting your decision" in page.text  # the navigation's count agrees

    # Noah has not approved it: it awaits his decision, and nothing waits on others for him.
    his = _main(web.browser(NOAH).get("/"))
    assert sorted(_listed(his, "awaiting")) == sorted([two, other])
    assert 'id="waiting"' not in his

    # Once nothing else awaits her, her list says where the rest went; in French too.
    web.cs.proposals.decline(other, NOAH)
    french = _main(ava.get("/", **{"Accept-Language": "fr"}))
    assert _listed(french, "awaiting") == []
    assert "Rien d&#39;autre n&#39;attend votre décision" in french
    assert "En attente des autres" in french
    assert "Vous l&#39;avez approuvée" in french
