"""What a manager's day in the browser found, through the ASGI app, on every backend.

The confirmation of a card refund is a page of its own (a form answered by a redirect), so
the browser's back button after approving never lands on a form's answer; a session that
ended while a form was open signs in again back to that page; a count of one reads in the
singular; a new conversation's message box has the keyboard's focus; a French manager who asks
the stand-in model for account credit gets it, the email assistant's French example drafts in
French, and the stand-in answers French in French; an edit posted twice shows the proposal it
made; an expired proposal's page says what to do next, and when it expired; a draft's approve
button says what approving does; a decline that came too late says it did not happen; the
approval policy on a review page says when a passkey is required; a proposal followed up in
another conversation leaves Needs attention.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.web.i18n import translator

from tests.conftest import AVA, MIA, REFUND, TO_CARD
from tests.test_web_pages import CSRF, Browser, Web, _cards, _main, web_for

NOAH = "noah@granite.example"  # the seeded second manager of Granite


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def test_the_confirmation_is_a_page_of_its_own_and_back_after_approving_shows_the_outcome(
    web: Web,
) -> None:
    proposal_id = web.propose()
    path = f"/proposals/{proposal_id}"
    ava = web.browser(AVA)

    # The approve button's form is answered by a redirect to the confirmation page (a GET the
    # browser's history can load again), not by the page itself.
    asked = ava.form(f"{path}/approve", {}, path)
    assert asked.status_code == 303
    assert asked.headers["location"].startswith(f"{path}/approve?asked=")
    confirm = ava.get(asked.headers["location"])
    assert confirm.status_code == 200
    assert "Confirm once more" in _main(confirm)
    assert 'name="confirm" value="yes"' in confirm.text
    assert web.proposal(proposal_id).status == "pending"  # showing it approves nothing
    assert web.cs.sandbox.refunds() == []

    token = CSRF.search(confirm.text).group(1)
    done = ava.post(f"{path}/approve", {"confirm": "yes", "csrf_token": token})
    assert done.status_code == 303
    assert web.proposal(proposal_id).status == "succeeded"

    # Back to the confirmation page after approving: the outcome, and nothing runs again.
    back = ava.get(asked.headers["location"])
    assert back.status_code == 303
    assert back.headers["location"] == path
    assert len(web.cs.sandbox.refunds()) == 1


def test_a_link_to_the_confirmation_page_leads_to_the_review_page(web: Web) -> None:
    """Only the browser whose approve form asked for it sees the confirmation page: a link
    to it (one a model wrote into a conversation, say) leads to the review page, which shows
    who asked for what, and how, before anyone approves."""
    proposal_id = web.propose()
    path = f"/proposals/{proposal_id}"
    ava = web.browser(AVA)
    for link in (f"{path}/approve", f"{path}/approve?asked=0123456789abcdef0123456789abcdef"):
        shown = ava.get(link)
        assert shown.status_code == 303, link
        assert shown.headers["location"] == path
    # Another browser's (another session's) redirect does not open it either.
    asked = web.browser(AVA).form(f"{path}/approve", {}, path).headers["location"]
    assert ava.get(asked).headers["location"] == path
    assert web.proposal(proposal_id).status == "pending"
    assert web.cs.sandbox.refunds() == []


def test_the_confirmation_page_of_what_needs_none_is_the_review_page(web: Web) -> None:
    credit = web.propose("account-credit")
    ava = web.browser(AVA)
    shown = ava.get(f"/proposals/{credit}/approve")
    assert shown.status_code == 303
    assert shown.headers["location"] == f"/proposals/{credit}"
    assert web.proposal(credit).status == "pending"  # a GET never approves


def _ended(web: Web) -> Browser:
    """Ava's browser, whose session then ends (she signs out everywhere from another one)."""
    ava = web.browser(AVA)
    elsewhere = web.browser(AVA)
    assert elsewhere.form("/sign-out/everywhere", {}).status_code == 303
    return ava


def test_a_form_sent_after_the_session_ended_signs_in_back_to_its_page(web: Web) -> None:
    proposal_id = web.propose()
    order = web.seeded["orders"]["refund-ok"]
    interaction = "5b1f2c7d-8d1e-4c57-9a3e-0f6b3a529e10"
    chat = f"/chat/orders/{order}"
    forms = [
        (f"/proposals/{proposal_id}/approve", {}, f"/proposals/{proposal_id}"),
        (f"/proposals/{proposal_id}/decline", {"note": "no"}, f"/proposals/{proposal_id}"),
        (chat, {"message": "Olivia missed her early-bird", "interaction_id": interaction},
         f"{chat}?{urlencode({'interaction': interaction})}"),
        (chat, {"message": "hi", "interaction_id": ""}, chat),
        (chat, {"message": "hi", "interaction_id": "not-an-id/../x"}, chat),
        ("/webhooks/remove", {"endpoint": "x"}, "/webhooks"),
        ("/members/permissions", {"email": AVA}, "/members"),
        ("/account/passkeys/rename", {"name": "x"}, "/account/passkeys"),
    ]  # fmt: skip
    for path, fields, back in forms:
        ava = _ended(web)
        token = ava.csrf("/sign-in")  # what the page she had open carried no longer counts
        answer = ava.post(path, {**fields, "csrf_token": token})
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/sign-in?{urlencode({'next': back})}", path
        signed = ava.sign_in(AVA, web.passwords[AVA], back)
        assert signed.headers["location"] == back, path
    assert web.proposal(proposal_id).status == "pending"  # nothing was decided on the way


