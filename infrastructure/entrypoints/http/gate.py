"""The gate in front of the JSON API: a bounded body, read only for an authenticated caller.

``ApiGate`` is a pure ASGI middleware for every path under ``/api/v1`` (known routes or not).
Before anything else looks at a request it answers 400 to a path or query string holding
a NUL (which no id or value has, and no database stores: ``domain.storable_text``), then it

1. refuses a declared ``Content-Length`` over the limit (413), without reading the body, and
   a request past its token's share of requests under way at once (429, ``Retry-After``;
   ``infrastructure.in_flight``), before the token is even looked up;
2. checks the bearer token (401), still without reading a byte of the body, so an anonymous
   caller can make the server neither read nor parse anything;
3. reads the body itself, counting the bytes of each ``http.request`` message as it arrives,
   and answers 413 as soon as the count passes the limit, whatever ``Content-Length`` said
   (or when none was sent: chunked transfer);
4. only then hands the request on, with the body it read replayed as one message.

So FastAPI never parses more than ``max_body`` bytes, and never parses a body at all for a
caller without a valid token. A refusal before the body is read says ``Connection: close``:
the server then stops reading the rest instead of draining it.

A request that says it has no body (``Content-Length: 0``, or an HTTP/1 request with neither a
length nor a transfer coding: a GET, an approve without options) has nothing to read before
the route, so step 2 waits: the token's check is left pending (``auth.TokenCheck``) and
made in the route's own worker thread, just before its handler (``auth.GatedRoute``), one
hop to a thread per request instead of two. Nothing the request asks for runs before it;
whatever answers the request first waits for the check, and a token that is not valid gets
this gate's own 401 in place of any other answer, as if the check had come first; a body
the route reads after all goes through this gate, checked and counted as in steps 2 and 3
(``_checked_by_the_route``). It is done only while every route of the application that may
answer under ``/api/v1`` is a ``GatedRoute`` (``routes_gated``): another kind would run
before a pending check, so with one of them there, every token is checked first.
"""

from __future__ import annotations

import logging

from countersign.domain.storable_text import unstorable_target
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_in
from countersign.infrastructure.entrypoints.http.auth import GatedRoute, TokenCheck, pending_check
from countersign.infrastructure.entrypoints.http.hops import in_thread
from countersign.infrastructure.entrypoints.http.problems import (
    API_PREFIX,
    ProblemError,
    is_api_path,
    problem_response,
)
from countersign.infrastructure.in_flight import RETRY_AFTER, InFlight
from fastapi.routing import iter_route_contexts
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("countersign.http")

DEFAULT_MAX_BODY = 64 * 1024
UNSTORABLE_TARGET = "The path or the query string holds a NUL character, which no id or value has."
_CLOSE = {"Connection": "close"}


