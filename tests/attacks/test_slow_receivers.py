"""Issue 23, part 2: one slow receiver must not delay every club.

The attack run's receiver trickled its answer one byte a second: the timeout applied per
socket read, so one attempt lasted 25 s, and a maple notification made meanwhile arrived 24.9 s
late because a pass waited for its whole batch. Now an attempt has one deadline for connecting,
sending and reading together, and attempts run concurrently, bounded per endpoint, per club
and overall, while the long-running sender keeps picking up new notifications. The trickling
receiver counts the connections it has open at once, by endpoint, by club and in all, while
many deliveries are due: none of those bounds is ever exceeded.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.notifications import delivery_log
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender

from tests.conftest import AVA, MIA
from tests.receivers import LOOPBACK_NETWORKS, receiving
from tests.support.proposing import propose

#: How long the trickling receiver keeps trickling at most (the old sender waited all of it): a
#: hang guard, far past any deadline of the sender's here, however loaded the machine.
TRICKLE_FOR = 30.0
DEADLINE = 1.0


@dataclass
class Trickler:
    """The trickling receiver, and the most connections it had open at once: overall, by
    request path (each path is an endpoint of its own to the sender) and by the club a path
    names (``/hooks/<club>/<n>``)."""

    url: str = ""
    arrived: threading.Event = field(default_factory=threading.Event)
    requests: int = 0
    most: int = 0
    most_by_path: Counter[str] = field(default_factory=Counter)
    most_by_club: Counter[str] = field(default_factory=Counter)
    #: How each answer ended, in order: "hung up" (the sender ended the connection while the
    #: receiver still trickled), "trickled it all" (for TRICKLE_FOR), or "stopped" (the test).
    endings: list[str] = field(default_factory=list)
    answered: threading.Event = field(default_factory=threading.Event)
    _open: dict[socket.socket, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def opened(self, connection: socket.socket, path: str) -> None:
        """A request arrived. The sender closes an attempt's socket (it sends its FIN) before
        it connects again, so any connection at end of stream here is one the sender already
        ended, whether or not its trickling thread has noticed yet."""
        with self._lock:
            for other in [c for c in self._open if _ended(c)]:
                del self._open[other]
            self._open[connection] = path
            self.requests += 1
            self.most = max(self.most, len(self._open))
            paths = list(self._open.values())
            self.most_by_path[path] = max(self.most_by_path[path], paths.count(path))
            club = _club(path)
            on_club = sum(1 for p in paths if _club(p) == club)
            self.most_by_club[club] = max(self.most_by_club[club], on_club)

    def closed(self, connection: socket.socket, ending: str) -> None:
        with self._lock:
            self._open.pop(connection, None)
            self.endings.append(ending)
        self.answered.set()


def settled(cs: Countersign, club: str) -> list[str]:
    """The results of the club's delivery attempts that have ended so far."""
    return [
        attempt["result"]
        for delivery in Webhooks(cs).deliveries(None, club)
        for attempt in delivery["attempt_log"]
    ]


def _club(path: str) -> str:
    return path.split("/")[2] if path.count("/") >= 3 else ""


def _ended(connection: socket.socket) -> bool:
    """Whether the peer closed the connection (its whole request was read before): readable
    now, with nothing left to read. Asked without waiting."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:  # reset by the peer
        return True


def _read_request(connection: socket.socket) -> bytes:
    """The whole request: its head, and a body of its Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
         if line.lower().startswith(b"content-length:")),
        0,
    )  # fmt: skip
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


