"""A deadline for reading each HTTP request: a client that has not sent a whole request (its
head and its body) within ``COUNTERSIGN_HTTP_READ_TIMEOUT`` seconds of connecting, of its
previous answer, or of its request's first byte, has its connection closed.

uvicorn reads a request for as long as its client takes: a connection that sends part of a
request head, or one byte of it every few seconds (slowloris), is held open for ever. Each
held connection takes one of the process's file descriptors, and once they are all held the
server accepts no one: about a thousand such connections from one client, with no token and
no request ever completed, locked every club's agents out of ``countersign mcp --http``
(connection reset) until the client let them go. Behind the reverse proxy the deployment
guide describes, the proxy reads each request itself first (nginx's client_header_timeout and
client_body_timeout) and hands countersign only whole ones; this deadline holds wherever
uvicorn is reached directly (MCP over HTTP, a health check's port, a deployment without
that proxy).

A request head (its line and its headers) is bounded too, at ``MAX_HEAD_BYTES``: uvicorn's
protocol keeps a URL and headers for as long as they come, and one connection without a token
sent 600 MB of headers within the deadline, the process growing from 93 MB to 707 MB and
keeping it. A head past it is answered 431 and its connection closed, before it ends; so is
a connection whose chunked body's trailers (headers sent after the body, which uvicorn keeps
as it keeps the head's) and framing beyond what its chunks need pass it. The framing each
whole chunk needs (its size in hex and two line ends) is not counted: a body sent a byte a
chunk carries five bytes of it a byte, and was cut at 13 KiB of body, under the API's
64 KiB; chunk extensions, padded sizes and trailers still are, and gain nothing from the
chunks a body is cut into, nor from the body sent in the read that ended the head.

The deadline counts the client's time only: while uvicorn itself has stopped reading (a
pipelined request waiting for the one before it to be answered), it waits. An answer that
takes long (an assistant's turn, an event stream) is never cut: the deadline ends once the
request is read.
"""

from __future__ import annotations

import asyncio
import logging
import os
from functools import cache
from typing import Any

from countersign.infrastructure.settings import SettingsError
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("countersign.http")

READ_TIMEOUT_ENV = "COUNTERSIGN_HTTP_READ_TIMEOUT"
#: Seconds a client has to send one whole request (a request is at most
#: COUNTERSIGN_API_MAX_BODY, 64 KiB, of body: 3.2 KiB a second is enough for it).
DEFAULT_READ_TIMEOUT = 20.0
#: The most bytes of one request's head (its request line and headers) read before it is
#: refused: four times what nginx reads by default (``large_client_header_buffers``), far past
#: any browser's cookies. Counted per read, so at most one read (256 KiB) more is held.
MAX_HEAD_BYTES = 64 * 1024
#: The most requests one connection may send ahead of their answers (pipelined): uvicorn
#: queues each whole, and reads on after every answer, so a client that sends many and reads
#: none grew a process by 17 MB a connection (20 connections: 94 MB to 430 MB). Past it the
#: connection is closed. Browsers do not pipeline at all.
MAX_PIPELINED = 16
_HEAD_TOO_LARGE = b"Request header fields too large."


