"""Browser sessions: an opaque random id in the cookie, everything else on the server.

The session cookie carries only a random id (32 bytes from ``secrets``, URL-safe base64) and
an HMAC of it (itsdangerous ``Signer``, SHA-256), so a forged or mangled cookie is refused
without touching the database. Nothing in it says who is signed in: no email, no club, no
CSRF token. The database keeps a SHA-256 digest of the id with the person, the club, the
times and the revoked flag (``infrastructure/identity/session_store.py``), so every server
process sees the same sessions and any of them can end one for all.

* **Signing in** (and choosing a club) always starts a new id and revokes the previous one:
  an id planted before sign-in (session fixation) never becomes a signed-in session.
* **Signing out** revokes the id; **sign out everywhere** and a **password change** revoke
  every session of the person; a member **removed** from the club is signed out at their
  next request, and the session stays revoked even if they are added again (the pages look
  for a removal in the club's events since the membership was last confirmed).
* **Timeouts** as before: 8 hours without a request (idle), 24 hours after signing in
  (absolute). The last-seen time is written at most once a minute, so an ordinary page
  request reads one row by its primary key and writes nothing.
* **CSRF**: the token in every form is an HMAC of the session id under a key derived from
  the session secret. It needs no storage (so a signed-out visitor's sign-in form needs no
  row either), changes whenever the id does, and reveals nothing about the id.
* **Signed-out visitors** have an id too (the sign-in form's CSRF token needs one) but no
  row: nothing a visitor does without a password creates a row. The exceptions are the
  notice after signing out, which replaces the signed-in row with one notice row, and the
  "session ended" notice of a dead id someone was signed in to, stored once for it (the
  dead row is marked: its cookie replayed in a loop stored one row a request), never again.
* **The language** chosen with the EN/FR switch lives in a separate cookie holding just
  ``en`` or ``fr``: it is no secret, it must work before anyone signs in (without a row), and
  it should survive signing out.

* **A known browser** (a sign-in succeeded in it) keeps a third cookie: a random id of the
  browser, signed with the time (itsdangerous ``TimestampSigner``), renewed at each sign-in.
  It names nobody; the database says which accounts signed in there
  (``session_store.browser_known``), and the sign-in throttle counts such a browser's
  failures on their own (``throttle.py``).

Cookies are ``HttpOnly``, ``SameSite=Lax``, ``Path=/`` and, when ``secure`` is on, ``Secure``
with the ``__Host-`` name prefix (which browsers accept only from HTTPS, without a Domain).

The signing secret comes from ``COUNTERSIGN_SESSION_SECRET`` or, if that is unset, from a
random secret created once in the database, so every worker and every restart share it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
from typing import Any

from countersign.application.ports import Clock
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity import session_store
from countersign.infrastructure.identity.session_store import KNOWN_SECONDS, SessionRow, id_digest
from countersign.infrastructure.identity.storage import ensure_tables
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.server_settings import SESSION_SECRET_ENV, session_secret_from_env
from itsdangerous import BadSignature, Signer, TimestampSigner

log = logging.getLogger("countersign.web")

IDLE_SECONDS = 8 * 3600
ABSOLUTE_SECONDS = 24 * 3600
#: The last-seen time is written when it is at least this old (idle limit precision).
TOUCH_SECONDS = 60
LANGUAGE_SECONDS = 365 * 24 * 3600
_BROWSER_ID = re.compile(r"[A-Za-z0-9_-]{22}")


def new_browser_id() -> str:
    """A browser's random id (16 bytes from ``secrets``), for its known-browser cookie."""
    return secrets.token_urlsafe(16)


SECRET_ENV = SESSION_SECRET_ENV
_SALT = "countersign.web.session.v2"
_MAX_COOKIE = 256

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS web_secrets ("
    " name TEXT PRIMARY KEY, secret TEXT NOT NULL, created_at TEXT NOT NULL)",
)


def session_secret(cs: Countersign) -> str:
    """The environment's secret, else the database's (created on first use)."""
    configured = session_secret_from_env()
    if configured is not None:
        return configured
    ensure_tables(cs.sql, "web_secrets", _SCHEMA)
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "INSERT INTO web_secrets (name, secret, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO NOTHING",
            ("session", secrets.token_urlsafe(48), cs.clock.now().isoformat()),
        )
        found = cursor.execute(
            "SELECT secret FROM web_secrets WHERE name = ?", ("session",)
        ).fetchone()
    if found is None:
        raise RuntimeError("the session secret could not be stored")
    return str(found[0])


def _new_id() -> str:
    return secrets.token_urlsafe(32)


