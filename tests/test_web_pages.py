"""The browser pages through the ASGI app, on every backend.

Sign-in, the session cookie's flags, CSRF on every state-changing form, one identical 404 for
unknown, malformed and other clubs' ids on every route, escaping of text that members and
models wrote, the security headers, the inbox, the conversation, approve / decline (twice),
the reconciliation status page, and French outcomes by Accept-Language or the switch.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import pytest
from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.club.roster import Roster
from countersign.domain.contracts import PERMISSIONS
from countersign.domain.messages import outcome_message
from countersign.domain.proposal import Proposal
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.adapters.scripted_model import Say, Script, ScriptedEndpoint
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.passwords import seed_passwords
from countersign.infrastructure.demo.seed import _order
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.entrypoints.web.i18n import TEXTS, negotiate, section_texts
from countersign.infrastructure.identity.passwords import set_password
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient
from markupsafe import escape

from tests.conftest import AVA, BEN, DRAFT, MIA, REFUND, TO_CARD, count_events

UNKNOWN = "0f6b3a52-8d1e-4c57-9a3e-5b1f2c7d9e10"
EVIL_SUBJECT = "<script>alert(1)</script>"
EVIL_BODY = 'Hi <img src=x onerror="alert(2)">\n</textarea><b>bold</b> & "quotes"'
EVIL_NAME = '<script>alert("member")</script>'
EVIL_LEAGUE = "<img src=x onerror=alert(3)>"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class Browser:
    """A TestClient with a cookie jar, like one browser."""

    client: TestClient

    def get(self, path: str, **headers: str) -> Any:
        return self.client.get(path, headers=headers)

    def post(self, path: str, data: dict[str, str] | None = None, **headers: str) -> Any:
        return self.client.post(path, data=data or {}, headers=headers)

    def csrf(self, path: str = "/sign-in") -> str:
        page = self.get(path)
        found = CSRF.search(page.text)
        assert found, f"no CSRF token on {path} ({page.status_code})"
        return found.group(1)

    def form(self, path: str, data: dict[str, str], from_page: str = "/") -> Any:
        """Submit a form the way a browser would: with the page's CSRF token."""
        return self.post(path, {**data, "csrf_token": self.csrf(from_page)})

    def sign_in(self, email: str, password: str, next_path: str = "") -> Any:
        token = self.csrf("/sign-in")
        data = {"email": email, "password": password, "csrf_token": token}
        if next_path:
            data["next"] = next_path
        return self.post("/sign-in", data)


@dataclass
class Web:
    cs: Countersign
    seeded: dict[str, Any]
    passwords: dict[str, str]
    app: Any

    def browser(self, email: str | None = None) -> Browser:
        browser = Browser(TestClient(self.app, follow_redirects=False))
        if email is not None:
            signed = browser.sign_in(email, self.passwords[email])
            assert signed.status_code == 303, signed.text
        return browser

    def propose(self, order: str = "refund-ok", actor: str = AVA, org: str = "granite") -> str:
        destination = "account_credit" if order == "account-credit" else TO_CARD["destination"]
        created = self.cs.proposals.propose(
            organization=org,
            actor=actor,
            operation=REFUND,
            resource_id=self.seeded["orders"][order],
            request={**TO_CARD, "destination": destination},
        )
        return created.proposal_id

    def draft(
        self, subject: str, body: str, leagues: list[str] | None = None, actor: str = AVA
    ) -> str:
        created = self.cs.proposals.propose(
            organization="granite",
            actor=actor,
            operation=DRAFT,
            resource_id=self.seeded["broadcast_forms"]["granite"],
            request={
                "filters": {"leagues": leagues or ["Monday Night Open"]},
                "subject": subject,
                "body": body,
            },
        )
        return created.proposal_id

    def proposal(self, proposal_id: str) -> Proposal:
        return self.cs.store.get(UUID(proposal_id), Proposal)


def web_for(cs: Countersign, seeded: dict[str, Any]) -> Web:
    """The JSON API and the pages over ``cs``, with the seeded people's passwords set."""
    passwords = seed_passwords(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    return Web(cs=cs, seeded=seeded, passwords=passwords, app=app)


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _main(page: Any) -> str:
    found = re.search(r"<main.*</main>", page.text, re.S)
    assert found, page.text[:500]
    return re.sub(r"\s+", " ", found.group(0))


def _assert_inert(body: str) -> None:
    """No markup from data: the pages emit no img at all, no handlers, and no script but the
    chat page's own static one."""
    lowered = re.sub(r'<script src="/assets/chat\.js\?v=[0-9a-f]{12}" defer></script>', "", body)
    lowered = lowered.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "<b>" not in lowered
    assert "onerror=" not in lowered.replace("onerror=&#34;", "").replace("onerror=alert", "")


# -- signing in ---------------------------------------------------------------------------------


def test_signing_in_sets_a_signed_http_only_same_site_cookie(web):
    browser = web.browser()
    anonymous = browser.get("/")
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == "/sign-in"

    signed = browser.sign_in(AVA, web.passwords[AVA])
    assert signed.status_code == 303
    assert signed.headers["location"] == "/"
    cookies = {c.split("=", 1)[0]: c for c in signed.headers.get_list("set-cookie")}
    assert set(cookies) == {"countersign_session", "countersign_device"}
    for cookie in cookies.values():
        flags = [flag.strip().lower() for flag in cookie.split(";")[1:]]
        assert "httponly" in flags
        assert "samesite=lax" in flags
        assert "path=/" in flags
        assert "secure" not in flags  # plain http://127.0.0.1 in these tests
    assert "max-age=15552000" in cookies["countersign_device"].lower()  # 180 days
    cookie = cookies["countersign_session"]
    value = cookie.split(";")[0].split("=", 1)[1]
    # an opaque random id and its signature, nothing else (tests/attacks/test_sessions.py)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}", value)

    inbox = browser.get("/")
    assert inbox.status_code == 200
    assert "Ava Lindqvist" in inbox.text
    assert "Granite Curling Club" in inbox.text

    # A tampered cookie is no session at all.
    browser.client.cookies.clear()
    browser.client.cookies.set("countersign_session", value[:-3] + "AAA")
    assert browser.get("/").status_code == 303


def test_secure_cookies_use_the_host_prefix_and_hsts(cs, seeded):
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=True)
    client = TestClient(app, base_url="https://testserver", follow_redirects=False)
    page = client.get("/sign-in")
    cookie = page.headers["set-cookie"]
    assert cookie.startswith("__Host-countersign=")
    assert "Secure" in cookie
    assert "HttpOnly" in cookie
    assert page.headers["strict-transport-security"].startswith("max-age=")


