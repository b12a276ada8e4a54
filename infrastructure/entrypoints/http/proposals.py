"""The proposals' routes: propose, edit (a new revision), read the card, approve, decline, the
status an outcome points to, and the audit replay."""

from __future__ import annotations

from typing import Annotated, Literal

from countersign.application.reports import ProposalCreated
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.answers import (
    answers,
    problem_responses,
    record,
    report_response,
)
from countersign.infrastructure.entrypoints.http.auth import GatedRoute, Service, Wired
from countersign.infrastructure.entrypoints.http.models.history import HistoryOut
from countersign.infrastructure.entrypoints.http.models.proposals import (
    ApprovalChallengeOut,
    ApprovalReportOut,
    ApproveIn,
    DeclineIn,
    ProposalCardOut,
    ProposalCreatedOut,
    ProposalStatusOut,
    ProposeIn,
    RevisionIn,
)
from countersign.infrastructure.entrypoints.http.problems import API_PREFIX
from countersign.infrastructure.entrypoints.status_path import (
    history_with_status_paths,
    with_status_path,
)
from countersign.infrastructure.identity.tokens import ServicePrincipal
from fastapi import APIRouter, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

router = APIRouter(prefix=API_PREFIX, route_class=GatedRoute)

ProposalId = Annotated[str, Path(max_length=64, description="The proposal's opaque id.")]
Language = Annotated[
    Literal["en", "fr"], Query(description="The language of the application's own words.")
]


@router.post(
    "/proposals",
    status_code=201,
    response_model=ProposalCreatedOut,
    responses=problem_responses(400, 403, 404, 409, 422, 429),
    summary="Turn a model-facing request into a proposal",
    tags=["proposals"],
)
def propose(request: Request, cs: Wired, service: Service, body: ProposeIn) -> JSONResponse:
    """Validate the request through the operation's contract and freeze it as a proposal."""
    with answers(request):
        created = cs.access.propose(
            service.caller,
            operation=body.operation,
            resource_id=body.resource_id,
            request=body.request,
        )
    return _created(cs, request, service, "propose", created)


@router.post(
    "/proposals/{proposal_id}/revisions",
    status_code=201,
    response_model=ProposalCreatedOut,
    responses=problem_responses(400, 403, 404, 409, 422, 429),
    summary="Edit a proposal: a new revision from an edited request",
    tags=["proposals"],
)
def revise(
    request: Request, cs: Wired, service: Service, proposal_id: ProposalId, body: RevisionIn
) -> JSONResponse:
    """Run the operation's whole contract again on the edited request (validation, defaults,
    derived values, preview) and freeze a new pending proposal with ``revision_of`` set; a
    pending original is superseded in the same commit (``supersedes``). Its card lists what
    changed. Needs what proposing the operation needs. 409 (not-revisable) for a proposal
    that ran or was superseded, or that owes nothing (``already_so``: what it asked for
    already held; a different change is a new proposal)."""
    with answers(request):
        created = cs.access.revise(proposal_id, service.caller, body.request)
    return _created(cs, request, service, "revise", created)


def _created(
    cs: Countersign,
    request: Request,
    service: ServicePrincipal,
    action: str,
    made: ProposalCreated,
) -> JSONResponse:
    """A new proposal's 201, where it lives, recorded under the service's name."""
    record(cs, request, service, action, made.proposal_id, made.status)
    return JSONResponse(
        made.to_json(),
        status_code=201,
        headers={"Location": f"{router.prefix}/proposals/{made.proposal_id}"},
    )


@router.get(
    "/proposals/{proposal_id}",
    response_model=ProposalCardOut,
    responses=problem_responses(403, 404, 422),
    summary="A proposal's review card",
    tags=["proposals"],
)
def card(
    request: Request,
    cs: Wired,
    service: Service,
    proposal_id: ProposalId,
    language: Language = "en",
) -> JSONResponse:
    with answers(request):
        document = with_status_path(cs.access.card(proposal_id, service.caller, language).to_json())
    return JSONResponse(document)


