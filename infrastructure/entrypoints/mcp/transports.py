"""How the MCP server is reached: stdio for one member, streamable HTTP for API tokens.

* **stdio** (``countersign mcp --org ORG --as EMAIL``): the agent's host launches the command;
  every request acts as that member of that club, with the member's own permissions, read
  afresh on every call.
* **streamable HTTP** (``countersign mcp --http --port N``): every request carries one of the
  API tokens the JSON API takes, as ``Authorization: Bearer cst_...``; ``BearerGate`` checks it
  with the same ``authenticate`` before the SDK reads a byte, answers 401 without a valid one,
  and hands the request the token's member and scopes. A session is bound to the token that
  opened it, for as long as it lives: another token naming its session id is answered as for
  an unknown session. Each token and each club may hold a few open sessions (sessions.py),
  and each token may have ``COUNTERSIGN_REQUESTS_IN_FLIGHT`` POSTs (its calls) under way at
  once (``infrastructure.in_flight``): the next is answered 429 at once, before its token is
  looked up, so one agent's calls cannot fill the server's threads that every club shares.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import uvicorn
from anyio import to_thread
from countersign.application.authorization import Caller
from countersign.application.errors import new_correlation_id
from countersign.application.reports import ProposalCreated
from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.mcp.server import CountersignTools
from countersign.infrastructure.entrypoints.mcp.sessions import SessionBook, SessionLimits
from countersign.infrastructure.identity.tokens import (
    ServicePrincipal,
    authenticate,
    ensure_token_tables,
    record_action,
    say_not_recorded,
)
from countersign.infrastructure.in_flight import RETRY_AFTER, InFlight, in_flight_from_env
from countersign.infrastructure.observability.logs import say
from countersign.infrastructure.observability.outages import OutageLog
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    unavailable_reason,
)
from countersign.infrastructure.request_deadline import connection_options
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("countersign.mcp")

PATH = "/mcp"
PRINCIPAL = "countersign_principal"
#: Longer than any token (``cst_`` + 16 + 1 + 43 characters): not looked up at all.
_MAX_TOKEN = 200
_CHALLENGE = 'Bearer realm="countersign"'


def serve_stdio(cs: Countersign, caller: Caller, *, language: str = "en") -> None:
    """Serve one member over this process's stdin and stdout until the client closes them."""
    server = CountersignTools(cs, lambda ctx: caller, language=language).server()

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def http_app(
    cs: Countersign,
    *,
    host: str = "127.0.0.1",
    language: str = "en",
    limits: SessionLimits | None = None,
) -> BearerGate:
    """The streamable HTTP application at ``/mcp``, behind the bearer-token gate; session
    limits from the environment unless given."""
    ensure_token_tables(cs)
    limits = limits or SessionLimits.from_env()
    in_flight = InFlight(in_flight_from_env())

    def recorded(ctx: ServerRequestContext[Any, Any], created: ProposalCreated) -> None:
        """Log the proposal under the token's name, as the JSON API logs its services'."""
        correlation_id, principal = new_correlation_id(), _principal(ctx)
        try:
            record_action(
                cs,
                principal,
                action="mcp.propose",
                target=created.proposal_id,
                result=created.status,
                correlation_id=correlation_id,
            )
        except Exception as error:  # the proposal stands; the log line says what was not recorded
            say_not_recorded(
                log, error, principal, action="mcp.propose", correlation_id=correlation_id
            )

    tools = CountersignTools(cs, token_caller, language=language, on_proposed=recorded)
    server = tools.server().streamable_http_app(
        streamable_http_path=PATH,
        host=host,
        max_request_body_size=cs.settings.api_max_body,
        session_idle_timeout=limits.idle_seconds,
    )
    # No path is redirected (the router's 307 to http://<Host>/mcp named the address the
    # request's Host header said, and a client follows it with its body); /mcp/ is served as
    # /mcp (BearerGate).
    server.router.redirect_slashes = False
    return BearerGate(server, cs, limits, in_flight=in_flight, language=language)


#: The streamable HTTP server's first line, in the language of the command that started it.
_SERVING = Localized(
    "countersign: MCP over streamable HTTP at {address} (Authorization: Bearer <API token>); "
    "Ctrl-C stops",
    "countersign : MCP en HTTP diffusable à {address} (Authorization: Bearer <jeton d'API>) ; "
    "Ctrl-C arrête",
)


