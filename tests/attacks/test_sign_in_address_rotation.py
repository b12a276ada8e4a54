"""A guesser on IPv6 picked a new address for each guess, and the address limit never came.

Fifty failed sign-ins from one client address refuse it for 15 minutes
(``throttle.ADDRESS_LIMIT``), and five for one account refuse the account. But an IPv6 client
holds a whole /64 (2^64 addresses: any host on a home or office network, a cloud instance,
picks new ones at will), and the address was counted exactly as written. An attack run sent
each guess from a fresh address of one /64, at a fresh made-up e-mail (an e-mail nobody has
is counted, and checked with Argon2, like a real one): no limit ever refused it, and every
guess cost the server a full Argon2 check, the CPU every club's pages share. Guessing at
real accounts was still held to five each per 15 minutes, but the work was not.

Now an IPv6 address is counted by its /64 (an IPv4-mapped one as the IPv4 address it is):
one network, one count, as one IPv4 address behind its NAT.
"""

from __future__ import annotations

from typing import Any

from countersign.infrastructure.entrypoints.web.throttle import ADDRESS_LIMIT, address_key

from tests.conftest import AVA
from tests.test_sign_in_throttle import attempt, client, fail, fast_checks, web  # noqa: F401


def test_fresh_addresses_of_one_ipv6_network_share_one_count(
    web: Any,  # noqa: F811
    fast_checks: list[str],  # noqa: F811
) -> None:
    for number in range(ADDRESS_LIMIT):
        guesser = client(web.app, address=f"2001:db8:5:7:{number:x}::1")
        fail(guesser, f"made-up-{number}@granite.example", times=1)
    assert len(fast_checks) == ADDRESS_LIMIT

    another_host = client(web.app, address="2001:db8:5:7:ffff:ffff:ffff:fffe")
    refused = attempt(another_host, "one-more@granite.example", "a-guess")
    assert refused.status_code == 429
    assert len(fast_checks) == ADDRESS_LIMIT  # refused before any password check

    # Another network (the next /64) is another count: Ava signs in from hers.
    neighbour = client(web.app, address="2001:db8:5:8::1")
    assert attempt(neighbour, AVA, web.passwords[AVA]).status_code == 303


def test_the_address_key_is_the_ipv4_address_or_the_ipv6_network() -> None:
    assert address_key("2001:db8::1") == address_key("2001:DB8:0:0:ffff::2")
    assert address_key("2001:db8::1") != address_key("2001:db8:0:1::1")
    assert address_key("::ffff:192.0.2.7") == address_key("192.0.2.7")
    assert address_key("192.0.2.7") != address_key("192.0.2.8")
    assert address_key("fe80::1%eth0") == address_key("fe80::2")
    # Whatever is not an address (a test client's name, a unix socket) is counted as written.
    assert address_key("testclient") != address_key("unknown")
    assert address_key("") == address_key("unknown")
