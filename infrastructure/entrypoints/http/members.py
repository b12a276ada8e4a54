"""The members' routes: list the token's club's members with their permissions, and give one
member exactly a set of permissions.

Both need ``members.manage`` (the token's scope and its member's permission alike), and
changing permissions is deciding who may decide: an agent token is refused
(``agent-cannot-decide``) whatever its scopes. A person who is not a member of the token's
club is an unknown resource of the path: 404. A permission that does not exist is a problem
of the body (422, naming the valid ones); taking ``members.manage`` from its last holder is a
rule of the club's (409), so that the club can never lock itself out.
"""

from __future__ import annotations

from typing import Annotated

from countersign.domain.club.permissions import LastMemberManagerError, UnknownPermissionError
from countersign.domain.errors import NotMemberError
from countersign.infrastructure.entrypoints.http.answers import (
    admit_write,
    answers,
    problem_responses,
    record,
)
from countersign.infrastructure.entrypoints.http.auth import GatedRoute, Service, Wired
from countersign.infrastructure.entrypoints.http.models.members import (
    MembersOut,
    PermissionsIn,
    PermissionsSetOut,
)
from countersign.infrastructure.entrypoints.http.problems import API_PREFIX, ProblemError
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

router = APIRouter(prefix=API_PREFIX, route_class=GatedRoute)

Email = Annotated[str, Path(max_length=254, description="The member's email.")]


@router.get(
    "/members",
    response_model=MembersOut,
    responses=problem_responses(403),
    summary="Every member of the token's organization, with their permissions",
    tags=["members"],
)
def members(request: Request, cs: Wired, service: Service) -> JSONResponse:
    """By email. Needs ``members.manage``."""
    caller = service.caller
    assert caller.organization is not None  # a token always belongs to one organization
    with answers(request):
        found = cs.club.members(caller.organization, caller)
    listed = [
        {"email": m.email, "name": m.name, "role": m.role, "permissions": sorted(m.permissions)}
        for m in found
    ]
    return JSONResponse({"members": listed})


@router.put(
    "/members/{email}/permissions",
    response_model=PermissionsSetOut,
    responses=problem_responses(403, 404, 409, 422, 429),
    summary="Give a member exactly these permissions",
    tags=["members"],
)
def set_permissions(
    request: Request, cs: Wired, service: Service, email: Email, body: PermissionsIn
) -> JSONResponse:
    """The member holds exactly ``permissions`` from now on (a ``PermissionsChanged`` event
    naming the token's member); giving the ones held changes nothing (``changed`` false).
    Needs ``members.manage``, and a person's token: an agent token is refused."""
    caller = service.caller
    assert caller.organization is not None
    with answers(request):
        admit_write(cs, service)
        try:
            held = cs.club.set_permissions(caller.organization, email, body.permissions, by=caller)
        except NotMemberError:
            raise ProblemError("not-found") from None
        except UnknownPermissionError as unknown:
            message = f"no such permission: {', '.join(unknown.unknown)}; use any of: " + (
                ", ".join(unknown.known)
            )
            problems = [{"field": "permissions", "message": message}]
            raise ProblemError("invalid-request", problems=problems) from None
        except LastMemberManagerError as last:
            raise ProblemError("rejected", f"{last}.") from None
    result = "changed" if held["changed"] else "unchanged"
    changed = bool(held["changed"])
    record(cs, request, service, "set_permissions", held["email"], result, changed=changed)
    return JSONResponse(held)