def read_timeout_from_env() -> float:
    """COUNTERSIGN_HTTP_READ_TIMEOUT, checked (a positive number of seconds, at most an
    hour); SettingsError otherwise, so a server refuses it before it serves anything."""
    value = os.environ.get(READ_TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_READ_TIMEOUT
    try:
        seconds = float(value) if value.isascii() else 0.0
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise SettingsError(
            f"{READ_TIMEOUT_ENV} must be a positive number of seconds, at most 3600 (such as "
            f"20 or 0.5), not {value!r}",
            f"{READ_TIMEOUT_ENV} doit être un nombre positif de secondes, au plus 3600 (tel que "
            f"20 ou 0.5), pas {value!r}",
        )
    return seconds


@cache
def _read_timeout() -> float:
    """The setting, read once per process (each of ``serve``'s workers reads the environment
    ``serve`` checked before it started them)."""
    return read_timeout_from_env()


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools), with a deadline on reading each request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline: asyncio.TimerHandle | None = None
        #: Between a request's first byte and its last: it is still being read.
        self._reading = False
        #: Bytes received of the head being read (None once its headers are complete).
        self._head_bytes: int | None = 0
        #: Bytes received since its headers, those of them that were body, and the framing
        #: its whole chunks needed (``on_chunk_complete``): the rest is a chunked body's
        #: trailers, headers after the body kept as headers, and framing beyond the need.
        self._after_head = 0
        self._body_bytes = 0
        self._chunk_framing = 0
        #: Body bytes of the chunk being read.
        self._chunk_bytes = 0
        #: Closed for sending too many requests ahead of their answers (``MAX_PIPELINED``).
        self._flooded = False
        #: A whole head past ``MAX_HEAD_BYTES`` was parsed: refused once this read is parsed.
        self._too_large = False

    def data_received(self, data: bytes) -> None:
        in_head = self._head_bytes is not None
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        else:
            self._after_head += len(data)
        super().data_received(data)
        if in_head and self._head_bytes is None:
            # The read that ended the head counted with it: its body and framing are no credit
            # against what comes after (a first read of 200 KiB of one-byte chunks let 200 KiB
            # of trailers through the 64 KiB bound).
            self._after_head = self._body_bytes + self._chunk_framing
        if self.transport.is_closing():
            return
        if self._too_large or (self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES):
            self._refuse_head(answer=True)
        elif self._head_bytes is None and self._beyond_the_body() > MAX_HEAD_BYTES:
            self._refuse_head(answer=False)  # trailers: the request may be answered already

    def _beyond_the_body(self) -> int:
        """Bytes received since the head that are neither body nor the framing its whole
        chunks needed: trailers, chunk extensions, padding, and the chunk begun."""
        return self._after_head - self._body_bytes - self._chunk_framing

    def on_chunk_header(self) -> None:
        self._chunk_bytes = 0

    def on_chunk_complete(self) -> None:
        # What the chunk needed: its size in hex, a line end, its data, a line end (the last
        # chunk, 0, ends after the trailers, counted as they came).
        self._chunk_framing += len(f"{self._chunk_bytes:x}") + 4

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        self._chunk_bytes += len(body)
        if not (self._flooded or self._too_large):  # a request never handed on: no cycle
            super().on_body(body)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._after_head = self._body_bytes = self._chunk_framing = 0
        if self._flooded or self._too_large:
            return  # the rest of what was read with the request that closed the connection
        # Its size as parsed: a head whose end came in the read that passed the limit was
        # whole before it was counted (a head of 100 KB sent at once was answered).
        if len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers) > MAX_HEAD_BYTES:
            self._too_large = True
            return
        if len(self.pipeline) >= MAX_PIPELINED:
            self._end_flood()
            return
        super().on_headers_complete()

    def _end_flood(self) -> None:
        """Close a connection that sent more than ``MAX_PIPELINED`` requests ahead of their
        answers; those queued are dropped unanswered (the one being answered is cut)."""
        self._flooded = True
        self._disarm()
        self.pipeline.clear()
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.info(
            "closed the connection of %s: more than %d requests sent ahead of their answers",
            client,
            MAX_PIPELINED,
        )
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading = True
        if self._read_deadline is None:
            self._arm()

    def on_message_complete(self) -> None:
        self._reading = False
        self._head_bytes = 0  # the next request's head starts after this one
        self._disarm()
        if not (self._flooded or self._too_large):  # a request never handed on: no cycle
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request's time starts now (an idle keep-alive connection is closed sooner,
        # by uvicorn's own keep-alive timeout; one that trickles bytes, by this deadline),
        # unless the last request begun was read whole and is being answered: a pipelined
        # one, which uvicorn has just started (and taken out of ``pipeline``), or is about to.
        answering = self.cycle is not None and not self.cycle.response_complete
        if not self.transport.is_closing() and (self._reading or not answering):
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(_read_timeout(), self._read_too_slow)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_too_slow(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing():
            return
        if self.flow is not None and self.flow.read_paused:
            # uvicorn stopped reading (a request waits for the one before it): not the
            # client's time.
            self._arm()
            return
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.info("closed the connection of %s: no whole request within the deadline", client)
        self.transport.close()

    def _refuse_head(self, *, answer: bool) -> None:
        """The connection closed, after a 431 if ``answer`` and nothing else is being
        answered: a head, or a chunked body's framing and trailers, past ``MAX_HEAD_BYTES``
        is never read on."""
        self._disarm()
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.info("refused the request of %s: its head passed %d bytes", client, MAX_HEAD_BYTES)
        if answer and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(
                b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                b"content-type: text/plain; charset=utf-8\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                % (len(_HEAD_TOO_LARGE), _HEAD_TOO_LARGE)
            )
        self.transport.close()


def connection_options() -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.Config``/``uvicorn.run`` every countersign server
    runs with: the deadline on reading a request (``DeadlineProtocol``), and no WebSocket.

    No route of countersign's is a WebSocket one; with ``websockets`` installed (it comes with
    a dependency), uvicorn took any ``Upgrade: websocket`` request as a handshake, on any path,
    and answered its own bare 403 for the application. ``ws="none"``: it is an HTTP request,
    answered as one."""
    read_timeout_from_env()  # refused before anything is served, not at the first connection
    return {"http": DeadlineProtocol, "ws": "none"}
