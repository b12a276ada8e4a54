"""Correlation ids: one per request, in its answer's ``X-Correlation-ID`` and in every log line
about it, so what a person is shown (an error page's reference, a problem's
``correlation_id``) finds the log line that holds the details.

``CorrelationMiddleware`` gives each request its id; ``correlation_id_of`` is how a handler,
of any entry point, reads it, and ``current_correlation_id`` how a log line finds it (the
JSON log format, ``observability/logs.py``, adds it to every line written for the request).
At INFO level the middleware also writes one access line per request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

from countersign.application.errors import new_correlation_id

if TYPE_CHECKING:  # only annotations: a log line of the command line imports no web stack
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("countersign.http")
access_log = logging.getLogger("countersign.access")

CORRELATION_HEADER = "X-Correlation-ID"
_STATE_KEY = "correlation_id"

RawHeaders = list[tuple[bytes, bytes]]

#: The correlation id of the request being answered in this context (threads that run a
#: route's work get a copy of it), for log lines.
_current: ContextVar[str | None] = ContextVar("countersign_correlation_id", default=None)


def current_correlation_id() -> str | None:
    """The correlation id of the request this code is answering, if any."""
    return _current.get()


def correlation_id_of(request: Request) -> str:
    """This request's correlation id (set by the middleware)."""
    return correlation_id_in(request.scope)


def correlation_id_in(scope: Scope) -> str:
    """The correlation id the middleware gave this ASGI scope; a fresh one without it."""
    value = scope.get("state", {}).get(_STATE_KEY)
    return value if isinstance(value, str) else new_correlation_id()


def _plain_error(correlation_id: str, scope: Scope) -> tuple[str, bytes]:
    return "text/plain; charset=utf-8", f"Internal error. Reference: {correlation_id}".encode()


class CorrelationMiddleware:
    """Gives every request a correlation id and turns any escaped exception into a 500.

    It sits inside Starlette's ServerErrorMiddleware, so an unexpected exception never reaches
    the server's default handler (which would print a traceback): it is logged here once, with
    the correlation id the client receives.

    ``headers_for(path)``: further headers for every answer to that path, whichever layer
    answered. ``error_answer(correlation_id, scope)``: the 500's media type and body for that
    request (a page for a browser's path, a problem document for the API's).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        headers_for: Callable[[str], RawHeaders] = lambda path: [],
        error_answer: Callable[[str, Scope], tuple[str, bytes]] = _plain_error,
    ) -> None:
        self.app = app
        self.headers_for = headers_for
        self.error_answer = error_answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        correlation_id = new_correlation_id()
        scope.setdefault("state", {})[_STATE_KEY] = correlation_id
        extra = [(CORRELATION_HEADER.lower().encode(), correlation_id.encode())]
        extra += self.headers_for(str(scope.get("path", "")))
        replaced = {name for name, _ in extra}
        started = False
        status = 500
        began = time.perf_counter()
        context = _current.set(correlation_id)

        async def send_with_id(message: Message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() not in replaced
                ]
                message = {**message, "headers": headers + extra}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception(
                "internal error on %s %s, correlation id %s",
                scope.get("method"),
                scope.get("path"),
                correlation_id,
            )
            if started:
                raise
            media_type, body = self.error_answer(correlation_id, scope)
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [
                        (b"content-type", media_type.encode()),
                        (b"content-length", str(len(body)).encode()),
                        *extra,
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
        finally:
            _log_access(scope, status, began)
            _current.reset(context)


def _log_access(scope: Scope, status: int, began: float) -> None:
    """One INFO line per request: method, path (never the query), status and duration."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    method, path = str(scope.get("method", "")), str(scope.get("path", ""))
    duration_ms = round((time.perf_counter() - began) * 1000, 1)
    access_log.info(
        "%s %s %s %.1f ms",
        method,
        path,
        status,
        duration_ms,
        extra={"method": method, "path": path, "status": status, "duration_ms": duration_ms},
    )
