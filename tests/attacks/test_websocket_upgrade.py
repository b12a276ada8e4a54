"""Held: the servers take no WebSocket handshake; the application has no WebSocket route.

uvicorn, with the ``websockets`` library installed (a dependency of a dependency), took every
``Upgrade: websocket`` request to ``serve`` and ``mcp --http`` as a WebSocket handshake and
handed the application a WebSocket session, on any path: a kind of connection none of its
routes, gates or deadlines was written for. Starlette refused it, so uvicorn answered a bare
``403 Forbidden`` of its own (no correlation id, none of the API's headers), whatever the path
(the sign-in page, the API, nothing). The servers now run with WebSocket support off
(``ws="none"``, in the options every countersign server runs with:
``request_deadline.connection_options``): such a request is an ordinary HTTP request, answered
as the same request without the upgrade is, never ``101 Switching Protocols``.
"""

from __future__ import annotations

import socket
from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.mcp.transports import PATH, http_app
from countersign.infrastructure.request_deadline import connection_options
from fastapi import FastAPI

from tests.servers import serving

UPGRADE = (
    "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


PLAIN = "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _head(port: int, request: str) -> tuple[bytes, bytes]:
    """The status line and the headers of the answer to ``request``."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(4096)
            if not chunk:
                break
            answer += chunk
    status, _, headers = answer.partition(b"\r\n\r\n")[0].partition(b"\r\n")
    return status, headers.lower()


def _answered_as_http(app: Any, paths: list[str], *, correlated: bool) -> None:
    """Each path answers an upgrade request as the plain request (``correlated``: by the
    application, which gives every answer a correlation id)."""
    with serving(app, **connection_options()) as server:
        for path in paths:
            status, headers = _head(server.port, UPGRADE.format(path=path))
            plain, _ = _head(server.port, PLAIN.format(path=path))
            assert b" 101 " not in status, (path, status)
            assert status == plain, (path, status, plain)
            assert not correlated or b"x-correlation-id" in headers, (path, headers)


def test_serve_answers_an_upgrade_request_as_the_same_request_without_it(app: FastAPI) -> None:
    _answered_as_http(app, ["/", "/sign-in", "/api/v1/inbox", "/nowhere"], correlated=True)


def test_mcp_over_http_answers_an_upgrade_request_as_the_same_request_without_it(
    cs: Countersign,
) -> None:
    _answered_as_http(http_app(cs, host="127.0.0.1"), [PATH, "/nowhere"], correlated=False)