@contextmanager
def trickling() -> Iterator[Trickler]:
    """A receiver that reads the request, then answers one byte every 0.1 s."""
    trickler = Trickler()
    stop = threading.Event()
    server = socket.create_server(("127.0.0.1", 0), backlog=64)
    server.settimeout(0.2)

    def answer(connection: socket.socket) -> None:
        with connection:
            connection.settimeout(TRICKLE_FOR)
            ending = "hung up"
            try:
                head = _read_request(connection)
                path = head.split(b" ", 2)[1].decode() if head.count(b" ") >= 2 else ""
                trickler.opened(connection, path)
                trickler.arrived.set()
                ends = time.monotonic() + TRICKLE_FOR
                for byte in b"HTTP/1.1 200 OK\r\n" + b"x-trickle: " + b"a" * 1000:
                    if _ended(connection):
                        return
                    if stop.is_set() or time.monotonic() > ends:
                        ending = "stopped" if stop.is_set() else "trickled it all"
                        return
                    connection.sendall(bytes([byte]))
                    time.sleep(0.1)  # the slow receiver's trickle, not a wait for anything
                ending = "trickled it all"
            except OSError:
                return
            finally:
                trickler.closed(connection, ending)

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
        report = notification_sender(cs, settings()).run_once()
        # The receiver's thread sees the hang-up at its next byte (a hang guard: it trickles
        # for TRICKLE_FOR at most, which the old sender waited out).
        assert trickler.answered.wait(TRICKLE_FOR * 2), "the receiver's answer never ended"
    assert trickler.requests == 1
    assert report.dead == 1
    # The sender hung up while the receiver still trickled (each byte came well within any
    # per-read timeout), not after the receiver had trickled all it would...
    assert trickler.endings == ["hung up"]
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert [a["result"] for a in delivery["attempt_log"]] == ["failed: could not connect"]
    # ... and at its deadline, not before: the ledger's record of the attempt (the operator's,
    # with its latency) says it lasted that long at least.
    club = cs.notifications.managed_organization(None, "granite")
    [recorded] = delivery_log.deliveries(Webhooks(cs).read_ledger, str(club.id))
    [attempt] = recorded["attempt_log"]
    assert attempt["latency_ms"] >= DEADLINE * 1000, attempt


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
            granite_settled = settled(cs, "granite")
        finally:
            stop.set()
            running.join(10)
    assert not running.is_alive()
    # Not a clock bound: granite's attempts end at their 3 s deadline, and maple's arrived
    # before any of them had ended (waiting behind one would have taken that long).
    assert granite_settled == [], f"maple's delivery waited {delay:.2f} s for {granite_settled}"
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
        granite_settled = settled(cs, "granite")
    # The receivers gone, granite's attempts end at once instead of at their 2 s deadlines
    # (two rounds of them: about 4 s of waiting that this test asserts nothing about).
    passing.join(30)
    # Not a clock bound: attempted before any of granite's attempts reached its 2 s deadline.
    assert granite_settled == [], f"maple's delivery waited {delay:.2f} s behind {granite_settled}"


def _due_to_the_trickler(
    cs: Countersign, seeded: dict[str, Any], url: str, endpoints: dict[str, int]
) -> None:
    """``endpoints[club]`` endpoints of each club at the trickling receiver, and a pending
    proposal of each of that club's orders (none replaces another): every one of them is due
    at every endpoint of its club."""
    orders = {
        "granite": ["refund-ok", "refund-stale", "refund-declined", "refund-lost-response"],
        "maple": ["maple-refund"],
    }
    for club, count in endpoints.items():
        for n in range(count):
            Webhooks(cs, LOOPBACK_NETWORKS).add(None, club, f"{url}/{club}/{n}")
    for club in endpoints:
        actor = AVA if club == "granite" else MIA
        for order in orders[club]:
            propose(cs, seeded, order, actor=actor, organization=club)


def test_the_sender_keeps_to_its_bound_per_endpoint(cs, seeded) -> None:
    """Four deliveries due at one slow endpoint, with workers and club slots to spare: never
    more than ``per_endpoint`` connections to it at once (and that many: they do overlap).
    Each attempt holds its connection to its deadline, 2 s, so the overlaps are seen."""
    chosen = settings(workers=8, per_club=8, per_endpoint=2, timeout_seconds=2.0)
    with trickling() as trickler:
        _due_to_the_trickler(cs, seeded, trickler.url, {"granite": 1})
        report = notification_sender(cs, chosen).run_once()
    assert report.dead == trickler.requests == 4
    assert trickler.most_by_path == {"/hooks/granite/0": chosen.per_endpoint}


def test_the_sender_keeps_to_its_bounds_per_club_and_overall(cs, seeded) -> None:
    """Twelve deliveries due to granite's three slow endpoints and three to maple's: never
    more than ``per_club`` connections for one club, ``per_endpoint`` to one endpoint, and
    ``workers`` in all, at once."""
    chosen = settings(workers=5, per_club=3, per_endpoint=2, timeout_seconds=2.0)
    with trickling() as trickler:
        _due_to_the_trickler(cs, seeded, trickler.url, {"granite": 3, "maple": 3})
        report = notification_sender(cs, chosen).run_once()
    assert report.dead == trickler.requests == 15
    assert max(trickler.most_by_path.values()) <= chosen.per_endpoint, trickler.most_by_path
    # Granite has deliveries enough to fill its club's slots, and both clubs the workers.
    assert trickler.most_by_club["granite"] == chosen.per_club, trickler.most_by_club
    assert trickler.most_by_club["maple"] <= chosen.per_club, trickler.most_by_club
    assert trickler.most == chosen.workers


