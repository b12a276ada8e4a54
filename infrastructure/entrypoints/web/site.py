"""The site: what every page shares.

``Site.endpoint`` wraps a handler: it reads a bounded form, loads the session, re-reads the
club and the membership (``visits.User``), checks the CSRF token, maps errors to the error
pages and adds the security headers. ``render`` fills a template; ``error``, ``notice`` and
``flash`` are the error pages and the one-shot notices. What a handler is given, the request
as a ``Visit``, is in ``visits``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode
from uuid import UUID

from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.errors import CorruptRecordError, ForbiddenError, UnknownOperationError
from countersign.application.proposal_limit import TooManyProposalsError
from countersign.application.token_write_limit import TooManyWritesError
from countersign.domain.errors import ConcurrencyConflictError, NotFoundError
from countersign.domain.storable_text import holds_unstorable, unstorable_target
from countersign.domain.visible_text import shown
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web import navigation
from countersign.infrastructure.entrypoints.web.i18n import LANGUAGES, negotiate
from countersign.infrastructure.entrypoints.web.posted_form import FormTooLargeError, read_form
from countersign.infrastructure.entrypoints.web.sessions import Session, Sessions
from countersign.infrastructure.entrypoints.web.views import replaces_view
from countersign.infrastructure.entrypoints.web.visits import (
    Handler,
    PageError,
    User,
    Visit,
    page_of_form,
)
from countersign.infrastructure.in_flight import RETRY_AFTER, InFlight, in_flight_from_env
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    unavailable_reason,
)
from countersign.infrastructure.projection_engine.runner import ProjectionStoppedError
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

log = logging.getLogger("countersign.web")

#: The read models the inbox and the navigation's counts read.
INBOX_PROJECTIONS = ("browser_view", "attention")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'none'; object-src 'none'; style-src 'self'; "
    "img-src 'self'; font-src 'self'; connect-src 'none'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
CHAT_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
    "script-src 'none'", "script-src 'self'"
)
"""The policy of a page that runs one of the application's own static scripts (the chat
page's loading state, ``/assets/chat.js``; a self-updating page's pausable updater,
``/assets/refresh.js``): still no inline script, no eval, no other origin. Every other page
runs none."""
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    "Cache-Control": "no-store",
}
_ASSETS = {
    "pages.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
    "chat.js": "text/javascript; charset=utf-8",
    "refresh.js": "text/javascript; charset=utf-8",
    "passkey.js": "text/javascript; charset=utf-8",
}


def _shown(value: Any) -> Any:
    """A page's text as ``visible_text.shown`` writes it; markup the pages made, and every
    other value, as it is."""
    if type(value) is str:  # not Markup, a str the pages built and escaped themselves
        return shown(value)
    return value


class Site:
    """What the handlers share; one instance per mounted application."""

    def __init__(self, cs: Countersign, sessions: Sessions) -> None:
        self.cs = cs
        self.sessions = sessions
        self.in_flight = InFlight(in_flight_from_env())
        self.templates = Environment(
            loader=PackageLoader("countersign.infrastructure.entrypoints.web", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            # Every value a page prints: a control or invisible formatting character in
            # stored text (a name, a subject stored before they were refused) is shown as its
            # escape, never left to reorder or hide what a reviewer reads.
            finalize=_shown,
        )
        static = resources.files("countersign.infrastructure.entrypoints.web") / "static"
        self.assets = {name: (static / name).read_bytes() for name in _ASSETS}
        self.asset_version = {
            name: hashlib.sha256(body).hexdigest()[:12] for name, body in self.assets.items()
        }

    def endpoint(
        self, handler: Handler, *, signed_in: bool, csrf: bool
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            # One browser's pages under way at once, by its session cookie (a signed-in
            # person's pages; ``infrastructure.in_flight``): past the bound, answered at once.
            session = request.cookies.get(self.sessions.cookie_name)
            if session is None:
                return await answer(request)
            if not self.in_flight.enter(session):
                return await self.too_many(request)
            try:
                return await answer(request)
            finally:
                self.in_flight.leave(session)

        async def answer(request: Request) -> Response:
            form: dict[str, str] = {}
            too_large = False
            if request.method == "POST":
                try:
                    form = await read_form(request)
                except FormTooLargeError:
                    too_large = True
            return await run_in_threadpool(
                self._run, request, form, handler, signed_in, csrf, too_large
            )

        return endpoint

    def _run(
        self,
        request: Request,
        form: dict[str, str],
        handler: Handler,
        signed_in: bool,
        csrf: bool,
        too_large: bool,
    ) -> Response:
        chosen = self.sessions.language(request.cookies)
        language = negotiate(chosen, request.headers.get("accept-language"))
        visit = Visit(
            request, self.sessions.anonymous(), language, form, params=dict(request.path_params)
        )
        loaded = False
        try:
            visit.session = self.sessions.load(request.cookies.get(self.sessions.cookie_name))
            loaded = True
            response = self._respond(
                visit, handler, signed_in=signed_in, csrf=csrf, too_large=too_large
            )
        except Exception as error:  # every refusal has its page; anything else is internal
            response = self._error_page(visit, error)
        if not loaded:  # the session could not be read: leave the browser's cookie alone
            visit.session.issue = False
            return self._finish(visit, response, save=False)
        return self._finish(visit, response)

    def _respond(
        self, visit: Visit, handler: Handler, *, signed_in: bool, csrf: bool, too_large: bool
    ) -> Response:
        """The handler's page, once the visit may see it."""
        request = visit.request
        if too_large:
            raise PageError("too_large", 413)
        visit.user = self._user(visit.session)  # (so the error page below shows who is in)
        if unstorable_target(request.scope["path"], request.scope["query_string"]) or (
            holds_unstorable(visit.form)
        ):  # a NUL: no id, field or value has one, and no database stores it
            # A sign-in holding one (its email or password) is answered here too, before the
            # sign-in throttle, and is not counted, on purpose: the 400 is the same for every
            # account and password, with no account read and no Argon2 check, so it tells a
            # guesser nothing and costs the server nothing the throttle exists to bound.
            # Counting it would write a throttle row for each such junk request (the NUL
            # email can name no account; counted by address, it would lock a shared
            # address's members out for requests that could never sign anyone in).
            raise PageError("bad_request", 400)
        if signed_in and visit.user is None:
            # Before the CSRF check: a signed-out visitor (a revoked or replayed session among
            # them) is sent to sign in, whatever the form carried.
            # Back, once signed in, to the page asked for, or the page whose form was sent
            # (what the form asked is not done: the manager sees the page and decides again).
            if request.method == "GET":
                back = _path_with_query(request) if request.url.path != "/" else ""
            else:
                back = page_of_form(request.url.path, visit.form.get("interaction_id", ""))
            return redirect("/sign-in" + (f"?{urlencode({'next': back})}" if back else ""))
        if csrf and not visit.session.csrf_ok(visit.form.get("csrf_token")):
            raise PageError("csrf", 403)
        return handler(visit)

    def _error_page(self, visit: Visit, error: Exception) -> Response:
        """The page a refusal shows; an unexpected error is logged with its reference."""
        request = visit.request
        if isinstance(error, PageError):
            return self.error(visit, error.kind, error.status)
        if isinstance(error, NotFoundError | UnknownOperationError):
            return self.error(visit, "not_found", 404)
        if isinstance(error, ForbiddenError):
            return self.error(visit, "forbidden", 403)
        if isinstance(error, TooManyProposalsError | TooManyWritesError):  # a settings form's
            kind = "proposals" if isinstance(error, TooManyProposalsError) else "changes"
            response = self.error(visit, f"too_many_{kind}", 429)
            response.headers["Retry-After"] = str(error.retry_after)
            return response
        if isinstance(error, ConcurrencyConflictError):
            response = self.error(visit, "busy", 503)
            response.headers["Retry-After"] = "1"
            return response
        if isinstance(error, ProjectionStoppedError):
            # Every page reading it fails alike until an operator acts: once a while.
            cid = correlation_id_of(request)
            self.cs.outages.error(log, str(error), "projection stopped (request %s)", cid)
            response = self.error(visit, "unavailable", 503)
            response.headers["Retry-After"] = "60"  # as the API's 503 unavailable says
            return response
        if database_unavailable(error):
            cid, reason = correlation_id_of(request), unavailable_reason(error)
            self.cs.outages.warning(log, reason, "database unavailable (request %s)", cid)
            response = self.error(visit, "database", 503)
            response.headers["Retry-After"] = "5"
            return response
        if isinstance(error, CorruptRecordError):
            # The store's ERROR line of this reference names the event and what to do.
            where = (request.method, request.url.path, error.correlation_id)
            log.error("unreadable record on %s %s, correlation id %s", *where)
            log.debug("unreadable record on %s %s", *where[:2], exc_info=True)
            return self.error(visit, "internal", 500, reference=error.correlation_id)
        reference = correlation_id_of(request)
        log.exception(
            "internal error on %s %s, correlation id %s",
            request.method,
            request.url.path,
            reference,
        )
        return self.error(visit, "internal", 500, reference=reference)

    def _finish(self, visit: Visit, response: Response, *, save: bool = True) -> Response:
        session = visit.session
        try:
            if save:
                self.sessions.save(session)
        except Exception:
            reference = correlation_id_of(visit.request)
            log.exception("the session could not be stored, correlation id %s", reference)
            response = self.error(visit, "internal", 500, reference=reference)
            session.issue = False  # the id it would send names nothing stored
        cookie = self.sessions.header(session)
        if cookie is not None:
            response.headers.append("set-cookie", cookie)
        if response.headers.get("content-type", "").startswith("text/html") or (
            300 <= response.status_code < 400
        ):
            # Only the policy render gave the chat page survives; any other is replaced.
            runs_script = (
                response.headers.get("content-security-policy") == CHAT_CONTENT_SECURITY_POLICY
            )
            for name, value in SECURITY_HEADERS.items():
                response.headers[name] = value
            if runs_script:
                response.headers["Content-Security-Policy"] = CHAT_CONTENT_SECURITY_POLICY
            if self.sessions.secure:
                response.headers["Strict-Transport-Security"] = "max-age=31536000"
        return response

    def _user(self, session: Session) -> User | None:
        email, slug = session.email, session.organization
        if not session.signed_in or not email or not slug:
            return None
        try:
            membership = self.cs.club.membership(slug, email, unchanged_since=session.org_version)
        except NotFoundError:
            # Removed from the club (even if added again since), or the club is gone.
            log.info("a session ended: its person is no longer a member of %s", slug)
            session.end()  # signed out for good
            return None
        if membership.version != session.org_version:
            session.confirm_membership(membership.version)
        return User(membership)

    def render(
        self,
        visit: Visit,
        template: str,
        status: int = 200,
        script: str | None = None,
        **context: Any,
    ) -> Response:
        """The page; ``script`` names the one static script it loads (the chat page's loading
        state; a page with ``refresh`` seconds gets the pausable updater), and only such a
        page's policy lets that script run."""
        base: dict[str, Any] = {
            "t": visit.t,
            "lang": visit.language,
            "languages": LANGUAGES,
            "user": visit.user,
            "csrf_token": visit.session.csrf_token,
            "here": _path_with_query(visit.request),
            "notice": None,
            "css": f"/assets/pages.css?v={self.asset_version['pages.css']}",
            "icon": f"/assets/favicon.svg?v={self.asset_version['favicon.svg']}",
            "refresh": None,
            "script": f"/assets/{script}?v={self.asset_version[script]}" if script else None,
            "chats": [],
            "counts": None,
            "policies_link": False,
            "nav": None,
        }
        if visit.user is not None:
            base["chats"] = club_chats(visit.user, self.cs.assistant.club_records)
            base["counts"] = navigation.counts(self.cs, visit, self.catch_up_inbox)
            base["policies_link"] = navigation.may_see_policies(self.cs, visit)
        base.update(context)
        if base["refresh"] and script is None:
            # A page that updates by itself does so by a script the person can pause.
            script = "refresh.js"
            base["script"] = f"/assets/{script}?v={self.asset_version[script]}"
        html = self.templates.get_template(template).render(**base)
        response = HTMLResponse(html, status_code=status)
        if script:
            response.headers["Content-Security-Policy"] = CHAT_CONTENT_SECURITY_POLICY
        return response

    def catch_up_inbox(self, visit: Visit) -> None:
        """Bring the inbox's read models up to the log, so a page shows what just happened
        (their tables are made or checked by the process's first page only:
        ``Countersign.catch_up``); once a request, so the inbox's lists and the navigation's
        counts are read after the same catch-up."""
        if not visit.inbox_caught_up:
            self.cs.catch_up(INBOX_PROJECTIONS)
            visit.inbox_caught_up = True

    def replaces(self, visit: Visit, view: dict[str, Any]) -> dict[str, Any] | None:
        """What a pending proposal took the place of, in words (``views.replaces_view``)."""
        if not view["pending"]:
            return None
        try:
            scope = self.cs.access.inbox_scope(visit.signed_in.caller)
            self.catch_up_inbox(visit)
            card = self.cs.read_models.card(str(scope.organization_id), view["id"])
        except Exception:  # a pointer to the earlier one: the review must show without it
            navigation.not_read(self.cs, "what a proposal replaced could not be read")
            return None
        return replaces_view(list((card or {}).get("replaces") or []), visit.t)

    def error(self, visit: Visit, kind: str, status: int, reference: str = "") -> Response:
        # Nothing request-specific on the page (not even the path): an unknown id and another
        # club's id give the same bytes.
        t = visit.t
        text = (
            t(f"error.{kind}.text", reference=reference) if reference else t(f"error.{kind}.text")
        )
        try:
            return self.render(
                visit,
                "error.html",
                status,
                title=t(f"error.{kind}.title"),
                text=text,
                here="/",
            )
        except Exception:
            log.exception("the error page itself failed")
            return HTMLResponse("<!doctype html><title>Error</title><p>Error.</p>", status)

    async def refusal(self, request: Request, status: int, allow: str | None = None) -> Response:
        """The page for what the router itself refuses on a page path (no such page, a
        method the page does not take), like any page: the visitor's language, their club's
        navigation, the security headers."""
        kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "bad_request")
        shown = status if kind != "bad_request" else 400

        def refuse(visit: Visit) -> Response:
            raise PageError(kind, shown)

        response = await run_in_threadpool(self._run, request, {}, refuse, False, False, False)
        if allow and status == 405:
            response.headers["Allow"] = allow
        return response

    async def too_many(self, request: Request) -> Response:
        """The page for a browser with as many pages under way as it may have: 429, in the
        visitor's language, with Retry-After; nothing the request asked is done."""

        def refuse(visit: Visit) -> Response:
            raise PageError("too_many_requests", 429)

        response = await run_in_threadpool(self._run, request, {}, refuse, False, False, False)
        response.headers["Retry-After"] = str(RETRY_AFTER)
        return response

    def internal_error_page(self, correlation_id: str, scope: Any) -> bytes:
        """The page for an error that escaped everything else (the middleware answers with
        it): rendered without the session, which may be what failed."""
        request = Request(scope)
        language = negotiate(None, request.headers.get("accept-language"))
        visit = Visit(request, self.sessions.anonymous(), language, {})
        return bytes(self.error(visit, "internal", 500, reference=correlation_id).body)

    def notice(self, visit: Visit, proposal_id: str | None = None) -> str | None:
        """The one-shot notice the previous action left, if it belongs on this page."""
        flash = visit.session.data.get("flash")
        if not isinstance(flash, dict):
            return None
        if flash.get("proposal") != proposal_id:
            return None
        visit.session.pop("flash")
        return visit.t(f"notice.{flash.get('kind', '')}")

    @staticmethod
    def flash(visit: Visit, kind: str, proposal_id: str | None = None) -> None:
        visit.session.set("flash", {"kind": kind, "proposal": proposal_id})

    async def asset(self, request: Request) -> Response:
        name = str(request.path_params.get("name", ""))
        if name not in self.assets:
            return Response("Not found", 404, media_type="text/plain")
        return Response(
            self.assets[name],
            media_type=_ASSETS[name],
            headers={
                "Cache-Control": "public, max-age=31536000, immutable",
                "X-Content-Type-Options": "nosniff",
                "Cross-Origin-Resource-Policy": "same-origin",
            },
        )


def redirect(target: str) -> Response:
    return RedirectResponse(target, status_code=303)


def _path_with_query(request: Request) -> str:
    path = quote(request.url.path, safe="/-_.~")
    return path + (f"?{request.url.query}" if request.url.query else "")


def safe_next(value: str) -> str:
    """A local path to go back to; anything else (another host, a scheme) becomes '/'."""
    value = value.strip()
    if (
        not value.startswith("/")
        or value.startswith("//")
        or "\\" in value
        or any(ord(ch) < 33 or ord(ch) == 127 for ch in value)
        or len(value) > 2000
    ):
        return "/"
    return value


def club_chats(user: User, held: Callable[[UUID], frozenset[str]]) -> list[dict[str, str]]:
    """The assistants of sections with one resource per club (the broadcast form, the roster)
    that the person may use, where the club ``held`` their record: each has a navigation
    link and a start-page link."""
    organization_id = user.membership.organization_id
    sections = held(organization_id)
    return [
        {
            "section": str(section),
            "href": f"/chat/{section}/{assistant.club_resource(organization_id)}",
        }
        for section, assistant in ASSISTANTS.items()
        if assistant.club_resource is not None
        and str(section) in sections
        and any(user.may(permission) for permission in assistant.permissions)
    ]
