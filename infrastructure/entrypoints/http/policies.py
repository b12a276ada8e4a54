"""The approval policies' routes: list what is in force in the token's club, and set one.

Both need ``policies.manage`` (the token's scope and its member's permission alike). A policy
binds the proposals frozen after it: an open proposal keeps the one it was frozen under, so
lowering a quorum never lets a proposal waiting for its second approver through; raising one
fails an open proposal it asks more of closed at its next approval (``policy_raised``).

An operation kind that has no contract is an unknown resource of the path: 404, like any
path that names nothing (the operations are listed by ``countersign operations``).
"""

from __future__ import annotations

from typing import Annotated

from countersign.application.errors import UnknownOperationError
from countersign.application.policies import KEPT
from countersign.domain.approval_policy import PolicyError
from countersign.infrastructure.entrypoints.http.answers import (
    admit_write,
    answers,
    problem_responses,
    record,
)
from countersign.infrastructure.entrypoints.http.auth import GatedRoute, Service, Wired
from countersign.infrastructure.entrypoints.http.models.policies import (
    PoliciesOut,
    PolicyIn,
    PolicySetOut,
)
from countersign.infrastructure.entrypoints.http.problems import API_PREFIX, ProblemError
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

router = APIRouter(prefix=API_PREFIX, route_class=GatedRoute)

Operation = Annotated[
    str,
    Path(max_length=100, description="The operation kind, as `countersign operations` lists it."),
]


@router.get(
    "/policies",
    response_model=PoliciesOut,
    responses=problem_responses(403),
    summary="Every operation's approval policy in force in the token's organization",
    tags=["policies"],
)
def policies(request: Request, cs: Wired, service: Service) -> JSONResponse:
    """One entry per registered operation; where none was set, one approval by anyone
    permitted (``set_by`` null). Needs ``policies.manage``."""
    caller = service.caller
    assert caller.organization is not None  # a token always belongs to one organization
    with answers(request):
        listed = cs.policies.in_force(caller.organization, by=caller)
    return JSONResponse({"policies": listed})


@router.put(
    "/policies/{operation}",
    response_model=PolicySetOut,
    responses=problem_responses(403, 404, 422, 429),
    summary="Set how many distinct people approve an operation's new proposals",
    tags=["policies"],
)
def set_policy(
    request: Request, cs: Wired, service: Service, operation: Operation, body: PolicyIn
) -> JSONResponse:
    """Put the policy in force for proposals frozen from now on (an ``ApprovalPolicySet``
    event naming the token's member); open proposals keep theirs, except that one it asks
    more of fails closed at its next approval. Setting the policy already
    in force changes nothing (``changed`` false). Needs ``policies.manage``; an unknown
    operation is 404."""
    caller = service.caller
    assert caller.organization is not None
    with answers(request):
        admit_write(cs, service)
        try:
            policy = cs.policies.set(
                caller.organization,
                operation,
                body.approvals,
                # Left out, a setting keeps what is in force: raising the quorum alone must
                # not let requesters approve again (nor drop a threshold or a passkey).
                above_cents=body.above_cents if "above_cents" in body.model_fields_set else KEPT,
                requester_may_approve=body.requester_may_approve,
                require_passkey=body.require_passkey,
                by=caller,
            )
        except UnknownOperationError:
            raise ProblemError("not-found") from None
        except PolicyError as refused:  # the domain's bounds, should the model's ever differ
            problems = [{"field": "body", "message": str(refused)}]
            raise ProblemError("invalid-request", problems=problems) from None
    result = "changed" if policy["changed"] else "unchanged"
    record(cs, request, service, "set_policy", operation, result, changed=bool(policy["changed"]))
    return JSONResponse(policy)