@router.post(
    "/proposals/{proposal_id}/approve",
    response_model=ApprovalReportOut,
    responses=problem_responses(403, 404, 409, 422),
    summary="Approve a proposal by its id",
    tags=["proposals"],
)
def approve(
    request: Request,
    cs: Wired,
    service: Service,
    proposal_id: ProposalId,
    body: ApproveIn | None = None,
) -> JSONResponse:
    """Claim exactly once, recheck, execute, record the outcome. Repeating it returns the
    stored outcome (``already_completed``) and executes nothing. Where the proposal's policy
    needs several distinct approvers, an earlier approval is recorded alone and answers
    ``awaiting_approvals`` (``approvals`` of ``required``); the claim comes with the last one.
    Where it requires a passkey, the body carries the approver's ``passkey_assertion`` over
    ``approval-challenge``; without it the answer is ``not_approvable`` ``passkey_required``.
    ``unverified``: the card read said its seals do not vouch for it (see the field)."""
    relayed = None
    if body is not None and body.passkey_assertion is not None:
        relayed = body.passkey_assertion.model_dump()
    read_unverified = body is not None and body.unverified
    with answers(request):
        approved = cs.access.approve(
            proposal_id, service.caller, relayed, read_unverified=read_unverified
        )
        report = with_status_path(approved.to_json())
    return report_response(cs, request, service, "approve", report)


@router.get(
    "/proposals/{proposal_id}/approval-challenge",
    response_model=ApprovalChallengeOut,
    responses=problem_responses(403, 404, 409),
    summary="What the approver's passkey signs to approve a proposal",
    tags=["proposals"],
)
def approval_challenge(
    request: Request, cs: Wired, service: Service, proposal_id: ProposalId
) -> JSONResponse:
    """A fresh challenge for the token's member: pass ``options`` to
    ``navigator.credentials.get()`` in your own interface, then POST the result with
    ``nonce`` as ``passkey_assertion`` to ``approve``. It binds this proposal's contract
    digest, its id and the approver, so the assertion approves nothing else. A proposal no
    approval can decide now (decided, being carried out, superseded, past its expiry) is
    refused with 409 ``not-approvable``: its ``reason`` and ``detail`` are the reason and
    message approving it answers, so nobody signs for nothing. So is one the club's policy
    now asks more of (``policy_raised``, the card's ``policy_changed``): approving it, with
    no passkey, sends it back to be proposed again; and one whose requester asks while the
    policy, frozen or in force, bars them (``requester_may_not_approve``)."""
    with answers(request):
        document = cs.access.approval_challenge(proposal_id, service.caller)
    return JSONResponse(document)


@router.post(
    "/proposals/{proposal_id}/decline",
    response_model=ApprovalReportOut,
    responses=problem_responses(400, 403, 404, 409, 422),
    summary="Decline a proposal by its id",
    tags=["proposals"],
)
def decline(
    request: Request,
    cs: Wired,
    service: Service,
    proposal_id: ProposalId,
    # A model (or None) is the body by itself: ``Body()`` around the union would have pydantic
    # warn, on the route's first request, that the alias FastAPI gives it does nothing.
    body: DeclineIn | None = None,
) -> JSONResponse:
    note = body.note if body is not None else None
    with answers(request):
        report = with_status_path(cs.access.decline(proposal_id, service.caller, note).to_json())
    return report_response(cs, request, service, "decline", report)


@router.get(
    "/proposals/{proposal_id}/status",
    response_model=ProposalStatusOut,
    responses=problem_responses(403, 404, 422),
    summary="Where a proposal's execution stands (an outcome's status_path)",
    tags=["proposals"],
)
def status(
    request: Request,
    cs: Wired,
    service: Service,
    proposal_id: ProposalId,
    language: Language = "en",
) -> JSONResponse:
    with answers(request):
        document = cs.access.status(proposal_id, service.caller, language).to_json()
    return JSONResponse(document)


@router.get(
    "/proposals/{proposal_id}/history",
    response_model=HistoryOut,
    responses=problem_responses(403, 404, 422),
    summary="A proposal's full event history (auditors)",
    tags=["audit"],
)
def history(
    request: Request,
    cs: Wired,
    service: Service,
    proposal_id: ProposalId,
    as_of: Annotated[
        str | None,
        Query(max_length=40, description="Only events up to this version or ISO 8601 time."),
    ] = None,
    language: Language = "en",
) -> JSONResponse:
    with answers(request):
        document = history_with_status_paths(
            cs.access.history(proposal_id, service.caller, as_of, language)
        )
    return JSONResponse(jsonable_encoder(document))