def test_a_count_of_one_reads_in_the_singular(web: Web) -> None:
    english, french = translator("en"), translator("fr")
    assert english("club.members", count=1) == "1 member"
    assert english("club.members", count=2) == "2 members"
    assert french("club.members", count=1) == "1 membre"
    assert french("inbox.recent_count", total=1) == "1 décidée"
    assert french("inbox.recent_count", total=3) == "3 décidées"

    # Maple's only league has one member: Mia's roster assistant says so in French.
    mia = web.browser(MIA)
    roster = web.seeded["rosters"]["maple"]
    page = _main(mia.get(f"/chat/roster/{roster}", **{"Accept-Language": "fr"}))
    assert "1 membre<" in page
    assert "1 membres" not in page


def test_a_new_conversation_has_the_keyboards_focus_in_its_message_box(web: Web) -> None:
    ava = web.browser(AVA)
    order = web.seeded["orders"]["refund-ok"]
    empty = _main(ava.get(f"/chat/orders/{order}"))
    assert re.search(r'<textarea id="message"[^>]* autofocus', empty)
    sent = ava.form(f"/chat/orders/{order}", {"message": "Olivia missed her early-bird"})
    assert sent.status_code == 303
    # A conversation under way opens at its latest answer, not scrolled to the box.
    going = _main(ava.get(sent.headers["location"]))
    assert not re.search(r'<textarea id="message"[^>]* autofocus', going)


def test_a_french_manager_who_asks_for_account_credit_gets_an_account_credit_proposal(
    web: Web,
) -> None:
    """The demo's stand-in model reads "crédit au compte" as it reads "account credit": Mia,
    who writes in French, asked for credit and was shown a card refund to Visa."""
    mia = web.browser(MIA)
    order = web.seeded["orders"]["maple-refund"]
    chat = f"/chat/orders/{order}"
    words = "Jack a manqué son rabais hâtif, remboursez-le en crédit au compte."
    sent = mia.form(chat, {"message": words}, chat)
    assert sent.status_code == 303
    page = _main(mia.get(sent.headers["location"], **{"Accept-Language": "fr"}))
    proposal_id = re.search(r'href="/proposals/([0-9a-f-]{36})"', page)[1]
    review = _main(mia.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}))
    assert re.search(r"Créditer 48,00\s\$\sCA au compte de Jack Wilson</button>", review)
    assert "Rembourser 48,00" not in review  # to the card


def test_an_edit_sent_twice_shows_the_new_proposal_it_made_and_proposes_nothing_twice(
    web: Web,
) -> None:
    """A double click on "Prepare the new proposal", or the back button and the form sent
    again, posts one edit twice. The second post found the proposal replaced (by the first)
    and answered with the old proposal's page: "This proposal can no longer be edited: it was
    approved, or a newer one replaced it", as if the edit had failed. It answers as the
    first did, with the new proposal; nothing is proposed twice."""
    proposal_id = web.propose()
    ava = web.browser(AVA)
    edit = f"/proposals/{proposal_id}/edit"
    fields = {**TO_CARD, "destination": "account_credit", "csrf_token": ava.csrf(edit)}
    first = ava.post(edit, fields)
    assert first.status_code == 303
    newer = first.headers["location"]
    assert newer != f"/proposals/{proposal_id}"

    again = ava.post(edit, fields)
    assert again.status_code == 303
    assert again.headers["location"] == newer
    page = _main(ava.get(newer))
    assert "Here is the new proposal, prepared again from your changes." in page
    assert "can no longer be edited" not in page
    assert web.proposal(newer.rsplit("/", 1)[1]).status == "pending"  # not replaced again
    assert web.proposal(proposal_id).superseded_by == UUID(newer.rsplit("/", 1)[1])

    # Another edit of the replaced proposal (other words, or another manager's) is still
    # refused, and says so.
    other = ava.post(edit, {**fields, "destination": "original_payment_method"})
    assert other.headers["location"] == f"/proposals/{proposal_id}"
    assert "can no longer be edited" in _main(ava.get(other.headers["location"]))
    noah = web.browser(NOAH)
    noah_edit = noah.post(edit, {**fields, "csrf_token": noah.csrf("/")})
    assert noah_edit.headers["location"] == f"/proposals/{proposal_id}"


