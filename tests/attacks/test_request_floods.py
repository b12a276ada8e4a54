"""A request head (its line and headers), and the requests a connection sends ahead of their
answers, are bounded before anyone is authenticated.

uvicorn's HTTP/1.1 protocol (httptools) keeps a request's URL and headers for as long as the
client sends them: one connection without a token sent 600 MB of headers to ``serve`` in
6 seconds, well within the read deadline, and the process grew from 93 MB to 707 MB and kept
it (a few such connections at once and every club's server is out of memory). A head past
``MAX_HEAD_BYTES`` is now refused, 431, and its connection closed, on every server countersign
runs (``serve`` and ``mcp --http``: ``connection_options``). So is a connection with more
than ``MAX_PIPELINED`` requests waiting for their answers (closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import Any

import pytest
from countersign.infrastructure.request_deadline import (
    MAX_HEAD_BYTES,
    MAX_PIPELINED,
)
from countersign.infrastructure.settings import DEFAULT_API_MAX_BODY

from tests.support.deadline_server import serving as served


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Every request answered 200, with the number of headers it came with; on ``/body``,
    with the number of bytes of body it read."""
    if scope["type"] != "http":
        return
    body = str(len(scope["headers"])).encode()
    if scope["path"] == "/body":
        read, more = 0, True
        while more:
            message = await receive()
            read += len(message.get("body", b""))
            more = message.get("more_body", False)
        body = f"read {read}".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def serving(
    monkeypatch: pytest.MonkeyPatch, deadline: float = 5
) -> contextlib.AbstractContextManager[int]:
    return served(monkeypatch, app, deadline)


def exchange(port: int, head: bytes) -> bytes:
    """What the server answered to ``head`` sent on a fresh connection, as much of it as it
    read before answering (b"" when it closed the connection, or reset it, unanswered)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        with contextlib.suppress(OSError):  # the server closed it before it had it all
            connection.sendall(head)
        with contextlib.suppress(OSError):
            while chunk := connection.recv(65536):
                received += chunk
    return received


def headers(size: int) -> bytes:
    """Headers of about ``size`` bytes in all, 8,000-byte values each."""
    line = b"X-Padding: " + b"p" * 8000 + b"\r\n"
    return line * (size // len(line) + 1)


def test_a_request_head_past_the_limit_is_refused_431_before_it_ends():
    """Twice the limit of headers and no end yet: refused at once, not waited for."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        started = time.monotonic()
        answer = exchange(port, b"GET /inbox HTTP/1.1\r\nHost: x\r\n" + headers(2 * MAX_HEAD_BYTES))
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
        assert b"connection: close" in answer.lower()
        assert time.monotonic() - started < 4  # not the read deadline (5 s) closing it


def test_a_huge_head_is_never_read_whole_nor_answered():
    """64 MB of headers, sent whole: the server stops reading long before the end and never
    hands the request on (it answered 200 once it had kept all of it)."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        head = b"GET / HTTP/1.1\r\nHost: x\r\n" + headers(64 * 1024 * 1024) + b"\r\n"
        answer = exchange(port, head)
        assert not answer.startswith(b"HTTP/1.1 200 "), answer[:80]


def test_a_url_past_the_limit_is_refused():
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        answer = exchange(port, b"GET /?q=" + b"a" * (2 * MAX_HEAD_BYTES))
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]


@pytest.mark.parametrize("first", [0, 1000])
def test_a_whole_head_past_the_limit_is_refused_however_it_arrives(first):
    """A head of 1.5 times the limit whose end came in the read that passed the limit (sent
    whole, or its first 1,000 bytes and then the rest) was answered 200: the bytes were
    counted only while the head was still incomplete. Its size is what is refused."""
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * (MAX_HEAD_BYTES * 3 // 2) + b"\r\n\r\n"
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(head[:first])
            time.sleep(0.2)  # read alone
            with contextlib.suppress(OSError):
                connection.sendall(head[first:])
            answer = one_answer(connection)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]


def test_a_large_but_ordinary_head_is_answered_and_the_connection_kept():
    """A head of half the limit (long cookies, a long query) is answered as before, and the
    next request on the same connection is counted from zero."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        one = b"GET / HTTP/1.1\r\nHost: x\r\n" + headers(MAX_HEAD_BYTES // 2 - 8100) + b"\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            for _ in range(4):
                connection.sendall(one)
                assert one_answer(connection).startswith(b"HTTP/1.1 200 ")


def one_answer(connection: socket.socket) -> bytes:
    """One whole answer read from ``connection`` (its head and its Content-Length body)."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = connection.recv(65536)
        assert chunk, "the server closed the connection"
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(65536)
    return answer


def test_requests_sent_far_ahead_of_their_answers_end_the_connection():
    """Pipelined requests wait in uvicorn's queue until those before them are answered, and
    it read on after each answer: 20 connections that each sent 1 MB of small GETs and read
    no answer grew ``serve`` from 94 MB to 430 MB, and the read deadline does not run while
    requests wait. Past ``MAX_PIPELINED`` waiting, the connection is closed (the ones before
    it may still be answered)."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        flood = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n" * 1000
        answered = exchange(port, flood).count(b"HTTP/1.1 200 ")
        assert answered <= 2 * MAX_PIPELINED, answered