class ApiGate:
    """See the module docstring. ``max_body``: the most bytes an API request body may have."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        cs: Countersign,
        max_body: int = DEFAULT_MAX_BODY,
        in_flight: InFlight | None = None,
    ) -> None:
        self.app = app
        self.cs = cs
        self.max_body = max_body
        #: Each token's requests under way (``None``: unbounded, an application assembled
        #: without the setting).
        self.in_flight = in_flight
        #: Whether every route that answers under /api/v1 makes a pending check before it
        #: runs (``auth.GatedRoute``); learnt from the application on its first API request.
        self._routes_gated: bool | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api_path(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        if unstorable_target(str(scope.get("path", "")), bytes(scope.get("query_string", b""))):
            await self._refuse(scope, send, ProblemError("bad-request", UNSTORABLE_TARGET))
            return
        lengths, authorization, coded = _headers(scope)
        if lengths:
            if not all(value.isascii() and value.strip().isdigit() for value in lengths):
                await self._refuse(scope, send, ProblemError("bad-request"))
                return
            # (More than 15 digits is more than any limit; int() refuses 4,300 digits.)
            if any(len(v.strip()) > 15 or int(v) > self.max_body for v in lengths):
                await self._refuse(scope, send, self._too_large())
                return
            bodyless = all(int(value) == 0 for value in lengths)
        else:
            bodyless = not coded and str(scope.get("http_version", "")) in ("1.0", "1.1")
        counted = self.in_flight if authorization is not None else None
        if counted is not None and authorization is not None:
            if not counted.enter(authorization):
                await self._refuse(scope, send, self._too_many(counted.limit))
                return
            try:
                await self._pass(scope, receive, send, authorization, bodyless, bool(lengths))
            finally:
                counted.leave(authorization)
            return
        await self._pass(scope, receive, send, authorization, bodyless, bool(lengths))

    async def _pass(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        authorization: str | None,
        bodyless: bool,
        said_length: bool,
    ) -> None:
        """Steps 2 to 4 of the module docstring."""
        if self._routes_gated is None:
            self._routes_gated = routes_gated(scope.get("app"))
        check = TokenCheck(self.cs, authorization)
        # One request's reads: the organization the token's check reads fresh is the one the
        # route's own checks read (``Countersign.one_request``), without a second query.
        with self.cs.one_request():
            if bodyless and self._routes_gated:
                await self._checked_by_the_route(scope, receive, send, check, said_length)
            elif not await self._refused(scope, send, check):
                await self._read_then_pass(scope, receive, send, check)

    async def _refused(self, scope: Scope, send: Send, check: TokenCheck) -> bool:
        """Step 2, in a hop of its own: whether the token was refused, and answered so."""
        await in_thread(check.settle)
        if check.refusal is None:
            return False
        await self._refuse(scope, send, check.refusal)
        return True

    async def _read_then_pass(
        self, scope: Scope, receive: Receive, send: Send, check: TokenCheck
    ) -> None:
        """Steps 3 and 4 of the module docstring, for a caller whose token was checked."""
        scope.setdefault("state", {})["principal"] = check.found
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nobody to answer
            chunk = message.get("body", b"")
            if len(body) + len(chunk) > self.max_body:
                await self._refuse(scope, send, self._too_large())
                return
            body += chunk
            if not message.get("more_body", False):
                break

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _checked_by_the_route(
        self, scope: Scope, receive: Receive, send: Send, check: TokenCheck, said_empty: bool
    ) -> None:
        """A request that says it has no body, handed on with its token check pending
        (``_Pending``)."""
        scope.setdefault("state", {})["principal"] = check
        pending = _Pending(self, scope, receive, send, check, said_empty=said_empty)
        marked = pending_check.set(check)
        try:
            await pending.answer()
        finally:
            pending_check.reset(marked)

    @staticmethod
    def _too_many(limit: int) -> ProblemError:
        return ProblemError(
            "too-many-requests",
            f"This token already has {limit} requests under way, as many as it may have at "
            "once (COUNTERSIGN_REQUESTS_IN_FLIGHT). Nothing was done: wait for an answer, "
            "then send this again (see Retry-After).",
            headers={"Retry-After": str(RETRY_AFTER)},
        )

    def _too_large(self) -> ProblemError:
        return ProblemError(
            "payload-too-large",
            f"The request body is larger than {self.max_body} bytes, the most this API accepts.",
        )

    async def _refuse(self, scope: Scope, send: Send, refused: ProblemError) -> None:
        """Answer without reading (the rest of) the body, and close the connection after."""
        correlation_id = correlation_id_in(scope)
        response = problem_response(
            refused.kind,
            correlation_id,
            refused.detail,
            headers={**refused.headers, **_CLOSE},
        )
        await response(scope, _no_body, send)


class _Pending:
    """A request handed on with its token check pending.

    The route's hop makes the check (``auth.GatedRoute``). Whatever else answers (the router
    for an unknown path or method, a problem with a parameter, an error) waits for the check,
    in a hop of its own if nothing made it yet, and a refused token's answer is the gate's
    401, in place of the other. Should the route read a body after all, it reads it through
    the gate: the token is checked before any byte of it is (before it is even asked for
    where no length was said; ``Content-Length: 0`` says there is none), and the bytes are
    counted against the limit; a refusal then (401 or 413) ends the body as a disconnection
    would, and the gate's answer replaces the route's.
    """

    def __init__(
        self,
        gate: ApiGate,
        scope: Scope,
        receive: Receive,
        send: Send,
        check: TokenCheck,
        *,
        said_empty: bool,
    ) -> None:
        self.gate, self.scope, self.check, self.said_empty = gate, scope, check, said_empty
        self._receive, self._send = receive, send
        self.too_large: ProblemError | None = None  # met while the route read the body
        self.taken = self.started = self.replaced = False

    def refusal(self) -> ProblemError | None:
        return self.check.refusal or self.too_large

    async def answer(self) -> None:
        try:
            await self.gate.app(self.scope, self.receive, self.send)
        except Exception:
            if self.started:
                raise
            if not self.check.done:
                await in_thread(self.check.settle)
            instead = self.refusal()
            if instead is None:
                raise
            await self.gate._refuse(self.scope, self._send, instead)

    async def receive(self) -> Message:
        if self.taken:
            return await self._receive()  # (after the body: a disconnection, if any)
        self.taken = True
        if not self.said_empty and not self.check.done:
            await in_thread(self.check.settle)  # a body of no said length: the token first
        body = bytearray()
        while self.check.refusal is None:
            message = await self._receive()
            if message["type"] != "http.request":
                return message
            chunk = message.get("body", b"")
            if chunk and not self.check.done:
                await in_thread(self.check.settle)  # bytes where none were said: token first
                if self.check.refusal is not None:
                    break
            if len(body) + len(chunk) > self.gate.max_body:
                self.too_large = self.gate._too_large()
                break
            body += chunk
            if not message.get("more_body", False):
                return {"type": "http.request", "body": bytes(body), "more_body": False}
        return {"type": "http.disconnect"}  # the route stops here; ``send`` answers instead

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            if not self.check.done:
                await in_thread(self.check.settle)
            instead = self.refusal()
            if instead is not None:
                self.replaced = True
                await self.gate._refuse(self.scope, self._send, instead)
                return
        if not self.replaced:
            await self._send(message)


def _headers(scope: Scope) -> tuple[list[str], str | None, bool]:
    """Every ``Content-Length`` value, the first ``Authorization`` (latin-1, as HTTP has it),
    and whether a ``Transfer-Encoding`` was sent (a body of no declared length)."""
    lengths: list[str] = []
    authorization: str | None = None
    coded = False
    for name, value in scope.get("headers", []):
        key = name.lower()
        if key == b"content-length":
            lengths.append(value.decode("latin-1"))
        elif key == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
        elif key == b"transfer-encoding":
            coded = True
    return lengths, authorization, coded


def routes_gated(app: object) -> bool:
    """Whether every route of ``app`` that may answer a path under /api/v1 is a
    ``GatedRoute`` (so that none runs before a pending token check is made)."""
    routes = getattr(app, "routes", None)
    if routes is None:
        return False
    for context in iter_route_contexts(routes):
        route, path = context.original_route, str(context.path or "")
        reaches = is_api_path(path) or (
            not isinstance(route, Route) and (API_PREFIX + "/").startswith(path.rstrip("/") + "/")
        )
        if reaches and not isinstance(route, GatedRoute):
            log.warning(
                "%s answers under %s without a GatedRoute: every check comes first",
                path,
                API_PREFIX,
            )
            return False
    return True


async def _no_body() -> Message:
    return {"type": "http.disconnect"}