def test_a_workers_pass_ends_and_another_clubs_new_notification_goes_out_during_it(
    cs, seeded, monkeypatch
) -> None:
    """The worker runs reconcile, expire and notify one after the other. Its notify pass
    claimed until nothing was due, so a club whose endpoints never answer (sixteen
    deliveries here, each held to its deadline) kept the pass going: every club's
    reconciliation and expiry waited, and maple's notification, made during the pass, was
    not even fanned out. Now the pass looks for new notifications while attempts are slow,
    and stops claiming after the worker's interval, leaving the rest to the next pass."""
    from countersign.infrastructure import sweepers as schedule

    with trickling() as trickler, receiving() as healthy:
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "maple", healthy.url)
        _due_to_the_trickler(cs, seeded, trickler.url, {"granite": 4})  # 16 deliveries
        # Two of granite's attempts at once, each 1 s: all sixteen take 8 s, past the pass.
        sender = notification_sender(cs, settings(workers=8, per_club=2))
        monkeypatch.setattr(schedule, "notification_sender", lambda cs: sender)
        work = schedule.sweepers(cs, 3.0)
        reports: list[schedule.PassReport] = []
        passing = threading.Thread(
            target=lambda: reports.append(schedule.run_pass(work, 1)), daemon=True
        )
        passing.start()
        assert trickler.arrived.wait(5), "the slow receiver was never reached"
        propose_in(cs, seeded, "maple")
        assert healthy.arrived.wait(5), "maple's new notification waited for the whole pass"
        passing.join(30)
    assert not passing.is_alive()
    assert [r.failed for r in reports] == [[]]
    statuses = Counter(d["status"] for d in Webhooks(cs).deliveries(None, "granite"))
    # The pass stopped claiming: some of granite's deliveries are still due, for the next.
    assert 0 < statuses["dead"] < 16, statuses
    assert sum(statuses.values()) == 16


def test_a_workers_pass_claims_nothing_once_it_is_told_to_stop(cs, seeded, monkeypatch) -> None:
    from countersign.infrastructure import sweepers as schedule

    stop = threading.Event()
    with trickling() as trickler:
        _due_to_the_trickler(cs, seeded, trickler.url, {"granite": 4})
        sender = notification_sender(cs, settings(workers=8, per_club=2))
        monkeypatch.setattr(schedule, "notification_sender", lambda cs: sender)
        work = schedule.sweepers(cs, 60.0, stop)
        passing = threading.Thread(target=schedule.run_pass, args=(work, 1), daemon=True)
        passing.start()
        assert trickler.arrived.wait(5), "the slow receiver was never reached"
        stop.set()  # SIGTERM: the attempts under way end by their 1 s deadline, no more start
        passing.join(30)
        requests = trickler.requests
    assert not passing.is_alive()
    assert requests <= 4, f"{requests} attempts started after the stop"


def test_an_operator_sets_the_senders_bounds(monkeypatch) -> None:
    """Four clubs whose receivers are all slow hold the default sixteen workers: an operator
    with many clubs raises them (and keeps each bound within the next)."""
    from countersign.infrastructure.settings import SettingsError

    assert (NotifySettings.from_env().workers, NotifySettings().per_club) == (16, 4)
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_WORKERS", "64")
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_CLUB", "3")
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_ENDPOINT", "1")
    chosen = NotifySettings.from_env()
    assert (chosen.workers, chosen.per_club, chosen.per_endpoint) == (64, 3, 1)
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_CLUB", "80")
    with pytest.raises(SettingsError, match="PER_CLUB <= COUNTERSIGN_NOTIFY_WORKERS, not 1, 80"):
        NotifySettings.from_env()
    with pytest.raises(SettingsError, match="_PER_CLUB is more than COUNTERSIGN_NOTIFY_WORKERS: "):
        NotifySettings.from_env()  # which one, and what to do
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_ENDPOINT", "5")
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_CLUB", "3")
    with pytest.raises(
        SettingsError, match="_PER_ENDPOINT is more than COUNTERSIGN_NOTIFY_PER_CLUB"
    ):
        NotifySettings.from_env()
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_ENDPOINT", "1")
    monkeypatch.setenv("COUNTERSIGN_NOTIFY_PER_CLUB", "zero")
    with pytest.raises(SettingsError, match="must be a positive whole number, not 'zero'"):
        NotifySettings.from_env()
