"""One problem format for every error the API answers (RFC 9457, ``application/problem+json``).

Every response carries an ``X-Correlation-ID``; a problem repeats it in its body. Every
answer under ``/api/v1`` also carries ``X-Content-Type-Options: nosniff`` and
``Cache-Control: no-store``. A problem never holds a stack trace, SQL, a file path or the
rejected input: validation problems name the field and say what is wrong in the application's
words, at most MAX_PROBLEMS of them (``more_problems`` counts the rest). Every problem's
``type`` is one of the application's own (``urn:countersign:problem:<kind>``), whichever layer
refused the request. Unexpected exceptions become a 500 whose correlation id is also in the
log line that holds the traceback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from countersign.domain.contracts.problems import MAX_PROBLEMS
from countersign.domain.contracts.request_errors import field_path, safe_message
from countersign.infrastructure.correlation import (
    CORRELATION_HEADER,
    CorrelationMiddleware,
    correlation_id_of,
)
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

log = logging.getLogger("countersign.http")

PROBLEM_MEDIA_TYPE = "application/problem+json"
API_PREFIX = "/api/v1"
#: Sent with every answer under API_PREFIX, problems included.
API_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
_API_HEADERS_RAW = [(k.lower().encode(), v.encode()) for k, v in API_HEADERS.items()]


def is_api_path(path: str) -> bool:
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


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
        default=None,
        description=f"Field-level problems (validation problems only), the first {MAX_PROBLEMS}.",
    )
    more_problems: int | None = Field(
        default=None, description="How many further problems were found but not listed."
    )
    proposal_status: str | None = Field(
        default=None,
        description="not-revisable and not-approvable only: the status of the proposal named "
        "(why it cannot be edited, or approved).",
    )
    superseded_by: str | None = Field(
        default=None,
        description="not-revisable and not-approvable only: the newer proposal that replaced "
        "the one named, where one did; edit (or review) that one instead.",
    )
    already_so: bool | None = Field(
        default=None,
        description="not-revisable only, and only when true: the proposal was not executed "
        "because what it asked for already held (its outcome's already_so), so it owes "
        "nothing and there is nothing to edit; a different change is a new proposal.",
    )
    reason: str | None = Field(
        default=None,
        description="not-approvable only: why no approval can decide it now, as approving it "
        "answers: not_pending, expired, in_progress or superseded.",
    )


# kind -> (status, title, default detail)
KINDS: dict[str, tuple[int, str, str]] = {
    "malformed-request": (400, "Malformed request", "The request body is not valid JSON."),
    "bad-request": (400, "Bad request", "The request could not be processed."),
    "unauthenticated": (
        401,
        "Authentication required",
        "Send a valid API token as 'Authorization: Bearer <token>'.",
    ),
    "forbidden": (403, "Forbidden", "This token may not do that."),
    "agent-cannot-decide": (
        403,
        "An agent token cannot decide",
        "An agent token cannot decide: it may read, propose and follow the proposals it made."
        " Approving, declining and editing proposals, and the club's rules, are for people"
        " (or an approver token acting for one).",
    ),
    "not-found": (404, "Not found", "There is no such resource."),
    "method-not-allowed": (405, "Method not allowed", "This resource does not allow that method."),
    "payload-too-large": (
        413,
        "Request body too large",
        "The request body is larger than this API accepts.",
    ),
    "rejected": (409, "Rejected", "A rule of the application refused this request."),
    "not-revisable": (
        409,
        "Not revisable",
        "Only a pending, declined, expired or revision-required proposal can be edited.",
    ),
    "not-approvable": (
        409,
        "Not approvable",
        "This proposal cannot be approved now, so there is nothing to sign; see 'reason'.",
    ),
    "unverified-elsewhere": (
        409,
        "Not what was read",
        "Nothing was approved: the card you read said countersign could not vouch for this "
        "record, and this server would carry out the record as it holds it, which is not "
        "what you read. Read the card again before deciding.",
    ),
    "held-for-people": (
        409,
        "Held for people",
        "A pending proposal for the same thing awaits people's decision; an agent token cannot"
        " replace it. Nothing was proposed.",
    ),
    "unsupported-media-type": (
        415,
        "Unsupported media type",
        "The request body must be JSON, sent with 'Content-Type: application/json'.",
    ),
    "invalid-request": (422, "Invalid request", "The request has problems; see 'problems'."),
    "too-many-proposals": (
        429,
        "Too many proposals",
        "This member made too many proposals in a short time; see Retry-After.",
    ),
    "too-many-turns": (
        429,
        "Too many messages",
        "This member sent the assistants too many messages in a short time; see Retry-After.",
    ),
    "too-many-writes": (
        429,
        "Too many changes",
        "This token sent too many changes to the club's settings in a short time; see Retry-After.",
    ),
    "too-many-requests": (
        429,
        "Too many requests at once",
        "This token has as many requests under way as it may have at once; wait for an "
        "answer, then send this again (see Retry-After).",
    ),
    "busy": (
        503,
        "Busy",
        "The records this request acts on are busy with other changes; try again.",
    ),
    "unavailable": (
        503,
        "Unavailable",
        "This read model is unavailable; an operator is needed. Try again later (see Retry-After).",
    ),
    "database-unavailable": (
        503,
        "Database unavailable",
        "The database could not be reached just now; try again (see Retry-After). A decision "
        "sent just before may have been recorded: read the proposal before sending it again.",
    ),
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
        more_problems: int = 0,
        headers: dict[str, str] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = detail
        self.problems = problems
        self.more_problems = more_problems
        self.headers = headers or {}
        #: RFC 9457 extension members a program reads instead of the detail's words
        #: (``superseded_by`` of a ``not-revisable``); each is declared in ProblemDocument.
        self.extensions = extensions or {}


def problem_body(
    kind: str,
    correlation_id: str,
    detail: str | None = None,
    problems: list[dict[str, str]] | None = None,
    more_problems: int = 0,
    *,
    status: int | None = None,
    extensions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A problem document; ``status`` overrides the kind's own (a generic kind only)."""
    default_status, title, default = KINDS[kind]
    body: dict[str, Any] = {
        "type": f"urn:countersign:problem:{kind}",
        "title": title,
        "status": status or default_status,
        "detail": detail or default,
        "correlation_id": correlation_id,
    }
    if problems is not None:
        body["problems"] = problems[:MAX_PROBLEMS]
        more_problems += len(problems) - len(body["problems"])
    if more_problems > 0:
        body["more_problems"] = more_problems
    body.update(extensions or {})
    return body


