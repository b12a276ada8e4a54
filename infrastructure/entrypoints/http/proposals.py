"""The proposals' routes: propose, read the card, approve, decline, the status an outcome
points to, and the audit replay."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal
from uuid import UUID

from countersign.domain.club.organization import Permission
from countersign.domain.contracts import REGISTRY
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.answers import (
    answers,
    problem_responses,
    record,
    report_response,
)
from countersign.infrastructure.entrypoints.http.auth import Caller, Wired, require, require_any
from countersign.infrastructure.entrypoints.http.models import (
    ApprovalReportOut,
    DeclineIn,
    HistoryOut,
    ProposalCardOut,
    ProposalCreatedOut,
    ProposalStatusOut,
    ProposeIn,
)
from countersign.infrastructure.entrypoints.http.problems import API_PREFIX, ProblemError
from countersign.infrastructure.identity.tokens import ServicePrincipal
from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

router = APIRouter(prefix=API_PREFIX)

ProposalId = Annotated[str, Path(max_length=64, description="The proposal's opaque id.")]


def _owned(
    request: Request, cs: Countersign, caller: ServicePrincipal, proposal_id: str
) -> Proposal:
    """The caller's organization's proposal; anything else is the same 404."""
    try:
        pid = UUID(proposal_id.strip())
    except ValueError:
        raise ProblemError("not-found") from None
    with answers(request):
        proposal = cs.store.read(pid, Proposal)  # NotFoundError unless it is a proposal
    if proposal.organization_id != caller.organization_id:
        raise ProblemError("not-found")
    return proposal


def _operation_permission(proposal: Proposal) -> Permission | None:
    contract = REGISTRY.get(proposal.kind)
    return contract.permission if contract is not None else None


def _may_read(caller: ServicePrincipal, proposal: Proposal) -> None:
    """Reading a proposal needs its operation's permission, or the auditor's."""
    permission = _operation_permission(proposal)
    allowed = [Permission.READ_AUDIT] + ([permission] if permission else [])
    require_any(caller, *allowed)


def _as_of(value: str | None) -> int | datetime | None:
    """A version number or an ISO 8601 time (ASCII only: ``'¹'.isdigit()`` is True)."""
    if value is None:
        return None
    text = value.strip()
    if re.fullmatch(r"[0-9]{1,9}", text):
        return int(text)
    if re.fullmatch(r"[0-9]{10,}", text):
        return 0  # beyond any version: the service answers not found
    try:
        if not text.isascii():
            raise ValueError(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        problems = [{"field": "as_of", "message": "a version number or an ISO 8601 time"}]
        raise ProblemError("invalid-request", problems=problems) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@router.post(
    "/proposals",
    status_code=201,
    response_model=ProposalCreatedOut,
    responses=problem_responses(400, 403, 404, 409, 422),
    summary="Turn a model-facing request into a proposal",
    tags=["proposals"],
)
def propose(request: Request, cs: Wired, caller: Caller, body: ProposeIn) -> JSONResponse:
    """Validate the request through the operation's contract and freeze it as a proposal."""
    contract = REGISTRY.get(body.operation)
    if contract is None:
        problems = [{"field": "operation", "message": "no such operation"}]
        raise ProblemError("invalid-request", problems=problems)
    require(caller, contract.permission)
    with answers(request):
        created = cs.proposals.propose(
            organization=caller.organization_slug,
            actor=caller.acting_member,
            operation=body.operation,
            resource_id=body.resource_id,
            request=body.request,
        )
    record(cs, request, caller, "propose", created.proposal_id, created.status)
    return JSONResponse(
        created.to_json(),
        status_code=201,
        headers={"Location": f"{router.prefix}/proposals/{created.proposal_id}"},
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
    caller: Caller,
    proposal_id: ProposalId,
    language: Annotated[Literal["en", "fr"], Query(description="The card's language.")] = "en",
) -> JSONResponse:
    proposal = _owned(request, cs, caller, proposal_id)
    _may_read(caller, proposal)
    with answers(request):
        document = cs.proposals.card(str(proposal.id), caller.acting_member, language).to_json()
    return JSONResponse(document)


@router.post(
    "/proposals/{proposal_id}/approve",
    response_model=ApprovalReportOut,
    responses=problem_responses(403, 404, 409),
    summary="Approve a proposal by its id",
    tags=["proposals"],
)
def approve(request: Request, cs: Wired, caller: Caller, proposal_id: ProposalId) -> JSONResponse:
    """Claim exactly once, recheck, execute, record the outcome. Repeating it returns the
    stored outcome (``already_completed``) and executes nothing."""
    proposal = _owned(request, cs, caller, proposal_id)
    permission = _operation_permission(proposal)
    if permission is not None:
        require(caller, permission)
    with answers(request):
        report = cs.proposals.approve(str(proposal.id), caller.acting_member).to_json()
    return report_response(cs, request, caller, "approve", report)


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
    caller: Caller,
    proposal_id: ProposalId,
    body: Annotated[DeclineIn | None, Body()] = None,
) -> JSONResponse:
    proposal = _owned(request, cs, caller, proposal_id)
    permission = _operation_permission(proposal)
    if permission is not None:
        require(caller, permission)
    note = body.note if body is not None else None
    with answers(request):
        report = cs.proposals.decline(str(proposal.id), caller.acting_member, note).to_json()
    return report_response(cs, request, caller, "decline", report)


@router.get(
    "/proposals/{proposal_id}/status",
    response_model=ProposalStatusOut,
    responses=problem_responses(403, 404),
    summary="Where a proposal's execution stands (an outcome's status_path)",
    tags=["proposals"],
)
def status(request: Request, cs: Wired, caller: Caller, proposal_id: ProposalId) -> JSONResponse:
    proposal = _owned(request, cs, caller, proposal_id)
    _may_read(caller, proposal)
    with answers(request):
        message = cs.proposals.message(proposal)
    outcome = proposal.outcome or {}
    return JSONResponse(
        {
            "proposal_id": str(proposal.id),
            "status": str(proposal.status),
            "outcome_kind": outcome.get("kind"),
            "reconciliation_pending": proposal.status == ProposalStatus.RECONCILING,
            "message": message,
        }
    )


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
    caller: Caller,
    proposal_id: ProposalId,
    as_of: Annotated[
        str | None,
        Query(max_length=40, description="Only events up to this version or ISO 8601 time."),
    ] = None,
) -> JSONResponse:
    proposal = _owned(request, cs, caller, proposal_id)
    require(caller, Permission.READ_AUDIT)
    moment = _as_of(as_of)
    with answers(request):
        document = cs.audit.history(str(proposal.id), moment)
    return JSONResponse(jsonable_encoder(document))
