"""Throttling of failed browser sign-ins, shared by every server process through the database.

A password form is the one door a guesser can knock on as often as they like, and each knock
costs the server an Argon2id hash. The counts live in the configured database (table
``sign_in_failures``), so several server processes enforce one limit together.

The rules:

* Failures are counted per **account** and per **client address**, in a sliding window of
  ``WINDOW`` (15 minutes). The account key is a SHA-256 digest of the normalised email and
  the address key a SHA-256 digest of the address (an IPv6 one's /64: its holder picks any
  address in it): the table holds neither verbatim. An email
  nobody has is counted exactly like a real one, so the answers never tell them apart.
* Once an account has ``ACCOUNT_LIMIT`` (5) failures in the window, or an address has
  ``ADDRESS_LIMIT`` (50, across any number of accounts: a shared office or campus address
  should not lock out its people, one address trying many accounts should be stopped), further
  attempts on that key are refused **without checking the password** (no Argon2 work), with
  how long to wait: until enough failures have left the window to fall under the limit.
* Refused attempts are not recorded, so knocking on a locked door never extends the lock: it
  ends ``WINDOW`` after the failure that reached the limit. From then on a persistent guesser
  gets one more try each time an old failure leaves the window, at most ``ACCOUNT_LIMIT``
  guesses per account per ``WINDOW`` (480 a day), however many processes serve them.
* Every admitted attempt is written down as a failure *before* the password is checked, in
  the same transaction that counted (under a per-key lock on PostgreSQL; SQLite's write
  transactions are serial anyway), so parallel requests cannot all slip in under the limit.
  A success then removes that attempt and all of the account's failures, but not the
  address's others: signing in to one's own account must not reset a guesser's address count.
  An attempt whose check crashed stays counted as a failure.
* Rows that left the window are deleted on every attempt, so the table only ever holds the
  last ``WINDOW`` of failures.

* **A known browser** (one where a sign-in to the account succeeded in the last 180 days:
  its signed cookie holds a random id, and ``session_store.browser_known`` finds the pair)
  is counted on its own key instead of the account's: ``ACCOUNT_LIMIT`` failures per
  ``WINDOW`` for that browser and that account (the key is the pair: on a browser known for
  several accounts, a club's shared laptop, a success on one never clears another's
  failures), and the account's count neither refuses it nor grows with its mistakes nor is
  cleared by its success. So the per-account limit, which lets anyone
  lock a known email out by guessing wrong on purpose, no longer keeps its person out of
  the browsers they use: a guesser elsewhere locks only the browsers that never signed in
  to it (the "device cookies" of OWASP's guidance on brute-force protection). An account
  has at most ten known browsers, and a password change or "sign out everywhere" forgets
  them all, so a browser that knew an old password gets no more guesses than any other.
  A known browser's failures count towards its address's limit, but that limit does not
  refuse it: a guesser at the same address (a campus, a NAT, a VPN exit) locked everyone
  there out, the browsers they sign in on included. The address limit refuses every other
  attempt: the guesser's browser is known for no one else's account.

Behind a reverse proxy, list the proxy's address in ``COUNTERSIGN_TRUSTED_PROXIES``
(``infrastructure/server_settings.py``) so that ``request.client`` is the real client: otherwise
every visitor shares the proxy's address and one limit. Forwarded headers from anyone else are
ignored, so no client can pick the address it is counted under.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from countersign.application.ports import Clock
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase

#: How far back failures count (a sliding window).
WINDOW = timedelta(minutes=15)
#: Failures per account (normalised email, known or not) within WINDOW before it is refused.
ACCOUNT_LIMIT = 5
#: The bits of an IPv6 address that name the network a client holds (and picks from).
IPV6_PREFIX = 64
#: Failures per client address, over all accounts, within WINDOW before it is refused.
ADDRESS_LIMIT = 50

#: The first half of the two-part PostgreSQL advisory lock key for one throttle key.
_LOCK_CLASS = 1_397_311_566

_TABLE = "sign_in_failures"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
    " scope TEXT NOT NULL, digest TEXT NOT NULL, attempt TEXT NOT NULL,"
    " failed_at BIGINT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {_TABLE}_key ON {_TABLE} (scope, digest, failed_at)",
    f"CREATE INDEX IF NOT EXISTS {_TABLE}_age ON {_TABLE} (failed_at)",
)

Scope = Literal["account", "address", "device"]


@dataclass(frozen=True)
class Attempt:
    """An admitted attempt, already counted as a failure until ``succeeded`` says otherwise."""

    token: str
    account: str
    address: str
    device: str | None = None
    """The known browser's key it was counted under instead of the account's, if any."""


@dataclass(frozen=True)
class Refusal:
    """Too many failures: try again in ``retry_after`` seconds (at least 1)."""

    retry_after: int
    scope: Scope

    @property
    def minutes(self) -> int:
        """The wait in whole minutes, rounded up (at least 1), for people."""
        return max(1, math.ceil(self.retry_after / 60))


def account_key(email: str) -> str:
    """The account's key: a SHA-256 digest of the normalised email (never stored verbatim)."""
    return _digest("account", email.strip().lower())