def test_the_email_assistants_french_example_drafts_in_french_about_what_it_names(
    web: Web,
) -> None:
    """The email assistant's box suggests, in French, "Écrire à la ligue Monday Night Open sur
    l'horaire de la glace". Typed as suggested, the demo's stand-in model drafted "Club news"
    with an English body ("Hello curlers, A quick note about club news."); in English its
    example drafts about what it names. Both now do, each in its own language."""
    ava = web.browser(AVA)
    form = f"/chat/email_broadcasts/{web.seeded['broadcast_forms']['granite']}"
    for language, subject, body in (
        ("fr", "L'horaire de la glace", "Un mot sur l'horaire de la glace."),
        ("en", "The ice schedule", "A quick note about the ice schedule."),
    ):
        empty = ava.get(form, **{"Accept-Language": language})
        example = re.search(r'placeholder="[^:"]+:\s([^"]+)"', empty.text)[1]
        sent = ava.form(form, {"message": html.unescape(example)}, form)
        card = html.unescape(_main(ava.get(sent.headers["location"])))
        assert subject in card, language
        assert body in card, language


def test_an_expired_proposals_page_says_what_to_do_next(web: Web, clock: Any) -> None:
    """An expired proposal's page said only "This proposal expired before anyone approved it.
    Nothing changed.", with no way on (the command line says to ask for a new proposal). It
    offers the next step a proposal that was not executed offers: the assistant, about the
    same order."""
    proposal_id = web.propose()
    clock.advance(days=2)
    ava = web.browser(AVA)
    chat = f"/chat/orders/{web.seeded['orders']['refund-ok']}"
    for language, words in (
        ("en", "Ask the assistant for a new proposal"),
        ("fr", "Demander une nouvelle proposition à l'assistant"),
    ):
        page = _main(ava.get(f"/proposals/{proposal_id}", **{"Accept-Language": language}))
        expired = re.search(r'<section[^>]* id="expired".*?</section>', page, re.S)
        assert expired, language
        assert f'<a class="button primary" href="{chat}">{words}</a>' in html.unescape(
            expired[0]
        ), language
    # When it expired, in the past tense ("Expires 2026-12-05 · expired 24 h ago" before).
    for language, label in (("en", "Expired"), ("fr", "Expirée")):
        page = _main(ava.get(f"/proposals/{proposal_id}", **{"Accept-Language": language}))
        assert f"<dt>{label}</dt>" in html.unescape(page), language
        assert not re.search(r"<dt>Expires?</dt>", page), language


def test_a_drafts_approve_button_and_inbox_line_say_what_approving_does(web: Web) -> None:
    """Every other operation's approve button, and its pending card's line in the inbox, says
    what approving does ("Move Walter Brooks to Junior Program"); a draft's read "Approve: Put
    a draft in the broadcast form", an instruction to the reader. It reads as an action too."""
    draft = web.cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation="email_broadcast.apply_draft",
        resource_id=web.seeded["broadcast_forms"]["granite"],
        request={"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Ice", "body": "Hi"},
    ).proposal_id
    ava = web.browser(AVA)
    for language, label in (
        ("en", "Put this draft in the broadcast form"),
        ("fr", "Placer ce brouillon dans le formulaire d'envoi"),
    ):
        review = html.unescape(
            _main(ava.get(f"/proposals/{draft}", **{"Accept-Language": language}))
        )
        assert re.search(rf'class="button approve wide"[^>]*>{re.escape(label)}</button>', review)
        inbox = html.unescape(_main(ava.get("/", **{"Accept-Language": language})))
        assert f'<span class="detail">{label}</span>' in inbox, language
        assert not re.search(r"Approve: |Approuver\s:", inbox), language