class Session:
    """One browser's session during one request.

    ``row`` is what the database holds under ``id`` (None: nothing, a signed-out visitor).
    The request's changes are written by :meth:`Sessions.save`; ``issue`` says the browser
    must be sent the (new) id.
    """

    def __init__(
        self, raw_id: str, csrf_key: bytes, now: int, *, presented: bool, row: SessionRow | None
    ) -> None:
        self.id = raw_id
        self.now = now
        self.presented = presented  # the browser sent this id (a fresh one it does not have)
        self.row = row
        self.issue = False
        self.inserting = False  # ``row`` is new: insert it
        self.changed = False  # ``row`` was loaded and changed: update it
        self.ended: list[str] = []  # digests of ids to revoke
        #: The dead row whose "session ended" notice this session's new row carries: it is
        #: marked as given when that row is stored, so that the dead id gives it once.
        self.noticing: str | None = None
        self._csrf_key = csrf_key

    # -- who ----------------------------------------------------------------------------------

    @property
    def email(self) -> str | None:
        return self.row.email if self.row is not None else None

    @property
    def organization(self) -> str | None:
        return self.row.organization if self.row is not None else None

    @property
    def org_version(self) -> int:
        return self.row.org_version if self.row is not None else 0

    @property
    def signed_in(self) -> bool:
        return bool(self.email and self.organization)

    # -- CSRF -----------------------------------------------------------------------------------

    @property
    def csrf_token(self) -> str:
        """This session's form token; handing it out makes sure the browser gets the id."""
        if not self.presented:
            self.issue = True
        return _csrf(self._csrf_key, self.id)

    def csrf_ok(self, submitted: str | None) -> bool:
        if not self.presented or not submitted:
            return False
        return hmac.compare_digest(_csrf(self._csrf_key, self.id).encode(), submitted.encode())

    # -- one-shot values (notices, the pending club choice) -------------------------------------

    @property
    def data(self) -> dict[str, Any]:
        """Read only; a signed-out visitor without a row has none (and keeps none)."""
        return self.row.data if self.row is not None else {}

    def set(self, key: str, value: Any) -> None:
        if self.row is not None and self.row.data.get(key) != value:
            self.row.data[key] = value
            self._touched()

    def pop(self, key: str) -> Any:
        if self.row is None or key not in self.row.data:
            return None
        self._touched()
        return self.row.data.pop(key)

    def _touched(self) -> None:
        if not self.inserting:
            self.changed = True

    # -- starting and ending ------------------------------------------------------------------

    def sign_in(self, email: str, organization: str, org_version: int) -> None:
        """A new id for a person who just proved who they are; the old id is revoked."""
        self._start(email, organization, org_version, {})

    def choosing(self, email: str, choice: dict[str, Any]) -> None:
        """The password was right and the person belongs to several clubs: a new id that
        remembers the choice to make (not signed in yet)."""
        self._start(email, None, 0, {"choose": choice})

    def sign_out(self) -> None:
        """Revoke this id. A session someone was signed in to (or choosing a club in) is
        replaced by an empty one that can carry the 'signed out' notice; a visitor who had no
        row, or only a notice's, gets none (signing out again and again stored one row each)."""
        had_someone = self.row is not None and self.row.email is not None
        self._rotate()
        if had_someone:
            self._start_row(None, None, 0, {})

    def end(self) -> None:
        """Revoke this id at once (the member left the club); a signed-out visitor from now."""
        self._rotate()
        self.note_ended()

    def note_ended(self) -> None:
        """The browser's session ended without it (signed out everywhere, a new password,
        too long unused, no longer a member): a fresh signed-out row carries "Your session
        ended" to the sign-in page, where it is read once."""
        self._start_row(None, None, 0, {"flash": {"kind": "session_ended", "proposal": None}})

    def confirm_membership(self, org_version: int) -> None:
        """The person is still a member at this version of their club."""
        if self.row is not None and self.row.org_version != org_version:
            self.row.org_version = org_version
            self._touched()

    def _start(
        self, email: str, organization: str | None, org_version: int, data: dict[str, Any]
    ) -> None:
        self._rotate()
        self._start_row(email, organization, org_version, data)

    def _start_row(
        self, email: str | None, organization: str | None, org_version: int, data: dict[str, Any]
    ) -> None:
        self.row = SessionRow(
            digest=id_digest(self.id),
            email=email,
            organization=organization,
            org_version=org_version,
            data=data,
            created_at=self.now,
            seen_at=self.now,
            expires_at=self.now + min(IDLE_SECONDS, ABSOLUTE_SECONDS),
        )
        self.inserting = True

    def _rotate(self) -> None:
        if self.row is not None and not self.inserting:
            self.ended.append(self.row.digest)
        self.id = _new_id()
        self.presented = False
        self.issue = True
        self.row = None
        self.inserting = False
        self.changed = False
        self.noticing = None


