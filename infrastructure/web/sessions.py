"""Browser sessions: one signed cookie (itsdangerous), a CSRF token per session.

The cookie holds a small JSON document signed with HMAC (``URLSafeTimedSerializer``): who is
signed in and to which club, the CSRF token, the chosen language and a one-shot notice. It is
``HttpOnly``, ``SameSite=Lax``, ``Path=/`` and, when ``secure`` is on, ``Secure`` with the
``__Host-`` name prefix (which browsers accept only from HTTPS, without a Domain). A cookie
that does not verify, or is older than the idle limit, is simply ignored: a new, anonymous
session starts. A signed-in session also ends after an absolute limit, and every request
re-checks that the person is still a member of the club (a removed member is out at once).

The signing secret comes from ``COUNTERSIGN_SESSION_SECRET`` or, if that is unset, from a
random secret created once in the database, so every worker and every restart share it.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.http.storage import ensure_tables
from itsdangerous import BadSignature, URLSafeTimedSerializer

IDLE_SECONDS = 8 * 3600
ABSOLUTE_SECONDS = 24 * 3600
SECRET_ENV = "COUNTERSIGN_SESSION_SECRET"  # noqa: S105 - the variable's name, not a secret
SECURE_ENV = "COUNTERSIGN_SECURE_COOKIES"
_SALT = "countersign.web.session.v1"
_MIN_SECRET = 32

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS web_secrets ("
    " name TEXT PRIMARY KEY, secret TEXT NOT NULL, created_at TEXT NOT NULL)",
)


def session_secret(cs: Countersign) -> str:
    """The environment's secret, else the database's (created on first use)."""
    configured = os.environ.get(SECRET_ENV, "").strip()
    if configured:
        if len(configured) < _MIN_SECRET:
            raise ValueError(f"{SECRET_ENV} must have at least {_MIN_SECRET} characters")
        return configured
    ensure_tables(cs.sql, "web_secrets", _SCHEMA)
    with cs.sql.transaction() as cursor:
        cursor.execute(
            "INSERT INTO web_secrets (name, secret, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO NOTHING",
            ("session", secrets.token_urlsafe(48), cs.proposals.clock.now().isoformat()),
        )
        found = cursor.execute(
            "SELECT secret FROM web_secrets WHERE name = ?", ("session",)
        ).fetchone()
    if found is None:
        raise RuntimeError("the session secret could not be stored")
    return str(found[0])


def secure_from_env() -> bool:
    """Secure cookies unless COUNTERSIGN_SECURE_COOKIES says 0/false/no (plain-HTTP dev)."""
    value = os.environ.get(SECURE_ENV, "1").strip().lower()
    return value not in {"0", "false", "no", "off"}


@dataclass
class Session:
    """One browser's session state; ``changed`` says the cookie must be written again."""

    data: dict[str, Any] = field(default_factory=dict)
    changed: bool = False
    had_cookie: bool = False

    @property
    def csrf_token(self) -> str:
        token = self.data.get("csrf")
        if not isinstance(token, str) or len(token) < 32:
            token = secrets.token_urlsafe(32)
            self.data["csrf"] = token
            self.changed = True
        return token

    def csrf_ok(self, submitted: str | None) -> bool:
        expected = self.data.get("csrf")
        if not isinstance(expected, str) or not expected or not submitted:
            return False
        return hmac.compare_digest(expected.encode(), submitted.encode())

    @property
    def email(self) -> str | None:
        value = self.data.get("email")
        return value if isinstance(value, str) else None

    @property
    def organization(self) -> str | None:
        value = self.data.get("org")
        return value if isinstance(value, str) else None

    @property
    def language(self) -> str | None:
        value = self.data.get("lang")
        return value if isinstance(value, str) else None

    def set(self, key: str, value: Any) -> None:
        if self.data.get(key) != value:
            self.data[key] = value
            self.changed = True

    def pop(self, key: str) -> Any:
        if key in self.data:
            self.changed = True
            return self.data.pop(key)
        return None

    def sign_in(self, email: str, organization: str, now: float) -> None:
        """A fresh session (new CSRF token) for a person who just proved who they are."""
        language = self.language
        self.data = {
            "email": email,
            "org": organization,
            "since": int(now),
            "csrf": secrets.token_urlsafe(32),
        }
        if language:
            self.data["lang"] = language
        self.changed = True

    def clear(self) -> None:
        language = self.language
        self.data = {"csrf": secrets.token_urlsafe(32)}
        if language:
            self.data["lang"] = language
        self.changed = True

    def expired(self, now: float) -> bool:
        since = self.data.get("since")
        return isinstance(since, int) and now - since > ABSOLUTE_SECONDS


class SessionCodec:
    """Reads and writes the session cookie."""

    def __init__(self, secret: str, *, secure: bool) -> None:
        self.serializer = URLSafeTimedSerializer(secret, salt=_SALT)
        self.secure = secure
        self.cookie_name = "__Host-countersign" if secure else "countersign_session"

    def load(self, raw: str | None) -> Session:
        if not raw or len(raw) > 4096:
            return Session()
        try:
            data = self.serializer.loads(raw, max_age=IDLE_SECONDS)
        except BadSignature:  # includes SignatureExpired
            return Session()
        if not isinstance(data, dict):
            return Session()
        session = Session(data=data, had_cookie=True)
        if session.expired(time.time()):
            session.clear()
        return session

    def header(self, session: Session) -> str:
        """The Set-Cookie value for this session."""
        value = self.serializer.dumps(session.data)
        parts = [
            f"{self.cookie_name}={value}",
            "Path=/",
            f"Max-Age={IDLE_SECONDS}",
            "HttpOnly",
            "SameSite=Lax",
        ]
        if self.secure:
            parts.append("Secure")
        return "; ".join(parts)
