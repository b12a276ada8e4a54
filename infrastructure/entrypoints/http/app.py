"""The FastAPI application: ``create_app(cs)`` over one wired countersign."""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http import (
    assistants,
    members,
    policies,
    proposals,
    webhooks,
)
from countersign.infrastructure.entrypoints.http.auth import security_scheme
from countersign.infrastructure.entrypoints.http.gate import ApiGate
from countersign.infrastructure.entrypoints.http.problems import (
    PROBLEM_MEDIA_TYPE,
    install_problem_handlers,
)
from countersign.infrastructure.identity.tokens import ensure_token_tables
from countersign.infrastructure.in_flight import InFlight, in_flight_from_env
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

API_VERSION = "1"
DESCRIPTION = (
    "AI assistants propose; people approve; the application executes. Application services "
    "authenticate with bearer API tokens scoped to one organization and a set of "
    "permissions. Errors are RFC 9457 problem documents with a correlation id. A request body "
    "may hold at most {max_body} bytes (413 otherwise); the token is checked before any of it "
    "is read."
)


def create_app(
    cs: Countersign, *, max_body: int | None = None, in_flight: int | None = None
) -> FastAPI:
    """The HTTP application for ``cs``; the caller keeps ``cs`` open for the app's lifetime.

    ``max_body``: the most bytes an API request body may have (default: the settings',
    COUNTERSIGN_API_MAX_BODY). ``in_flight``: the most requests one token may have under
    way at once (default: COUNTERSIGN_REQUESTS_IN_FLIGHT's, ``infrastructure.in_flight``).
    """
    ensure_token_tables(cs)
    limit = max_body if max_body is not None else cs.settings.api_max_body
    app = FastAPI(
        title="countersign",
        version=API_VERSION,
        description=DESCRIPTION.format(max_body=limit),
        docs_url=None,
        redoc_url=None,
        # A path with a slash added (/webhooks/) is an unknown path, answered as one is: the
        # router's own redirect named the request's Host header as the address (307 to
        # http://<Host>/webhooks), without the pages' headers
        # (tests/attacks/test_slash_redirects.py).
        redirect_slashes=False,
        # FastAPI's own OpenTelemetry spans, metrics and logs: countersign reports through its
        # log lines and /metrics, and no tracer is configured; with them on (the default),
        # every request asked the global providers whether one had been (1% of an
        # approve's instructions).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.countersign = cs
    # Outermost first: the correlation id (and the API headers) wrap everything, the gate
    # wraps every route. (add_middleware puts the latest added outside.)
    app.add_middleware(
        ApiGate,
        cs=cs,
        max_body=limit,
        in_flight=InFlight(in_flight if in_flight is not None else in_flight_from_env()),
    )
    install_problem_handlers(app)
    for router in (
        assistants.router,
        proposals.router,
        policies.router,
        members.router,
        webhooks.router,
    ):
        add_routes(app, router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            _problems_as_problem_json(schema)
            # The routes take the bearer token themselves (GatedRoute), not through FastAPI's
            # dependency on HTTPBearer, whose scheme the document would otherwise list.
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {}).update(security_scheme())
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def add_routes(app: FastAPI, router: APIRouter) -> None:
    """``router``'s routes as the application's own, in its order: what
    ``app.include_router(router)`` serves, without an included router's layer.

    FastAPI keeps an included router as one route of the application, which matches a
    request by trying the router's routes one by one, with its bookkeeping in the request's
    scope around each, and then matches it again to handle it: for an approve, about a tenth
    of the server's instructions. The API's routers take nothing from their inclusion (no
    prefix, tags, dependencies or responses of its own: their routes already carry the
    prefix), so their routes serve the same as the application's own; a router that would
    take something (dependencies, callbacks, overrides, a route of another kind) is refused.
    """
    plain = (
        not router.dependencies
        and not router.callbacks
        and router.dependency_overrides_provider is None
        and all(isinstance(route, APIRoute) for route in router.routes)
    )
    if not plain:
        raise ValueError(f"{router.prefix}: a router with more than API routes: include it")
    app.router.routes.extend(router.routes)
    app.router._mark_routes_changed()


def _problems_as_problem_json(schema: dict[str, Any]) -> None:
    """Error responses are served as application/problem+json; say so in the document.

    FastAPI's default 422 (its HTTPValidationError) is dropped where a route did not declare
    one: every validation error is a problem, and a path that names nothing answers 404.
    """
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if "HTTPValidationError" in str(responses.get("422", "")):
                del responses["422"]
            for code, response in responses.items():
                content = response.get("content", {})
                if code[:1] in ("4", "5") and "application/json" in content:
                    content[PROBLEM_MEDIA_TYPE] = content.pop("application/json")
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
