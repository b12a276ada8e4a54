"""The versioned JSON API, ``/api/v1``: assistants, proposals, the inbox and the audit replay.

Status scheme (the same on every route):

* 200 / 201: the request was processed. For approve and decline that includes every answer
  the proposal itself gives (``executed``, ``already_completed``, ``declined``, and
  ``not_approvable`` because it is no longer pending, expired, or in progress): the document
  is the CLI's ``approve --json`` and repeating the request returns the same stored outcome.
* 401: no valid token. 403: the token (or the member it acts as) lacks the permission.
* 404: unknown id, malformed id, or another organization's id: one identical answer.
* 400 malformed JSON (or a malformed Content-Length); 413 a body over the limit (the gate,
  ``gate.py``, refuses it before reading it, and checks the token before reading any body);
  422 a request with problems (at most 20 listed, ``more_problems`` counts the rest);
  409 a domain rule refused it.
* 503 busy (retry) or a read model stopped; 500 unexpected, with a correlation id.

Ids are checked against the caller's organization BEFORE any permission that depends on
what the id names, so a foreign id never answers 403.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.errors import CorruptRecordError, ForbiddenError, UnknownOperationError
from countersign.domain.club.organization import Permission
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.base import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError, CountersignError, NotFoundError
from countersign.domain.proposal import Proposal, ProposalStatus
from countersign.domain.scope import Section
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.http.auth import Caller, Wired, require, require_any
from countersign.infrastructure.entrypoints.http.models import (
    ApprovalReportOut,
    DeclineIn,
    HistoryOut,
    InboxOut,
    MessageIn,
    ProposalCardOut,
    ProposalCreatedOut,
    ProposalStatusOut,
    ProposeIn,
    SectionName,
    TurnOut,
)
from countersign.infrastructure.entrypoints.http.problems import ProblemDocument, ProblemError
from countersign.infrastructure.identity.tokens import ServicePrincipal, record_action
from countersign.infrastructure.projection_runner import ProjectionStoppedError
from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

log = logging.getLogger("countersign.http")

_DESCRIPTIONS = {
    400: "The body is not valid JSON (or too deeply nested, not UTF-8, a number too large).",
    401: "No valid API token (checked before the body is read).",
    403: "The token, or the member it acts as, lacks the permission.",
    404: "No such resource in the token's organization (unknown and foreign ids alike).",
    409: "A rule of the application refused the request.",
    413: "The request body is over the size limit (COUNTERSIGN_API_MAX_BODY bytes).",
    422: "The request has problems (see 'problems').",
    500: "Unexpected error; quote the correlation id.",
    503: "Busy with other changes (retry), or a read model is stopped.",
}


def _problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {
        code: {"model": ProblemDocument, "description": _DESCRIPTIONS[code]}
        for code in sorted({*codes, 400, 401, 413, 500, 503})
    }


router = APIRouter(prefix="/api/v1")

ProposalId = Annotated[str, Path(max_length=64, description="The proposal's opaque id.")]


# -- helpers ----------------------------------------------------------------------------------


@contextmanager
def _answers(request: Request) -> Iterator[None]:
    """Translate what the application services raise into problems."""
    try:
        yield
    except InvalidRequestError as invalid:
        problems = [problem.model_dump() for problem in invalid.problems]
        raise ProblemError(
            "invalid-request", problems=problems, more_problems=invalid.more_problems
        ) from None
    except UnknownOperationError:
        problems = [{"field": "operation", "message": "no such operation"}]
        raise ProblemError("invalid-request", problems=problems) from None
    except NotFoundError:
        raise ProblemError("not-found") from None
    except ForbiddenError:
        raise ProblemError("forbidden") from None
    except ConcurrencyConflictError:
        raise ProblemError("busy", headers={"Retry-After": "1"}) from None
    except ProjectionStoppedError as stopped:
        log.error("projection stopped (request %s): %s", correlation_id_of(request), stopped)
        raise ProblemError("unavailable") from None
    except CorruptRecordError as corrupt:
        log.error(
            "unreadable record, reference %s (request correlation id %s)",
            corrupt.correlation_id,
            correlation_id_of(request),
        )
        raise ProblemError("internal-error") from None
    except CountersignError as refused:
        log.info("refused (request %s): %s", correlation_id_of(request), refused)
        raise ProblemError("rejected") from None


def _owned(
    request: Request, cs: Countersign, caller: ServicePrincipal, proposal_id: str
) -> Proposal:
    """The caller's organization's proposal; anything else is the same 404."""
    try:
        pid = UUID(proposal_id.strip())
    except ValueError:
        raise ProblemError("not-found") from None
    with _answers(request):
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


def _section_permissions(section: str) -> list[Permission]:
    return sorted({c.permission for c in REGISTRY.values() if str(c.section) == section})


def _record(
    cs: Countersign,
    request: Request,
    caller: ServicePrincipal,
    action: str,
    target: str,
    result: str,
) -> None:
    correlation_id = correlation_id_of(request)
    log.info(
        "%s (acting as %s) %s %s: %s [%s]",
        caller.service,
        caller.acting_member,
        action,
        target,
        result,
        correlation_id,
    )
    try:
        record_action(
            cs, caller, action=action, target=target, result=result, correlation_id=correlation_id
        )
    except Exception:
        # The outcome is already in the event stream; the caller must still learn it.
        log.exception("could not record %s's %s [%s]", caller.service, action, correlation_id)


def _report_response(
    cs: Countersign,
    request: Request,
    caller: ServicePrincipal,
    action: str,
    report: dict[str, Any],
) -> JSONResponse:
    if report["result"] == "not_approvable" and report["reason"] == "not_found":
        raise ProblemError("not-found")
    if report["result"] == "not_approvable" and report["reason"] == "forbidden":
        raise ProblemError("forbidden")
    result = str(report["result"]) + (f":{report['reason']}" if report["reason"] else "")
    _record(cs, request, caller, action, str(report["proposal_id"]), result)
    return JSONResponse(report)


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


# -- assistants -------------------------------------------------------------------------------


@router.post(
    "/assistants/{section}/resources/{resource_id}/messages",
    response_model=TurnOut,
    responses=_problems(400, 403, 404, 409, 422),
    summary="Send a manager message to a section assistant",
    tags=["assistants"],
)
def post_message(
    request: Request,
    cs: Wired,
    caller: Caller,
    section: Annotated[SectionName, Path(description="orders or email_broadcasts")],
    resource_id: Annotated[
        str, Path(max_length=64, description="The order id or broadcast form id.")
    ],
    body: MessageIn,
) -> JSONResponse:
    """One assistant turn. At most one proposal comes out; nothing executes until approval."""
    assistant = ASSISTANTS[Section(section)]
    require(caller, *sorted({c.permission for c in assistant.contracts}))
    with _answers(request):
        report = cs.assistant.turn(
            organization=caller.organization_slug,
            actor=caller.acting_member,
            section=section,
            resource_id=resource_id,
            message=body.message,
            interaction_id=body.interaction_id,
        )
    document = jsonable_encoder(report.to_json())
    target = document["proposal"]["proposal_id"] if document["proposal"] else resource_id
    _record(cs, request, caller, f"assistant_message:{section}", target, report.ended)
    return JSONResponse(document)


# -- proposals --------------------------------------------------------------------------------


@router.post(
    "/proposals",
    status_code=201,
    response_model=ProposalCreatedOut,
    responses=_problems(400, 403, 404, 409, 422),
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
    with _answers(request):
        created = cs.proposals.propose(
            organization=caller.organization_slug,
            actor=caller.acting_member,
            operation=body.operation,
            resource_id=body.resource_id,
            request=body.request,
        )
    _record(cs, request, caller, "propose", created.proposal_id, created.status)
    return JSONResponse(
        created.to_json(),
        status_code=201,
        headers={"Location": f"{router.prefix}/proposals/{created.proposal_id}"},
    )


@router.get(
    "/proposals/{proposal_id}",
    response_model=ProposalCardOut,
    responses=_problems(403, 404, 422),
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
    with _answers(request):
        document = cs.proposals.card(str(proposal.id), caller.acting_member, language).to_json()
    return JSONResponse(document)


@router.post(
    "/proposals/{proposal_id}/approve",
    response_model=ApprovalReportOut,
    responses=_problems(403, 404, 409),
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
    with _answers(request):
        report = cs.proposals.approve(str(proposal.id), caller.acting_member).to_json()
    return _report_response(cs, request, caller, "approve", report)


@router.post(
    "/proposals/{proposal_id}/decline",
    response_model=ApprovalReportOut,
    responses=_problems(400, 403, 404, 409, 422),
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
    with _answers(request):
        report = cs.proposals.decline(str(proposal.id), caller.acting_member, note).to_json()
    return _report_response(cs, request, caller, "decline", report)


@router.get(
    "/proposals/{proposal_id}/status",
    response_model=ProposalStatusOut,
    responses=_problems(403, 404),
    summary="Where a proposal's execution stands (an outcome's status_path)",
    tags=["proposals"],
)
def status(request: Request, cs: Wired, caller: Caller, proposal_id: ProposalId) -> JSONResponse:
    proposal = _owned(request, cs, caller, proposal_id)
    _may_read(caller, proposal)
    with _answers(request):
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
    responses=_problems(403, 404, 422),
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
    with _answers(request):
        document = cs.audit.history(str(proposal.id), moment)
    return JSONResponse(jsonable_encoder(document))


# -- inbox ------------------------------------------------------------------------------------


@router.get(
    "/inbox",
    response_model=InboxOut,
    responses=_problems(403, 422),
    summary="Pending proposals awaiting approval, newest first",
    tags=["proposals"],
)
def inbox(
    request: Request,
    cs: Wired,
    caller: Caller,
    section: Annotated[SectionName | None, Query(description="Only this section.")] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> JSONResponse:
    """Sections the token cannot read are not listed: without ``section`` the token must read
    every section, or exactly one (which is then listed)."""
    readable = [
        s.value
        for s in Section
        if caller.may(Permission.READ_AUDIT)
        or any(caller.may(p) for p in _section_permissions(s.value))
    ]
    chosen: str | None = section
    if chosen is not None and chosen not in readable:
        raise ProblemError("forbidden", "This token may not read that section.")
    if chosen is None and len(readable) < len(Section):
        if len(readable) != 1:
            raise ProblemError("forbidden", "Name a section this token may read.")
        chosen = readable[0]
    with _answers(request):
        for runner in cs.projection_runners(["browser_view"]):
            runner.catch_up()
        document = cs.read_models.inbox(
            str(caller.organization_id),
            cs.proposals.clock.now(),
            section=chosen,
            page=page,
            page_size=page_size,
        )
    return JSONResponse(jsonable_encoder(document))
