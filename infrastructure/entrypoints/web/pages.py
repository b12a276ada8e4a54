"""The server-rendered browser experience, mounted on the HTTP application.

``mount_pages(app, cs)`` adds HTML routes beside the JSON API: the site's plumbing
(``site.py``), then the handlers by area (``signing_in.py``, ``proposals.py``, ``history.py``,
``edits.py``, ``conversations.py``), which render ``views.py``'s values through the templates.

Everything works without JavaScript: approve, decline, editing a proposal, sending a message
and switching language are plain POST forms, each carrying the session's CSRF token, and every
one that succeeds answers with a redirect (POST, then GET), so reloading a page never repeats
an action.

Rules every route follows:

* A person signs in with email and password; the cookie holds only an opaque session id, the
  session itself is stored server-side (``sessions.py``) and ends for good at sign-out, "sign
  out everywhere", a password change, or the member's removal from the club. Every request
  re-reads the club and re-checks the membership.
* Failed sign-ins are throttled per account and per client address across processes
  (``throttle.py``): over the limit, 429 with Retry-After and no password check at all.
* Every id in a path is checked against the signed-in person's club: unknown, malformed and
  foreign ids answer with the same 404 page, byte for byte.
* Templates autoescape everything; nothing a model or a person wrote is marked safe.
* HTML responses carry a strict Content-Security-Policy (no script at all; the one
  stylesheet is served here), ``X-Frame-Options: DENY`` and friends, and ``no-store``.
* Outcome texts are the application's own (``domain.messages``, ``domain.handback``), in the
  person's language: the one chosen in the session, else the browser's Accept-Language.
"""

from __future__ import annotations

import inspect

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.web.account import AccountPages
from countersign.infrastructure.entrypoints.web.conversations import ConversationPages
from countersign.infrastructure.entrypoints.web.edits import EditPages
from countersign.infrastructure.entrypoints.web.history import HistoryPages
from countersign.infrastructure.entrypoints.web.inbox import InboxPage
from countersign.infrastructure.entrypoints.web.members import MemberPages
from countersign.infrastructure.entrypoints.web.policies import PolicyPages
from countersign.infrastructure.entrypoints.web.proposals import ProposalPages
from countersign.infrastructure.entrypoints.web.sessions import Sessions, session_secret
from countersign.infrastructure.entrypoints.web.signing_in import SignInPages
from countersign.infrastructure.entrypoints.web.site import Site
from countersign.infrastructure.entrypoints.web.visits import Handler
from countersign.infrastructure.entrypoints.web.webhooks import WebhookPages
from countersign.infrastructure.server_settings import secure_from_env
from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response


def mount_pages(
    app: FastAPI,
    cs: Countersign,
    *,
    secure_cookies: bool | None = None,
) -> None:
    """Add the browser pages to ``app``. ``secure_cookies`` defaults to
    COUNTERSIGN_SECURE_COOKIES (on unless set to 0): turn it off only for plain-HTTP local use.
    """
    secure = secure_from_env() if secure_cookies is None else secure_cookies
    sessions = Sessions(cs.sql, cs.clock, session_secret(cs), secure=secure)
    site = Site(cs, sessions)
    app.state.pages = site
    signing = SignInPages(site)
    inbox = InboxPage(site)
    proposals = ProposalPages(site)
    conversations = ConversationPages(site)
    edits = EditPages(site)
    history = HistoryPages(site)

    webhooks = WebhookPages(site)
    members = MemberPages(site)
    account = AccountPages(site)
    policies = PolicyPages(site)
    get, post = ["GET"], ["POST"]
    routes: list[tuple[str, Handler, list[str], bool, bool]] = [
        # path, handler, methods, signed in, CSRF checked
        ("/sign-in", signing.sign_in_form, get, False, False),
        ("/sign-in", signing.sign_in, post, False, True),
        ("/sign-in/club", signing.choose_club, post, False, True),
        ("/sign-out", signing.sign_out, post, False, True),
        ("/sign-out/everywhere", signing.sign_out_everywhere, post, True, True),
        ("/language", signing.switch_language, post, False, True),
        ("/", inbox.inbox, get, True, False),
        ("/orders/open", conversations.open_order, get, True, False),
        ("/chat/{section}/{resource_id:path}", conversations.chat, get, True, False),
        ("/chat/{section}/{resource_id:path}", conversations.send_message, post, True, True),
        ("/proposals/{proposal_id}", proposals.review, get, True, False),
        ("/proposals/{proposal_id}/approve", proposals.confirmation, get, True, False),
        ("/proposals/{proposal_id}/approve", proposals.approve, post, True, True),
        ("/proposals/{proposal_id}/decline", proposals.decline, post, True, True),
        ("/proposals/{proposal_id}/status", proposals.status, get, True, False),
        ("/proposals/{proposal_id}/history", history.page, get, True, False),
        ("/proposals/{proposal_id}/edit", edits.form, get, True, False),
        ("/proposals/{proposal_id}/edit", edits.revise, post, True, True),
        ("/webhooks", webhooks.page, get, True, False),
        ("/account/passkeys", account.page, get, True, False),
        ("/account/passkeys", account.add, post, True, True),
        ("/account/passkeys/rename", account.rename, post, True, True),
        ("/account/passkeys/remove", account.remove, post, True, True),
        ("/webhooks", webhooks.add, post, True, True),
        ("/webhooks/remove", webhooks.remove, post, True, True),
        ("/webhooks/redeliver", webhooks.redeliver, post, True, True),
        ("/members", members.page, get, True, False),
        ("/policies", policies.page, get, True, False),
        ("/members/permissions", members.set_permissions, post, True, True),
    ]
    for path, handler, methods, signed_in, csrf in routes:
        app.add_route(
            path,
            site.endpoint(handler, signed_in=signed_in, csrf=csrf),
            methods=methods,
            include_in_schema=False,
        )
    app.add_route("/assets/{name}", site.asset, methods=get, include_in_schema=False)
    _refuse_with_pages(app, site)


def _refuse_with_pages(app: FastAPI, site: Site) -> None:
    """What the router refuses, and errors nothing else caught, answer with a page on every
    path but the API's, which keep their problem documents (RFC 9457)."""
    api_answer = app.exception_handlers.get(StarletteHTTPException)

    async def refusal(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if api_answer is not None and _is_api(request.url.path):
            answer = api_answer(request, exc)
            return await answer if inspect.isawaitable(answer) else answer
        allow = (exc.headers or {}).get("Allow") or (exc.headers or {}).get("allow")
        return await site.refusal(request, exc.status_code, allow)

    app.add_exception_handler(StarletteHTTPException, refusal)
    app.state.internal_error_page = site.internal_error_page


def _is_api(path: str) -> bool:
    """The JSON API's paths (/api and below): answered by the API's own handlers."""
    return path == "/api" or path.startswith("/api/")
