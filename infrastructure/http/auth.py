"""Who is calling: a bearer API token stands for one application service of one organization."""

from __future__ import annotations

from typing import Annotated, cast

from countersign.domain.club.organization import Permission
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.http.problems import ProblemError
from countersign.infrastructure.http.tokens import ServicePrincipal, authenticate
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiToken",
    description="An API token issued to an application service: 'Authorization: Bearer cst_...'.",
)
_CHALLENGE = 'Bearer realm="countersign"'


def countersign(request: Request) -> Countersign:
    return cast(Countersign, request.app.state.countersign)


def principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ServicePrincipal:
    """The authenticated service; 401 for a missing, malformed, unknown or revoked token."""
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ProblemError("unauthenticated", headers={"WWW-Authenticate": _CHALLENGE})
    found = authenticate(countersign(request), credentials.credentials)
    if found is None:
        raise ProblemError(
            "unauthenticated",
            "The API token is not valid (unknown, revoked, or its issuer left).",
            headers={"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'},
        )
    request.state.principal = found
    return found


def require(caller: ServicePrincipal, *permissions: Permission) -> None:
    """403 unless the token's scopes and its acting member both hold every permission."""
    missing = [p for p in permissions if not caller.may(p)]
    if missing:
        raise ProblemError(
            "forbidden", f"This token may not do that; it needs {', '.join(missing)}."
        )


def require_any(caller: ServicePrincipal, *permissions: Permission) -> None:
    """403 unless the caller holds at least one of the permissions."""
    if not any(caller.may(p) for p in permissions):
        raise ProblemError(
            "forbidden", f"This token may not do that; it needs one of {', '.join(permissions)}."
        )


Caller = Annotated[ServicePrincipal, Depends(principal)]
Wired = Annotated[Countersign, Depends(countersign)]
