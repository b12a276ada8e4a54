"""Held: markup from members, models and URLs is shown as text, under a no-script policy.

Stored: Eve, a granite manager whose name is markup, tells the assistants things like
``<script>alert(1)</script>``, ``"><img src=x onerror=alert(1)>`` and ``javascript:alert(1)``;
the order assistant proposes a refund, the email assistant drafts an email whose subject and
body carry them, and Eve declines the refund with them as the note. Ava, another manager,
opens the inbox, the review cards, the status and history pages; Eve opens her conversations.
Every page shows the text as text: no script, image, event handler or javascript: URL reaches
the markup. The audit history (JSON) holds the note verbatim, as data.

Reflected: the same strings in query strings (``?lang=``, ``?next=``, any name), sent raw as
curl would, in the path, in the sign-in form's fields, in the webhook URL the webhooks page
refuses and in Accept-Language come back escaped or not at all.

Every page, error pages and redirects included, carries the Content-Security-Policy that
forbids every script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote

import anyio
from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.entrypoints.web.site import (
    CHAT_CONTENT_SECURITY_POLICY,
    CONTENT_SECURITY_POLICY,
)
from fastapi import FastAPI
from starlette.routing import Route

from tests.attacks.conftest import Api, Browser, Web
from tests.conftest import AVA

SCRIPT = "<script>alert(1)</script>"
ATTRIBUTE = '"><img src=x onerror=alert(1)>'
JS_URL = "javascript:alert(1)"
PAYLOADS = (SCRIPT, ATTRIBUTE, JS_URL)
EVE = "eve@granite.example"
EVE_NAME = f"Eve {SCRIPT}{ATTRIBUTE}"
ACTIVE_TAGS = {"script", "img", "iframe", "frame", "object", "embed", "svg", "math", "base"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data"}


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


@dataclass
class Shown:
    """What a browser would make of a page: its text and its attribute values."""

    text: str
    values: list[str]


def is_chat_page(page: Any) -> bool:
    """A conversation page itself (its message form), not an error on a chat path."""
    return page.status_code in (200, 422) and 'class="composer"' in page.text


def is_updating_page(page: Any) -> bool:
    """A page that updates by itself (a proposal being reconciled), by its pausable script."""
    return page.status_code == 200 and 'id="updates"' in page.text


def is_passkey_page(page: Any) -> bool:
    """A page that asks for a passkey (the account page; a review that requires one)."""
    return page.status_code == 200 and "/assets/passkey.js?v=" in page.text


def own_script(page: Any) -> str | None:
    """The one static script of the application's a page may run, if any."""
    if is_chat_page(page):
        return "chat"
    if is_passkey_page(page):
        return "passkey"
    return "refresh" if is_updating_page(page) else None


def policy_of(page: Any) -> str:
    """The one policy a page may carry: the chat page and a self-updating page run their own
    static script, no other page runs any."""
    return CHAT_CONTENT_SECURITY_POLICY if own_script(page) else CONTENT_SECURITY_POLICY


def inert(page: Any, where: str) -> Shown:
    """The page is HTML under the no-script policy (the chat page: its one static script),
    and holds no active markup at all."""
    assert page.headers["content-type"].startswith("text/html"), where
    assert page.headers["content-security-policy"] == policy_of(page), where
    assert page.headers["x-content-type-options"] == "nosniff", where
    markup = _Markup()
    markup.feed(page.text)
    markup.close()
    tags = list(markup.tags)
    script = own_script(page)
    if script is not None:
        # Exactly one script: the versioned static file, no inline code.
        assert tags.count("script") == 1, where
        assert re.search(
            rf'<script src="/assets/{script}\.js\?v=[0-9a-f]{{12}}" defer></script>', page.text
        ), where
        tags.remove("script")
    assert not ACTIVE_TAGS & set(tags), (where, ACTIVE_TAGS & set(tags))
    for name, value in markup.attributes:
        assert not name.startswith("on"), (where, name, value)
        if name in URL_ATTRIBUTES:
            scheme = re.sub(r"[\x00-\x20]", "", value).lower()
            assert not scheme.startswith(("javascript:", "data:", "vbscript:")), (where, value)
    for payload in PAYLOADS[:2]:
        assert payload not in page.text, where  # never verbatim in the markup
    return Shown(" ".join(" ".join(markup.texts).split()), [v for _, v in markup.attributes])


