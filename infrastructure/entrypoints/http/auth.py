"""Who is calling: a bearer API token stands for one application service of one organization.

The token is checked by ``ApiGate`` (``gate.py``) before a byte of the request body is read.
A handler takes the service the token stands for as a ``Service`` parameter, and the wired
countersign as ``Wired``; every API route is a ``GatedRoute``, which hands the handler both
itself, in the handler's worker thread, so FastAPI resolves no dependency for them per
request. The OpenAPI document still declares the bearer scheme (``security_scheme``) and
that each such operation needs it.

**One hop.** A request that has no body to read (a GET, an approve without one) has nothing to
protect between the gate and the route: the gate leaves the token's check pending
(``TokenCheck``) and the route's worker thread makes it first, then runs the handler, in the
same hop. Whatever else answers a request whose check is pending (an unknown path, a wrong
method, a path parameter out of bounds, an error) waits for the check, and a refused token
gets the gate's own 401 instead: the answers are those of a check made first (``gate.py``).
A dependency of a handler's own that takes ``Service`` has ``principal`` make the check, in
a hop of its own.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from functools import update_wrapper
from typing import Annotated, Any, cast, get_type_hints
from uuid import UUID

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.hops import in_thread
from countersign.infrastructure.entrypoints.http.lean import lean_app, lean_handler
from countersign.infrastructure.entrypoints.http.problems import ProblemError
from countersign.infrastructure.identity.tokens import ServicePrincipal, authenticate
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    unavailable_reason,
)
from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.responses import Response

log = logging.getLogger("countersign.http")

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiToken",
    description="An API token issued to an application service: 'Authorization: Bearer cst_...'.",
)
_CHALLENGE = 'Bearer realm="countersign"'
#: Longer than any token (``cst_`` + 16 + 1 + 43 characters): not looked up at all.
_MAX_TOKEN = 200


def countersign(request: Request) -> Countersign:
    return cast(Countersign, request.app.state.countersign)


async def wired(request: Request) -> Countersign:
    """``countersign`` as a dependency (on the event loop: it only looks it up)."""
    return countersign(request)


def identify(cs: Countersign, authorization: str | None) -> ServicePrincipal:
    """The service an ``Authorization`` header names; ProblemError (401) for a missing,
    malformed, unknown or revoked token, or one whose issuer left. Blocking (one query)."""
    scheme, token = get_authorization_scheme_param(authorization)
    if not authorization or not token or scheme.lower() != "bearer":
        raise ProblemError("unauthenticated", headers={"WWW-Authenticate": _CHALLENGE})
    try:
        found = authenticate(cs, token) if len(token) <= _MAX_TOKEN else None
    except Exception as error:
        # The check's read (the caller's organization) met the database out of reach, or a
        # lock held past COUNTERSIGN_DATABASE_TIMEOUT: answered as the routes answer it.
        if not database_unavailable(error):
            raise
        cs.outages.warning(
            log, unavailable_reason(error), "database unavailable while checking a token"
        )
        raise ProblemError("database-unavailable", headers={"Retry-After": "5"}) from None
    if found is None:
        raise ProblemError(
            "unauthenticated",
            "The API token is not valid (unknown, revoked, or its issuer left).",
            headers={"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'},
        )
    return found


class TokenCheck:
    """A request's token check: made by the gate before it reads a body, or left pending by
    it (a request without a body) for the first hop of the request to make. Blocking."""

    __slots__ = ("authorization", "cs", "done", "found", "refusal")

    def __init__(self, cs: Countersign, authorization: str | None) -> None:
        self.cs = cs
        self.authorization = authorization
        self.done = False
        self.found: ServicePrincipal | None = None
        self.refusal: ProblemError | None = None

    def settle(self) -> None:
        """Check the token, once: ``found`` or ``refusal`` (the 401's problem) afterwards."""
        if not self.done:
            try:
                self.found = identify(self.cs, self.authorization)
            except ProblemError as refused:
                self.refusal = refused
            self.done = True

    def principal(self) -> ServicePrincipal:
        """The authenticated service; raises the refusal for a token that is not valid."""
        self.settle()
        if self.found is None:
            assert self.refusal is not None
            raise ProblemError(self.refusal.kind, self.refusal.detail, headers=self.refusal.headers)
        return self.found


#: The request's pending token check while the gate has left it to the route's hop.
pending_check: ContextVar[TokenCheck | None] = ContextVar("countersign_token_check", default=None)


async def principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ServicePrincipal:
    """The authenticated service, for a dependency that takes ``Service`` (a ``GatedRoute``'s
    handler is given it by the route, in its own hop): what the gate found, or its pending
    check made now, in a hop of its own."""
    found = getattr(request.state, "principal", None)
    if isinstance(found, ServicePrincipal):
        return found
    return await in_thread(_service, request)


def _service(request: Request) -> ServicePrincipal:
    """The authenticated service, blocking: what the gate found, its pending check made (its
    refusal raised), or, not behind the gate (an app assembled without it), the token checked
    here."""
    found = getattr(request.state, "principal", None)
    if isinstance(found, ServicePrincipal):
        return found
    if isinstance(found, TokenCheck):
        return found.principal()
    checked = identify(countersign(request), request.headers.get("authorization"))
    request.state.principal = checked
    return checked


#: The authenticated service a route acts for; what it may do is the application's to decide
#: (``ServicePrincipal.caller`` carries the token's scopes there).
Service = Annotated[ServicePrincipal, Depends(principal)]
Wired = Annotated[Countersign, Depends(wired)]
#: What a GatedRoute's OpenAPI operation says of a handler that takes ``Service``.
SECURITY: list[dict[str, list[str]]] = [{_bearer.scheme_name: []}]


def security_scheme() -> dict[str, Any]:
    """The bearer scheme as the OpenAPI document's ``components.securitySchemes`` has it."""
    return {
        _bearer.scheme_name: _bearer.model.model_dump(mode="json", by_alias=True, exclude_none=True)
    }


class GatedRoute(APIRoute):
    """An API route whose handler runs in one hop to the API's threads, after the request's
    token check, and is given the gate's ``Service`` and ``Wired`` by the route itself.

    Every route under ``/api/v1`` is one (``ApiGate`` leaves no check pending otherwise). For
    a handler parameter annotated ``Service`` or ``Wired`` FastAPI resolves nothing: the
    route hands the handler the service the gate found (or makes the gate's pending check,
    raising its 401, in the handler's thread just before it) and the wired countersign, so
    a request pays for none of FastAPI's dependency resolution of its own (the handler's
    other parameters, its body and path and query, are FastAPI's, as before). The OpenAPI
    document still says such an operation needs the bearer token (``openapi_extra``). A
    dependency of the handler's own that takes ``Service`` gets it from ``principal``.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        gated, takes_service = _gated(endpoint)
        if takes_service:
            kwargs["openapi_extra"] = {"security": SECURITY, **(kwargs.get("openapi_extra") or {})}
        super().__init__(path, gated, **kwargs)
        if self.max_body_size is None:  # (FastAPI's own limit wraps the application otherwise)
            self.app = lean_app(self, self.app)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, with the short way in front for a request without a body
        (``lean.py``)."""
        return lean_handler(self, super().get_route_handler())


_SERVICE, _WIRED = "service", "wired"


def _role(hint: Any) -> str | None:
    """Whether a parameter's annotation is ``Service`` or ``Wired`` (or neither)."""
    for extra in getattr(hint, "__metadata__", ()):
        dependency = getattr(extra, "dependency", None)
        if dependency is principal:
            return _SERVICE
        if dependency is wired:
            return _WIRED
    return None


def _gated(endpoint: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
    """``endpoint`` as ``GatedRoute`` runs it, and whether it takes the service."""
    hints = get_type_hints(endpoint, include_extras=True)
    signature = inspect.signature(endpoint)
    roles = {
        name: role for name in signature.parameters if (role := _role(hints.get(name))) is not None
    }
    # What FastAPI resolves: the other parameters (as keywords: FastAPI passes them so), and
    # the request, which the route needs whether or not the handler takes it.
    parameters = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
        for p in signature.parameters.values()
        if p.name not in roles
    ]
    asked = next((p.name for p in parameters if p.annotation is Request), None)
    request_name = asked or "gated_request"
    if asked is None:
        parameters.insert(
            0, inspect.Parameter(request_name, inspect.Parameter.KEYWORD_ONLY, annotation=Request)
        )
    blocking = not inspect.iscoroutinefunction(endpoint)

    def given(values: dict[str, Any]) -> tuple[Request, dict[str, Any]]:
        request = values[request_name] if asked else values.pop(request_name)
        return request, values

    if blocking:

        async def gated(**values: Any) -> Any:
            request, arguments = given(values)
            return await in_thread(_check_then_run, endpoint, request, roles, arguments)

    else:

        async def gated(**values: Any) -> Any:
            request, arguments = given(values)
            if roles or pending_check.get() is not None:
                await in_thread(_fill, request, roles, arguments)
            return await endpoint(**arguments)

    update_wrapper(gated, endpoint)
    gated.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=hints.get("return", signature.return_annotation)
    )
    return gated, _SERVICE in roles.values()


def _fill(request: Request, roles: dict[str, str], arguments: dict[str, Any]) -> None:
    """In the route's thread: the request's pending token check made (its 401 raised), and
    the handler's ``Service`` and ``Wired`` arguments filled in."""
    _read_along(request)
    found = _service(request) if _SERVICE in roles.values() or pending_check.get() else None
    for name, role in roles.items():
        arguments[name] = found if role == _SERVICE else countersign(request)


def _read_along(request: Request) -> None:
    """The proposal a route's path names is fetched with the request's first query (the
    token's check reads the caller's organization), not in a round trip of its own: every
    such route reads it next, in the caller's organization or not (``read_along``; its
    checks are the route's, as before). A malformed id is fetched by nobody."""
    named = request.path_params.get("proposal_id")
    if named is None:
        return
    try:
        proposal_id = UUID(str(named))
    except ValueError:
        return
    countersign(request).read_along(proposal_id)


def _check_then_run(
    endpoint: Callable[..., Any],
    request: Request,
    roles: dict[str, str],
    arguments: dict[str, Any],
) -> Any:
    """In the route's thread: the token's check (raising its 401), then the handler."""
    _fill(request, roles, arguments)
    return endpoint(**arguments)
