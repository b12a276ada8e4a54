"""Real webhook receivers on 127.0.0.1, each in a thread: they record what arrived and answer
as a test tells them (a status per request, or hold the answer until released)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from countersign.infrastructure.notifications.destinations import parse_networks

#: Receivers listen on loopback, which webhooks may reach only when allowed.
LOOPBACK = "127.0.0.0/8"
LOOPBACK_NETWORKS = parse_networks(LOOPBACK)
#: How often a receiver's serving loop checks whether it is to stop (``serve_forever``).
POLL = 0.02


@pytest.fixture(autouse=True)
def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow webhooks to this module's receivers on 127.0.0.0/8 (imported by test modules)."""
    monkeypatch.setenv("COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS", LOOPBACK)


@dataclass
class Received:
    """One request as the receiver read it."""

    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What arrived, and how to answer the next requests."""

    url: str = ""
    received: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # one per request, then 200
    hold: threading.Event | None = None  # set: answer; unset: wait
    arrived: threading.Event = field(default_factory=threading.Event)

    def answer_status(self) -> int:
        return self.statuses.pop(0) if self.statuses else 200

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.received]


def free_port() -> int:
    """A port nothing listens on (a receiver that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def receiving(receiver: Receiver | None = None, port: int = 0) -> Iterator[Receiver]:
    receiver = receiver or Receiver()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                receiver.received.append(
                    Received({k.lower(): v for k, v in self.headers.items()}, body)
                )
                status = receiver.answer_status()
            receiver.arrived.set()
            if receiver.hold is not None:
                receiver.hold.wait(30)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    # shutdown() waits for the serving loop to look at its flag, which it does once a poll
    # interval: at the default 0.5 s, each receiver's end waited 0.25-0.5 s for nothing.
    thread = threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/countersign"
    try:
        yield receiver
    finally:
        if receiver.hold is not None:
            receiver.hold.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
