"""Browser sessions kept in the database, so every server process shares them and can end them.

A browser holds only an opaque random session id (the pages' ``sessions.py`` puts it in the
cookie). This table is keyed by a SHA-256 digest of that id, never the id itself: a copy of
the table signs nobody in. A row says who is signed in to which club (or, between a correct
password and the choice of a club, who is choosing), when the session began, when it was last
seen, when it expires (the sooner of the idle and the absolute limit), the organization
version at which the membership was last confirmed, a one-shot notice, and whether it was
revoked.

Revoking is how a session ends before its time: signing out revokes that one, "sign out
everywhere" and a password change revoke every session of the person (by email, across
clubs), and the pages revoke a session whose member was removed from the club. A revoked or
expired row is never brought back; rows past their expiry are deleted whenever a new session
is stored.

Everything here is plain SQL over ``infrastructure.persistence.sql`` (SQLite and PostgreSQL
alike); the
email index serves revocation and the expiry index the clean-up, and a page request reads one
row by its primary key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import Cursor, SqlDatabase

TABLE = "web_sessions"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " id_sha256 TEXT PRIMARY KEY, email TEXT, organization TEXT,"
    " org_version BIGINT NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '{}',"
    " created_at BIGINT NOT NULL, seen_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,"
    " revoked_at BIGINT)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_email ON {TABLE} (email)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_expiry ON {TABLE} (expires_at)",
)
#: In a dead row's one-shot values: the "session ended" notice was given for it.
NOTICE_GIVEN = "ended_notice_given"
_NOTICE_GIVEN_DATA = json.dumps({NOTICE_GIVEN: True})
_COLUMNS = "email, organization, org_version, data, created_at, seen_at, expires_at, revoked_at"


#: The browsers where a sign-in to an account succeeded (the sign-in throttle counts their
#: failures on their own: ``web/throttle.py``), by digests of the address and of the browser's
#: random id, with when it last signed in there. Forgotten with the person's sessions (a
#: password change, "sign out everywhere"), past ``KNOWN_SECONDS`` unused, and beyond the
#: ``KNOWN_LIMIT`` most recent of an account.
KNOWN_BROWSERS = "web_known_browsers"
_KNOWN_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {KNOWN_BROWSERS} ("
    " email_sha256 TEXT NOT NULL, browser_sha256 TEXT NOT NULL, seen_at BIGINT NOT NULL,"
    " PRIMARY KEY (email_sha256, browser_sha256))",
    f"CREATE INDEX IF NOT EXISTS {KNOWN_BROWSERS}_seen ON {KNOWN_BROWSERS} (seen_at)",
)
KNOWN_SECONDS = 180 * 24 * 3600
KNOWN_LIMIT = 10


def id_digest(raw_id: str) -> str:
    """How a session id is stored: the SHA-256 digest of the raw id (hex)."""
    return hashlib.sha256(f"countersign web session\0{raw_id}".encode()).hexdigest()


@dataclass
class SessionRow:
    """One stored session; times are whole seconds since the epoch, by the application clock."""

    digest: str
    email: str | None
    organization: str | None
    org_version: int
    data: dict[str, Any] = field(default_factory=dict)
    created_at: int = 0
    seen_at: int = 0
    expires_at: int = 0
    revoked_at: int | None = None


def ensure_session_table(sql: SqlDatabase) -> None:
    ensure_tables(sql, TABLE, _SCHEMA + _KNOWN_SCHEMA)


def _email_digest(email: str) -> str:
    return hashlib.sha256(
        f"countersign known browser email\0{email.strip().lower()}".encode()
    ).hexdigest()


def _browser_digest(browser: str) -> str:
    return hashlib.sha256(f"countersign known browser\0{browser}".encode()).hexdigest()


def browser_known(sql: SqlDatabase, email: str, browser: str, now: int) -> bool:
    """Whether a sign-in to ``email`` succeeded in ``browser`` (its random id) in the last
    ``KNOWN_SECONDS``, and it was not forgotten since."""
    ensure_session_table(sql)
    with sql.reading() as cursor:
        row = cursor.execute(
            f"SELECT seen_at FROM {KNOWN_BROWSERS} WHERE email_sha256 = ? AND browser_sha256 = ?",
            (_email_digest(email), _browser_digest(browser)),
        ).fetchone()
    return row is not None and int(row[0]) > now - KNOWN_SECONDS


def remember_browser(sql: SqlDatabase, email: str, browser: str, now: int) -> None:
    """A sign-in to ``email`` succeeded in ``browser`` now: known for ``KNOWN_SECONDS`` more;
    the account's oldest beyond ``KNOWN_LIMIT``, and every row unused that long, forgotten."""
    ensure_session_table(sql)
    account = _email_digest(email)
    with sql.transaction() as cursor:
        cursor.execute(
            f"INSERT INTO {KNOWN_BROWSERS} (email_sha256, browser_sha256, seen_at)"
            " VALUES (?, ?, ?) ON CONFLICT (email_sha256, browser_sha256)"
            " DO UPDATE SET seen_at = excluded.seen_at",
            (account, _browser_digest(browser), now),
        )
        cursor.execute(
            f"DELETE FROM {KNOWN_BROWSERS} WHERE email_sha256 = ? AND browser_sha256 NOT IN ("
            f"SELECT browser_sha256 FROM {KNOWN_BROWSERS} WHERE email_sha256 = ?"
            " ORDER BY seen_at DESC LIMIT ?)",
            (account, account, KNOWN_LIMIT),
        )
        cursor.execute(f"DELETE FROM {KNOWN_BROWSERS} WHERE seen_at <= ?", (now - KNOWN_SECONDS,))


