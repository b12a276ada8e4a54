"""People's passwords, kept as Argon2id hashes (argon2-cffi, RFC 9106 parameters).

A person is known by email across organizations; which organizations they may act in is the
organization aggregates' business, checked on every request, not here.

Setting a password ends every browser session of that person (``session_store``): whoever
holds a copy of a session cookie from before the change is signed out with everyone else.
"""

from __future__ import annotations

import threading

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.session_store import ensure_session_table, revoke_person_in
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import Cursor

MIN_PASSWORD = 12
MAX_PASSWORD = 1024

#: What a person reads about a password refused for its length (the line under it names the
#: field and the bounds precisely).
_PASSWORD_LENGTH = Localized(
    "A password needs 12 to 1,024 characters; nothing was changed.",
    "Un mot de passe compte de 12 à 1 024 caractères ; rien n'a changé.",
)
_NOT_AN_EMAIL = Localized(
    "That is not an email address; nothing was changed.",
    "Ce n'est pas une adresse courriel ; rien n'a changé.",
)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS user_passwords ("
    " email TEXT PRIMARY KEY, password_hash TEXT NOT NULL, updated_at TEXT NOT NULL)",
)

_hasher = PasswordHasher()  # Argon2id with the library's RFC 9106 "low memory" profile
_dummy_lock = threading.Lock()
_dummy_hash: list[str] = []


def _normalize(email: str) -> str:
    return email.strip().lower()


def _dummy() -> str:
    """A hash to verify against for unknown emails, so both answers take as long."""
    with _dummy_lock:
        if not _dummy_hash:
            _dummy_hash.append(_hasher.hash("countersign-no-such-user"))
        return _dummy_hash[0]


def set_password(cs: Countersign, email: str, password: str) -> int:
    """Store (or replace) the Argon2id hash of ``email``'s password and revoke every browser
    session of ``email``; returns how many sessions ended.

    Raises InvalidRequestError for an empty email or a password outside 12-1024 characters.
    """
    ensure_tables(cs.sql, "user_passwords", _SCHEMA)
    address = _normalize(email)
    if "@" not in address:
        raise InvalidRequestError.one("email", "not an email address", _NOT_AN_EMAIL)
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise InvalidRequestError.one(
            "password",
            f"use between {MIN_PASSWORD} and {MAX_PASSWORD} characters",
            _PASSWORD_LENGTH,
        )
    password_hash = _hasher.hash(password)
    ensure_session_table(cs.sql)
    now = cs.clock.now()
    with cs.sql.transaction() as cursor:  # the new hash and the revocations, together
        _store_in(cursor, address, password_hash, now.isoformat())
        return revoke_person_in(cursor, address, int(now.timestamp()))


def verify_password(cs: Countersign, email: str, password: str) -> bool:
    """True if ``password`` is ``email``'s; upgrades the stored hash if parameters changed."""
    ensure_tables(cs.sql, "user_passwords", _SCHEMA)
    address = _normalize(email)
    row = None
    # A NUL byte is in no account's address, and PostgreSQL's text refuses it (an error, a
    # 500 to anyone who typed one): such an email is unknown, checked as long as any other.
    if "\x00" not in address:
        with cs.sql.transaction() as cursor:
            row = cursor.execute(
                "SELECT password_hash FROM user_passwords WHERE email = ?", (address,)
            ).fetchone()
    stored = str(row[0]) if row else None
    if stored is None or len(password) > MAX_PASSWORD:
        _verify(_dummy(), password[:MAX_PASSWORD])
        return False
    if not _verify(stored, password):
        return False
    if _hasher.check_needs_rehash(stored):
        _store(cs, address, _hasher.hash(password))
    return True


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def _store(cs: Countersign, email: str, password_hash: str) -> None:
    """A rehash of the same password (new parameters): sessions stay as they are."""
    with cs.sql.transaction() as cursor:
        _store_in(cursor, email, password_hash, cs.clock.now().isoformat())


def _store_in(cursor: Cursor, email: str, password_hash: str, at: str) -> None:
    cursor.execute(
        "INSERT INTO user_passwords (email, password_hash, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash,"
        " updated_at = excluded.updated_at",
        (email, password_hash, at),
    )
