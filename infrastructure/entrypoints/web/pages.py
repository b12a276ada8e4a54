"""The server-rendered browser experience, mounted on the HTTP application.

``mount_pages(app, cs)`` adds HTML routes beside the JSON API. Everything works without
JavaScript: approve, decline, sending a message and switching language are plain POST forms,
each carrying the session's CSRF token, and every one answers with a redirect (POST, then
GET), so reloading a page never repeats an action.

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

import hashlib
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode
from uuid import UUID

from countersign.application.assistant.sections import ASSISTANTS, SectionAssistant
from countersign.application.assistant.service import MAX_MESSAGE
from countersign.application.club import investigation
from countersign.application.errors import CorruptRecordError, ForbiddenError, UnknownOperationError
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.orders import Order
from countersign.domain.club.organization import Member, Organization, Permission
from countersign.domain.contracts import REGISTRY
from countersign.domain.errors import ConcurrencyConflictError, NotFoundError
from countersign.domain.handback import reason_text
from countersign.domain.interaction import Interaction
from countersign.domain.outcomes import RevisionReason
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.domain.scope import Scope, Section
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.i18n import LANGUAGES, negotiate, translator
from countersign.infrastructure.entrypoints.web.sessions import (
    Session,
    Sessions,
    session_secret,
)
from countersign.infrastructure.entrypoints.web.throttle import Refusal, SignInThrottle
from countersign.infrastructure.entrypoints.web.views import (
    format_time,
    order_view,
    proposal_record,
    proposal_view,
)
from countersign.infrastructure.identity.passwords import verify_password
from countersign.infrastructure.projection_runner import ProjectionStoppedError
from countersign.infrastructure.server_settings import secure_from_env
from fastapi import FastAPI
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

log = logging.getLogger("countersign.web")

MAX_FORM_BYTES = 32 * 1024
_SIGN_IN_NOTICES = ("signed_out", "signed_out_everywhere", "expired")
MAX_NOTE = 500
PAGE_SIZE = 10
CHOOSE_CLUB_SECONDS = 300

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'none'; object-src 'none'; style-src 'self'; "
    "img-src 'self'; font-src 'self'; connect-src 'none'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
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
_ASSETS = {"pages.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}


class PageError(Exception):
    """Answer with one of the error pages (``kind`` names its texts)."""

    def __init__(self, kind: str, status: int) -> None:
        super().__init__(kind)
        self.kind = kind
        self.status = status


class _FormTooLargeError(Exception):
    pass


@dataclass(frozen=True)
class User:
    """The signed-in person, as their club knows them right now."""

    email: str
    name: str
    organization: Organization
    member: Member

    @property
    def club(self) -> str:
        return str(self.organization.name)

    def may(self, permission: Permission) -> bool:
        return self.member.may(permission)


@dataclass
class Visit:
    """One request as a handler sees it."""

    request: Request
    session: Session
    language: str
    form: dict[str, str]
    user: User | None = None
    params: dict[str, str] = field(default_factory=dict)

    @property
    def t(self) -> Callable[..., str]:
        return translator(self.language)

    @property
    def signed_in(self) -> User:
        assert self.user is not None
        return self.user

    def query(self, name: str, limit: int = 200) -> str:
        return str(self.request.query_params.get(name, ""))[:limit]


Handler = Callable[[Visit], Response]


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
    sessions = Sessions(cs.sql, cs.proposals.clock, session_secret(cs), secure=secure)
    pages = Pages(cs, sessions)
    app.state.pages = pages
    get, post = ["GET"], ["POST"]
    routes: list[tuple[str, Handler, list[str], bool, bool]] = [
        # path, handler, methods, signed in, CSRF checked
        ("/sign-in", pages.sign_in_form, get, False, False),
        ("/sign-in", pages.sign_in, post, False, True),
        ("/sign-in/club", pages.choose_club, post, False, True),
        ("/sign-out", pages.sign_out, post, False, True),
        ("/sign-out/everywhere", pages.sign_out_everywhere, post, True, True),
        ("/language", pages.switch_language, post, False, True),
        ("/", pages.inbox, get, True, False),
        ("/orders/open", pages.open_order, get, True, False),
        ("/chat/{section}/{resource_id}", pages.chat, get, True, False),
        ("/chat/{section}/{resource_id}", pages.send_message, post, True, True),
        ("/proposals/{proposal_id}", pages.review, get, True, False),
        ("/proposals/{proposal_id}/approve", pages.approve, post, True, True),
        ("/proposals/{proposal_id}/decline", pages.decline, post, True, True),
        ("/proposals/{proposal_id}/status", pages.status, get, True, False),
    ]
    for path, handler, methods, signed_in, csrf in routes:
        app.add_route(
            path,
            pages.endpoint(handler, signed_in=signed_in, csrf=csrf),
            methods=methods,
            include_in_schema=False,
        )
    app.add_route("/assets/{name}", pages.asset, methods=get, include_in_schema=False)


class Pages:
    """The handlers; one instance per mounted application."""

    def __init__(self, cs: Countersign, sessions: Sessions) -> None:
        self.cs = cs
        self.sessions = sessions
        self.templates = Environment(
            loader=PackageLoader("countersign.infrastructure.entrypoints.web", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        static = resources.files("countersign.infrastructure.entrypoints.web") / "static"
        self.assets = {name: (static / name).read_bytes() for name in _ASSETS}
        self.asset_version = {
            name: hashlib.sha256(body).hexdigest()[:12] for name, body in self.assets.items()
        }

    # -- plumbing -------------------------------------------------------------------------------

    def endpoint(
        self, handler: Handler, *, signed_in: bool, csrf: bool
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            form: dict[str, str] = {}
            too_large = False
            if request.method == "POST":
                try:
                    form = await _read_form(request)
                except _FormTooLargeError:
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
            if too_large:
                raise PageError("too_large", 413)
            visit.user = self._user(visit.session)
            if signed_in and visit.user is None:
                # Before the CSRF check: a signed-out visitor (a revoked or replayed session
                # among them) is sent to sign in, whatever the form carried.
                target = "/sign-in"
                if request.method == "GET" and request.url.path != "/":
                    target += "?" + urlencode({"next": _path_with_query(request)})
                response: Response = _redirect(target)
            elif csrf and not visit.session.csrf_ok(form.get("csrf_token")):
                raise PageError("csrf", 403)
            else:
                response = handler(visit)
        except PageError as error:
            response = self._error(visit, error.kind, error.status)
        except NotFoundError:
            response = self._error(visit, "not_found", 404)
        except ForbiddenError:
            response = self._error(visit, "forbidden", 403)
        except ConcurrencyConflictError:
            response = self._error(visit, "busy", 503)
            response.headers["Retry-After"] = "1"
        except ProjectionStoppedError as stopped:
            log.error("projection stopped (request %s): %s", correlation_id_of(request), stopped)
            response = self._error(visit, "unavailable", 503)
        except Exception as error:
            reference = correlation_id_of(request)
            if isinstance(error, CorruptRecordError):
                reference = error.correlation_id
            log.exception(
                "internal error on %s %s, correlation id %s",
                request.method,
                request.url.path,
                reference,
            )
            response = self._error(visit, "internal", 500, reference=reference)
        if not loaded:  # the session could not be read: leave the browser's cookie alone
            visit.session.issue = False
            return self._finish(visit, response, save=False)
        return self._finish(visit, response)

    def _finish(self, visit: Visit, response: Response, *, save: bool = True) -> Response:
        session = visit.session
        try:
            if save:
                self.sessions.save(session)
        except Exception:
            reference = correlation_id_of(visit.request)
            log.exception("the session could not be stored, correlation id %s", reference)
            response = self._error(visit, "internal", 500, reference=reference)
            session.issue = False  # the id it would send names nothing stored
        cookie = self.sessions.header(session)
        if cookie is not None:
            response.headers.append("set-cookie", cookie)
        if response.headers.get("content-type", "").startswith("text/html") or (
            300 <= response.status_code < 400
        ):
            for name, value in SECURITY_HEADERS.items():
                response.headers[name] = value
            if self.sessions.secure:
                response.headers["Strict-Transport-Security"] = "max-age=31536000"
        return response

    def _user(self, session: Session) -> User | None:
        email, slug = session.email, session.organization
        if not session.signed_in or not email or not slug:
            return None
        try:
            organization = self.cs.store.read(Organization.create_id(slug), Organization)
        except NotFoundError:
            organization = None
        member = organization.member(email) if organization is not None else None
        if organization is None or member is None:
            log.info("a session ended: its person is no longer a member of %s", slug)
            session.end()  # removed from the club, or the club is gone: signed out for good
            return None
        if organization.version != session.org_version:
            if self._removed_since(organization, email, session.org_version):
                log.info("a session ended: its person was removed from %s and added again", slug)
                session.end()
                return None
            session.confirm_membership(organization.version)
        return User(email=member.email, name=member.name, organization=organization, member=member)

    def _removed_since(self, organization: Organization, email: str, version: int) -> bool:
        """Was ``email`` removed from the club after ``version`` (and perhaps added again)?"""
        events = self.cs.app.events.get(organization.id, gt=version, lte=organization.version)
        return any(
            type(event).__name__ == "MemberRemoved" and getattr(event, "email", None) == email
            for event in events
        )

    def render(self, visit: Visit, template: str, status: int = 200, **context: Any) -> Response:
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
            "email_chat": None,
            "nav": None,
        }
        if visit.user is not None and visit.user.may(Permission.PREPARE_BROADCASTS):
            form_id = BroadcastForm.create_id(visit.user.organization.id)
            base["email_chat"] = f"/chat/{Section.EMAIL_BROADCASTS}/{form_id}"
        base.update(context)
        html = self.templates.get_template(template).render(**base)
        return HTMLResponse(html, status_code=status)

    def _error(self, visit: Visit, kind: str, status: int, reference: str = "") -> Response:
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

    def _notice(self, visit: Visit, proposal_id: str | None = None) -> str | None:
        """The one-shot notice the previous action left, if it belongs on this page."""
        flash = visit.session.data.get("flash")
        if not isinstance(flash, dict):
            return None
        if flash.get("proposal") != proposal_id:
            return None
        visit.session.pop("flash")
        return visit.t(f"notice.{flash.get('kind', '')}")

    @staticmethod
    def _flash(visit: Visit, kind: str, proposal_id: str | None = None) -> None:
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

    # -- signing in and out ---------------------------------------------------------------------

    def sign_in_form(self, visit: Visit) -> Response:
        if visit.user is not None:
            return _redirect(_safe_next(visit.query("next", 2000)))
        flash = visit.session.data.get("flash")
        notice = None
        if isinstance(flash, dict) and flash.get("kind") in _SIGN_IN_NOTICES:
            visit.session.pop("flash")
            notice = visit.t(f"sign_in.{flash['kind']}")
        return self.render(
            visit,
            "sign_in.html",
            next=_safe_next(visit.query("next", 2000)),
            email="",
            error=None,
            notice=notice,
        )

    def sign_in(self, visit: Visit) -> Response:
        email = visit.form.get("email", "").strip().lower()[:320]
        password = visit.form.get("password", "")
        target = _safe_next(visit.form.get("next", ""))
        client = visit.request.client.host if visit.request.client else "unknown"
        throttle = SignInThrottle(self.cs.sql, self.cs.proposals.clock)
        attempt = throttle.admit(email, client)
        if isinstance(attempt, Refusal):
            # Refused before any password check: no Argon2 work, and nothing that depends on
            # whether the email exists (not even the email itself) goes into the page.
            log.info(
                "sign-in refused, too many failures for this %s; retry after %d s"
                " (request %s, client %s)",
                attempt.scope,
                attempt.retry_after,
                correlation_id_of(visit.request),
                client,
            )
            minutes = attempt.minutes
            error = (
                visit.t("sign_in.throttled_one")
                if minutes == 1
                else visit.t("sign_in.throttled", minutes=minutes)
            )
            refused = self.render(visit, "sign_in.html", 429, next=target, email="", error=error)
            refused.headers["Retry-After"] = str(attempt.retry_after)
            return refused
        clubs = self._clubs_of(email) if verify_password(self.cs, email, password) else []
        if not clubs:
            log.info(
                "failed sign-in (request %s, client %s)", correlation_id_of(visit.request), client
            )
            return self.render(
                visit,
                "sign_in.html",
                next=target,
                email=email,
                error=visit.t("sign_in.failed"),
            )
        throttle.succeeded(attempt)
        if len(clubs) == 1:
            visit.session.sign_in(email, clubs[0].slug, clubs[0].version)
            return _redirect(target)
        visit.session.choosing(
            email,
            {"clubs": [c.slug for c in clubs], "at": self.sessions.now(), "next": target},
        )
        return self.render(
            visit,
            "choose_club.html",
            clubs=[{"slug": c.slug, "name": c.name} for c in clubs],
        )

    def choose_club(self, visit: Visit) -> Response:
        choice = visit.session.pop("choose")
        email = visit.session.email
        slug = visit.form.get("club", "")
        fresh = (
            isinstance(choice, dict)
            and email is not None
            and self.sessions.now() - int(choice.get("at", 0)) < CHOOSE_CLUB_SECONDS
        )
        if not fresh or email is None or slug not in choice.get("clubs", []):
            self._flash(visit, "expired")
            return _redirect("/sign-in")
        club = next((c for c in self._clubs_of(email) if c.slug == slug), None)
        if club is None:
            self._flash(visit, "expired")
            return _redirect("/sign-in")
        visit.session.sign_in(email, slug, club.version)
        return _redirect(_safe_next(str(choice.get("next", ""))))

    def _clubs_of(self, email: str) -> list[Organization]:
        """The clubs this person belongs to now (a person is known by email across clubs)."""
        clubs = []
        for organization_id in self.cs.store.ids_with_events(Organization, ["Registered"]):
            try:
                organization = self.cs.store.read(organization_id, Organization)
            except NotFoundError:
                continue
            if organization.member(email) is not None:
                clubs.append(organization)
        return sorted(clubs, key=lambda c: str(c.name))

    def sign_out(self, visit: Visit) -> Response:
        visit.session.sign_out()
        self._flash(visit, "signed_out")
        return _redirect("/sign-in")

    def sign_out_everywhere(self, visit: Visit) -> Response:
        """End every session of this person: this browser's, other devices', other clubs'."""
        user = visit.signed_in
        ended = self.sessions.revoke_person(user.email)
        log.info(
            "%s signed out everywhere: %d session(s) ended (request %s)",
            user.email,
            ended,
            correlation_id_of(visit.request),
        )
        visit.session.sign_out()
        self._flash(visit, "signed_out_everywhere")
        return _redirect("/sign-in")

    def switch_language(self, visit: Visit) -> Response:
        chosen = visit.form.get("lang", "")
        response = _redirect(_safe_next(visit.form.get("next", "")))
        if chosen in LANGUAGES:
            response.headers.append("set-cookie", self.sessions.language_header(chosen))
        return response

    # -- the inbox ------------------------------------------------------------------------------

    def inbox(self, visit: Visit) -> Response:
        user = visit.signed_in
        readable = _readable_sections(user)
        section = visit.query("section")
        if section not in readable:
            section = ""
        page = _page_number(visit.query("page"))
        items: list[dict[str, Any]] = []
        total = 0
        if readable:
            for runner in self.cs.projection_runners(["browser_view"]):
                runner.catch_up()
            if section:
                chosen: str | None = section
            elif len(readable) == len(Section):
                chosen = None  # every section: no filter
            else:
                chosen = section = readable[0]
            found = self.cs.read_models.inbox(
                str(user.organization.id),
                self.cs.proposals.clock.now(),
                section=chosen,
                page=page,
                page_size=PAGE_SIZE,
            )
            now = self.cs.proposals.clock.now()
            items = [proposal_view(item, visit.t, visit.language, now) for item in found["items"]]
            total = int(found["total"])
        pages = max(1, math.ceil(total / PAGE_SIZE))

        def page_link(number: int) -> str:
            query = {"page": str(number)}
            if section:
                query["section"] = section
            return "/?" + urlencode(query)

        notice = self._notice(visit)
        return self.render(
            visit,
            "inbox.html",
            items=items,
            total=total,
            page=page,
            pages=pages,
            newer=page_link(page - 1) if page > 1 else None,
            older=page_link(page + 1) if page < pages else None,
            sections=readable if len(readable) > 1 else [],
            all_tab=len(readable) == len(Section),
            section=section,
            readable=readable,
            may_refund=user.may(Permission.REFUND_ORDERS),
            notice=notice,
            nav="inbox",
        )

    def open_order(self, visit: Visit) -> Response:
        """The order assistant for an order number (its reference) or id, in this club."""
        user = visit.signed_in
        reference = visit.query("ref").strip()
        order_id: UUID | None = None
        if reference:
            try:
                order_id = UUID(reference)
            except ValueError:
                order_id = Order.create_id(user.organization.id, reference)
            try:
                order = self.cs.store.read(order_id, Order)
            except NotFoundError:
                order_id = None
            else:
                if order.organization_id != user.organization.id:
                    order_id = None
        if order_id is None:
            self._flash(visit, "order_missing")
            return _redirect("/")
        return _redirect(f"/chat/{Section.ORDERS}/{order_id}")

    # -- conversations --------------------------------------------------------------------------

    def chat(self, visit: Visit, error: str | None = None, draft: str = "") -> Response:
        user = visit.signed_in
        assistant, scope = self._scope(visit)
        interaction: Interaction | None = None
        wanted = visit.form.get("interaction_id") if error else visit.query("interaction")
        if wanted:
            interaction = self._interaction(wanted, scope, user)
        timeline = self._timeline(visit, interaction) if interaction is not None else []
        section = str(scope.section)
        context: dict[str, Any] = {
            "section": section,
            "resource_id": str(scope.resource_id),
            "interaction_id": str(interaction.id) if interaction is not None else "",
            "timeline": timeline,
            "order": None,
            "club": None,
            "note": self._revision_note(visit, interaction),
            "error": error,
            "draft": draft,
            "max_message": MAX_MESSAGE,
            "action": f"/chat/{section}/{scope.resource_id}",
            "nav": "email" if assistant.section == Section.EMAIL_BROADCASTS else None,
        }
        if assistant.section == Section.ORDERS:
            order = self.cs.club.order(user.organization.slug, str(scope.resource_id))
            context["order"] = order_view(investigation(order), visit.t)
        else:
            form = self.cs.store.read(scope.resource_id, BroadcastForm)
            context["club"] = {
                "leagues": self.cs.club.leagues(user.organization.slug),
                "subject": form.subject,
                "body": form.body,
            }
        return self.render(visit, "chat.html", 422 if error else 200, **context)

    def send_message(self, visit: Visit) -> Response:
        user = visit.signed_in
        _, scope = self._scope(visit)
        message = visit.form.get("message", "").replace("\r\n", "\n").strip()
        wanted = visit.form.get("interaction_id", "").strip() or None
        if wanted:
            self._interaction(wanted, scope, user)  # a foreign conversation is a 404
        if not message:
            return self.chat(visit, error=visit.t("chat.message_required"))
        if len(message) > MAX_MESSAGE:
            error = visit.t("chat.message_too_long", limit=MAX_MESSAGE)
            return self.chat(visit, error=error, draft=message)
        try:
            report = self.cs.assistant.turn(
                organization=user.organization.slug,
                actor=user.email,
                section=str(scope.section),
                resource_id=str(scope.resource_id),
                message=message,
                interaction_id=wanted,
            )
        except UnknownOperationError:
            raise PageError("not_found", 404) from None
        query = urlencode({"interaction": report.interaction_id})
        return _redirect(f"/chat/{scope.section}/{scope.resource_id}?{query}#latest")

    def _scope(self, visit: Visit) -> tuple[SectionAssistant, Scope]:
        """The section's assistant and a resource of the person's club; else the 404 page."""
        user = visit.signed_in
        try:
            assistant = ASSISTANTS[Section(visit.params.get("section", ""))]
            resource_id = UUID(visit.params.get("resource_id", ""))
        except (ValueError, KeyError):
            raise PageError("not_found", 404) from None
        scope = Scope(user.organization.id, assistant.section, resource_id)
        for contract in assistant.contracts:
            contract.load(scope, self.cs.store)  # NotFoundError unless it is this club's
        if not all(user.may(contract.permission) for contract in assistant.contracts):
            raise PageError("forbidden", 403)
        return assistant, scope

    def _interaction(self, wanted: str, scope: Scope, user: User) -> Interaction:
        try:
            interaction = self.cs.store.read(UUID(wanted.strip()), Interaction)
        except ValueError:
            raise PageError("not_found", 404) from None
        same = (
            interaction.organization_id == scope.organization_id
            and interaction.section == str(scope.section)
            and interaction.resource_id == scope.resource_id
            and interaction.manager == user.email
        )
        if not same:
            raise PageError("not_found", 404)
        return interaction

    def _timeline(self, visit: Visit, interaction: Interaction) -> list[dict[str, Any]]:
        """The conversation in order, each proposal card after the message that presents it."""
        now = self.cs.proposals.clock.now()
        entries: list[dict[str, Any]] = []
        cards: list[dict[str, Any]] = []
        for event in self.cs.store.history(interaction.id):
            fields = event.fields
            if event.type == "ManagerMessaged":
                entries.append({"kind": "manager", "text": str(fields.get("text", ""))})
            elif event.type == "AssistantReplied":
                author = "application" if fields.get("author") == "application" else "model"
                entries.append({"kind": author, "text": str(fields.get("text", ""))})
                if author == "application":
                    entries += cards
                    cards = []
            elif event.type == "ToolCalled" and fields.get("outcome") == "read":
                key = f"chat.read.{fields.get('name', '')}"
                label = visit.t(key)
                if label != key:
                    entries.append({"kind": "tool", "text": label})
            elif event.type == "ProposalCreated":
                proposal = self._proposal_of(visit.signed_in, str(fields.get("proposal_id", "")))
                if proposal is not None:
                    view = proposal_view(proposal_record(proposal), visit.t, visit.language, now)
                    cards.append({"kind": "card", "proposal": view})
            elif event.type == "TurnEnded":
                entries += cards
                cards = []
        return entries + cards

    def _revision_note(self, visit: Visit, interaction: Interaction | None) -> str | None:
        """The application's word on the conversation's last proposal, if it was not executed."""
        if interaction is None or interaction.last_proposal_id is None:
            return None
        proposal = self._proposal_of(visit.signed_in, interaction.last_proposal_id)
        if proposal is None:
            return None
        if proposal.status == ProposalStatus.EXPIRED:
            return visit.t("chat.expired_note")
        outcome = proposal.outcome or {}
        if outcome.get("kind") != "revision_required":
            return None
        reason = RevisionReason.model_validate(outcome["reason"])
        return visit.t("chat.revision_note", reason=reason_text(reason, visit.language))

    def _proposal_of(self, user: User, proposal_id: str) -> Proposal | None:
        try:
            proposal = self.cs.store.read(UUID(proposal_id.strip()), Proposal)
        except (ValueError, NotFoundError):
            return None
        return proposal if proposal.organization_id == user.organization.id else None

    # -- reviewing, approving, declining --------------------------------------------------------

    def _owned(self, visit: Visit) -> Proposal:
        """The club's proposal named in the path; anything else is the same 404 page."""
        proposal = self._proposal_of(visit.signed_in, visit.params.get("proposal_id", ""))
        if proposal is None:
            raise PageError("not_found", 404)
        return proposal

    @staticmethod
    def _may_read(user: User, proposal: Proposal) -> bool:
        contract = REGISTRY.get(proposal.kind)
        return user.may(Permission.READ_AUDIT) or (
            contract is not None and user.may(contract.permission)
        )

    @staticmethod
    def _may_decide(user: User, proposal: Proposal) -> bool:
        contract = REGISTRY.get(proposal.kind)
        return contract is not None and user.may(contract.permission)

    def review(self, visit: Visit) -> Response:
        user = visit.signed_in
        proposal = self._owned(visit)
        if not self._may_read(user, proposal):
            raise PageError("forbidden", 403)
        now = self.cs.proposals.clock.now()
        view = proposal_view(proposal_record(proposal), visit.t, visit.language, now)
        return self.render(
            visit,
            "review.html",
            proposal=view,
            may_decide=self._may_decide(user, proposal),
            conversation=self._conversation_link(user, proposal),
            notice=self._notice(visit, view["id"]),
            refresh=3 if view["status"] == "executing" else None,
            max_note=MAX_NOTE,
        )

    def _conversation_link(self, user: User, proposal: Proposal) -> str | None:
        try:
            interaction = self.cs.store.read(UUID(proposal.interaction_id), Interaction)
        except (ValueError, NotFoundError):
            return None
        if interaction.organization_id != user.organization.id or interaction.manager != user.email:
            return None
        query = urlencode({"interaction": str(interaction.id)})
        return f"/chat/{interaction.section}/{interaction.resource_id}?{query}"

    def approve(self, visit: Visit) -> Response:
        return self._decide(visit, decline=False)

    def decline(self, visit: Visit) -> Response:
        return self._decide(visit, decline=True)

    def _decide(self, visit: Visit, *, decline: bool) -> Response:
        user = visit.signed_in
        proposal = self._owned(visit)
        pid = str(proposal.id)
        try:
            if decline:
                note = visit.form.get("note", "").replace("\r\n", "\n").strip()[:MAX_NOTE]
                report = self.cs.proposals.decline(pid, user.email, note or None)
            else:
                report = self.cs.proposals.approve(pid, user.email)
        except ConcurrencyConflictError:
            self._flash(visit, "busy", pid)
            return _redirect(f"/proposals/{pid}")
        if report.result == "not_approvable" and report.reason == "not_found":
            raise PageError("not_found", 404)
        kind = report.reason if report.result == "not_approvable" else report.result
        log.info(
            "%s %s %s: %s (request %s)",
            user.email,
            "declined" if decline else "approved",
            pid,
            kind,
            correlation_id_of(visit.request),
        )
        self._flash(visit, str(kind), pid)
        return _redirect(f"/proposals/{pid}")

    def status(self, visit: Visit) -> Response:
        user = visit.signed_in
        proposal = self._owned(visit)
        if not self._may_read(user, proposal):
            raise PageError("forbidden", 403)
        now = self.cs.proposals.clock.now()
        view = proposal_view(proposal_record(proposal), visit.t, visit.language, now)
        return self.render(
            visit,
            "status.html",
            proposal=view,
            checked_at=format_time(now),
            refresh=5 if view["status"] in ("reconciling", "executing") else None,
        )


# -- helpers ------------------------------------------------------------------------------------


async def _read_form(request: Request) -> dict[str, str]:
    """An urlencoded form, at most MAX_FORM_BYTES; the first value of each field wins."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise _FormTooLargeError
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/x-www-form-urlencoded":
        return {}
    try:
        pairs = parse_qsl(
            body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=20
        )
    except ValueError:
        raise _FormTooLargeError from None
    form: dict[str, str] = {}
    for name, value in pairs:
        form.setdefault(name, value)
    return form


def _redirect(target: str) -> Response:
    return RedirectResponse(target, status_code=303)


def _path_with_query(request: Request) -> str:
    path = quote(request.url.path, safe="/-_.~")
    return path + (f"?{request.url.query}" if request.url.query else "")


def _safe_next(value: str) -> str:
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


def _page_number(value: str) -> int:
    return int(value) if value.isascii() and value.isdigit() and 0 < len(value) < 7 else 1


def _readable_sections(user: User) -> list[str]:
    """Sections whose proposals this person may see: their operations' permission, or audit."""
    return [
        str(section)
        for section in Section
        if user.may(Permission.READ_AUDIT)
        or any(user.may(c.permission) for c in REGISTRY.values() if c.section == section)
    ]