def find(sql: SqlDatabase, digest: str) -> SessionRow | None:
    """The row stored under ``digest`` (revoked and expired ones included), or None."""
    ensure_session_table(sql)
    with sql.reading() as cursor:
        found = cursor.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} WHERE id_sha256 = ?", (digest,)
        ).fetchone()
    if found is None:
        return None
    email, organization, version, data, created, seen, expires, revoked = found
    try:
        decoded = json.loads(data) if data else {}
    except ValueError:
        decoded = {}
    return SessionRow(
        digest=digest,
        email=str(email) if email is not None else None,
        organization=str(organization) if organization is not None else None,
        org_version=int(version),
        data=decoded if isinstance(decoded, dict) else {},
        created_at=int(created),
        seen_at=int(seen),
        expires_at=int(expires),
        revoked_at=int(revoked) if revoked is not None else None,
    )


def write(
    sql: SqlDatabase,
    *,
    revoke: list[str],
    insert: SessionRow | None,
    update: SessionRow | None,
    delete: str | None,
    now: int,
    notice_of: str | None = None,
) -> None:
    """One transaction: revoke the rows ``revoke`` names, insert a new row, update a live one
    (never a revoked one: a revocation that got there first wins), delete one.

    ``notice_of``: the dead row (revoked or expired) whose "session ended" notice ``insert``
    carries. It is marked as given (``NOTICE_GIVEN``), and ``insert`` is stored only if this
    request marked it: a dead id gives its notice once, however often it is sent again or at
    once."""
    ensure_session_table(sql)
    with sql.transaction() as cursor:
        for digest in revoke:
            cursor.execute(
                f"UPDATE {TABLE} SET revoked_at = ? WHERE id_sha256 = ? AND revoked_at IS NULL",
                (now, digest),
            )
        if notice_of is not None:
            marked = cursor.execute(
                f"UPDATE {TABLE} SET data = ? WHERE id_sha256 = ? AND data <> ?"
                " AND (revoked_at IS NOT NULL OR expires_at <= ?)",
                (_NOTICE_GIVEN_DATA, notice_of, _NOTICE_GIVEN_DATA, now),
            ).rowcount
            if not marked:
                insert = None
        if insert is not None:
            cursor.execute(f"DELETE FROM {TABLE} WHERE expires_at < ?", (now,))
            cursor.execute(
                f"INSERT INTO {TABLE} (id_sha256, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    insert.digest,
                    insert.email,
                    insert.organization,
                    insert.org_version,
                    json.dumps(insert.data),
                    insert.created_at,
                    insert.seen_at,
                    insert.expires_at,
                    None,
                ),
            )
        if update is not None:
            cursor.execute(
                f"UPDATE {TABLE} SET org_version = ?, data = ?, seen_at = ?, expires_at = ?"
                " WHERE id_sha256 = ? AND revoked_at IS NULL",
                (
                    update.org_version,
                    json.dumps(update.data),
                    update.seen_at,
                    update.expires_at,
                    update.digest,
                ),
            )
        if delete is not None:
            cursor.execute(f"DELETE FROM {TABLE} WHERE id_sha256 = ?", (delete,))


def erase(sql: SqlDatabase, key: str) -> None:
    """``key`` taken out of every row's one-shot values, revoked and expired rows included
    (a read, and no write where no row holds it)."""
    ensure_session_table(sql)
    pattern = f"%{json.dumps(key)}%"
    with sql.reading() as cursor:
        rows = cursor.execute(f"SELECT id_sha256 FROM {TABLE} WHERE data LIKE ?", (pattern,))
        digests = [digest for (digest,) in rows.fetchall()]
    if not digests:
        return
    with sql.transaction() as cursor:
        for digest in digests:
            found = cursor.execute(f"SELECT data FROM {TABLE} WHERE id_sha256 = ?", (digest,))
            row = found.fetchone()
            decoded = json.loads(row[0]) if row and row[0] else {}
            if isinstance(decoded, dict) and key in decoded:
                del decoded[key]
                erased = json.dumps(decoded)
                cursor.execute(f"UPDATE {TABLE} SET data = ? WHERE id_sha256 = ?", (erased, digest))


def revoke_person(sql: SqlDatabase, email: str, now: int) -> int:
    """Revoke every session of ``email`` (every club, every device); how many rows that took
    (expired ones not yet deleted included)."""
    ensure_session_table(sql)
    with sql.transaction() as cursor:
        return revoke_person_in(cursor, email, now)


def revoke_person_in(cursor: Cursor, email: str, now: int) -> int:
    """``revoke_person`` inside the caller's transaction (``ensure_session_table`` first);
    the person's known browsers are forgotten too, so a browser that knew an old password
    is counted like any other (``browser_known``)."""
    cursor.execute(f"DELETE FROM {KNOWN_BROWSERS} WHERE email_sha256 = ?", (_email_digest(email),))
    return cursor.execute(
        f"UPDATE {TABLE} SET revoked_at = ? WHERE email = ? AND revoked_at IS NULL",
        (now, email.strip().lower()),
    ).rowcount