def address_key(address: str) -> str:
    """The client address's key: a SHA-256 digest of its network, as one client holds it:
    an IPv4 address (an IPv4-mapped IPv6 one too), or an IPv6 address's /64, whose 2^64
    addresses any host on it picks at will (one address per guess would never be refused).
    Anything else (no address) is counted as written."""
    return _digest("address", _network(address.strip().lower()) or "unknown")


def _network(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address.partition("%")[0])  # (a zone names no network)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_PREFIX), strict=False))
    return str(parsed)


def device_key(nonce: str, email: str) -> str:
    """A known browser's key for one account: a SHA-256 digest of its device cookie's nonce
    and the normalised email. A browser known for several accounts (a club's shared laptop)
    counts each account's failures apart: one person's success there never clears another
    account's failures, nor does a guesser's count on one account lock the others out."""
    return _digest("device", f"{nonce}\0{email.strip().lower()}")


def _digest(scope: Scope, value: str) -> str:
    return hashlib.sha256(f"countersign sign-in {scope}\0{value}".encode()).hexdigest()


class SignInThrottle:
    """Counts failed sign-ins in the database; ``clock`` is the application's clock."""

    def __init__(
        self,
        sql: SqlDatabase,
        clock: Clock,
        *,
        window: timedelta = WINDOW,
        account_limit: int = ACCOUNT_LIMIT,
        address_limit: int = ADDRESS_LIMIT,
    ) -> None:
        self.sql = sql
        self.clock = clock
        self.window = window
        self.limits: dict[Scope, int] = {
            "account": account_limit,
            "address": address_limit,
            "device": account_limit,
        }

    def admit(self, email: str, address: str, device: str | None = None) -> Attempt | Refusal:
        """Refuse if the account or the address is over its limit (from a known browser, only
        if its ``device`` nonce is: see the module's rules); else count the attempt as a
        failure of each key (until ``succeeded``) and let the caller check the password."""
        ensure_tables(self.sql, _TABLE, _SCHEMA)
        account = account_key(email)
        known = device_key(device, email) if device else None
        keys: dict[Scope, str] = (
            {"device": known, "address": address_key(address)}
            if known
            else {"account": account, "address": address_key(address)}
        )
        now = self._now_ms()
        window = int(self.window.total_seconds() * 1000)
        with self.sql.transaction() as cursor:
            self._lock(cursor, list(keys.values()))
            cursor.execute(f"DELETE FROM {_TABLE} WHERE failed_at <= ?", (now - window,))
            waits: list[tuple[int, Scope]] = []
            for scope, digest in keys.items():
                if known and scope == "address":
                    continue  # counted below, but a known browser answers to its own count
                limit = self.limits[scope]
                # The limit-th newest failure is the one whose leaving ends the refusal.
                newest = cursor.execute(
                    f"SELECT failed_at FROM {_TABLE} WHERE scope = ? AND digest = ?"
                    " AND failed_at > ? ORDER BY failed_at DESC LIMIT ?",
                    (scope, digest, now - window, limit),
                ).fetchall()
                if len(newest) >= limit:
                    waits.append((int(newest[limit - 1][0]) + window - now, scope))
            if waits:
                wait, scope = max(waits)
                return Refusal(retry_after=max(1, math.ceil(wait / 1000)), scope=scope)
            token = uuid.uuid4().hex
            cursor.executemany(
                f"INSERT INTO {_TABLE} (scope, digest, attempt, failed_at) VALUES (?, ?, ?, ?)",
                [(scope, digest, token, now) for scope, digest in keys.items()],
            )
        return Attempt(token=token, account=account, address=keys["address"], device=known)

    def succeeded(self, attempt: Attempt) -> None:
        """The password was right: forget the failures of the key it was counted under (the
        account's, or the known browser's: then a guesser's count on the account stands, so
        the person signing in where they are known never lifts a lock set elsewhere) and
        this attempt."""
        ensure_tables(self.sql, _TABLE, _SCHEMA)
        scope, digest = (
            ("device", attempt.device) if attempt.device else ("account", attempt.account)
        )
        with self.sql.transaction() as cursor:
            self._lock(cursor, [digest, attempt.address])
            cursor.execute(f"DELETE FROM {_TABLE} WHERE scope = ? AND digest = ?", (scope, digest))
            cursor.execute(
                f"DELETE FROM {_TABLE} WHERE scope = ? AND digest = ? AND attempt = ?",
                ("address", attempt.address, attempt.token),
            )

    def _now_ms(self) -> int:
        return math.floor(self.clock.now().timestamp() * 1000)

    def _lock(self, cursor: Cursor, digests: list[str]) -> None:
        """Serialise attempts on the same keys across processes (PostgreSQL), in a fixed order
        so two attempts never wait on each other crosswise."""
        if not self.sql.is_postgres:
            return  # BEGIN IMMEDIATE already serialises SQLite's write transactions
        for key in sorted(
            {int.from_bytes(bytes.fromhex(d)[:4], "big", signed=True) for d in digests}
        ):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))",
                (_LOCK_CLASS, key),
            )
