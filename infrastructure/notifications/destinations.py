"""Where a webhook may be POSTed: public addresses only, never the host's own network.

A club types the URL, so its host is untrusted. It is refused at every attempt if it is or
resolves to a loopback, private, link-local, unique-local, multicast, unspecified or
otherwise non-global address, in any spelling: ``127.1``,
``2130706433``, ``0x7f000001``, ``0177.0.0.1`` (the C library's ``inet_aton`` forms, which
``getaddrinfo`` accepts too), ``[::ffff:127.0.0.1]`` and the other IPv6 forms that embed an
IPv4 address (IPv4-compatible, 6to4, Teredo, NAT64). The sender connects to the very address it
checked, so a name that resolves differently a moment later (DNS rebinding) cannot slip past.
Registration refuses what needs no lookup to refuse: an internal literal, ``localhost``
(``check_url_host``), also when spelled in characters the resolver folds to them (fullwidth
digits, ideographic full stops: ``as_resolved``).

The host's own addresses are refused too, public ones included (``own_addresses``): a service
that listens on every interface behind a firewall that keeps the world out is reachable from
the host itself at its public address, and a club's webhook must not be the way in.

``COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS`` (comma-separated networks, empty by default) is the
only way to allow an internal target, such as a receiver on 127.0.0.0/8 in tests; an address
it names is allowed even if it is the host's own.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Collection, Iterable, Sequence

from countersign.domain.club.webhooks import WebhookUrlError

log = logging.getLogger("countersign.notify")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ENVIRONMENT = "COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS"

#: How long the host's own addresses are remembered before they are looked up again (an
#: interface that comes up, or a new address, is refused within this many seconds).
OWN_ADDRESSES_SECONDS = 60.0

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


class AddressNotAllowedError(WebhookUrlError):
    """The URL's host is, or resolves to, an address countersign never posts to."""

    def __init__(self) -> None:
        super().__init__(
            "the webhook URL points at a private, loopback or otherwise internal address, or"
            " at this server itself; webhooks are posted to other hosts' public addresses only",
            "internal_address",
        )


class UnresolvableHostError(Exception):
    """The host has no address (it may have one later: the attempt is tried again)."""


class NotANetworkError(ValueError):
    """An entry of a list of networks that is not one (``entry``, as given)."""

    def __init__(self, entry: str) -> None:
        super().__init__(f"{entry!r} is not a network (such as 127.0.0.0/8)")
        self.entry = entry


def parse_networks(text: str) -> tuple[Network, ...]:
    """``"127.0.0.0/8, ::1/128"`` as networks; NotANetworkError naming the bad entry."""
    found: list[Network] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            found.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise NotANetworkError(entry) from None
    return tuple(found)


def literal_address(host: str) -> Address | None:
    """The address ``host`` spells, in any form the resolver would read as one; None for a
    name."""
    bare = host.strip().removeprefix("[").removesuffix("]").split("%", 1)[0].rstrip(".")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if ":" in bare:
        return None
    try:  # 127.1, 2130706433, 0x7f000001, 0177.0.0.1: what inet_aton (and getaddrinfo) read
        return ipaddress.IPv4Address(socket.inet_aton(bare))
    except (OSError, ValueError):
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