def problem_response(
    kind: str,
    correlation_id: str,
    detail: str | None = None,
    *,
    problems: list[dict[str, str]] | None = None,
    more_problems: int = 0,
    headers: dict[str, str] | None = None,
    status: int | None = None,
    extensions: dict[str, Any] | None = None,
) -> JSONResponse:
    body = problem_body(
        kind, correlation_id, detail, problems, more_problems, status=status, extensions=extensions
    )
    return JSONResponse(
        body,
        status_code=int(body["status"]),
        media_type=PROBLEM_MEDIA_TYPE,
        headers={**(headers or {}), CORRELATION_HEADER: correlation_id},
    )


# -- request validation -------------------------------------------------------------------------


def _field(loc: tuple[Any, ...]) -> str:
    if loc and loc[0] in ("body", "query", "header", "path"):
        loc = loc[1:]
    return field_path(loc, default="body")


def validation_problems(errors: list[Any]) -> tuple[list[dict[str, str]], int]:
    """Safe problems from FastAPI's validation errors (the first MAX_PROBLEMS, and how many
    more there were), in the application's words: never pydantic's, never the input."""
    problems = [
        {"field": _field(tuple(error.get("loc", ()))), "message": safe_message(error)}
        for error in errors[:MAX_PROBLEMS]
    ]
    return problems, len(errors) - len(problems)


