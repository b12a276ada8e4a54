"""The read deadline ends once a request is read: an answer that takes longer than it is never
cut, whether its request came alone or pipelined behind another on the same connection."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import pytest

from tests.support.deadline_server import serving as served

#: The read deadline in these tests, and how long the slow answer takes: three deadlines.
DEADLINE = 0.5
SLOW = 3 * DEADLINE


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``/slow`` answers after ``SLOW`` seconds (an assistant's turn), anything else at once."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/slow":
        await asyncio.sleep(SLOW)
    body = scope["path"].encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def serving(monkeypatch: pytest.MonkeyPatch) -> contextlib.AbstractContextManager[int]:
    return served(monkeypatch, app, DEADLINE)


def answers(port: int, requests: bytes, count: int) -> list[bytes]:
    """The bodies of the first ``count`` answers on one connection to ``requests`` (fewer if
    the server closes it first)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(requests)
        while received.count(b"HTTP/1.1 200 ") < count or not received.endswith(b"/slow"):
            chunk = connection.recv(4096)
            if not chunk:
                break
            received += chunk
    return [part.rpartition(b"\r\n\r\n")[2] for part in received.split(b"HTTP/1.1 ")[1:]]


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def test_a_slow_answer_to_a_whole_request_is_not_cut(monkeypatch):
    with serving(monkeypatch) as port:
        assert answers(port, get("/slow"), 1) == [b"/slow"]


def test_a_slow_answer_to_a_pipelined_request_is_not_cut(monkeypatch):
    """Two requests sent at once on one connection: the second, slow, is answered too (it
    was cut at the deadline, counted from the first's answer, as if still being read)."""
    with serving(monkeypatch) as port:
        assert answers(port, get("/quick") + get("/slow"), 2) == [b"/quick", b"/slow"]