def test_a_wrong_password_or_an_unknown_email_is_refused_alike(web):
    browser = web.browser()
    wrong = browser.sign_in(AVA, "not-the-password")
    unknown = browser.sign_in("nobody@granite.example", web.passwords[AVA])
    for page in (wrong, unknown):
        assert page.status_code == 200
        assert "That email and password do not match." in page.text
        assert "set-cookie" not in page.headers or "email" not in page.headers["set-cookie"]
    assert browser.get("/").status_code == 303  # still signed out
    assert 'value="ava@granite.example"' in wrong.text  # the email is kept, escaped
    assert 'type="password"' in wrong.text
    assert "not-the-password" not in wrong.text


def test_sign_in_goes_back_to_a_local_page_only(web):
    proposal_id = web.propose()
    browser = web.browser()
    asked = browser.get(f"/proposals/{proposal_id}")
    assert asked.status_code == 303
    assert asked.headers["location"] == "/sign-in?" + urlencode(
        {"next": f"/proposals/{proposal_id}"}
    )
    back = browser.sign_in(AVA, web.passwords[AVA], next_path=f"/proposals/{proposal_id}")
    assert back.headers["location"] == f"/proposals/{proposal_id}"

    for hostile in ("//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:x"):
        other = web.browser()
        answer = other.sign_in(AVA, web.passwords[AVA], next_path=hostile)
        assert answer.headers["location"] == "/", hostile


def test_a_person_in_two_clubs_chooses_one(web):
    cs = web.cs
    maple = cs.store.get(Organization.create_id("maple"), Organization)
    maple.add_member(AVA, "Ava Lindqvist", "manager", [Permission.REFUND_ORDERS])
    cs.store.save(maple)
    browser = web.browser()
    choose = browser.sign_in(AVA, web.passwords[AVA])
    assert choose.status_code == 200
    assert "Choose a club" in choose.text
    assert "Granite Curling Club" in choose.text
    assert "Maple Leaf Curling Centre" in choose.text
    token = CSRF.search(choose.text).group(1)
    chosen = browser.post("/sign-in/club", {"club": "maple", "csrf_token": token})
    assert chosen.status_code == 303
    assert "Maple Leaf Curling Centre" in browser.get("/").text
    # Only clubs the person belongs to can be chosen.
    other = web.browser()
    other.sign_in(AVA, web.passwords[AVA])
    forged = other.post("/sign-in/club", {"club": "nowhere", "csrf_token": other.csrf()})
    assert forged.headers["location"] == "/sign-in"
    assert other.get("/").status_code == 303


def test_signing_out_and_leaving_the_club_end_the_session(web):
    browser = web.browser(AVA)
    out = browser.form("/sign-out", {})
    assert out.status_code == 303
    assert out.headers["location"] == "/sign-in"
    assert "You are signed out." in browser.get("/sign-in").text
    assert browser.get("/").status_code == 303

    again = web.browser(AVA)
    assert again.get("/").status_code == 200
    granite = web.cs.store.get(Organization.create_id("granite"), Organization)
    granite.remove_member(AVA)
    web.cs.store.save(granite)
    assert again.get("/").status_code == 303


# -- CSRF -------------------------------------------------------------------------------------


def test_every_state_changing_form_needs_the_session_csrf_token(web):
    proposal_id = web.propose()
    order = web.seeded["orders"]["refund-ok"]
    browser = web.browser(AVA)
    other = web.browser(BEN)  # a real token, but of another session
    foreign_token = other.csrf("/")
    forms = {
        "/sign-out": {},
        "/language": {"lang": "fr", "next": "/"},
        f"/chat/orders/{order}": {"message": "Olivia missed her early-bird discount"},
        f"/proposals/{proposal_id}/approve": {},
        f"/proposals/{proposal_id}/decline": {"note": "no"},
    }
    before = count_events(web.cs)
    for path, data in forms.items():
        for token in (None, "", "forged-token", foreign_token):
            sent = dict(data)
            if token is not None:
                sent["csrf_token"] = token
            answer = browser.post(path, sent)
            assert answer.status_code == 403, (path, token)
            assert "This form expired" in answer.text
    # The sign-in form needs it too (login CSRF).
    stranger = web.browser()
    refused = stranger.post("/sign-in", {"email": AVA, "password": web.passwords[AVA]})
    assert refused.status_code == 403

    assert count_events(web.cs) == before  # nothing was said, approved or declined
    assert web.proposal(proposal_id).status == "pending"
    page = browser.get("/")
    assert page.status_code == 200  # still signed in
    assert '<html lang="en">' in page.text  # language unchanged
    # With the token, the same forms work.
    assert browser.form("/language", {"lang": "fr", "next": "/"}).status_code == 303
    assert '<html lang="fr">' in browser.get("/").text


# -- tenant isolation ---------------------------------------------------------------------------


def test_other_clubs_ids_answer_exactly_like_unknown_ones_on_every_route(web):
    cs, seeded = web.cs, web.seeded
    maple_order = seeded["orders"]["maple-refund"]
    maple_form = seeded["broadcast_forms"]["maple"]
    maple_turn = cs.assistant.turn(
        organization="maple",
        actor=MIA,
        section="orders",
        resource_id=maple_order,
        message="Jack missed his early-bird discount",
    )
    # After the turn: a newer proposal for the same refund supersedes the turn's own.
    maple_proposal = web.propose("maple-refund", actor=MIA, org="maple")
    granite_order = seeded["orders"]["refund-ok"]
    browser = web.browser(AVA)
    token = browser.csrf("/")
    before = count_events(cs)

    def answers(method: str, path: str, data: dict[str, str] | None = None) -> tuple[int, str]:
        if method == "GET":
            page = browser.get(path)
        else:
            page = browser.post(path, {**(data or {}), "csrf_token": token})
        return page.status_code, page.text

    cases = [
        ("GET", "/proposals/{}", [maple_proposal, UNKNOWN, "not-a-uuid", granite_order]),
        ("GET", "/proposals/{}/status", [maple_proposal, UNKNOWN, "not-a-uuid"]),
        ("GET", "/proposals/{}/history", [maple_proposal, UNKNOWN, "not-a-uuid", granite_order]),
        ("GET", "/proposals/{}/history?as_of=1", [maple_proposal, UNKNOWN, "not-a-uuid"]),
        ("POST", "/proposals/{}/approve", [maple_proposal, UNKNOWN, "not-a-uuid"]),
        ("POST", "/proposals/{}/decline", [maple_proposal, UNKNOWN, "not-a-uuid"]),
        ("GET", "/chat/orders/{}", [maple_order, UNKNOWN, "not-a-uuid", maple_form]),
        ("POST", "/chat/orders/{}", [maple_order, UNKNOWN, "not-a-uuid"]),
        ("GET", "/chat/email_broadcasts/{}", [maple_form, UNKNOWN, granite_order]),
        ("POST", "/chat/email_broadcasts/{}", [maple_form, UNKNOWN]),
        ("GET", "/chat/nowhere/{}", [granite_order]),
        (
            "GET",
            f"/chat/orders/{granite_order}?interaction={{}}",
            [maple_turn.interaction_id, UNKNOWN, "not-a-uuid"],
        ),
    ]
    reference: tuple[int, str] | None = None
    for method, template, ids in cases:
        for some_id in ids:
            data = {"message": "hello", "note": "no"}
            if "interaction" in template:
                data = {}
            answer = answers(method, template.format(some_id), data)
            reference = reference or answer
            assert answer == reference, (method, template, some_id)
    assert reference is not None
    assert reference[0] == 404
    assert "Not found" in reference[1]
    # A conversation of another club's manager in a message form is the same 404.
    smuggled = answers(
        "POST",
        f"/chat/orders/{granite_order}",
        {"message": "hello", "interaction_id": maple_turn.interaction_id},
    )
    assert smuggled == reference
    assert count_events(cs) == before  # nothing written anywhere
    assert web.proposal(maple_proposal).status == "pending"


