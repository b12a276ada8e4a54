"""A real uvicorn server on 127.0.0.1 in a thread, for the tests that need real sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn


@dataclass
class RunningServer:
    """A started server: where it listens, and the thread that runs it."""

    base: str
    port: int
    thread: threading.Thread
    server: uvicorn.Server


@contextmanager
def serving(app: Any, **config: Any) -> Iterator[RunningServer]:
    """Serve ``app`` on a free port (bound here, so no other process can take it first)
    until the block ends; ``config`` goes to ``uvicorn.Config``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    options = {"log_level": "warning", "lifespan": "off", **config}
    server = uvicorn.Server(uvicorn.Config(app, **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield RunningServer(f"http://127.0.0.1:{port}", port, thread, server)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
