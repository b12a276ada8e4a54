"""Issue 23, part 1: a webhook URL must never reach the host's own network.

The attack run registered every loopback and internal spelling as a club's webhook, and the
attempt log then read like a port scanner (``RemoteDisconnected`` for an open port,
``ConnectionRefusedError`` for a closed one, timings, countersign's own ``HTTP 401``). Each
spelling is now refused at registration, the sender checks the address again at every attempt
and connects to the address it checked, and the club reads only "delivered", "failed: the
endpoint answered 500" or "failed: could not connect".
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from countersign.domain.club.webhooks import WebhookUrlError
from countersign.infrastructure.notifications import destinations
from countersign.infrastructure.notifications.destinations import (
    ENVIRONMENT,
    is_allowed,
    literal_address,
    parse_networks,
)
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender

from tests.attacks.conftest import Api, assert_no_leak, assert_nothing_changed, snapshot
from tests.receivers import LOOPBACK_NETWORKS, POLL, free_port, receiving
from tests.support.proposing import propose

HOOKS = "/api/v1/webhooks"

#: Every spelling the attack run got accepted, and the forms it named besides.
INTERNAL = [
    "http://127.0.0.1:5432/",
    "http://localhost:6379/",
    "http://[::1]/",
    "http://0.0.0.0/",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://017700000001/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:7f00:1::]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://100.64.0.1/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[fec0::1]/",  # site-local (deprecated), which Python 3.11 calls global
    # Special-purpose, which Python 3.11 calls global too (a later attack run): the dummy
    # address, the 6to4 relays' anycast, IPv6's second documentation prefix.
    "http://192.0.0.8/",
    "http://192.88.99.1/",
    "http://[3fff::1]/",
    "http://224.0.0.1/",
    "http://[ff02::1]/",
    "http://[::]/",
    "https://127.0.0.1.:8443/",
    "http://api.localhost/",
    "http://LOCALHOST./",
    # What the resolver reads through IDNA (NFKC, and the ideographic full stops as dots): the
    # sender refused them, but registration took them as names (a later attack run).
    "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",  # fullwidth digits: 127.0.0.1
    "http://127\u30020\u30020\u30021/",  # ideographic full stops
    "http://\u246f\u2468\u3002\u2461\u2464\u2463\u3002\u246f\u2468\uff61\u2461\u2464\u2463/",
    "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",  # fullwidth localhost
    "http://api.\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
]


@pytest.fixture(autouse=True)
def no_allowed_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default: no internal network is allowed."""
    monkeypatch.delenv(ENVIRONMENT, raising=False)


@pytest.mark.parametrize("url", INTERNAL)
def test_every_internal_spelling_is_refused_at_registration(api: Api, url: str) -> None:
    before = snapshot(api.cs)
    answer = api.post(HOOKS, {"url": url})
    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["problems"]
    assert problem["field"] == "url"
    assert "internal address" in problem["message"]
    assert_no_leak(answer.text)
    assert api.get(HOOKS).json() == {"items": []}
    assert_nothing_changed(api.cs, before)


def test_the_operators_command_line_is_refused_too(cs, seeded) -> None:
    with pytest.raises(WebhookUrlError, match="internal address"):
        Webhooks(cs).add(None, "granite", "http://127.1:8000/api/v1/proposals")
    assert Webhooks(cs).endpoints(None, "granite") == []


def test_a_public_address_and_a_name_that_does_not_resolve_yet_are_accepted(api: Api) -> None:
    for url in ("https://93.184.215.14/hooks", "https://hooks.invalid/countersign"):
        answer = api.post(HOOKS, {"url": url})
        assert answer.status_code == 201, answer.text