def test_a_member_without_the_permission_gets_a_403_for_their_own_club(web):
    proposal_id = web.propose()
    ben = web.browser(BEN)
    assert ben.get(f"/proposals/{proposal_id}").status_code == 403
    assert ben.get(f"/chat/orders/{web.seeded['orders']['refund-ok']}").status_code == 403
    inbox = ben.get("/")
    assert "Your role does not include approving any kind of proposal." in inbox.text
    assert proposal_id not in inbox.text
    answer = ben.form(f"/proposals/{proposal_id}/approve", {})
    assert answer.status_code == 303
    assert web.proposal(proposal_id).status == "pending"


# -- escaping -----------------------------------------------------------------------------------


def test_text_from_members_and_models_is_shown_as_text(web):
    cs = web.cs
    granite_id = Organization.create_id("granite")
    granite = cs.store.get(granite_id, Organization)
    granite.add_member(
        "eve@granite.example",
        EVIL_NAME,
        "manager",
        sorted(PERMISSIONS),  # a manager holds every permission, as the demo's do
    )
    cs.store.save(granite)
    set_password(cs, "eve@granite.example", "eve-demo-password")
    roster = cs.store.get(Roster.create_id(granite_id), Roster)
    roster.add_league(EVIL_LEAGUE)
    roster.join(EVIL_LEAGUE, '"><script>alert(5)</script>', "x@example.com")
    cs.store.save(roster)
    # Eve's own draft: her assistant's proposal below replaces it (another member's would stay,
    # held for people: tests/test_held_for_people.py).
    draft_id = web.draft(
        EVIL_SUBJECT, EVIL_BODY, ["Monday Night Open", EVIL_LEAGUE], actor="eve@granite.example"
    )

    browser = web.browser()
    assert browser.sign_in("eve@granite.example", "eve-demo-password").status_code == 303
    form_id = web.seeded["broadcast_forms"]["granite"]
    pages = {
        "inbox": browser.get("/"),
        "review": browser.get(f"/proposals/{draft_id}"),
        "chat": browser.get(f"/chat/email_broadcasts/{form_id}"),
    }
    for name, page in pages.items():
        assert page.status_code == 200, name
        _assert_inert(page.text)
    assert str(escape(EVIL_NAME)) in pages["inbox"].text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages["review"].text
    assert "&lt;/textarea&gt;&lt;b&gt;bold&lt;/b&gt; &amp; &#34;quotes&#34;" in pages["review"].text
    assert "&lt;img src=x onerror=alert(3)&gt;" in pages["chat"].text

    # Through the conversation: the stand-in model drafts an email whose subject is markup.
    sent = browser.form(
        f"/chat/email_broadcasts/{form_id}",
        {"message": "Email Monday Night Open about <script>alert(6)</script>"},
    )
    assert sent.status_code == 303
    chat = browser.get(sent.headers["location"].split("#")[0])
    _assert_inert(chat.text)
    assert "&lt;script&gt;alert(6)&lt;/script&gt;" in chat.text
    assert chat.text.count('class="proposal-card') == 1

    # And a model reply that is markup.
    cs.assistant.model = OpenAIChatModel(
        ScriptedEndpoint(
            Script(Say('<img src=x onerror="alert(7)"><script>x()</script>'))
        ).client(),
        "scripted",
    )
    token = CSRF.search(chat.text).group(1)
    interaction = re.search(r'name="interaction_id" value="([^"]+)"', chat.text).group(1)
    again = browser.post(
        f"/chat/email_broadcasts/{form_id}",
        {"message": "<b>hi</b>", "interaction_id": interaction, "csrf_token": token},
    )
    reply = browser.get(again.headers["location"].split("#")[0])
    _assert_inert(reply.text)
    assert "&lt;img src=x onerror=&#34;alert(7)&#34;&gt;&lt;script&gt;x()&lt;/script&gt;" in (
        reply.text
    )
    assert "&lt;b&gt;hi&lt;/b&gt;" in reply.text


# -- headers ------------------------------------------------------------------------------------


def test_html_responses_carry_the_security_headers(web):
    proposal_id = web.propose()
    anonymous = web.browser()
    browser = web.browser(AVA)
    pages = [
        anonymous.get("/sign-in"),
        browser.get("/"),
        browser.get(f"/proposals/{proposal_id}"),
        browser.get(f"/proposals/{proposal_id}/status"),
        browser.get(f"/chat/orders/{web.seeded['orders']['refund-ok']}"),
        browser.get(f"/proposals/{UNKNOWN}"),
        browser.form("/language", {"lang": "fr", "next": "/"}),
    ]
    for number, page in enumerate(pages):
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp
        # The chat page runs its own static script (the loading state); no other page any.
        assert ("script-src 'self'" if number == 4 else "script-src 'none'") in csp
        assert "frame-ancestors 'none'" in csp
        assert "style-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "same-origin"
        assert page.headers["cache-control"] == "no-store"
        if page.status_code != 303:
            assert page.headers["content-type"].startswith("text/html")
            assert page.text.count("<script") == (1 if number == 4 else 0)
            assert "style=" not in page.text
            stylesheet = re.search(r'<link rel="stylesheet" href="([^"]+)"', page.text).group(1)
            assert stylesheet.startswith("/assets/pages.css?v=")
    css = anonymous.get(stylesheet)
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert css.headers["x-content-type-options"] == "nosniff"
    assert anonymous.get("/assets/../pyproject.toml").status_code == 404
    assert anonymous.get("/assets/secrets.txt").status_code == 404


