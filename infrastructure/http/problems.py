"""One problem format for every error the API answers (RFC 9457, ``application/problem+json``).

Every response carries an ``X-Correlation-ID``; a problem repeats it in its body. A problem
never holds a stack trace, SQL, a file path or the rejected input: validation problems name
the field and say what is wrong in the application's words. Unexpected exceptions become a
500 whose correlation id is also in the log line that holds the traceback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from countersign.application.errors import new_correlation_id
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("countersign.http")

PROBLEM_MEDIA_TYPE = "application/problem+json"
CORRELATION_HEADER = "X-Correlation-ID"


class ProblemItem(BaseModel):
    """One field-level problem with a request."""

    field: str = Field(description="The field, dotted for nested fields (e.g. request.payment).")
    message: str = Field(description="What is wrong, in the application's words.")


class ProblemDocument(BaseModel):
    """An RFC 9457 problem detail."""

    type: str = Field(description="A URI naming the kind of problem.")
    title: str = Field(description="A short summary of the kind of problem.")
    status: int = Field(description="The HTTP status code.")
    detail: str = Field(description="What happened, for a person.")
    correlation_id: str = Field(description="Quote this reference; the logs carry it too.")
    problems: list[ProblemItem] | None = Field(
        default=None, description="Field-level problems (validation problems only)."
    )


# kind -> (status, title, default detail)
KINDS: dict[str, tuple[int, str, str]] = {
    "malformed-request": (400, "Malformed request", "The request body is not valid JSON."),
    "unauthenticated": (
        401,
        "Authentication required",
        "Send a valid API token as 'Authorization: Bearer <token>'.",
    ),
    "forbidden": (403, "Forbidden", "This token may not do that."),
    "not-found": (404, "Not found", "There is no such resource."),
    "method-not-allowed": (405, "Method not allowed", "This resource does not allow that method."),
    "rejected": (409, "Rejected", "A rule of the application refused this request."),
    "invalid-request": (422, "Invalid request", "The request has problems; see 'problems'."),
    "busy": (
        503,
        "Busy",
        "The records this request acts on are busy with other changes; try again.",
    ),
    "unavailable": (503, "Unavailable", "This read model is unavailable; an operator is needed."),
    "internal-error": (
        500,
        "Internal error",
        "Something went wrong on our side. Quote the correlation id.",
    ),
}


class ProblemError(Exception):
    """Raised by the API's handlers to answer with a problem document."""

    def __init__(
        self,
        kind: str,
        detail: str | None = None,
        *,
        problems: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = detail
        self.problems = problems
        self.headers = headers or {}


def correlation_id_of(request: Request) -> str:
    """This request's correlation id (set by the middleware)."""
    value = getattr(request.state, "correlation_id", None)
    return value if isinstance(value, str) else new_correlation_id()


def problem_body(
    kind: str,
    correlation_id: str,
    detail: str | None = None,
    problems: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    status, title, default = KINDS[kind]
    body: dict[str, Any] = {
        "type": f"urn:countersign:problem:{kind}",
        "title": title,
        "status": status,
        "detail": detail or default,
        "correlation_id": correlation_id,
    }
    if problems is not None:
        body["problems"] = problems
    return body


def problem_response(
    kind: str,
    correlation_id: str,
    detail: str | None = None,
    *,
    problems: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = problem_body(kind, correlation_id, detail, problems)
    return JSONResponse(
        body,
        status_code=int(body["status"]),
        media_type=PROBLEM_MEDIA_TYPE,
        headers={**(headers or {}), CORRELATION_HEADER: correlation_id},
    )


# -- request validation -------------------------------------------------------------------------

_SAFE_MESSAGES = {
    "missing": "this field is required",
    "extra_forbidden": "unknown field; remove it",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "bool_type": "must be true or false",
    "dict_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "list_type": "must be a list",
    "string_too_long": "text is too long",
    "string_too_short": "text is too short",
    "greater_than_equal": "too small",
    "less_than_equal": "too large",
    "literal_error": "not one of the allowed values",
    "enum": "not one of the allowed values",
    "string_pattern_mismatch": "not in the expected format",
}


def _field(loc: tuple[Any, ...]) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] in ("body", "query", "header", "path"):
        parts = parts[1:]
    return ".".join(parts)[:120] or "body"


def validation_problems(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Safe problems from FastAPI's validation errors: never the rejected input."""
    problems = []
    for error in errors:
        kind = str(error.get("type", ""))
        message = _SAFE_MESSAGES.get(kind, "not a valid value")
        problems.append({"field": _field(tuple(error.get("loc", ()))), "message": message})
    return problems


async def _validation_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    correlation_id = correlation_id_of(request)
    errors = list(exc.errors())
    if any(tuple(error.get("loc", ()))[:1] == ("path",) for error in errors):
        # A path that names nothing answers like an unknown id.
        return problem_response("not-found", correlation_id)
    if any(error.get("type") == "json_invalid" for error in errors):
        return problem_response("malformed-request", correlation_id)
    return problem_response("invalid-request", correlation_id, problems=validation_problems(errors))


async def _problem_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ProblemError)
    return problem_response(
        exc.kind,
        correlation_id_of(request),
        exc.detail,
        problems=exc.problems,
        headers=exc.headers,
    )


async def _http_handler(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (unknown route, wrong method) in the same format."""
    assert isinstance(exc, StarletteHTTPException)
    correlation_id = correlation_id_of(request)
    headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"}
    if exc.status_code == 405:
        return problem_response("method-not-allowed", correlation_id, headers=headers)
    if exc.status_code == 401:
        return problem_response("unauthenticated", correlation_id, headers=dict(exc.headers or {}))
    if exc.status_code == 403:
        return problem_response("forbidden", correlation_id)
    if exc.status_code == 404:
        return problem_response("not-found", correlation_id)
    if exc.status_code >= 500:
        return problem_response("internal-error", correlation_id)
    body = {
        "type": "about:blank",
        "title": "Bad request",
        "status": exc.status_code,
        "detail": "The request could not be processed.",
        "correlation_id": correlation_id,
    }
    return JSONResponse(
        body,
        status_code=exc.status_code,
        media_type=PROBLEM_MEDIA_TYPE,
        headers={**headers, CORRELATION_HEADER: correlation_id},
    )


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(ProblemError, _problem_handler)
    app.add_exception_handler(StarletteHTTPException, _http_handler)
    app.add_middleware(CorrelationMiddleware)


class CorrelationMiddleware:
    """Gives every request a correlation id and turns any escaped exception into a 500 problem.

    It sits inside Starlette's ServerErrorMiddleware, so an unexpected exception never reaches
    the server's default handler (which would print a traceback): it is logged here once, with
    the correlation id the client receives.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        correlation_id = new_correlation_id()
        scope.setdefault("state", {})["correlation_id"] = correlation_id
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.lower() != CORRELATION_HEADER.lower().encode()
                ]
                headers.append((CORRELATION_HEADER.lower().encode(), correlation_id.encode()))
                message = {**message, "headers": headers}
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
            body = json.dumps(problem_body("internal-error", correlation_id)).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [
                        (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                        (b"content-length", str(len(body)).encode()),
                        (CORRELATION_HEADER.lower().encode(), correlation_id.encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
