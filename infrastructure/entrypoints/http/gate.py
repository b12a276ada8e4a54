"""The gate in front of the JSON API: a bounded body, read only for an authenticated caller.

``ApiGate`` is a pure ASGI middleware for every path under ``/api/v1`` (known routes or not).
Before anything else looks at a request it

1. refuses a declared ``Content-Length`` over the limit (413), without reading the body;
2. checks the bearer token (401), still without reading a byte of the body, so an anonymous
   caller can make the server neither read nor parse anything;
3. reads the body itself, counting the bytes of each ``http.request`` message as it arrives,
   and answers 413 as soon as the count passes the limit, whatever ``Content-Length`` said
   (or when none was sent: chunked transfer);
4. only then hands the request on, with the body it read replayed as one message.

So FastAPI never parses more than ``max_body`` bytes, and never parses a body at all for a
caller without a valid token. A refusal before the body is read says ``Connection: close``:
the server then stops reading the rest instead of draining it.
"""

from __future__ import annotations

from anyio import to_thread
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_in
from countersign.infrastructure.entrypoints.http.auth import identify
from countersign.infrastructure.entrypoints.http.problems import (
    ProblemError,
    is_api_path,
    problem_response,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY = 64 * 1024
_CLOSE = {"Connection": "close"}


class ApiGate:
    """See the module docstring. ``max_body``: the most bytes an API request body may have."""

    def __init__(self, app: ASGIApp, *, cs: Countersign, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.cs = cs
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api_path(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        lengths, authorization = _headers(scope)
        if lengths:
            if not all(value.isascii() and value.strip().isdigit() for value in lengths):
                await self._refuse(scope, send, ProblemError("bad-request"))
                return
            # (More than 15 digits is more than any limit; int() refuses 4,300 digits.)
            if any(len(v.strip()) > 15 or int(v) > self.max_body for v in lengths):
                await self._refuse(scope, send, self._too_large())
                return
        # One request's reads: the organization the token's check reads fresh is the one the
        # route's own checks read (``Countersign.one_request``), without a second query.
        with self.cs.one_request():
            await self._authenticated(scope, receive, send, authorization)

    async def _authenticated(
        self, scope: Scope, receive: Receive, send: Send, authorization: str | None
    ) -> None:
        """Steps 2 to 4 of the module docstring."""
        try:
            found = await to_thread.run_sync(identify, self.cs, authorization)
        except ProblemError as refused:
            await self._refuse(scope, send, refused)
            return
        scope.setdefault("state", {})["principal"] = found

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


def _headers(scope: Scope) -> tuple[list[str], str | None]:
    """Every ``Content-Length`` value and the first ``Authorization`` (latin-1, as HTTP has it)."""
    lengths: list[str] = []
    authorization: str | None = None
    for name, value in scope.get("headers", []):
        key = name.lower()
        if key == b"content-length":
            lengths.append(value.decode("latin-1"))
        elif key == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
    return lengths, authorization


async def _no_body() -> Message:
    return {"type": "http.disconnect"}