def test_the_api_document_does_not_list_the_pages(web):
    paths = TestClient(web.app).get("/openapi.json").json()["paths"]
    assert all(path.startswith("/api/v1/") for path in paths)


# -- the inbox ----------------------------------------------------------------------------------


def test_the_inbox_lists_the_clubs_pending_proposals_newest_first_in_pages(web, clock: FakeClock):
    # Twelve orders, one refund proposal each: proposals about different things all stay
    # pending (a second proposal for the same order would supersede the first).
    granite = web.cs.store.get(Organization.create_id("granite"), Organization)
    created = []
    for number in range(12):
        order = _order(
            web.cs, granite, f"inbox-{number}", f"Member {number}", f"m{number}@example.com",
            CARD_OK, "",
        )  # fmt: skip
        web.seeded["orders"][f"inbox-{number}"] = str(order.id)
        created.append(web.propose(f"inbox-{number}"))
        clock.advance(seconds=60)
    web.propose("maple-refund", actor=MIA, org="maple")
    finished = web.propose("account-credit")
    web.cs.proposals.decline(finished, AVA, "not now")

    browser = web.browser(AVA)
    first = browser.get("/")
    assert 'Awaiting your decision <span class="count-badge">12</span>' in _main(first)
    assert "12 awaiting your decision" in first.text  # the navigation's count
    assert "Nothing needs attention." in first.text  # a decline is the manager's own decision
    listed = re.findall(r'href="/proposals/([0-9a-f-]{36})"', first.text)
    assert listed == list(reversed(created))[:10]
    assert "Page 1 of 2" in first.text
    second = browser.get("/?page=2")
    assert re.findall(r'href="/proposals/([0-9a-f-]{36})"', second.text) == created[1::-1]
    orders_only = browser.get("/?section=orders&page=1")
    assert 'Awaiting your decision <span class="count-badge">12</span>' in _main(orders_only)
    email_only = browser.get("/?section=email_broadcasts")
    assert "Nothing awaits approval." in email_only.text
    assert "$48.00 CAD to Member 11" in first.text
    assert browser.get("/?page=abc").status_code == 200


def _cards(page: Any, list_id: str) -> list[str]:
    """The proposal ids listed in one of the inbox's lists, in order."""
    found = re.search(rf'<section class="inbox-list" id="{list_id}".*?</section>', page.text, re.S)
    assert found, list_id
    return re.findall(r'href="/proposals/([0-9a-f-]{36})"', found.group(0))


def test_what_needs_attention_stays_in_the_inbox_until_it_is_settled_or_followed_up(
    web, clock: FakeClock, monkeypatch
):
    cs = web.cs
    lost = web.propose("refund-lost-response")
    cs.proposals.approve(lost, AVA)
    clock.advance(seconds=60)
    provider_declined = web.propose("refund-declined")
    cs.proposals.approve(provider_declined, AVA)
    clock.advance(seconds=60)
    failed = web.propose("refund-stale")
    with monkeypatch.context() as patched:
        patched.setattr(cs.proposals.settlement, "providers", {})
        cs.proposals.approve(failed, AVA)
    clock.advance(seconds=60)
    declined = web.propose("account-credit")
    cs.proposals.decline(declined, AVA, "not now")
    pending = web.propose("refund-ok")

    browser = web.browser(AVA)
    inbox = browser.get("/")
    assert _cards(inbox, "awaiting") == [pending]
    assert _cards(inbox, "attention") == [failed, provider_declined, lost]  # newest first
    main = _main(inbox)
    assert 'Needs attention <span class="count-badge hot">3</span>' in main
    # Plain status words: the headline names the reason once, and no status is jargon.
    assert "Not executed: the card was declined</strong></span>" in main
    assert "The card provider declined the refund" not in main
    assert '<span class="pill tone-bad">Not executed</span>' in main
    assert "Revision required" not in main
    french = _main(browser.get("/", **{"Accept-Language": "fr"}))
    assert "Non exécutée : la carte a été refusée</strong>" in french
    assert '<span class="pill tone-bad">Non exécutée</span>' in french
    assert "Failed: no money moved</strong> · reference cs-" in main
    assert "<strong>Confirming with the card provider: do not refund again</strong>" in main
    # Each card says where the money goes and why.
    assert "Refund $48.00 CAD to Visa •••• 4242" in main
    assert "Missed discount: Early-bird 15% discount · Fall Monday Night League" in main
    # The navigation counts on every page.
    review = browser.get(f"/proposals/{pending}")
    assert "1 awaiting your decision" in review.text
    assert "3 needing attention" in review.text
    assert 'href="/#attention"' in review.text

    # Settled by the reconciler: it leaves the list.
    cs.sweepers.reconcile()
    assert lost not in _cards(browser.get("/"), "attention")

    # A newer proposal in the same conversation follows a revision up.
    def propose_in(conversation: str, order: str) -> str:
        return cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=web.seeded["orders"][order],
            request=TO_CARD,
            interaction_id=conversation,
        ).proposal_id

    cs.proposals.approve(pending, AVA)
    stale = propose_in("int-follow-up", "refund-stale")
    # A newer proposal for the same thing (the failed refund's order and discount), in
    # another conversation, follows it up too.
    assert _cards(browser.get("/"), "attention") == [provider_declined]
    cs.club.refund_manually("granite", web.seeded["orders"]["refund-stale"], AVA, "P1", 34500)
    cs.proposals.approve(stale, AVA)  # refunded by hand meanwhile: not executed
    assert stale in _cards(browser.get("/"), "attention")
    propose_in("int-follow-up", "refund-declined")  # stale's conversation; declined's thing
    assert _cards(browser.get("/"), "attention") == []

    # Every outcome, declined ones too, is a filter away.
    recent = browser.get("/?view=recent")
    listed = re.findall(r'href="/proposals/([0-9a-f-]{36})"', _main(recent))
    assert {declined, lost, failed, provider_declined, pending} <= set(listed)
    assert "Recent outcomes" in recent.text
    french = browser.get("/", **{"Accept-Language": "fr"})
    assert "À surveiller" in french.text
    assert "Remise manquée : Early-bird 15% discount" in french.text

    # The list rebuilds from the log alone.
    before = cs.read_models.needs_attention(str(Organization.create_id("granite")))
    for runner in cs.projection_runners(["attention"]):
        runner.rebuild()
    assert cs.read_models.needs_attention(str(Organization.create_id("granite"))) == before