def test_a_decline_that_came_too_late_says_so_in_its_own_words(web: Web, clock: Any) -> None:
    """Ava opened the decline box while Noah approved: her decline answered "This proposal
    was already approved. This is its stored outcome; nothing was executed again.", words for
    an approval sent twice, which a manager who meant to stop it can read as "nothing ran".
    A decline sent twice answered "it can no longer be approved". Each now says that the
    decline did not happen, and why."""
    approved, declined, expiring = (web.propose(order) for order in
                                    ("refund-ok", "refund-stale", "refund-declined"))  # fmt: skip
    web.cs.proposals.approve(approved, NOAH)
    web.cs.proposals.decline(declined, NOAH, "duplicate")
    clock.advance(days=2)
    ava = web.browser(AVA)  # signed in after two days
    for proposal_id, notice in (
        (approved, "Not declined: it had already been approved. Here is its outcome."),
        (declined, "This proposal was already declined; nothing more was changed."),
        (expiring, "Not declined: this proposal had expired before anyone decided it."),
    ):
        path = f"/proposals/{proposal_id}"
        answer = ava.form(f"{path}/decline", {"note": "stop"}, path)
        assert answer.headers["location"] == path
        page = html.unescape(_main(ava.get(path)))
        assert notice in page, page[:300]
        assert "nothing was executed again" not in page
        assert "can no longer be approved" not in page
    french = ava.form(f"/proposals/{approved}/decline", {"note": "stop"}, f"/proposals/{approved}")
    page = html.unescape(_main(ava.get(french.headers["location"], **{"Accept-Language": "fr"})))
    assert "Non refusée : elle avait déjà été approuvée." in page.replace("\u00a0", " ")


def test_the_review_pages_approval_policy_says_when_a_passkey_is_required(web: Web) -> None:
    """A proposal frozen under a policy that requires passkeys: the command line's card says
    "each approval signed with a passkey", and the review page's "Approval policy" said only
    "one manager's approval is enough". It says so on the page too, in both languages."""
    web.cs.policies.set("granite", REFUND, 1, above_cents=None, require_passkey=True)
    signed = web.propose()
    web.cs.policies.set("granite", REFUND, 1, above_cents=None, require_passkey=False)
    plain = web.propose("refund-stale")
    ava = web.browser(AVA)
    for language, words in (
        ("en", "Each approval must be signed with the approver's passkey."),
        ("fr", "Chaque approbation doit être signée avec la clé d'accès de son auteur."),
    ):
        policy = re.search(
            r'<section class="policy".*?</section>',
            html.unescape(ava.get(f"/proposals/{signed}", **{"Accept-Language": language}).text),
            re.S,
        )
        assert policy, language
        assert f"<p>{words}</p>" in policy[0].replace("\u00a0", " "), language
        assert words not in html.unescape(ava.get(f"/proposals/{plain}").text)


def test_a_proposal_followed_up_in_another_conversation_leaves_needs_attention(web: Web) -> None:
    """Emma's card declined Ava's refund: "Needs attention" lists it, and its page offers
    "Ask the assistant for a new proposal". Noah follows that (a conversation of his own) and
    proposes account credit instead; the list kept the declined refund for every manager, for
    good, since only a newer proposal in Ava's own conversation let it go. A newer proposal
    for the same thing lets it go, whoever makes it, wherever."""
    declined = web.propose("refund-declined")
    web.cs.proposals.approve(declined, AVA)
    ava, noah = web.browser(AVA), web.browser(NOAH)
    assert _cards(ava.get("/"), "attention") == [declined]

    review = _main(noah.get(f"/proposals/{declined}"))
    chat = re.search(r'<p class="next-step"><a class="button primary" href="([^"]+)"', review)[1]
    sent = noah.form(chat, {"message": "Her card declined: refund her as account credit"}, chat)
    card = _main(noah.get(sent.headers["location"]))
    newer = re.search(r'href="/proposals/([0-9a-f-]{36})"', card)[1]
    assert newer != declined

    for manager in (ava, noah):
        inbox = manager.get("/")
        assert _cards(inbox, "attention") == []
        assert "Nothing needs attention." in inbox.text


def test_the_stand_in_model_answers_a_manager_who_writes_french_in_french(web: Web) -> None:
    """The demo's stand-in model proposed in French words but answered in English: Mia asked,
    in French, about an order on which nothing is owed any more ("Nothing is owed on this
    order: ..."), and to move a member without naming one the search found. It answers in
    the language the manager wrote in; in English as before."""
    mia = web.browser(MIA)
    order = web.seeded["orders"]["maple-refund"]
    web.cs.proposals.approve(web.propose("maple-refund", actor=MIA, org="maple"), MIA)
    roster = f"/chat/roster/{web.seeded['rosters']['maple']}"
    for path, words, answer in (
        (f"/chat/orders/{order}", "Jack a-t-il encore une remise manquée ?",
         "Rien n'est dû sur cette commande : chaque remise admissible a été appliquée ou "
         "remboursée."),
        (roster, "Déplacez Zoé Inconnue vers la ligue Tuesday Draw",
         "Quel membre faut-il déplacer, et vers quelle ligue ?"),
        (f"/chat/orders/{order}", "Is anything still owed to Jack?",
         "Nothing is owed on this order: every eligible discount was applied or refunded."),
    ):  # fmt: skip
        sent = mia.form(path, {"message": words}, path)
        page = html.unescape(_main(mia.get(sent.headers["location"])))
        assert answer in page.replace("\u00a0", " "), words