def _not_json(request: Request) -> bool:
    """A request that sent a body and did not say it is JSON (``application/json`` or any
    ``+json`` type, as FastAPI reads them)."""
    if request.headers.get("content-length", "0") == "0" and "transfer-encoding" not in (
        request.headers
    ):
        return False
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    return not (
        kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))
    )


async def _validation_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    correlation_id = correlation_id_of(request)
    errors = list(exc.errors())
    if any(tuple(error.get("loc", ()))[:1] == ("path",) for error in errors):
        # A path that names nothing answers like an unknown id.
        return problem_response("not-found", correlation_id)
    if any(error.get("type") == "json_invalid" for error in errors):
        return problem_response("malformed-request", correlation_id)
    if _not_json(request) and any(tuple(e.get("loc", ()))[:1] == ("body",) for e in errors):
        # FastAPI reads a body that does not say it is JSON as no JSON at all: "must be a
        # JSON object" said of a valid one sent as text/plain, or without a Content-Type.
        return problem_response("unsupported-media-type", correlation_id)
    problems, more = validation_problems(errors)
    return problem_response(
        "invalid-request", correlation_id, problems=problems, more_problems=more
    )


async def _problem_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ProblemError)
    return problem_response(
        exc.kind,
        correlation_id_of(request),
        exc.detail,
        problems=exc.problems,
        more_problems=exc.more_problems,
        headers=exc.headers,
        extensions=exc.extensions,
    )


def _unreadable_body(cause: BaseException | None) -> str | None:
    """Why FastAPI could not read a body it answered 400 for, in the application's words."""
    if isinstance(cause, RecursionError):
        return "The JSON body is nested too deeply."
    if isinstance(cause, UnicodeError):
        return "The request body is not valid UTF-8."
    if isinstance(cause, ValueError):
        return "The JSON body holds a number too large to read."
    return None


async def _http_handler(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's and FastAPI's own errors (unknown route, wrong method, a body FastAPI could
    not read) in the same format, with the application's own problem types."""
    assert isinstance(exc, StarletteHTTPException)
    correlation_id = correlation_id_of(request)
    headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"}
    status = exc.status_code
    if status == 400:
        detail = _unreadable_body(exc.__cause__)
        return problem_response("malformed-request", correlation_id, detail)
    if status == 401:
        return problem_response("unauthenticated", correlation_id, headers=dict(exc.headers or {}))
    if status == 403:
        return problem_response("forbidden", correlation_id)
    if status == 404:
        return problem_response("not-found", correlation_id)
    if status == 405:
        return problem_response("method-not-allowed", correlation_id, headers=headers)
    if status == 413:
        return problem_response(
            "payload-too-large", correlation_id, headers={"Connection": "close"}
        )
    if status >= 500:
        return problem_response("internal-error", correlation_id)
    return problem_response("bad-request", correlation_id, status=status if status >= 400 else 400)


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(ProblemError, _problem_handler)
    app.add_exception_handler(StarletteHTTPException, _http_handler)
    app.add_middleware(
        CorrelationMiddleware, headers_for=_api_headers, error_answer=_internal_problem
    )


def _api_headers(path: str) -> list[tuple[bytes, bytes]]:
    return list(_API_HEADERS_RAW) if is_api_path(path) else []


def _internal_problem(correlation_id: str, scope: Scope) -> tuple[str, bytes]:
    """An escaped error's answer: a problem document on the API's paths; elsewhere the
    browser pages' own error page, when they are mounted (``app.state.internal_error_page``)."""
    app = scope.get("app")
    page = getattr(getattr(app, "state", None), "internal_error_page", None)
    if page is not None and not is_api_path(str(scope.get("path", ""))):
        try:
            return "text/html; charset=utf-8", page(correlation_id, scope)
        except Exception:
            log.exception("the error page itself failed, correlation id %s", correlation_id)
    return PROBLEM_MEDIA_TYPE, json.dumps(problem_body("internal-error", correlation_id)).encode()