def test_an_order_number_opens_its_assistant(web):
    browser = web.browser(AVA)
    opened = browser.get("/orders/open?ref=refund-ok")
    assert opened.headers["location"] == f"/chat/orders/{web.seeded['orders']['refund-ok']}"
    for missing in ("maple-refund", web.seeded["orders"]["maple-refund"], "no-such-order", ""):
        answer = browser.get("/orders/open?" + urlencode({"ref": missing}))
        # Back to the inbox, with what was typed still in the field.
        back = "/?" + urlencode({"ref": missing}) if missing else "/"
        assert answer.headers["location"] == back, missing
    # What to do next, too: the field is at the foot of the inbox, far below on a phone.
    assert (
        "There is no order with that number in this club. Check the order reference the "
        "registration system shows, or use the order's id, under Start a conversation below."
    ) in html.unescape(browser.get("/").text)
    french = html.unescape(browser.get("/", **{"Accept-Language": "fr"}).text)
    assert "Aucune commande" not in french  # said once, then gone
    browser.get("/orders/open?ref=no-such-order")
    french = html.unescape(browser.get("/", **{"Accept-Language": "fr"}).text)
    assert (
        "Aucune commande de ce club ne porte ce numéro. Vérifiez la référence de la commande "
        "dans le système d'inscription, ou utilisez son id, sous Démarrer une conversation "
        "plus bas."
    ) in french.replace("\N{NO-BREAK SPACE}", " ")


# -- conversation, approve, decline ------------------------------------------------------------


def test_a_conversation_keeps_its_interaction_and_shows_the_card(web):
    order = web.seeded["orders"]["refund-ok"]
    browser = web.browser(AVA)
    page = browser.get(f"/chat/orders/{order}")
    assert "Olivia Chen" in page.text  # the order the conversation is about
    assert 'name="interaction_id" value=""' in page.text
    empty = browser.form(f"/chat/orders/{order}", {"message": "   "})
    assert empty.status_code == 422
    assert "Write a message first." in empty.text
    too_long = browser.form(f"/chat/orders/{order}", {"message": "x" * 2001})
    assert too_long.status_code == 422

    sent = browser.form(f"/chat/orders/{order}", {"message": "Olivia missed her discount"})
    assert sent.status_code == 303
    interaction = re.search(r"interaction=([0-9a-f-]{36})", sent.headers["location"]).group(1)
    chat = browser.get(f"/chat/orders/{order}?interaction={interaction}")
    assert f'name="interaction_id" value="{interaction}"' in chat.text
    main = _main(chat)
    assert "Olivia missed her discount" in main
    assert "I prepared a proposal for your review." in main
    assert "$48.00 CAD to Olivia Chen" in main
    assert "Awaiting approval" in main

    token = CSRF.search(chat.text).group(1)
    more = browser.post(
        f"/chat/orders/{order}",
        {"message": "Thanks", "interaction_id": interaction, "csrf_token": token},
    )
    assert f"interaction={interaction}" in more.headers["location"]


def test_approve_shows_the_outcome_and_approving_again_the_same_stored_one(web):
    proposal_id = web.propose()
    browser = web.browser(AVA)
    review = browser.get(f"/proposals/{proposal_id}")
    assert f'action="/proposals/{proposal_id}/approve"' in review.text
    assert "$48.00 CAD" in review.text

    first = browser.form(
        f"/proposals/{proposal_id}/approve", {"confirm": "yes"}, f"/proposals/{proposal_id}"
    )
    assert first.status_code == 303
    assert first.headers["location"] == f"/proposals/{proposal_id}"
    shown = browser.get(f"/proposals/{proposal_id}")
    outcome = re.search(r'<section class="outcome-panel.*?</section>', shown.text, re.S).group(0)
    assert "Succeeded" in shown.text
    assert '<h2 id="outcome-title">Refund sent</h2>' in outcome
    assert "Refunded $48.00 CAD for Olivia Chen" in outcome
    assert "Approved and done. Here is what happened." in shown.text
    assert f'action="/proposals/{proposal_id}/approve"' not in shown.text

    second = browser.form(
        f"/proposals/{proposal_id}/approve", {"confirm": "yes"}, f"/proposals/{proposal_id}"
    )
    assert second.status_code == 303
    again = browser.get(f"/proposals/{proposal_id}")
    assert re.search(r'<section class="outcome-panel.*?</section>', again.text, re.S).group(0) == (
        outcome
    )
    assert "This proposal was already approved." in again.text
    assert len(web.cs.sandbox.refunds()) == 1
    assert "already approved" not in browser.get(f"/proposals/{proposal_id}").text  # one-shot


def test_decline_records_the_note_and_the_application_message(web):
    proposal_id = web.propose()
    browser = web.browser(AVA)
    declined = browser.form(
        f"/proposals/{proposal_id}/decline",
        {"note": "<i>Wrong</i> discount"},
        f"/proposals/{proposal_id}",
    )
    assert declined.status_code == 303
    page = browser.get(f"/proposals/{proposal_id}")
    assert "Declined. Nothing was changed." in page.text
    assert "The manager declined this proposal." in page.text
    assert "&lt;i&gt;Wrong&lt;/i&gt; discount" in page.text
    approve = browser.form(f"/proposals/{proposal_id}/approve", {}, f"/proposals/{proposal_id}")
    assert approve.status_code == 303
    assert "it can no longer be approved" in browser.get(f"/proposals/{proposal_id}").text
    assert web.cs.sandbox.refunds() == []


def _outcome_panel(page: Any) -> str:
    found = re.search(r'<section class="outcome-panel.*?</section>', page.text, re.S)
    assert found, _main(page)[:2000]
    return re.sub(r"\s+", " ", found.group(0))


def _approve(browser: Browser, proposal_id: str) -> Any:
    """Approve as a manager does: the button, then the confirmation page's button if any."""
    path = f"/proposals/{proposal_id}"
    answer = browser.form(f"{path}/approve", {}, path)
    if answer.status_code == 303 and answer.headers["location"].startswith(f"{path}/approve?"):
        answer = browser.get(answer.headers["location"])  # the confirmation page
    if answer.status_code == 200 and 'name="confirm" value="yes"' in answer.text:
        token = CSRF.search(answer.text).group(1)
        answer = browser.post(f"{path}/approve", {"confirm": "yes", "csrf_token": token})
    assert answer.status_code == 303, answer.text[:500]
    return browser.get(path)