def _csrf(key: bytes, raw_id: str) -> str:
    digest = hmac.new(key, b"csrf\0" + raw_id.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class Sessions:
    """Reads sessions from requests and writes their changes and cookies back."""

    def __init__(self, sql: SqlDatabase, clock: Clock, secret: str, *, secure: bool) -> None:
        self.sql = sql
        self.clock = clock
        self.secure = secure
        self.signer = Signer(secret, salt=_SALT, digest_method=hashlib.sha256)
        self.csrf_key = hmac.new(
            secret.encode(), b"countersign web csrf key", hashlib.sha256
        ).digest()
        self.cookie_name = "__Host-countersign" if secure else "countersign_session"
        self.language_cookie = "__Host-countersign-lang" if secure else "countersign_lang"
        self.device_cookie = "__Host-countersign-device" if secure else "countersign_device"
        self.device_signer = TimestampSigner(
            secret, salt="countersign.web.device.v1", digest_method=hashlib.sha256
        )
        session_store.ensure_session_table(sql)

    def now(self) -> int:
        return int(self.clock.now().timestamp())

    def anonymous(self) -> Session:
        """A fresh signed-out session (nothing stored)."""
        return Session(_new_id(), self.csrf_key, self.now(), presented=False, row=None)

    def load(self, cookie: str | None) -> Session:
        """The session the cookie names. Anything else (no cookie, a bad signature, a revoked
        or expired id) is a signed-out visitor with a new id."""
        raw_id = self._unsign(cookie)
        if raw_id is None:
            return self.anonymous()
        now = self.now()
        row = session_store.find(self.sql, id_digest(raw_id))
        if row is None:  # a signed-out visitor's id: nothing is stored for it
            return Session(raw_id, self.csrf_key, now, presented=True, row=None)
        if row.revoked_at is not None or row.expires_at <= now:
            if row.revoked_at is not None:
                log.info("a revoked session id was presented; treated as signed out")
            fresh = self.anonymous()
            if row.email is not None and not row.data.get(session_store.NOTICE_GIVEN):
                # The sign-in page says why, once: a dead cookie replayed in a loop stored
                # a notice row for each request (tests/attacks/test_session_rows.py). A row
                # nobody was in (a notice's own, signed out of) ended no one's session: its
                # notice would be a new row, its cookie signed out of and replayed in turn.
                fresh.note_ended()
                fresh.noticing = row.digest
            fresh.issue = True  # replace the dead id in the browser
            return fresh
        session = Session(raw_id, self.csrf_key, now, presented=True, row=row)
        if now - row.seen_at >= TOUCH_SECONDS:
            row.seen_at = now
            row.expires_at = min(now + IDLE_SECONDS, row.created_at + ABSOLUTE_SECONDS)
            session.changed = True
        return session

    def save(self, session: Session) -> None:
        """Write what the request changed, in one transaction (nothing if nothing did)."""
        row = session.row
        keep = row is not None and bool(row.email or row.data)
        insert = row if session.inserting and keep else None
        update = row if session.changed and keep else None
        delete = row.digest if row is not None and session.changed and not keep else None
        if session.ended or insert or update or delete:
            session_store.write(
                self.sql,
                revoke=session.ended,
                insert=insert,
                update=update,
                delete=delete,
                now=session.now,
                notice_of=session.noticing if insert is not None else None,
            )

    def revoke_person(self, email: str) -> int:
        """End every session of ``email``, on every device and in every club."""
        return session_store.revoke_person(self.sql, email, self.now())

    # -- cookies --------------------------------------------------------------------------------

    def header(self, session: Session) -> str | None:
        """The Set-Cookie value for this session's id, if the browser must be sent it."""
        if not session.issue:
            return None
        value = self.signer.sign(session.id).decode()
        return self._cookie(self.cookie_name, value, ABSOLUTE_SECONDS)

    def browser_header(self, browser: str) -> str:
        """The Set-Cookie value of this browser's random id (``new_browser_id``), signed with
        the time: a sign-in succeeded here, and the sign-in throttle counts this browser on
        its own for that account (``session_store.browser_known``). Sent again at each
        sign-in, so it lasts ``KNOWN_SECONDS`` from the last."""
        signed = self.device_signer.sign(browser).decode("ascii")
        return self._cookie(self.device_cookie, signed, KNOWN_SECONDS)

    def browser_of(self, cookies: dict[str, str]) -> str | None:
        """This browser's random id from its signed cookie; None for none, an old or a forged
        one."""
        cookie = cookies.get(self.device_cookie)
        if not cookie or len(cookie) > _MAX_COOKIE:
            return None
        try:
            browser = self.device_signer.unsign(cookie, max_age=KNOWN_SECONDS).decode("ascii")
        except (BadSignature, UnicodeDecodeError):
            return None
        return browser if _BROWSER_ID.fullmatch(browser) else None

    def language(self, cookies: dict[str, str]) -> str | None:
        return cookies.get(self.language_cookie)

    def language_header(self, language: str) -> str:
        return self._cookie(self.language_cookie, language, LANGUAGE_SECONDS)

    def _cookie(self, name: str, value: str, max_age: int) -> str:
        parts = [f"{name}={value}", "Path=/", f"Max-Age={max_age}", "HttpOnly", "SameSite=Lax"]
        if self.secure:
            parts.append("Secure")
        return "; ".join(parts)

    def _unsign(self, cookie: str | None) -> str | None:
        if not cookie or len(cookie) > _MAX_COOKIE:
            return None
        try:
            raw_id = self.signer.unsign(cookie).decode("ascii")
        except (BadSignature, UnicodeDecodeError):
            return None
        return raw_id if 32 <= len(raw_id) <= 64 else None