# -- stored -----------------------------------------------------------------------------------


def _chat(browser: Browser, path: str, message: str) -> str:
    sent = browser.submit(path, {"message": message, "interaction_id": ""})
    assert sent.status_code == 303, sent.text[:300]
    return str(sent.headers["location"]).split("#")[0]


def _card_on(page: str) -> str:
    """The id of the proposal card a conversation page shows."""
    found = re.search(r'href="/proposals/([0-9a-f-]{36})"', page)
    assert found, page[:500]
    return found.group(1)


def test_stored_markup_is_shown_as_text_to_every_member_on_every_page(web: Web, api: Api):
    web.add_member(
        EVE,
        EVE_NAME,
        sorted(PERMISSIONS),  # a manager holds every permission, as the demo's do
        ("granite",),
    )
    eve = web.sign_in(EVE)
    said = " ".join(PAYLOADS)
    orders_chat = _chat(
        eve, f"/chat/orders/{web.seeded['orders']['refund-ok']}", f"Olivia missed D1 {said}"
    )
    email_chat = _chat(
        eve,
        f"/chat/email_broadcasts/{web.seeded['broadcast_forms']['granite']}",
        f"Email Monday Night Open about {said}",
    )
    refund_id, draft_id = (_card_on(eve.get(chat).text) for chat in (orders_chat, email_chat))
    declined = eve.submit(f"/proposals/{refund_id}/decline", {"note": said})
    assert declined.status_code == 303
    # Eve adds a webhook endpoint from the page: Ava's webhooks page names her.
    assert eve.submit("/webhooks", {"url": "https://93.184.215.14/eve"}).status_code == 201
    assert (web.status(refund_id), web.status(draft_id)) == ("declined", "pending")

    ava = web.member(AVA)
    pages = {
        "Eve's order conversation": (eve.get(orders_chat), [said]),
        "Eve's email conversation": (eve.get(email_chat), [said, "Email Monday Night Open"]),
        "Eve's inbox (her name)": (eve.get("/"), [EVE_NAME]),
        "Ava's inbox": (ava.get("/"), [SCRIPT, ATTRIBUTE]),
        "Ava's review of the draft": (ava.get(f"/proposals/{draft_id}"), [said]),
        "Ava's status of the draft": (ava.get(f"/proposals/{draft_id}/status"), [SCRIPT]),
        # The Edit form starts from the stored request: the hostile words, as field values.
        "Ava's edit of the draft": (ava.get(f"/proposals/{draft_id}/edit"), [said]),
        "Ava's review of the declined refund": (ava.get(f"/proposals/{refund_id}"), [said]),
        "Ava's status of the refund": (ava.get(f"/proposals/{refund_id}/status"), []),
        # The history names Eve and quotes her note; as it stood then, the draft's preview.
        "Ava's history of the declined refund": (
            ava.get(f"/proposals/{refund_id}/history"),
            [EVE_NAME, said],
        ),
        "Ava's draft as it stood then": (
            ava.get(f"/proposals/{draft_id}/history?as_of=1"),
            [EVE_NAME, SCRIPT],
        ),
        "Ava's webhooks page (Eve's endpoint)": (ava.get("/webhooks"), [EVE_NAME]),
        "Ava's members page (Eve's name)": (ava.get("/members"), [EVE_NAME, EVE]),
    }
    for where, (page, expected) in pages.items():
        assert page.status_code == 200, where
        shown = inert(page, where)
        for text in expected:
            assert text in shown.text, (where, text)

    history = api.get(f"/api/v1/proposals/{refund_id}/history")
    assert history.headers["content-type"] == "application/json"
    notes = [e.get("note") for e in history.json()["events"] if e["type"] == "Declined"]
    assert notes == [said]


# -- reflected --------------------------------------------------------------------------------


@dataclass
class RawAnswer:
    status_code: int
    headers: dict[str, str]
    text: str


