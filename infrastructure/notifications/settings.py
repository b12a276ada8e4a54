"""The sender's settings, from the environment (README, "Configuration")."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from countersign.infrastructure.notifications.destinations import (
    ENVIRONMENT as ALLOWED_NETWORKS,
)
from countersign.infrastructure.notifications.destinations import (
    Network,
    NotANetworkError,
    parse_networks,
)
from countersign.infrastructure.settings import SettingsError

DEFAULT_PUBLIC_URL = "http://localhost:8000"


@dataclass(frozen=True)
class NotifySettings:
    """Where links point, how e-mail leaves, and how hard the sender tries."""

    public_url: str = DEFAULT_PUBLIC_URL
    """COUNTERSIGN_PUBLIC_URL: the site's address, for the review links."""
    smtp_host: str | None = None
    """COUNTERSIGN_SMTP_HOST: the relay e-mail is handed to; unset, no e-mail is sent."""
    smtp_port: int = 25
    smtp_from: str = "countersign@localhost"
    max_attempts: int = 8
    """COUNTERSIGN_NOTIFY_MAX_ATTEMPTS: tries before a delivery becomes a dead letter."""
    first_retry_seconds: float = 30.0
    """COUNTERSIGN_NOTIFY_FIRST_RETRY: the first wait; each next one doubles (plus jitter)."""
    max_retry_seconds: float = 6 * 3600.0
    timeout_seconds: float = 10.0
    """COUNTERSIGN_NOTIFY_TIMEOUT: the most one attempt may take, all told (connecting,
    sending and reading the answer)."""
    workers: int = 16
    """COUNTERSIGN_NOTIFY_WORKERS: how many deliveries are attempted at once, all endpoints
    together."""
    per_endpoint: int = 2
    """COUNTERSIGN_NOTIFY_PER_ENDPOINT: how many deliveries to one webhook endpoint are
    attempted at once."""
    per_club: int = 4
    """COUNTERSIGN_NOTIFY_PER_CLUB: how many webhook deliveries of one club are attempted at
    once. Clubs whose receivers are all slow hold ``workers // per_club`` of them before a
    healthy club's delivery waits for a slot (an attempt's deadline at most): an operator
    with many clubs raises ``workers``."""
    allowed_networks: tuple[Network, ...] = field(
        default_factory=lambda: allowed_networks_from_env()
    )
    """COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS (read when the settings are made, unless given):
    internal networks webhooks may be posted to anyway; none by default, only public
    addresses."""

    @property
    def lease_seconds(self) -> float:
        """How long a claimed delivery is left to its sender before another may attempt it."""
        return self.timeout_seconds * 3 + 30

    @property
    def email_enabled(self) -> bool:
        return bool(self.smtp_host)

    def review_url(self, proposal_id: str) -> str:
        """The review page of a proposal (never an approve link: approving is a POST there)."""
        return f"{self.public_url.rstrip('/')}/proposals/{proposal_id}"

    @classmethod
    def from_env(cls) -> NotifySettings:
        env = os.environ
        public_url = env.get("COUNTERSIGN_PUBLIC_URL", "").strip() or DEFAULT_PUBLIC_URL
        if not public_url.startswith(("http://", "https://")):
            raise SettingsError(
                f"COUNTERSIGN_PUBLIC_URL must start with https:// or http://, not {public_url!r}",
                "COUNTERSIGN_PUBLIC_URL doit commencer par https:// ou http://, "
                f"pas {public_url!r}",
            )
        workers = _number(env, "COUNTERSIGN_NOTIFY_WORKERS", 16)
        per_club = _number(env, "COUNTERSIGN_NOTIFY_PER_CLUB", 4)
        per_endpoint = _number(env, "COUNTERSIGN_NOTIFY_PER_ENDPOINT", 2)
        if not per_endpoint <= per_club <= workers:
            low, high = (
                ("PER_ENDPOINT", "PER_CLUB") if per_endpoint > per_club else ("PER_CLUB", "WORKERS")
            )
            raise SettingsError(
                f"COUNTERSIGN_NOTIFY_{low} is more than COUNTERSIGN_NOTIFY_{high}: lower the "
                f"first or raise the second (each bound is at most the next: "
                f"COUNTERSIGN_NOTIFY_PER_ENDPOINT <= COUNTERSIGN_NOTIFY_PER_CLUB <= "
                f"COUNTERSIGN_NOTIFY_WORKERS, not {per_endpoint}, {per_club}, {workers})",
                f"COUNTERSIGN_NOTIFY_{low} dépasse COUNTERSIGN_NOTIFY_{high} : baissez le "
                "premier ou augmentez le second (chaque borne est au plus la suivante : "
                "COUNTERSIGN_NOTIFY_PER_ENDPOINT <= COUNTERSIGN_NOTIFY_PER_CLUB <= "
                f"COUNTERSIGN_NOTIFY_WORKERS, pas {per_endpoint}, {per_club}, {workers})",
            )
        return cls(
            public_url=public_url,
            smtp_host=env.get("COUNTERSIGN_SMTP_HOST", "").strip() or None,
            smtp_port=_number(env, "COUNTERSIGN_SMTP_PORT", 25),
            smtp_from=env.get("COUNTERSIGN_SMTP_FROM", "").strip() or "countersign@localhost",
            max_attempts=_number(env, "COUNTERSIGN_NOTIFY_MAX_ATTEMPTS", 8),
            first_retry_seconds=_number(env, "COUNTERSIGN_NOTIFY_FIRST_RETRY", 30),
            timeout_seconds=_number(env, "COUNTERSIGN_NOTIFY_TIMEOUT", 10),
            workers=workers,
            per_endpoint=per_endpoint,
            per_club=per_club,
            allowed_networks=allowed_networks_from_env(),
        )


def allowed_networks_from_env() -> tuple[Network, ...]:
    """COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS, parsed; SettingsError naming a bad entry."""
    try:
        return parse_networks(os.environ.get(ALLOWED_NETWORKS, ""))
    except NotANetworkError as error:
        raise SettingsError(
            f"{ALLOWED_NETWORKS}: {error}",
            f"{ALLOWED_NETWORKS} : {error.entry!r} n'est pas un réseau (tel que 127.0.0.0/8)",
        ) from None


def _number(env: os._Environ[str], name: str, default: int) -> int:
    value = env.get(name, "").strip() or str(default)
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:
        raise SettingsError(
            f"{name} must be a positive whole number, not {value!r}",
            f"{name} doit être un nombre entier positif, pas {value!r}",
        )
    return int(value)
