"""Passwords hashed at test strength.

The product hashes with argon2-cffi's RFC 9106 "low memory" profile (Argon2id, 64 MiB, three
passes, four lanes): about half a second per hash or check on the 2-core development machine,
which is the point of it. The suite sets and checks thousands of passwords to sign people in,
and that profile cost about 60% of all fixture setup (a seeded site's four demo passwords took
two seconds). So the suite hashes with the same algorithm at the smallest cost (1 MiB, one
pass, one lane: about a millisecond); `test_the_product_hashes_with_the_rfc_9106_profile`
(tests/test_http_api.py) checks the product's own profile with ``PRODUCT_HASHER``.

A hash carries its parameters, so a server process a test starts checks these hashes quickly
too, and upgrades each to the product's profile at its first sign-in (``check_needs_rehash``).
"""

from __future__ import annotations

from argon2 import PasswordHasher
from countersign.infrastructure.identity import passwords

PRODUCT_HASHER = passwords._hasher
TEST_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


def use_test_strength() -> None:
    """Hash and check with ``TEST_HASHER`` in this process (pytest_configure calls it)."""
    passwords._hasher = TEST_HASHER
    passwords._dummy_hash.clear()
