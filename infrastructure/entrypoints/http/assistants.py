"""The assistants' route (one manager message, one turn) and the inbox of pending proposals."""

from __future__ import annotations

from typing import Annotated

from countersign.infrastructure.entrypoints.http.answers import (
    answers,
    problem_responses,
    record,
)
from countersign.infrastructure.entrypoints.http.auth import GatedRoute, Service, Wired
from countersign.infrastructure.entrypoints.http.models.assistants import (
    KNOWN_SECTION,
    SECTION_PATTERN,
    SECTIONS,
    InboxOut,
    MessageIn,
    TurnOut,
)
from countersign.infrastructure.entrypoints.http.problems import API_PREFIX
from fastapi import APIRouter, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

router = APIRouter(prefix=API_PREFIX, route_class=GatedRoute)


@router.post(
    "/assistants/{section}/resources/{resource_id:path}/messages",
    response_model=TurnOut,
    responses=problem_responses(400, 403, 404, 409, 422, 429),
    summary="Send a manager message to a section assistant",
    tags=["assistants"],
)
def post_message(
    request: Request,
    cs: Wired,
    service: Service,
    section: Annotated[
        str, Path(pattern=SECTION_PATTERN, description=f"One of: {SECTIONS}."), KNOWN_SECTION
    ],
    resource_id: Annotated[
        str,
        Path(
            max_length=64,
            description="What the conversation is about: an order id, the form or roster id.",
        ),
    ],
    body: MessageIn,
) -> JSONResponse:
    """One assistant turn. At most one proposal comes out; nothing executes until approval."""
    with answers(request):
        report = cs.assistant.turn(
            organization=service.organization_slug,
            actor=service.caller,
            section=section,
            resource_id=resource_id,
            message=body.message,
            interaction_id=body.interaction_id,
            language=body.language,
        )
    document = jsonable_encoder(report.to_json())
    target = document["proposal"]["proposal_id"] if document["proposal"] else resource_id
    record(cs, request, service, f"assistant_message:{section}", target, report.ended)
    return JSONResponse(document)


@router.get(
    "/inbox",
    response_model=InboxOut,
    responses=problem_responses(403, 422),
    summary="Pending proposals awaiting approval, newest first",
    tags=["proposals"],
)
def inbox(
    request: Request,
    cs: Wired,
    service: Service,
    section: Annotated[
        str | None,
        Query(pattern=SECTION_PATTERN, description=f"Only this one of: {SECTIONS}."),
        KNOWN_SECTION,
    ] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> JSONResponse:
    """Sections the token cannot read are not listed: without ``section``, every section it
    may read is (403 when it may read none)."""
    with answers(request):
        listed = cs.access.inbox_scope(service.caller, section)
        cs.catch_up(["browser_view"])
        document = cs.read_models.inbox(
            listed.organization_id,
            cs.clock.now(),
            sections=listed.sections,
            operations=listed.pending_operations,
            enabled=listed.enabled,  # counted apart: nobody decides them (not_enabled)
            page=page,
            page_size=page_size,
        )
        # Approvals counted as the card counts them: one read of the club, none per item.
        read = cs.access.inbox_cards(service.caller, document["items"])
        document["items"] = [read.card(item) for item in document["items"]]
    return JSONResponse(jsonable_encoder(document))