def _no_lookups(monkeypatch: pytest.MonkeyPatch, internal: dict[str, str]) -> list[str]:
    """The resolver of a split-horizon network: ``internal``'s names are the host network's,
    every other ``.internal`` name is unknown. Returns the names looked up."""
    looked_up: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(str(host))
        if str(host) in internal:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (internal[str(host)], port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return looked_up


def test_registration_looks_no_name_up_so_it_tells_nothing_of_the_hosts_network(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup at registration held the API's thread as long as the club's own name server
    chose (40 registrations held every thread of the pool: every club's requests waited), and
    its answers told a club which names the host's resolver knows ("internal address" for
    ``db.internal``, accepted for an unknown one). A name is now looked up only by the sender,
    at each attempt, which refuses an internal address with the same words as an unreachable
    endpoint (``test_the_delivery_log_is_no_port_scanner``)."""
    looked_up = _no_lookups(monkeypatch, {"db.internal": "10.0.0.5"})
    answers = {
        name: api.post(HOOKS, {"url": f"https://{name}/hooks"}).status_code
        for name in ("db.internal", "ldap.internal", "hooks.example")
    }
    assert answers == {"db.internal": 201, "ldap.internal": 201, "hooks.example": 201}
    assert looked_up == []


def test_a_name_registered_that_resolves_inward_gets_nothing(cs, seeded, monkeypatch) -> None:
    looked_up = _no_lookups(monkeypatch, {"db.internal": "10.0.0.5"})
    Webhooks(cs).add(None, "granite", "https://db.internal/hooks")
    propose(cs, seeded)
    report = notification_sender(cs, NotifySettings(max_attempts=1)).run_once()
    assert report.dead == 1
    assert looked_up == ["db.internal"]  # the sender looked it up, and refused it
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert delivery["attempt_log"][0]["result"] == "failed: could not connect"


def test_only_the_allowed_networks_open_an_internal_target(cs, seeded, monkeypatch) -> None:
    with pytest.raises(WebhookUrlError, match="internal address"):
        Webhooks(cs).add(None, "granite", "http://localhost:9/hooks")
    monkeypatch.setenv(ENVIRONMENT, "127.0.0.0/8")
    Webhooks(cs).add(None, "granite", "http://127.0.0.1:9/hooks")
    Webhooks(cs).add(None, "granite", "http://localhost:9/hooks")  # loopback, allowed
    Webhooks(cs).add(None, "granite", "http://[::ffff:127.0.0.2]:9/hooks")
    with pytest.raises(WebhookUrlError, match="internal address"):
        Webhooks(cs).add(None, "granite", "http://10.0.0.1/hooks")
    monkeypatch.setenv(ENVIRONMENT, "not-a-network")
    with pytest.raises(ValueError, match="COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS"):
        NotifySettings()


def test_the_address_rules_cover_the_short_and_embedded_forms() -> None:
    for spelling in ("127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1"):
        assert str(literal_address(spelling)) == "127.0.0.1", spelling
    assert literal_address("hooks.example") is None
    for address in ("::ffff:10.0.0.1", "2002:a00:1::", "64:ff9b::a00:1", "2001::a00:1"):
        found = literal_address(address)
        assert found is not None, address
        assert not is_allowed(found), address
    public = literal_address("93.184.215.14")
    assert public is not None
    assert is_allowed(public)
    mapped = literal_address("::ffff:127.0.0.1")
    assert mapped is not None
    assert is_allowed(mapped, parse_networks("127.0.0.0/8"))


# -- the server's own addresses ---------------------------------------------------------------

#: A public address standing for the server's own in these tests (the test machine has none).
SERVER = "93.184.215.14"


@pytest.fixture
def server_at(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The host's interfaces, as psutil would list them: loopback and what the test appends."""
    listed = ["127.0.0.1", "::1"]

    def interfaces() -> frozenset[Any]:
        return frozenset(destinations.ipaddress.ip_address(a) for a in listed)

    monkeypatch.setattr(destinations, "_interface_addresses", interfaces)
    monkeypatch.setattr(destinations, "own_addresses", destinations._OwnAddresses())
    return listed


def test_the_servers_own_public_address_is_refused(api: Api, server_at: list[str]) -> None:
    """A service behind a firewall that keeps the world out still answers the host itself at
    its public address: a club's webhook must not be the way in."""
    server_at.append(SERVER)
    before = snapshot(api.cs)
    for url in (f"http://{SERVER}:9200/", f"http://[::ffff:{SERVER}]/"):
        answer = api.post(HOOKS, {"url": url})
        assert answer.status_code == 422, answer.text
        [problem] = answer.json()["problems"]
        assert "this server itself" in problem["message"]
        assert_no_leak(answer.text)
    assert_nothing_changed(api.cs, before)


def test_an_endpoint_that_became_the_servers_address_gets_nothing(
    cs, seeded, server_at: list[str], dns
) -> None:
    """Registered while its name led elsewhere; the server took the address since (or the
    name was pointed at it): the attempt is refused before connecting."""
    dns["moved.test"] = [SERVER]
    Webhooks(cs).add(None, "granite", "http://moved.test:9200/hooks")
    server_at.append(SERVER)
    destinations.own_addresses._until = float("-inf")  # as once a minute has passed
    propose(cs, seeded)
    sender = notification_sender(cs, NotifySettings(max_attempts=1, timeout_seconds=2))
    connected: list[Any] = []
    original = socket.create_connection
    try:
        socket.create_connection = lambda *a, **k: connected.append(a) or original(*a, **k)
        assert sender.run_once().dead == 1
    finally:
        socket.create_connection = original
    assert connected == []
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert delivery["attempt_log"][0]["result"] == "failed: could not connect"


def test_only_the_allowed_networks_open_the_servers_own_address(server_at: list[str]) -> None:
    server_at.append(SERVER)
    own = destinations.own_addresses()
    address = literal_address(SERVER)
    assert address is not None
    assert address in own
    assert not is_allowed(address, (), own)
    assert is_allowed(address, parse_networks(f"{SERVER}/32"), own)
    assert is_allowed(address)  # public, and not this server's


def test_the_servers_addresses_are_looked_up_again_each_minute(
    server_at: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(destinations.time, "monotonic", lambda: now[0])
    assert literal_address(SERVER) not in destinations.own_addresses()
    server_at.append(SERVER)
    now[0] += destinations.OWN_ADDRESSES_SECONDS - 1
    assert literal_address(SERVER) not in destinations.own_addresses()  # remembered a minute
    now[0] += 1
    assert literal_address(SERVER) in destinations.own_addresses()


def test_a_host_that_will_not_list_its_addresses_keeps_the_other_rules(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import psutil

    def refusing() -> None:
        raise psutil.AccessDenied()

    monkeypatch.setattr(psutil, "net_if_addrs", refusing)
    assert destinations._interface_addresses() == frozenset()
    assert "could not list this host's own addresses" in caplog.text
    loopback = literal_address("127.0.0.1")
    assert loopback is not None
    assert not is_allowed(loopback)


def test_the_real_interfaces_are_found() -> None:
    """Without a stand-in: psutil lists loopback and the address this host leaves by."""
    found = destinations._interface_addresses()
    assert literal_address("127.0.0.1") in found
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the route picks the source
        except OSError:  # no route out at all: loopback is all there is to find
            return
        leaving = probe.getsockname()[0]
    assert literal_address(leaving) in found


# -- at every attempt ----------------------------------------------------------------------------


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """Names under ``.test`` resolve to the next address of their list, one per lookup (a DNS
    server an attacker controls); every other name resolves as usual."""
    answers: dict[str, list[str]] = {}
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host in answers:
            lookups.append(host)
            address = answers[host].pop(0) if len(answers[host]) > 1 else answers[host][0]
            return real(address, port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    answers["lookups"] = lookups
    return answers


def test_a_name_rebound_to_loopback_after_registration_gets_nothing(cs, seeded, dns) -> None:
    with receiving() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        dns["rebind.test"] = ["93.184.215.14", "127.0.0.1"]
        Webhooks(cs).add(None, "granite", f"http://rebind.test:{port}/hooks")
        propose(cs, seeded)
        report = notification_sender(cs, NotifySettings(max_attempts=1)).run_once()
        assert report.dead == 1
        assert receiver.received == []
    [delivery] = Webhooks(cs).deliveries(None, "granite")
    assert delivery["attempt_log"][0]["result"] == "failed: could not connect"


def test_the_sender_connects_to_the_address_it_checked(cs, seeded, dns) -> None:
    """The name resolves to the allowed receiver for the check, and elsewhere afterwards: the
    POST still reaches the receiver, with the name in its Host header, after one lookup."""
    with receiving() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        dns["pinned.test"] = ["127.0.0.1"]
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "granite", f"http://pinned.test:{port}/hooks")
        dns["pinned.test"] = ["127.0.0.1", "10.255.255.1"]
        del dns["lookups"][:]
        propose(cs, seeded)
        settings = NotifySettings(max_attempts=1, allowed_networks=LOOPBACK_NETWORKS)
        report = notification_sender(cs, settings).run_once()
        assert report.delivered == 1
        [received] = receiver.received
        assert received.headers["host"] == f"pinned.test:{port}"
        assert dns["lookups"] == ["pinned.test"]


def test_an_endpoint_registered_before_the_fix_is_checked_at_every_attempt(
    cs, seeded, monkeypatch
) -> None:
    with receiving() as receiver:
        Webhooks(cs, LOOPBACK_NETWORKS).add(None, "granite", receiver.url)
        propose(cs, seeded)
        report = notification_sender(cs, NotifySettings(max_attempts=1)).run_once()
        assert report.dead == 1
        Webhooks(cs).redeliver(None, "granite")  # redeliver does not re-probe either
        notification_sender(cs, NotifySettings(max_attempts=1)).run_once()
        assert receiver.received == []
    attempts = Webhooks(cs).deliveries(None, "granite")[0]["attempt_log"]
    assert [a["result"] for a in attempts] == ["failed: could not connect"] * 2


# -- what the club reads ---------------------------------------------------------------------------


class _Closing(BaseHTTPRequestHandler):
    """An open port that hangs up without answering (PostgreSQL, Redis to an HTTP client)."""

    def do_POST(self) -> None:
        self.connection.close()

    def log_message(self, *args: Any) -> None:
        pass


def test_the_delivery_log_is_no_port_scanner(api: Api, monkeypatch) -> None:
    monkeypatch.setenv(ENVIRONMENT, "127.0.0.0/8")
    hangup = ThreadingHTTPServer(("127.0.0.1", 0), _Closing)
    threading.Thread(target=hangup.serve_forever, args=(POLL,), daemon=True).start()
    try:
        with receiving() as failing:
            failing.statuses = [500]
            urls = [
                f"http://127.0.0.1:{hangup.server_address[1]}/open",
                f"http://127.0.0.1:{free_port()}/closed",
                failing.url,
            ]
            for url in urls:
                assert api.post(HOOKS, {"url": url}).status_code == 201
            api.propose()
            settings = NotifySettings(max_attempts=1, timeout_seconds=2)
            assert notification_sender(api.cs, settings).run_once().dead == 3
    finally:
        hangup.shutdown()
        hangup.server_close()
    answer = api.get(f"{HOOKS}/deliveries")
    assert answer.status_code == 200
    results = sorted(d["attempt_log"][0]["result"] for d in answer.json()["items"])
    assert results == [
        "failed: could not connect",
        "failed: could not connect",
        "failed: the endpoint answered 500",
    ]
    for leak in ("Error", "Disconnected", "latency", "_ms", "Timeout"):
        assert leak not in answer.text, leak