def test_the_status_page_follows_a_refund_through_reconciliation(web):
    proposal_id = web.propose("refund-lost-response")
    browser = web.browser(AVA)
    review = _approve(browser, proposal_id)
    panel = _outcome_panel(review)
    assert "Confirming with the provider</span>" in review.text  # the status
    assert "Confirming with the card provider: do not refund again" in panel
    assert "it is not yet known whether the money moved" in panel
    assert "countersign is confirming it with the card provider" in panel
    assert "Tell the member their refund is being processed." in panel
    assert "Do not refund again, by hand or otherwise." in panel
    assert "reconciler" not in panel  # plain words, not the machinery's names
    assert '<p class="waiting" id="waiting">Waiting since 04:00, 1 min.</p>' in panel
    assert f'href="/proposals/{proposal_id}/status">Follow the check' in panel
    # It updates by itself, by a script the manager can pause (and a link without script).
    assert 'data-refresh-seconds="15"' in review.text
    assert '<script src="/assets/refresh.js?v=' in review.text
    assert "script-src 'self'" in review.headers["content-security-policy"]
    assert "Check now</a>" in review.text
    assert 'http-equiv="refresh"' not in review.text
    status = browser.get(f"/proposals/{proposal_id}/status")
    assert status.status_code == 200
    assert "Confirming with the card provider" in _outcome_panel(status)
    assert 'data-refresh-seconds="5"' in status.text
    for page in (review, status):
        assert "/api/" not in _main(page)

    web.cs.sweepers.reconcile()
    settled = browser.get(f"/proposals/{proposal_id}/status")
    assert "Settled. This is the recorded outcome" in settled.text
    assert "http-equiv" not in settled.text
    assert "Refund sent" in _outcome_panel(settled)
    assert "Refunded $48.00 CAD for Noah Fraser" in settled.text
    assert "http-equiv" not in browser.get(f"/proposals/{proposal_id}").text


def test_a_provider_outage_before_anything_was_applied_says_no_money_moved(web):
    proposal_id = web.propose("provider-outage")
    browser = web.browser(AVA)
    panel = _outcome_panel(_approve(browser, proposal_id))
    assert "Confirming with the card provider: do not refund again" in panel
    assert "The card provider was unavailable and refunded nothing: no money has moved yet." in (
        panel
    )
    assert "answer was lost" not in panel
    assert "/api/" not in panel
    french = _outcome_panel(browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "fr"}))
    assert "Confirmation auprès du fournisseur de paiement" in french
    assert str(escape("aucun argent n'a encore bougé")) in french
    assert "/api/" not in french
    # The stored outcome holds facts; the API builds the machine's status path from the id.
    outcome = web.proposal(proposal_id).outcome or {}
    assert outcome == {"kind": "needs_reconciliation", "cause": "provider_unavailable"}

    # The reconciler sends the same request under the same key, once: one refund.
    web.cs.sweepers.reconcile()
    assert "Refund sent" in _outcome_panel(browser.get(f"/proposals/{proposal_id}"))
    held = web.cs.sandbox.refunds()
    assert [(h["status"], h["metadata"]["proposal_id"]) for h in held] == [
        ("succeeded", proposal_id)
    ]


def test_not_executed_says_nothing_changed_and_offers_the_assistant(web):
    order = web.seeded["orders"]["refund-stale"]
    browser = web.browser(AVA)
    # Ava asks the order assistant; the payment is refunded by hand before she approves.
    sent = browser.form(f"/chat/orders/{order}", {"message": "Lucas missed his early-bird"})
    conversation = sent.headers["location"].split("#")[0]
    found = re.search(r'href="/proposals/([0-9a-f-]{36})"', browser.get(conversation).text)
    assert found
    proposal_id = found.group(1)
    web.cs.club.refund_manually("granite", order, AVA, "P1", 34500)
    page = _approve(browser, proposal_id)
    panel = _outcome_panel(page)
    assert "Not executed: nothing changed" in panel
    assert "has already been refunded" in panel
    assert f'href="{conversation}">Ask the assistant for a new proposal' in panel.replace(
        "&amp;", "&"
    )
    # The conversation it opens says why.
    chat = browser.get(conversation)
    assert "The last proposal was not executed" in chat.text
    # Another manager gets a new conversation about the same order.
    mia_like = web.browser(AVA)
    assert mia_like.get(f"/proposals/{proposal_id}").status_code == 200


def _notice(page: Any) -> str:
    found = re.search(r'<p class="notice" role="status">(.*?)</p>', page.text, re.S)
    assert found, page.text[:500]
    return found.group(1)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_notice_after_approving_says_how_it_ended(web, monkeypatch, language):
    """Never "Here is what happened" above a card that was declined or an answer lost."""
    words = {
        "en": {
            "refund-ok": "Approved and done. Here is what happened.",
            "refund-declined": "Approved, but not executed: nothing changed. Here is why.",
            "refund-lost-response": (
                "Approved, but the provider has not confirmed it yet. Do not do it again: this "
                "page says when it settles."
            ),
            "refund-stale": (
                "Approved, but it failed: nothing changed. Give support the reference below."
            ),
        },
        "fr": {
            "refund-ok": "Approuvée et effectuée. Voici ce qui s&#39;est passé.",
            "refund-declined": (
                "Approuvée, mais non exécutée\N{NO-BREAK SPACE}: rien n&#39;a changé. "
                "Voici pourquoi."
            ),
            "refund-lost-response": (
                "Approuvée, mais le fournisseur ne l&#39;a pas encore confirmée. Ne la refaites "
                "pas\N{NO-BREAK SPACE}: cette page indique quand elle est réglée."
            ),
            "refund-stale": (
                "Approuvée, mais en échec\N{NO-BREAK SPACE}: rien n&#39;a changé. Donnez au "
                "soutien la référence ci-dessous."
            ),
        },
    }[language]
    browser = web.browser(AVA)
    browser.form("/language", {"lang": language, "next": "/"})
    for order, notice in words.items():
        proposal_id = web.propose(order)
        if order == "refund-stale":
            monkeypatch.setattr(web.cs.proposals.settlement, "providers", {})  # none: it fails
        assert _notice(_approve(browser, proposal_id)) == notice, order


