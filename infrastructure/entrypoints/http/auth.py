"""Who is calling: a bearer API token stands for one application service of one organization.

The token is checked by ``ApiGate`` (``gate.py``) before a byte of the request body is read;
``principal`` hands the handlers what the gate found. The ``HTTPBearer`` dependency stays on
every route so the OpenAPI document declares the scheme.

**One hop.** A request that has no body to read (a GET, an approve without one) has nothing to
protect between the gate and the route: the gate leaves the token's check pending
(``TokenCheck``) and the route's worker thread runs it first, then the handler, in the same
hop (``GatedRoute``). Every API route is a ``GatedRoute``; one whose only blocking
dependency is the token's check (``Service``) and whose handler is a plain ``def`` gets the
check in its handler's hop, and any other one has ``principal`` check it in a hop of its own
first. Whatever answers a request whose check is pending (an unknown path, a wrong method, a
path parameter out of bounds, an error) waits for the check, and a refused token gets the
gate's own 401 instead: the answers are those of a check made first (``gate.py``).

The dependencies are ``async``: FastAPI runs a plain ``def`` dependency in the thread pool,
one hop per dependency per request, and these only look up what the request already holds.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from functools import wraps
from typing import Annotated, Any, cast

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.hops import in_thread
from countersign.infrastructure.entrypoints.http.problems import ProblemError
from countersign.infrastructure.identity.tokens import ServicePrincipal, authenticate
from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

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
    found = authenticate(cs, token) if len(token) <= _MAX_TOKEN else None
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
) -> ServicePrincipal | TokenCheck:
    """The authenticated service (the gate checked the token before the body was read), or
    the pending check itself for a route that makes it first in its own hop."""
    found = getattr(request.state, "principal", None)
    if isinstance(found, ServicePrincipal):
        return found
    if isinstance(found, TokenCheck):
        if not found.done and getattr(request.scope.get("route"), "checks_token_in_its_hop", False):
            return found  # GatedRoute's hop checks it, then runs the handler
        return found.principal() if found.done else await in_thread(found.principal)
    # Not behind the gate (an app assembled without it): check the token here (it blocks).
    checked = await in_thread(identify, countersign(request), request.headers.get("authorization"))
    request.state.principal = checked
    return checked


class GatedRoute(APIRoute):
    """An API route whose handler makes a pending token check first, in the same hop.

    Every route under ``/api/v1`` is one (``ApiGate`` leaves no check pending otherwise). A
    plain ``def`` handler runs in one of the API's threads (``hops.py``), after the check;
    ``checks_token_in_its_hop`` says whether ``principal`` may leave the check to that hop:
    when it is the handler itself that takes the service, not a dependency of its own, which
    would otherwise be given the pending check. An ``async def`` handler has the check made
    in a hop of its own before it runs.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        blocking = not inspect.iscoroutinefunction(endpoint)
        super().__init__(path, _checked_first(endpoint, blocking=blocking), **kwargs)
        self.checks_token_in_its_hop = blocking and not any(
            _takes_principal(sub)
            for sub in self.dependant.dependencies
            if sub.call is not principal
        )


def _takes_principal(dependant: Dependant) -> bool:
    return any(sub.call is principal or _takes_principal(sub) for sub in dependant.dependencies)


def _checked_first(endpoint: Callable[..., Any], *, blocking: bool) -> Callable[..., Any]:
    """``endpoint`` behind the request's pending token check (see ``GatedRoute``)."""
    if blocking:

        @wraps(endpoint)
        async def in_one_hop(**values: Any) -> Any:
            return await in_thread(_check_then_run, endpoint, pending_check.get(), values)

        return in_one_hop

    @wraps(endpoint)
    async def after_the_check(**values: Any) -> Any:
        check = pending_check.get()
        if check is not None and not check.done:
            await in_thread(check.settle)
        return await endpoint(**_with_principal(check, values))

    return after_the_check


def _check_then_run(
    endpoint: Callable[..., Any], check: TokenCheck | None, values: dict[str, Any]
) -> Any:
    """In the route's thread: the token's check (raising its 401), then the handler."""
    return endpoint(**_with_principal(check, values))


def _with_principal(check: TokenCheck | None, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the pending check (if any) made, and given as the service it found."""
    if check is None:
        return values
    found = check.principal()
    return {name: found if value is check else value for name, value in values.items()}


#: The authenticated service a route acts for; what it may do is the application's to decide
#: (``ServicePrincipal.caller`` carries the token's scopes there).
Service = Annotated[ServicePrincipal, Depends(principal)]
Wired = Annotated[Countersign, Depends(wired)]
