"""Issue 23, part 2: one slow receiver must not delay every club.

The attack run's receiver trickled its answer one byte a second: the timeout applied per
socket read, so one attempt lasted 25 s, and a maple notification made meanwhile arrived 24.9 s
late because a pass waited for its whole batch. Now an attempt has one deadline for connecting,
sending and reading together, and attempts run concurrently, bounded per endpoint, per club
and overall, while the long-running sender keeps picking up new notifications.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender

from tests.conftest import AVA, MIA
from tests.receivers import LOOPBACK_NETWORKS, receiving
from tests.support.proposing import propose

#: How long the trickling receiver keeps trickling at most (the old sender waited all of it).
TRICKLE_FOR = 8.0
DEADLINE = 1.0


@dataclass
class Trickler:
    url: str = ""
    arrived: threading.Event = field(default_factory=threading.Event)
    requests: int = 0


@contextmanager
def trickling() -> Iterator[Trickler]:
    """A receiver that reads the request, then answers one byte every 0.1 s."""
    trickler = Trickler()
    stop = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)

    def answer(connection: socket.socket) -> None:
        with connection:
            connection.settimeout(TRICKLE_FOR)
            try:
                connection.recv(65536)
                trickler.requests += 1
                trickler.arrived.set()
                ends = time.monotonic() + TRICKLE_FOR
                for byte in b"HTTP/1.1 200 OK\r\n" + b"x-trickle: " + b"a" * 1000:
                    if stop.is_set() or time.monotonic() > ends:
                        return
                    connection.sendall(bytes([byte]))
                    time.sleep(0.1)
            except OSError:
                return

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    trickler.url = f"http://127.0.0.1:{server.getsockname()[1]}/hooks"
    try:
        yield trickler
    finally:
        stop.set()
        thread.join(2)
        server.close()


def settings(**changes: Any) -> NotifySettings:
    chosen: dict[str, Any] = {"max_attempts": 1, "timeout_seconds": DEADLINE, **changes}
    return NotifySettings(allowed_networks=LOOPBACK_NETWORKS, **chosen)


def propose_in(cs: Countersign, seeded: dict[str, Any], club: str) -> None:
    """A pending card refund in ``club`` (granite's by Ava, maple's by Mia)."""
    actor, order = (AVA, "refund-ok") if club == "granite" else (MIA, "maple-refund")
    propose(cs, seeded, order, actor=actor, organization=club)


def test_a_trickling_receiver_gets_one_deadline_for_the_whole_attempt(cs, seeded) -> None:
    with trickling() as trickler:
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "granite", trickler.url)
        propose_in(cs, seeded, "granite")
        began = time.monotonic()
        report = notification_sender(cs, settings()).run_once()
        took = time.monotonic() - began
    assert trickler.requests == 1
    assert report.dead == 1
    assert took < DEADLINE + 1.5, f"the attempt took {took:.1f} s"
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert delivery["attempt_log"][0]["result"] == "failed: could not connect"


@pytest.mark.parametrize("granite_endpoints", [1, 10])
def test_a_trickling_receiver_does_not_delay_another_clubs_delivery(
    cs, seeded, granite_endpoints
) -> None:
    """Granite's endpoints all trickle; maple's notification, made while they do, arrives at
    once, whether granite has one slow endpoint or ten (more than the sender's workers)."""
    with trickling() as trickler, receiving() as healthy:
        for n in range(granite_endpoints):
            Webhooks(cs, LOOPBACK_NETWORKS).add(None, "granite", f"{trickler.url}/{n}")
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "maple", healthy.url)
        sender = notification_sender(
            cs, settings(timeout_seconds=3.0, workers=4, per_club=2, per_endpoint=1)
        )
        stop = threading.Event()
        running = threading.Thread(target=sender.run, args=(stop, 0.05), daemon=True)
        running.start()
        try:
            propose_in(cs, seeded, "granite")
            assert trickler.arrived.wait(5), "the slow receiver was never reached"
            made = time.monotonic()
            propose_in(cs, seeded, "maple")
            assert healthy.arrived.wait(5), "maple's delivery never arrived"
            delay = time.monotonic() - made
        finally:
            stop.set()
            running.join(10)
    assert not running.is_alive()
    assert delay < 1.0, f"maple's delivery waited {delay:.2f} s for granite's receiver"
    assert len(healthy.received) == 1


def test_one_pass_does_not_leave_another_club_behind_a_busy_one(cs, seeded) -> None:
    """A single pass (the worker's): granite's slow deliveries fill its club's slots, and
    maple's, due behind them, is attempted at once rather than after granite's deadline."""
    with trickling() as trickler, receiving() as healthy:
        for n in range(4):
            Webhooks(cs, LOOPBACK_NETWORKS).add(None, "granite", f"{trickler.url}/{n}")
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "maple", healthy.url)
        propose_in(cs, seeded, "granite")
        propose_in(cs, seeded, "maple")
        sender = notification_sender(cs, settings(timeout_seconds=2.0, workers=4, per_club=2))
        began = time.monotonic()
        passing = threading.Thread(target=sender.run_once, daemon=True)
        passing.start()
        assert healthy.arrived.wait(5), "maple's delivery never arrived"
        delay = time.monotonic() - began
        passing.join(30)
    assert delay < 1.0, f"maple's delivery waited {delay:.2f} s behind granite's"