def serve_http(cs: Countersign, *, host: str, port: int, language: str = "en") -> None:
    """Serve streamable HTTP on ``host:port`` until interrupted (its settings read first: a
    wrong one stops it before it says it serves)."""
    app = http_app(cs, host=host, language=language)
    options = connection_options()  # the read deadline: refused now if it is wrong
    say(_SERVING.text(language, address=f"http://{host}:{port}{PATH}"))
    uvicorn.run(app, host=host, port=port, log_level="warning", **options)


def token_caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The member and scopes of the token the gate checked on this request."""
    return _principal(ctx).caller


def _principal(ctx: ServerRequestContext[Any, Any]) -> ServicePrincipal:
    request = ctx.request
    state = request.scope.get("state", {}) if request is not None else {}
    principal = state.get(PRINCIPAL)
    if not isinstance(principal, ServicePrincipal):  # not behind the gate: refuse
        raise MCPError(INVALID_REQUEST, "unauthenticated")
    return principal


class BearerGate:
    """Pure ASGI: a valid API token on every HTTP request, or 401 before the SDK sees it; a
    session used only by the token that opened it; a token's and a club's sessions within
    their limits (sessions.py), or 429."""

    def __init__(
        self,
        app: ASGIApp,
        cs: Countersign,
        limits: SessionLimits | None = None,
        *,
        in_flight: InFlight | None = None,
        language: str = "en",
    ) -> None:
        self.app = app
        self.cs = cs
        self.sessions = SessionBook(limits or SessionLimits())
        #: Each token's POSTs under way (``None``: unbounded). A GET is the client's standing
        #: stream of a session, open for as long as the client likes: not counted.
        self.in_flight = in_flight
        self.language = language

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: the SDK's session manager starts there
            await self.app(scope, receive, send)
            return
        if scope.get("path") == PATH + "/":
            # The endpoint with a slash added, as some MCP clients are set up (it reached it
            # through the router's redirect before it was turned off): the same endpoint.
            scope = {**scope, "path": PATH, "raw_path": PATH.encode()}
        authorization, session = _headers(scope)
        counted = self.in_flight if scope.get("method") == "POST" else None
        if counted is None or authorization is None:
            await self._gated(scope, receive, send, authorization, session)
            return
        if not counted.enter(authorization):
            message = _TOO_MANY.text(self.language, limit=counted.limit)
            retry = {"Retry-After": str(RETRY_AFTER)}
            drained = await _drain(receive)
            await _refuse(send, 429, "too_many_requests", retry, drained=drained, message=message)
            return
        try:
            await self._gated(scope, receive, send, authorization, session)
        finally:
            counted.leave(authorization)

    async def _gated(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        authorization: str | None,
        session: str | None,
    ) -> None:
        """The token checked, then the request on its session or opening one."""
        try:
            principal = await to_thread.run_sync(self._identify, authorization)
        except Exception as error:
            await _unidentified(send, error, self.cs.outages)
            return
        if principal is None:
            await _refuse(send, 401, "unauthenticated", _challenge(authorization))
            return
        if principal.may_decide:
            # A token that can approve never goes to an agent: it would cross the line.
            challenge = {"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'}
            await _refuse(send, 401, "approver_token", challenge, drained=await _drain(receive))
            return
        scope.setdefault("state", {})[PRINCIPAL] = principal
        if session:
            await self._on_session(session, principal, scope, receive, send)
        else:
            await self._opening(principal, scope, receive, send)

    async def _on_session(
        self, session: str, principal: ServicePrincipal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """A request naming a session: only its own token's, and only while it lives."""
        if self.sessions.owner(session) != principal.token_id:
            await _refuse(send, 404, "not_found", {}, drained=await _drain(receive))
            return
        status: list[int] = []

        async def watching(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        self.sessions.begin(session)
        try:
            await self.app(scope, receive, watching)
        finally:
            method = str(scope.get("method", "")).upper()
            self.sessions.end(session, method, status[0] if status else None)

    async def _opening(
        self, principal: ServicePrincipal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """A request without a session (an ``initialize`` opens one): within the limits."""
        token, club = principal.token_id, principal.organization_slug
        if not self.sessions.reserve(token, club):
            retry = {"Retry-After": str(max(int(self.sessions.limits.idle_seconds), 1))}
            await _refuse(send, 429, "too_many_sessions", retry, drained=await _drain(receive))
            return

        async def binding(message: Message) -> None:
            if message["type"] == "http.response.start" and int(message["status"]) < 400:
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        self.sessions.opened(value.decode("latin-1"), token, club)
            await send(message)

        try:
            await self.app(scope, receive, binding)
        finally:
            self.sessions.unreserve(token, club)

    def _identify(self, authorization: str | None) -> ServicePrincipal | None:
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > _MAX_TOKEN:
            return None
        return authenticate(self.cs, token)


def _headers(scope: Scope) -> tuple[str | None, str | None]:
    """The first ``Authorization`` and ``Mcp-Session-Id`` headers (latin-1, as HTTP has it)."""
    found: dict[bytes, str] = {}
    for name, value in scope.get("headers", []):
        key = name.lower()
        if key in (b"authorization", b"mcp-session-id") and key not in found:
            found[key] = value.decode("latin-1")
    return found.get(b"authorization"), found.get(b"mcp-session-id")


async def _unidentified(send: Send, error: Exception, outages: OutageLog) -> None:
    """The token's check failed: the database out of reach or a lock held past
    ``COUNTERSIGN_DATABASE_TIMEOUT`` is 503 with Retry-After, as the JSON API answers it (a
    client retries); anything else 500 with a correlation id, the details in the log only."""
    if database_unavailable(error):
        outages.warning(
            log, unavailable_reason(error), "database unavailable while checking a token"
        )
        await _refuse(send, 503, "database_unavailable", {"Retry-After": "5"})
        return
    correlation_id = new_correlation_id()
    log.error("checking a token failed (correlation id %s)", correlation_id, exc_info=error)
    await _refuse(send, 500, "internal_error", {}, correlation_id=correlation_id)


def _challenge(authorization: str | None) -> dict[str, str]:
    if authorization:
        return {"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'}
    return {"WWW-Authenticate": _CHALLENGE}


#: The most of a refused request's body read so that its connection can stay open.
_DRAIN_LIMIT = 64 * 1024


async def _drain(receive: Receive) -> bool:
    """Read a refused request's body, for a caller whose token holds: a server that answers
    and closes with the body unread makes the kernel reset the connection, and the client
    may then see "connection reset" instead of the answer (seen in the tests). False when the
    body is larger than ``_DRAIN_LIMIT``, or the client went away: then the answer closes."""
    read = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return False
        read += len(message.get("body", b""))
        if read > _DRAIN_LIMIT:
            return False
        if not message.get("more_body", False):
            return True


#: A token with as many calls under way as it may have: said in the server's language.
_TOO_MANY = Localized(
    "This token already has {limit} requests under way, as many as it may have at once "
    "(COUNTERSIGN_REQUESTS_IN_FLIGHT). Nothing was done: wait for an answer, then send this "
    "again (see Retry-After).",
    "Ce jeton a déjà {limit} requêtes en cours, autant qu'il peut en avoir à la fois "
    "(COUNTERSIGN_REQUESTS_IN_FLIGHT). Rien n'a été fait : attendez une réponse, puis "
    "renvoyez celle-ci (voir Retry-After).",
)


async def _refuse(
    send: Send,
    status: int,
    error: str,
    headers: dict[str, str],
    *,
    drained: bool = False,
    correlation_id: str | None = None,
    message: str | None = None,
) -> None:
    """Answer ``error`` (``message``: said instead of its usual words); an unauthenticated
    caller's body is never read, and its connection closes (``drained``: the body was read,
    so the connection may stay open)."""
    messages = {
        "unauthenticated": "An API token is required: Authorization: Bearer cst_... "
        "(unknown, revoked, or its issuer left).",
        "not_found": "Session not found.",
        "approver_token": "This is an approver token, which can approve: MCP does not take it."
        " Issue an agent token instead (countersign tokens issue without --approver).",
        "too_many_sessions": "This token, or its club, has as many open MCP sessions as it "
        "may: end one (DELETE /mcp with its Mcp-Session-Id) or let an idle one expire.",
        "database_unavailable": "The database could not be reached just now, so the token "
        "could not be checked: try again (see Retry-After). Nothing was done.",
        "internal_error": "Something went wrong on the server while checking the token; "
        "nothing was done. Quote the correlation id to the operator.",
    }
    document = {"error": error, "message": message or messages[error]}
    if correlation_id is not None:
        document["correlation_id"] = correlation_id
    body = json.dumps(document).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if not drained:
        raw.append((b"connection", b"close"))  # the body, if any, is not read: stop here
    raw += [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