def test_a_failure_says_no_money_moved_and_gives_the_reference(web, monkeypatch):
    proposal_id = web.propose()
    monkeypatch.setattr(web.cs.proposals.settlement, "providers", {})  # none wired: fails
    browser = web.browser(AVA)
    page = _approve(browser, proposal_id)
    panel = _outcome_panel(page)
    reference = (web.proposal(proposal_id).outcome or {})["correlation_id"]
    assert "Failed: no money moved" in panel
    assert "Give support this reference" in panel
    assert f'<code class="mono">{reference}</code>' in panel
    assert "Reference for support:" in panel
    assert web.cs.sandbox.refunds() == []


def test_a_declined_proposal_reads_as_declined(web):
    proposal_id = web.propose()
    browser = web.browser(AVA)
    browser.form(f"/proposals/{proposal_id}/decline", {"note": ""}, f"/proposals/{proposal_id}")
    panel = _outcome_panel(browser.get(f"/proposals/{proposal_id}"))
    assert "Declined: nothing changed" in panel
    assert 'class="next-step"' not in panel  # the manager decided: no next step to offer


def test_a_card_refund_is_confirmed_once_more_and_credit_is_not(web):
    proposal_id = web.propose()
    browser = web.browser(AVA)
    review = browser.get(f"/proposals/{proposal_id}")
    # The card's mask stays on one line (non-breaking spaces).
    assert ">Refund $48.00 CAD to Visa\N{NO-BREAK SPACE}••••\N{NO-BREAK SPACE}4242</button>" in (
        review.text
    )
    assert "You will confirm once more: this cannot be undone." in review.text
    before = count_events(web.cs)

    answered = browser.form(f"/proposals/{proposal_id}/approve", {}, f"/proposals/{proposal_id}")
    assert answered.status_code == 303  # to the confirmation page, a page of its own
    asked = browser.get(answered.headers["location"])
    assert asked.status_code == 200
    page = _main(asked)
    assert "Confirm once more" in page
    assert "A card refund cannot be undone: once you confirm, $48.00 CAD goes back to Visa" in page
    assert "within 5 to 10 business days" in page
    yes = ">Yes: Refund $48.00 CAD to Visa\N{NO-BREAK SPACE}••••\N{NO-BREAK SPACE}4242</button>"
    assert yes in asked.text
    assert f'href="/proposals/{proposal_id}">Not now, back to the proposal' in page
    assert count_events(web.cs) == before  # nothing happened yet
    assert web.proposal(proposal_id).status == "pending"

    token = CSRF.search(asked.text).group(1)
    done = browser.post(
        f"/proposals/{proposal_id}/approve", {"confirm": "yes", "csrf_token": token}
    )
    assert done.status_code == 303
    assert "Refund sent" in _outcome_panel(browser.get(f"/proposals/{proposal_id}"))
    assert len(web.cs.sandbox.refunds()) == 1

    # In French too; and account credit stays in the club's books: one click.
    credit = web.propose("account-credit")
    french = browser.get(f"/proposals/{credit}", **{"Accept-Language": "fr"})
    assert "Créditer" in french.text
    assert "au compte de" in french.text
    assert "irréversible" not in french.text
    english = browser.get(f"/proposals/{credit}")
    assert "s club account</button>" in english.text
    answer = browser.form(f"/proposals/{credit}/approve", {}, f"/proposals/{credit}")
    assert answer.status_code == 303
    assert web.proposal(credit).status == "succeeded"


def test_a_refund_to_account_credit_reads_account_credited_and_a_card_refund_refund_sent(web):
    """Nothing is sent anywhere for account credit: its outcome's headline says the account
    was credited, on the review page, in the recent outcomes and on the conversation's card
    (with what the application told it), in English and in French, and the API's outcome
    message says where the money went; a card refund still reads "Refund sent"."""
    browser = web.browser(AVA)
    order = web.seeded["orders"]["account-credit"]
    asked = browser.form(f"/chat/orders/{order}", {"message": "Sophie missed it: account credit"})
    conversation = asked.headers["location"].split("#")[0]
    credit = re.search(r'href="/proposals/([0-9a-f-]{36})"', browser.get(conversation).text)[1]
    card = web.propose()
    web.cs.proposals.approve(credit, AVA)
    web.cs.proposals.approve(card, AVA)
    chat = _main(browser.get(conversation))
    assert '<p class="outcome-title">Account credited</p>' in chat
    assert "Refund sent" not in chat
    assert "to club account credit for Sophie Martin" in chat  # the hand-back's own sentence
    chat_fr = _main(browser.get(conversation, **{"Accept-Language": "fr"}))
    assert '<p class="outcome-title">Compte crédité</p>' in chat_fr

    english = _outcome_panel(browser.get(f"/proposals/{credit}"))
    assert '<h2 id="outcome-title">Account credited</h2>' in english
    assert "Refund sent" not in english
    assert "to club account credit for Sophie Martin" in english
    french = _outcome_panel(browser.get(f"/proposals/{credit}", **{"Accept-Language": "fr"}))
    assert '<h2 id="outcome-title">Compte crédité</h2>' in french
    assert "envoyé" not in french
    recent = _main(browser.get("/?view=recent"))
    assert "<strong>Account credited</strong>" in recent
    assert recent.count("<strong>Refund sent</strong>") == 1  # the card refund's, alone
    recent_fr = _main(browser.get("/?view=recent", **{"Accept-Language": "fr"}))
    assert "<strong>Compte crédité</strong>" in recent_fr
    assert recent_fr.count("<strong>Remboursement envoyé</strong>") == 1

    sent = _outcome_panel(browser.get(f"/proposals/{card}"))
    assert '<h2 id="outcome-title">Refund sent</h2>' in sent
    sent_fr = _outcome_panel(browser.get(f"/proposals/{card}", **{"Accept-Language": "fr"}))
    assert '<h2 id="outcome-title">Remboursement envoyé</h2>' in sent_fr

    token = issue_token(
        web.cs, "granite", "reader", ["orders.refund"], issued_by=AVA, kind="agent"
    ).token
    api = browser.client.get(
        f"/api/v1/proposals/{credit}", headers={"Authorization": f"Bearer {token}"}
    )
    assert api.status_code == 200, api.text
    assert "to club account credit for Sophie Martin" in api.json()["message"]
    assert "sent" not in api.json()["message"]


def test_the_requester_reads_as_the_assistant_on_their_behalf(web):
    order = web.seeded["orders"]["refund-ok"]
    browser = web.browser(AVA)
    sent = browser.form(f"/chat/orders/{order}", {"message": "Olivia missed her early-bird"})
    chat = browser.get(sent.headers["location"].split("#")[0])
    drafted = re.search(r'href="/proposals/([0-9a-f-]{36})"', chat.text).group(1)
    page = _main(browser.get(f"/proposals/{drafted}"))
    assert "The assistant, on behalf of Ava" in page
    direct = _main(browser.get(f"/proposals/{web.propose('refund-stale')}"))
    assert "on behalf of" not in direct
    assert f"({AVA})" in direct


