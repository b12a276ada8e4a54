"""Held now: connections that never finish a request cannot lock every club out.

The attack: a client with no token opens connections to ``countersign mcp --http`` (or to
``countersign serve`` reached directly) and sends part of a request head, then nothing. uvicorn
kept each one open for ever, one file descriptor apiece; with the process's descriptors all
held, the server accepted no one. 1,100 such connections from one client, under the common
limit of 1,024 open files, answered every club's agent with "connection reset" for as long as
the client kept them. Now a connection that has not sent a whole request within
``COUNTERSIGN_HTTP_READ_TIMEOUT`` seconds is closed, and the server answers the others again.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token

from tests.conftest import AVA
from tests.receivers import free_port
from tests.support.mcp_requests import initialize

COUNTERSIGN = Path(sys.executable).with_name("countersign")
#: The server's open-file limit, and more half-sent requests than it allows.
OPEN_FILES = 256
HELD = 300
START_TIMEOUT = 90.0
#: How long a test waits for the server to close a held connection; without the deadline it
#: never does, and the test fails here.
PATIENCE = 30.0
HELLO = initialize("agent")


def _few_open_files() -> None:
    """In the server's process, before it runs: the open-file limit of a small service."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, hard))


@contextlib.contextmanager
def running(command: list[str], cs: Countersign, port: int) -> Iterator[str]:
    """The command serving on ``port`` with a 1-second read deadline, until the block ends."""
    environment = {
        **os.environ,
        "COUNTERSIGN_DATABASE_URL": cs.settings.database_url,
        "COUNTERSIGN_HTTP_READ_TIMEOUT": "1",
    }
    process = subprocess.Popen(
        [str(COUNTERSIGN), *command, "--port", str(port)],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_few_open_files,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.poll() is None, f"the server exited {process.returncode}"
            try:
                httpx2.get(f"{base}/healthz", timeout=5)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert "Traceback" not in err


def hold_half_sent_requests(port: int, path: str) -> list[socket.socket]:
    """``HELD`` connections, each with part of a request head sent and no more."""
    held = []
    for _ in range(HELD):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        connection.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
        held.append(connection)
    return held


def closed_by_the_server(connection: socket.socket, deadline: float) -> bool:
    """Whether the server closes the connection (it says nothing: the request was never
    whole) before ``deadline`` (a ``time.monotonic()``)."""
    connection.settimeout(max(deadline - time.monotonic(), 0.1))
    try:
        return connection.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    finally:
        connection.close()


def still_held(held: list[socket.socket]) -> int:
    """How many of the held connections the server has not closed within ``PATIENCE``."""
    deadline = time.monotonic() + PATIENCE
    return sum(not closed_by_the_server(connection, deadline) for connection in held)


def test_half_sent_requests_to_mcp_over_http_are_closed_and_agents_get_in_again(cs, seeded):
    port = free_port()
    token = issue_token(cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent")
    with running(["mcp", "--http"], cs, port) as base:
        held = hold_half_sent_requests(port, "/mcp")
        assert still_held(held) == 0
        answer = httpx2.post(
            f"{base}/mcp",
            json=HELLO,
            headers={
                "Authorization": f"Bearer {token.token}",
                "Accept": "application/json, text/event-stream",
            },
            timeout=10,
        )
    assert answer.status_code == 200


def test_half_sent_requests_to_serve_are_closed_and_the_api_answers_again(cs, seeded):
    port = free_port()
    token = issue_token(cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent")
    with running(["serve", "--no-sweepers"], cs, port) as base:
        held = hold_half_sent_requests(port, "/api/v1/proposals")
        assert still_held(held) == 0
        inbox = httpx2.get(
            f"{base}/api/v1/inbox", headers={"Authorization": f"Bearer {token.token}"}, timeout=10
        )
    assert inbox.status_code == 200


def test_a_keep_alive_connection_that_trickles_its_next_request_is_closed(cs, seeded):
    """One request answered, then the next one's head a byte at a time: closed too (uvicorn's
    own keep-alive timeout stops counting at the first byte)."""
    port = free_port()
    with running(["serve", "--no-sweepers"], cs, port):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert connection.recv(4096).startswith(b"HTTP/1.1 200 ")
        closed = False
        deadline = time.monotonic() + PATIENCE
        try:
            for byte in b"POST /api/v1/proposals HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                connection.sendall(bytes([byte]))
                time.sleep(0.3)
                assert time.monotonic() < deadline
        except (BrokenPipeError, ConnectionResetError):
            closed = True
        if not closed:
            closed = closed_by_the_server(connection, time.monotonic() + PATIENCE)
        connection.close()
    assert closed


def test_a_wrong_read_timeout_stops_serve_before_it_serves(cs, monkeypatch, capsys):
    from countersign.infrastructure.entrypoints.cli import main

    monkeypatch.setenv("COUNTERSIGN_HTTP_READ_TIMEOUT", "0")
    status = main(["serve", "--port", str(free_port()), "--database", cs.settings.database_url])
    out, err = capsys.readouterr()
    assert status == 2
    assert "COUNTERSIGN_HTTP_READ_TIMEOUT must be a positive number of seconds" in err
    assert "serving on" not in out + err


pytestmark = pytest.mark.slow
