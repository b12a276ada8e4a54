"""A ``GatedRoute``'s request handler: FastAPI's own, less its glue where a request needs none.

FastAPI's handler (``fastapi.routing.get_request_handler``) reads the body, then solves the
route's dependencies (``solve_dependencies``: a ``Response`` for dependencies to set headers
on, the dependency loop, the query string, headers and cookies parsed whether or not a
parameter wants them), then calls the endpoint; around it, ``request_response`` opens two
exit stacks (for dependencies with ``yield``) and a handler of the route's exceptions. A
``GatedRoute``'s endpoint has no dependency of FastAPI's left (the route gives it ``Service``
and ``Wired``), so most of that is work for nothing: about a tenth of a repeated approve's
instructions in the server.

The short way serves a request whose body is empty: it validates the path and query
parameters and the (absent) body as FastAPI's ``request_params_to_args`` and
``request_body_to_args`` do (with them, or, for a plain ``str`` path parameter or an
optional body, their few steps that apply), calls the endpoint with what they gave, and
sends its ``Response``; an exception goes to the application's handlers, one layer further
out, which answer it as the route's would have. Anything else goes to FastAPI's handler: a
body (its parsing, content type and validation stay FastAPI's), a parameter that does not
validate (FastAPI validates again and raises its own ``RequestValidationError``, the same
errors), a body that could not be read (FastAPI meets the same). ``lean_app`` is the route's
application (a route an included router serves has ``lean_handler`` inside FastAPI's
wrapper instead). A route it cannot serve so (a dependency of its own, headers, cookies,
forms, a background task, an endpoint that does not return a ``Response``) has FastAPI's
handler alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

import fastapi.routing
from fastapi._compat import ModelField
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import (
    get_validation_alias,
    request_body_to_args,
    request_params_to_args,
)
from fastapi.params import Form, Path
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Handler = Callable[[Request], Coroutine[Any, Any, Response]]

# FastAPI's own (``_EffectiveRouteContext``): the route as a router includes it, whose
# dependant is the one FastAPI's handler serves. Without it (another FastAPI), no lean handler.
_INCLUDED = getattr(fastapi.routing, "_effective_route_context_var", None)


def lean_handler(route: fastapi.routing.APIRoute, full: Handler) -> Handler:
    """``full`` (FastAPI's handler for ``route``) with the short way in front, where the
    route allows it."""
    lean = _Lean.of(route)
    if lean is None:
        return full

    async def handler(request: Request) -> Response:
        try:
            body = await request.body() if lean.given.body_params else b""
        except Exception as unread:
            # FastAPI's handler meets the same exception, and answers it its own way.
            return await full(Request(request.scope, _raising(unread)))
        if body:
            return await full(request)
        return await lean.answer(request) or await full(request)

    return handler


def lean_app(route: fastapi.routing.APIRoute, fallback: ASGIApp) -> ASGIApp:
    """The route's ASGI application: the short way, without FastAPI's wrapper around a
    handler (``request_response``: a handler of the route's exceptions, where the
    application's own handle them the same a layer further out, and two exit stacks, for
    dependencies the route does not have); anything else to ``fallback`` (the route's own
    application), with what the short way read of the request replayed to it."""
    lean = _Lean.of(route)
    if lean is None:
        return fallback

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        heard: list[Message] = []

        async def hearing() -> Message:
            message = await receive()
            heard.append(message)
            return message

        request = Request(scope, hearing, send)
        try:
            body: bytes | None = await request.body() if lean.given.body_params else b""
        except Exception:
            body = None  # the fallback hears the same, and answers it its own way
        response = await lean.answer(request) if body == b"" else None
        if response is None:
            await fallback(scope, _replaying(heard, receive), send)
        else:
            await response(scope, receive, send)

    return app


class _Lean:
    """What the short way needs of a route: its endpoint and how to give it its parameters."""

    def __init__(self, route: fastapi.routing.APIRoute, dependant: Dependant, *, embed: bool):
        assert dependant.call is not None
        self.route, self.call = route, dependant.call
        self.given = _Given(dependant, embed=embed)
        self.request_name = dependant.request_param_name

    @classmethod
    def of(cls, route: fastapi.routing.APIRoute) -> _Lean | None:
        """The short way for ``route`` as FastAPI serves it (included in a router or not), or
        None where it has to be FastAPI's handler."""
        if _INCLUDED is None:
            return None
        included = _INCLUDED.get()
        served: Any = (
            included if included is not None and included.original_route is route else route
        )
        if not _lean(served.dependant, served.body_field):
            return None
        return cls(route, served.dependant, embed=bool(served._embed_body_fields))

    async def answer(self, request: Request) -> Response | None:
        """The endpoint's answer to a request whose (empty) body was read; None where a
        parameter is not valid (FastAPI's handler is to answer)."""
        values, errors = await self.given.values(request)
        if errors:
            return None
        if self.request_name is not None:
            values[self.request_name] = request
        response = await self.call(**values)
        if not isinstance(response, Response):
            _not_a_response(self.route, response)
        return response


class _Given:
    """A route's parameters from a request without a body, as FastAPI's ``solve_dependencies``
    gives them (with FastAPI's own functions), where they are valid."""

    def __init__(self, dependant: Dependant, *, embed: bool) -> None:
        self.path_params, self.query_params = dependant.path_params, dependant.query_params
        self.body_params, self.embed = dependant.body_params, embed
        # Path parameters that are plain strings: validated as request_params_to_args does,
        # less its search for the value (a path's match holds it, under the one alias).
        plain = [_plain_path(field) for field in self.path_params]
        self.paths = None if None in plain else [p for p in plain if p is not None]
        # Without a body, each body parameter is its default (request_body_to_args), where
        # none is required or validated.
        self.absent = _absent_body(self.body_params)

    async def values(self, request: Request) -> tuple[dict[str, Any], list[Any]]:
        """The parameters' values and FastAPI's errors (where there are errors, FastAPI's
        handler is to answer, and the values are not used)."""
        if self.paths is None:
            values, errors = request_params_to_args(self.path_params, request.path_params)
        else:
            values, errors = {}, []
            given = request.path_params
            for name, alias, field in self.paths:
                valid, wrong = field.validate(given.get(alias), values, loc=("path", alias))
                values[name] = valid
                errors += wrong
        if self.query_params:
            queried, more = request_params_to_args(self.query_params, request.query_params)
            values.update(queried)
            errors += more
        if self.absent is not None:
            values.update(self.absent)
        elif self.body_params:
            bodied, more = await request_body_to_args(
                self.body_params, PydanticUndefined, self.embed
            )
            values.update(bodied)
            errors += more
        return values, errors


def _lean(dependant: Dependant, body_field: Any) -> bool:
    """Whether a request to this dependant's route needs no more of FastAPI's handler than
    ``lean_handler`` does."""
    return (
        not dependant.dependencies
        and not dependant.header_params
        and not dependant.cookie_params
        and not (
            dependant.http_connection_param_name
            or dependant.websocket_param_name
            or dependant.response_param_name
            or dependant.background_tasks_param_name
            or dependant.security_scopes_param_name
        )
        and not (
            isinstance(getattr(body_field, "field_info", None), FieldInfo)
            and isinstance(body_field.field_info, Form)
        )
        and dependant.call is not None
        and inspect.iscoroutinefunction(dependant.call)
        and _returns_a_response(dependant.call)
    )


def _plain_path(field: ModelField) -> tuple[str, str, ModelField] | None:
    """A path parameter annotated ``str``: its name, the alias its value is under, itself."""
    info = field.field_info
    if not isinstance(info, Path) or info.annotation is not str or info.validation_alias:
        return None
    return field.name, get_validation_alias(field), field


def _absent_body(fields: list[ModelField]) -> dict[str, None] | None:
    """Each body parameter's value when no body came: None for each, where every one of them
    defaults to None without being validated; otherwise None (FastAPI's own say)."""
    if not fields or any(
        field.field_info.is_required()
        or field.field_info.validate_default
        or field.field_info.default is not None
        for field in fields
    ):
        return None
    return dict.fromkeys(field.name for field in fields)


def _returns_a_response(call: Callable[..., Any]) -> bool:
    returned = inspect.signature(call).return_annotation
    return isinstance(returned, type) and issubclass(returned, Response)


def _replaying(heard: list[Message], receive: Receive) -> Receive:
    """``receive``, first giving again the messages ``heard`` from it."""
    again = list(heard)

    async def replay() -> Message:
        return again.pop(0) if again else await receive()

    return replay


def _raising(error: Exception) -> Callable[[], Coroutine[Any, Any, Message]]:
    async def receive() -> Message:
        raise error

    return receive


def _not_a_response(route: fastapi.routing.APIRoute, answer: object) -> NoReturn:
    raise TypeError(
        f"{route.path}: the endpoint says it returns a Response, and returned "
        f"{type(answer).__name__}"
    )