def raw_get(app: FastAPI, target: str, browser: Browser | None = None, **headers: str) -> Any:
    """GET ``target`` as curl sends it: quotes and angle brackets raw (an HTTP library would
    percent-encode them; the server must not rely on that), only spaces encoded."""
    path, _, query = target.replace(" ", "%20").partition("?")
    sent = [
        (b"host", b"testserver"),
        *((k.lower().encode(), v.encode()) for k, v in headers.items()),
    ]
    if browser is not None and browser.cookie:
        sent.append((b"cookie", f"countersign_session={browser.cookie}".encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote(path),
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": sent,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    answer: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            answer["body"] += message.get("body", b"")

    anyio.run(app, scope, receive, send)
    return RawAnswer(answer["status"], answer["headers"], answer["body"].decode())


def get_pages(app: FastAPI) -> set[str]:
    """Every page route that answers GET (the stylesheet and icon aside)."""
    return {
        route.path
        for route in app.routes
        if isinstance(route, Route)
        and "GET" in (route.methods or set())
        and not route.path.startswith(("/api/", "/assets/", "/openapi", "/docs", "/redoc"))
    }


def test_reflected_markup_comes_back_escaped_and_every_page_forbids_scripts(web: Web):
    proposal_id = web.propose()
    order = web.seeded["orders"]["refund-ok"]
    ava = web.member(AVA)
    # A path-like next that a lenient check would let through, and what any page reflects.
    hostile_next = '/"><img/src=x/onerror=alert(1)><script>alert(1)</script>'
    query = "lang=" + SCRIPT + "&next=" + ATTRIBUTE + "&x=" + JS_URL
    signed_in_pages = {
        "/": ("/", 200),
        "/orders/open": (f"/orders/open?ref={order}&{query}", 303),
        "/chat/{section}/{resource_id:path}": (f"/chat/orders/{order}", 200),
        "/proposals/{proposal_id}": (f"/proposals/{proposal_id}", 200),
        "/proposals/{proposal_id}/status": (f"/proposals/{proposal_id}/status", 200),
        "/proposals/{proposal_id}/history": (f"/proposals/{proposal_id}/history", 200),
        # Without its approve form's digest, the review page (the confirmation page is
        # below, as that form's redirect leads to it).
        "/proposals/{proposal_id}/approve": (f"/proposals/{proposal_id}/approve", 303),
        "/proposals/{proposal_id}/edit": (f"/proposals/{proposal_id}/edit", 200),
        "/sign-in": (f"/sign-in?next={hostile_next}", 303),  # signed in already: goes on
        "/webhooks": ("/webhooks", 200),
        "/members": ("/members", 200),
        "/account/passkeys": ("/account/passkeys", 200),
        "/policies": ("/policies", 200),
    }
    assert set(signed_in_pages) == get_pages(web.app)
    for route, (target, status) in signed_in_pages.items():
        with_query = target if "?" in target else f"{target}?{query}"
        page = raw_get(web.app, with_query, ava)
        assert page.status_code == status, (route, page.status_code)
        assert page.headers["content-security-policy"] == policy_of(page), route
        if status == 303:
            assert page.headers["location"].startswith("/"), route
            assert "<" not in page.headers["location"], route
            continue
        shown = inert(page, route)
        reflected = [v for v in shown.values if "alert(1)" in v]
        assert reflected, route  # the query is echoed (in the language form) ...
        assert all(v.startswith(f"{target}?") for v in reflected), (route, reflected)  # as data

    # The confirmation page, where its approve form's redirect leads, echoes the query as data.
    asked = ava.submit(f"/proposals/{proposal_id}/approve", {})
    assert asked.status_code == 303
    target = asked.headers["location"]
    page = raw_get(web.app, f"{target}&{query}", ava)
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == policy_of(page)
    reflected = [v for v in inert(page, "confirmation").values if "alert(1)" in v]
    assert reflected
    assert all(v.startswith(f"{target}&") for v in reflected), reflected

    anonymous = web.browser()
    sign_in = raw_get(web.app, f"/sign-in?next={hostile_next}&lang={SCRIPT}", anonymous)
    assert hostile_next in inert(sign_in, "sign-in").values  # kept for after, as a value
    token = anonymous.page_token("/sign-in")
    failed = anonymous.post(
        "/sign-in", {"email": ATTRIBUTE, "password": SCRIPT, "next": hostile_next,
                     "csrf_token": token},
    )  # fmt: skip
    shown = inert(failed, "failed sign-in")
    assert ATTRIBUTE in shown.values  # the email stays in its field, as a value
    assert SCRIPT not in shown.values  # the password is never echoed

    # A webhook URL the page refuses comes back in its field, as a value, with the reason.
    for url in (*PAYLOADS, f"https://hooks.example/{ATTRIBUTE}", f"https://{SCRIPT}/"):
        refused = ava.submit("/webhooks", {"url": url})
        assert refused.status_code == 422, url
        shown = inert(refused, f"refused webhook URL {url}")
        assert url in shown.values, url

    # A member the page refuses to change is named in the reason, as text.
    refused = ava.submit("/members/permissions", {"email": ATTRIBUTE})
    assert refused.status_code == 422
    assert ATTRIBUTE in inert(refused, "refused member").text

    errors = {
        "markup as an id": raw_get(web.app, f"/proposals/{ATTRIBUTE}", ava),
        "markup as an interaction": raw_get(
            web.app, f"/chat/orders/{order}?interaction={SCRIPT}", ava
        ),
        "forged form": ava.post("/language", {"lang": SCRIPT, "next": ATTRIBUTE}),
        "form too large": ava.submit(f"/chat/orders/{order}", {"message": SCRIPT * 2000}),
    }
    unknown = ava.get("/proposals/00000000-0000-4000-8000-000000000000")
    for where, page in errors.items():
        assert page.status_code in (403, 404, 413), where
        shown = inert(page, where)
        assert not [v for v in shown.values if "alert" in v], where
        assert "alert" not in shown.text, where
    assert errors["markup as an id"].text == unknown.text
    assert errors["markup as an interaction"].text == unknown.text

    # With a slash the path names no page at all: the styled 404 page, which echoes nothing.
    nowhere = raw_get(web.app, f"/proposals/{ATTRIBUTE}{SCRIPT}", ava)
    assert (nowhere.status_code, nowhere.headers["content-type"]) == (
        404,
        "text/html; charset=utf-8",
    )
    assert nowhere.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "alert" not in inert(nowhere, "a path that names no page").text

    language = ava.submit("/language", {"lang": SCRIPT, "next": ATTRIBUTE})
    assert (language.status_code, language.headers["location"]) == (303, "/")
    assert language.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_only_the_chat_page_runs_a_script_and_only_its_own_static_file(web: Web):
    """The chat page's loading state: ``script-src 'self'`` there (no inline code, no eval,
    no other origin), and the script itself is served as a static asset; every other page
    keeps ``script-src 'none'``."""
    expected = CONTENT_SECURITY_POLICY.replace("script-src 'none'", "script-src 'self'")
    assert expected == CHAT_CONTENT_SECURITY_POLICY
    assert "unsafe" not in CHAT_CONTENT_SECURITY_POLICY
    order = web.seeded["orders"]["refund-ok"]
    ava = web.member(AVA)
    chat = raw_get(web.app, f"/chat/orders/{order}", ava)
    assert chat.headers["content-security-policy"] == CHAT_CONTENT_SECURITY_POLICY
    found = re.search(r'<script src="(/assets/chat\.js\?v=[0-9a-f]{12})" defer>', chat.text)
    assert found
    script = ava.get(found.group(1))
    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.headers["x-content-type-options"] == "nosniff"
    assert "eval(" not in script.text
    assert "innerHTML" not in script.text
    for path in ("/", f"/chat/orders/{order}?interaction={SCRIPT}", "/no-such-page"):
        page = raw_get(web.app, path, ava)
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
        assert "<script" not in page.text, path
    french = raw_get(web.app, "/", ava, **{"accept-language": f"fr;q=0.9, {SCRIPT};q=1"})
    assert '<html lang="fr">' in french.text
    english = raw_get(web.app, "/", ava, **{"accept-language": ATTRIBUTE})
    assert '<html lang="en">' in english.text
    inert(english, "hostile Accept-Language")