# -- languages ----------------------------------------------------------------------------------


def test_outcomes_are_in_french_by_accept_language_or_the_switch(web):
    proposal_id = web.propose()
    web.cs.proposals.approve(proposal_id, AVA)
    proposal = web.proposal(proposal_id)
    french = outcome_message(proposal.kind, proposal.preview, proposal.outcome or {}, "fr")
    english = outcome_message(proposal.kind, proposal.preview, proposal.outcome or {}, "en")

    browser = web.browser(AVA)
    page = browser.get(
        f"/proposals/{proposal_id}", **{"Accept-Language": "fr-CA,fr;q=0.9,en;q=0.5"}
    )
    assert '<html lang="fr">' in page.text
    assert str(escape(french)) in page.text
    assert "Réussie" in page.text
    assert "Remboursement de 48,00\u00a0$\u00a0CA" in french

    english_page = browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "en-US,fr;q=0.5"})
    assert str(escape(english)) in english_page.text
    low_french = browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "de, fr;q=0.1"})
    assert '<html lang="fr">' in low_french.text

    # The switch in the session wins over the browser's header.
    switched = browser.form("/language", {"lang": "fr", "next": f"/proposals/{proposal_id}"})
    assert switched.headers["location"] == f"/proposals/{proposal_id}"
    chosen = browser.get(f"/proposals/{proposal_id}", **{"Accept-Language": "en"})
    assert str(escape(french)) in chosen.text
    assert browser.form("/language", {"lang": "xx", "next": "//evil"}).headers["location"] == "/"


def test_forms_that_are_too_large_are_refused(web):
    browser = web.browser(AVA)
    token = browser.csrf("/")
    order = web.seeded["orders"]["refund-ok"]
    answer = browser.post(f"/chat/orders/{order}", {"message": "x" * 40_000, "csrf_token": token})
    assert answer.status_code == 413
    assert count_events(web.cs, "Interaction.Started") == 0


def test_an_unexpected_error_is_a_page_with_a_reference(web, monkeypatch, caplog):
    proposal_id = web.propose()
    browser = web.browser(AVA)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("SELECT secret FROM /work/x.py")

    monkeypatch.setattr(web.cs.proposals, "approve", broken)
    answer = browser.form(
        f"/proposals/{proposal_id}/approve", {"confirm": "yes"}, f"/proposals/{proposal_id}"
    )
    assert answer.status_code == 500
    reference = answer.headers["x-correlation-id"]
    assert reference in answer.text
    for leak in ("Traceback", "SELECT", ".py", "RuntimeError"):
        assert leak not in answer.text
    assert reference in caplog.text


# -- the catalogue ------------------------------------------------------------------------------


def test_every_page_text_exists_in_english_and_french():
    assert set(TEXTS["en"]) == set(TEXTS["fr"])
    templates = resources.files("countersign.infrastructure.entrypoints.web") / "templates"
    used = set()
    for template in templates.iterdir():
        used |= set(re.findall(r"t\('([a-z_.]+)'", template.read_text(encoding="utf-8")))
    assert used, "no texts found in the templates"
    # 'chat.title.' ~ section: one text per section ('start.' ~ section: per club-wide one)
    used = {k for k in used if not k.endswith(".")} | {
        k + str(section)
        for k in used
        if k.endswith(".")
        for section, assistant in ASSISTANTS.items()
        if k != "start." or assistant.texts.start is not None
    }
    known = set(TEXTS["en"]) | set(section_texts("en"))
    assert used <= known, sorted(used - known)
    assert set(section_texts("en")) == set(section_texts("fr"))
    for language in ("en", "fr"):
        for key, text in {**TEXTS[language], **section_texts(language)}.items():
            assert text.strip(), (language, key)


@pytest.mark.parametrize(
    ("chosen", "header", "expected"),
    [
        (None, None, "en"),
        (None, "fr-CA,fr;q=0.9,en;q=0.8", "fr"),
        (None, "en-GB,fr;q=0.9", "en"),
        (None, "de-DE, fr;q=0.2, en;q=0.1", "fr"),
        (None, "fr;q=0, en", "en"),
        (None, "fr;q=bogus, en;q=0.5", "en"),
        (None, "xx" * 1000, "en"),
        ("fr", "en", "fr"),
        ("xx", "fr", "fr"),
    ],
)
def test_language_negotiation(chosen, header, expected):
    assert negotiate(chosen, header) == expected


# -- pages for what the router refuses -----------------------------------------------------------


def test_unknown_paths_and_methods_get_a_page_in_the_visitors_language(web):
    browser = web.browser(AVA)
    for path in ("/inbox", "/no-such-page", "/proposals/x/y/z"):
        page = browser.get(path)
        assert page.status_code == 404, path
        assert page.headers["content-type"].startswith("text/html")
        assert "<h1>Not found</h1>" in _main(page)
        assert "script-src 'none'" in page.headers["content-security-policy"]
        assert 'href="/"' in page.text  # the way back
        assert "Signed in as" in page.text  # their own navigation
    french = web.browser().get("/no-such-page", **{"Accept-Language": "fr-CA,fr;q=0.9"})
    assert french.status_code == 404
    assert '<html lang="fr">' in french.text
    assert "<h1>Introuvable</h1>" in _main(french)

    refused = browser.client.put("/")
    assert refused.status_code == 405
    assert "GET" in refused.headers["allow"]
    assert "This page cannot do that" in _main(refused)

    # The API keeps its problem documents.
    api = browser.get("/api/v1/no-such-thing")
    assert api.status_code in (401, 404)
    assert api.headers["content-type"].startswith("application/problem+json")


def test_an_error_that_escapes_every_handler_is_a_page_with_a_reference(web, caplog):
    def boom(request: Any) -> Any:
        raise RuntimeError("SELECT secret FROM /work/x.py")

    web.app.add_route("/boom", boom)
    client = TestClient(web.app, raise_server_exceptions=False)
    answer = client.get("/boom", headers={"Accept-Language": "fr"})
    assert answer.status_code == 500
    assert answer.headers["content-type"].startswith("text/html")
    reference = answer.headers["x-correlation-id"]
    assert reference in answer.text
    assert "Une erreur s'est produite" in answer.text.replace("&#39;", "'")
    for leak in ("Traceback", "SELECT", ".py", "RuntimeError"):
        assert leak not in answer.text
    assert reference in caplog.text
