"""A uvicorn server in a thread, with the connection options every countersign server runs
with (``request_deadline.connection_options``) and a read deadline of the test's choosing: for
the tests of what a connection may send before it is answered or closed."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from countersign.infrastructure import request_deadline
from countersign.infrastructure.request_deadline import connection_options

from tests.receivers import free_port


@contextlib.contextmanager
def serving(monkeypatch: pytest.MonkeyPatch, app: Any, deadline: float) -> Iterator[int]:
    """``app`` served on a free local port (yielded) until the block ends."""
    monkeypatch.setenv(request_deadline.READ_TIMEOUT_ENV, str(deadline))
    request_deadline._read_timeout.cache_clear()
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", **connection_options()
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        request_deadline._read_timeout.cache_clear()