class _OwnAddresses:
    """The host's own interface addresses, looked up (psutil) at most every
    ``OWN_ADDRESSES_SECONDS``; every sender thread reads the same set."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: frozenset[Address] = frozenset()
        self._until = float("-inf")

    def __call__(self) -> frozenset[Address]:
        with self._lock:
            now = time.monotonic()
            if now >= self._until:
                self._found = _interface_addresses()
                self._until = now + OWN_ADDRESSES_SECONDS
            return self._found


def _interface_addresses() -> frozenset[Address]:
    """Every IPv4 and IPv6 address of every interface of this host, up or down (psutil: the
    standard library lists interfaces' names, not their addresses). If the host will not
    say, none: the other rules still refuse loopback and every internal network."""
    import psutil  # only a process that posts webhooks needs it

    found: set[Address] = set()
    try:
        interfaces = psutil.net_if_addrs()
    except Exception:  # psutil.Error, OSError: the other rules still hold
        log.warning("webhooks: could not list this host's own addresses", exc_info=True)
        return frozenset()
    for addresses in interfaces.values():
        for entry in addresses:
            if entry.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            try:  # an IPv6 address may carry its interface: fe80::1%eth0
                found.add(ipaddress.ip_address(entry.address.split("%", 1)[0]))
            except ValueError:
                continue
    return frozenset(found)


own_addresses = _OwnAddresses()
"""The host's own addresses, never a webhook's target unless ``allowed`` names them."""


def is_allowed(
    address: Address, allowed: Sequence[Network] = (), own: Collection[Address] = ()
) -> bool:
    """Whether a webhook may be posted to ``address``: a public unicast address that is not
    one of the host's ``own``, or one in ``allowed``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address.version == net.version and address in net for net in allowed):
        return True
    if address in own:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None and not is_allowed(embedded, allowed, own):
            return False
    return address.is_global and not (
        address.is_multicast
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_reserved
        # fec0::/10, deprecated site-local: a local network's, which Python 3.11's is_global
        # and is_private do not say (is_site_local does).
        or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)
        or any(address.version == net.version and address in net for net in _NOT_GLOBAL)
    )


#: Special-purpose networks that Python 3.11's ``is_global`` calls global, none of them a
#: receiver's: the IETF's protocol assignments (192.0.0.8, the dummy address, among them),
#: the 6to4 relays' anycast (deprecated) and IPv6's second documentation prefix (2024).
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(net) for net in ("192.0.0.0/24", "192.88.99.0/24", "3fff::/20")
)


def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` stands for (a literal stands for itself); UnresolvableHostError
    when it has none."""
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise UnresolvableHostError(host) from None
    found: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise UnresolvableHostError(host)
    return found


def checked_addresses(host: str, port: int, allowed: Sequence[Network] = ()) -> list[Address]:
    """The addresses of ``host`` a webhook may be posted to. AddressNotAllowedError if any of
    them is internal or the host's own (a name that also resolves inward is refused as a
    whole); UnresolvableHostError if it has none."""
    addresses = resolve(host, port)
    own = own_addresses()
    if not all(is_allowed(address, allowed, own) for address in addresses):
        raise AddressNotAllowedError
    return addresses


def check_url_host(host: str, allowed: Iterable[Network] = ()) -> None:
    """At registration: refuse a host that IS an internal address (a literal in any spelling,
    or ``localhost`` and its subdomains, which are the host's own by definition).

    A name is not looked up here: every attempt looks it up and checks each address before
    connecting (``checked_addresses``). Looking it up at registration held the request's
    thread for as long as a club's own name server chose not to answer (every thread of the
    API's pool, so every club's requests, for 40 registrations), and its two answers ("an
    internal address" or accepted) told a club which names the host's own resolver knows."""
    allowed = tuple(allowed)
    host = as_resolved(host)
    name = host.strip().rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        # Loopback by definition: refused unless the operator allows a loopback network
        # (each attempt then checks the address the name resolves to, as for any name).
        if not any(is_allowed(loopback, allowed) for loopback in _LOOPBACKS):
            raise AddressNotAllowedError
        return
    literal = literal_address(host)
    if literal is not None and not is_allowed(literal, allowed, own_addresses()):
        raise AddressNotAllowedError


_LOOPBACKS = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def as_resolved(host: str) -> str:
    """``host`` as the resolver reads it: a name with characters beyond ASCII goes through
    IDNA first (``getaddrinfo`` does so), which folds fullwidth and circled digits and
    letters and the ideographic full stops, so 127.0.0.1 written in fullwidth digits is
    127.0.0.1 and a fullwidth localhost is localhost. A name IDNA cannot encode is kept as
    it is (no address will be found for it)."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host