def test_a_few_pipelined_requests_are_all_answered():
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        few = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n" * (MAX_PIPELINED - 1)
        received = b""
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(few)
            while received.count(b"HTTP/1.1 200 ") < MAX_PIPELINED - 1:
                chunk = connection.recv(65536)
                assert chunk, f"closed after {received.count(b'HTTP/1.1 200 ')} answers"
                received += chunk


def test_trailers_past_the_limit_end_the_connection():
    """Headers sent after a chunked body (trailers) are kept as the head's are: 300 MB of
    them grew ``serve`` from 81 MB to 387 MB, the head's limit never counting them. Past
    ``MAX_HEAD_BYTES`` of framing and trailers the connection is closed before they end."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch, deadline=60) as port:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n"
        trailers = headers(1024 * 1024)
        sent = 0
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(head)
            with contextlib.suppress(OSError):  # closed by the server: broken pipe, or reset
                for _ in range(64):
                    connection.sendall(trailers)
                    sent += 1
        assert sent < 8, f"{sent} MB of trailers read"


def test_a_chunked_body_in_many_chunks_is_still_read():
    """Framing in proportion to an ordinary body (4,000 chunks of 16 bytes) is not refused."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        chunks = b"10\r\n" + b"b" * 16 + b"\r\n"
        request = (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunks * 4000
            + b"0\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(request + b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            received = b""
            while received.count(b"HTTP/1.1 200 ") < 2:
                chunk = connection.recv(65536)
                assert chunk, f"closed after {received.count(b'HTTP/1.1 200 ')} answers"
                received += chunk


def test_a_body_sent_a_byte_a_chunk_is_read_up_to_the_api_limit():
    """A chunk of one byte carries five of framing ("1\\r\\n", "\\r\\n"): all framing was
    counted against the trailers' bound, and such a body was cut at 13 KiB, under the API's
    64 KiB. The framing each chunk needs is not counted any more. (The body is sent once the
    server asked for it, 100 Continue: the read that ends a head is not counted, and one
    that held the body too would hide what is.)"""
    size = DEFAULT_API_MAX_BODY - 1024
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch) as port:
        head = (
            b"POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Expect: 100-continue\r\n\r\n"
        )
        body = b"1\r\nb\r\n" * size + b"0\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(head)
            received = b""
            while b"100 Continue\r\n\r\n" not in received:
                chunk = connection.recv(65536)
                assert chunk, "closed before it asked for the body"
                received += chunk
            with contextlib.suppress(OSError):  # the server closed it before it had it all
                connection.sendall(body + b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            with contextlib.suppress(OSError):
                while received.count(b"HTTP/1.1 200 ") < 2 and (chunk := connection.recv(65536)):
                    received += chunk
        assert f"read {size}".encode() in received, received[-200:]
        assert received.count(b"HTTP/1.1 200 ") == 2


def test_framing_beyond_what_chunks_need_still_ends_the_connection():
    """Chunk extensions are framing no chunk needs, read and dropped: as many bytes of them
    as of trailers end the connection, however many chunks carry them."""
    with pytest.MonkeyPatch.context() as monkeypatch, serving(monkeypatch, deadline=60) as port:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        padded = (b"1;x=" + b"e" * 4000 + b"\r\nb\r\n") * 256  # 1 MB, one body byte a chunk
        sent = 0
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(head)
            with contextlib.suppress(OSError):  # closed by the server: broken pipe, or reset
                for _ in range(64):
                    connection.sendall(padded)
                    sent += 1
        assert sent < 8, f"{sent} MB of chunk extensions read"


class _Connection(asyncio.Transport):
    """What the protocol writes to, and whether it closed the connection: the reads it is
    given are exactly those a test makes, not what the network happened to gather."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def write(self, data: Any) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_a_first_read_of_body_gives_no_credit_to_the_trailers_after_it():
    """The read that ends a head is counted with it; the body and the framing it also held
    were taken off what came after, as if those bytes had been counted: a first read of
    200 KiB of one-byte chunks (a read can hold 256 KiB) let 200 KB of trailers through the
    64 KiB bound, kept as headers are."""
    import uvicorn
    from countersign.infrastructure.request_deadline import DeadlineProtocol
    from uvicorn.server import ServerState

    loop = asyncio.new_event_loop()
    config = uvicorn.Config(app, http=DeadlineProtocol, ws="none", log_level="warning")
    config.load()
    protocol = DeadlineProtocol(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    connection = _Connection()
    try:
        protocol.connection_made(connection)
        protocol.data_received(
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"1\r\nb\r\n" * (200 * 1024 // 6)
        )
        assert not connection.closed  # a body, read on
        protocol.data_received(
            b"0\r\n" + b"".join(b"X-T%d: %s\r\n" % (i, b"t" * 1000) for i in range(200))
        )
        assert connection.closed, "200 KB of trailers read"
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
