"""The webhooks' routes: an organization's endpoints, its deliveries and dead letters.

Everything here needs the ``webhooks.manage`` permission (the token's, and its member's), in
the token's organization. A URL that is not http(s) is a 422 naming the ``url`` field; one
already registered a 409 that says so.
"""

from __future__ import annotations

from typing import Annotated

from countersign.domain.club.webhooks import WebhookUrlError
from countersign.domain.errors import DuplicateError
from countersign.infrastructure.entrypoints.http.answers import (
    admit_write,
    answers,
    problem_responses,
    record,
)
from countersign.infrastructure.entrypoints.http.auth import GatedRoute, Service, Wired
from countersign.infrastructure.entrypoints.http.models.webhooks import (
    DeliveriesOut,
    RedeliveredOut,
    WebhookAddedOut,
    WebhookIn,
    WebhookListOut,
    WebhookRemovedOut,
)
from countersign.infrastructure.entrypoints.http.problems import API_PREFIX, ProblemError
from countersign.infrastructure.identity.tokens import ServicePrincipal
from countersign.infrastructure.notifications.webhooks import EndpointRemovedError, Webhooks
from fastapi import APIRouter, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

router = APIRouter(prefix=API_PREFIX, tags=["webhooks"], route_class=GatedRoute)

EndpointId = Annotated[str, Path(max_length=64, description="The endpoint's id (we_...).")]
DeliveryId = Annotated[str, Path(max_length=64, description="The delivery's id (dlv_...).")]


def _slug(service: ServicePrincipal) -> str:
    return service.organization_slug


@router.get(
    "/webhooks",
    response_model=WebhookListOut,
    responses=problem_responses(403, 404),
    summary="The organization's webhook endpoints",
)
def list_endpoints(request: Request, cs: Wired, service: Service) -> JSONResponse:
    with answers(request):
        items = Webhooks(cs).endpoints(service.caller, _slug(service))
    return JSONResponse({"items": items})


@router.post(
    "/webhooks",
    status_code=201,
    response_model=WebhookAddedOut,
    responses=problem_responses(403, 404, 409, 422, 429),
    summary="Register a webhook endpoint (its signing secret is answered once)",
)
def add_endpoint(request: Request, cs: Wired, service: Service, body: WebhookIn) -> JSONResponse:
    with answers(request):
        admit_write(cs, service)
        try:
            added = Webhooks(cs).add(service.caller, _slug(service), body.url)
        except WebhookUrlError as error:
            problems = [{"field": "url", "message": str(error)}]
            raise ProblemError("invalid-request", problems=problems) from None
        except DuplicateError:
            detail = "This webhook URL is already registered for the organization."
            raise ProblemError("rejected", detail) from None
    record(cs, request, service, "webhooks.add", added.endpoint_id, "added")
    return JSONResponse(added.to_json(), status_code=201)


@router.delete(
    "/webhooks/{endpoint_id}",
    response_model=WebhookRemovedOut,
    responses=problem_responses(403, 404, 429),
    summary="Stop posting to a webhook endpoint",
)
def remove_endpoint(
    request: Request, cs: Wired, service: Service, endpoint_id: EndpointId
) -> JSONResponse:
    with answers(request):
        admit_write(cs, service)
        Webhooks(cs).remove(service.caller, _slug(service), endpoint_id)
    record(cs, request, service, "webhooks.remove", endpoint_id, "removed")
    return JSONResponse({"endpoint_id": endpoint_id, "removed": True})


@router.get(
    "/webhooks/deliveries",
    response_model=DeliveriesOut,
    responses=problem_responses(403, 404, 422),
    summary="The organization's deliveries, newest first, each with its attempts",
)
def deliveries(
    request: Request,
    cs: Wired,
    service: Service,
    dead: Annotated[bool, Query(description="Only the dead letters.")] = False,
    limit: Annotated[int, Query(ge=1, le=100, description="At most this many.")] = 50,
    before: Annotated[
        str | None,
        Query(
            max_length=64,
            description="The next page: the deliveries listed after this one (a page's "
            "next_before). 404 for an id the organization has no delivery of.",
        ),
    ] = None,
) -> JSONResponse:
    with answers(request):
        items = Webhooks(cs).deliveries(
            service.caller, _slug(service), dead_only=dead, limit=limit, before=before
        )
    # A full page may have more after it; a shorter one is the last.
    next_before = items[-1]["delivery_id"] if len(items) == limit else None
    return JSONResponse(jsonable_encoder({"items": items, "next_before": next_before}))


@router.post(
    "/webhooks/deliveries/{delivery_id}/redeliver",
    response_model=RedeliveredOut,
    responses=problem_responses(403, 404, 409, 429),
    summary="Put one dead letter back in line",
)
def redeliver(
    request: Request, cs: Wired, service: Service, delivery_id: DeliveryId
) -> JSONResponse:
    with answers(request):
        admit_write(cs, service)
        try:
            ids = Webhooks(cs).redeliver(service.caller, _slug(service), delivery_id)
        except EndpointRemovedError:
            raise ProblemError("rejected", EndpointRemovedError.MESSAGE) from None
    if not ids:
        # A delivered or pending delivery is no dead letter; another club's reads as unknown.
        detail = (
            "No dead letter of this organization has that id: only a delivery whose last try "
            "failed can be redelivered (GET /api/v1/webhooks/deliveries?dead=true lists them)."
        )
        raise ProblemError("not-found", detail)
    record(cs, request, service, "webhooks.redeliver", delivery_id, "redelivered")
    return JSONResponse({"redelivered": ids})


@router.post(
    "/webhooks/dead-letters/redeliver",
    response_model=RedeliveredOut,
    responses=problem_responses(403, 404, 429),
    summary="Put every dead letter of the organization back in line",
)
def redeliver_all(request: Request, cs: Wired, service: Service) -> JSONResponse:
    with answers(request):
        admit_write(cs, service)
        ids = Webhooks(cs).redeliver(service.caller, _slug(service))
    done = f"{len(ids)} redelivered"
    record(cs, request, service, "webhooks.redeliver", "all", done, changed=bool(ids))
    return JSONResponse({"redelivered": ids})
