"""Who is calling: a bearer API token stands for one application service of one organization.

The token is checked by ``ApiGate`` (``gate.py``) before a byte of the request body is read;
``principal`` hands the handlers what the gate found. The ``HTTPBearer`` dependency stays on
every route so the OpenAPI document declares the scheme.

The dependencies are ``async``: FastAPI runs a plain ``def`` dependency in the thread pool,
one hop per dependency per request, and these only look up what the request already holds
(the rare check without the gate goes to the thread pool itself).
"""

from __future__ import annotations

from typing import Annotated, cast

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.problems import ProblemError
from countersign.infrastructure.identity.tokens import ServicePrincipal, authenticate
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.concurrency import run_in_threadpool

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


async def principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ServicePrincipal:
    """The authenticated service (the gate checked the token before the body was read)."""
    found = getattr(request.state, "principal", None)
    if isinstance(found, ServicePrincipal):
        return found
    # Not behind the gate (an app assembled without it): check the token here (it blocks).
    checked = await run_in_threadpool(
        identify, countersign(request), request.headers.get("authorization")
    )
    request.state.principal = checked
    return checked


#: The authenticated service a route acts for; what it may do is the application's to decide
#: (``ServicePrincipal.caller`` carries the token's scopes there).
Service = Annotated[ServicePrincipal, Depends(principal)]
Wired = Annotated[Countersign, Depends(wired)]
