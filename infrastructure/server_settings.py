"""Settings of the HTTP server: whose forwarded headers to believe, and Secure cookies.

``COUNTERSIGN_TRUSTED_PROXIES``: behind a reverse proxy every request comes from the proxy's
address; the proxy names the real client in ``X-Forwarded-For`` and the scheme it was reached
by in ``X-Forwarded-Proto``. Anyone else can send those headers too, so they are believed only
from the addresses listed (comma-separated IP addresses or networks, e.g. ``127.0.0.1,::1``
for a proxy on the same machine, or ``10.0.0.0/8``). Unset or empty, no forwarded header is
believed from anyone, loopback included: ``request.client`` is the peer that connected, which
is what the sign-in throttle counts per address. uvicorn applies the setting
(``proxy_headers`` and ``forwarded_allow_ips``); nothing in the application reads a forwarded
header itself.

``COUNTERSIGN_SECURE_COOKIES``: cookies with ``Secure`` and the ``__Host-`` prefix, plus HSTS.
An explicit value always wins; a caller only chooses the default (``countersign serve``: off
on a loopback host, where a browser on plain ``http://127.0.0.1`` would drop Secure cookies).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any

from countersign.infrastructure.settings import SettingsError

TRUSTED_PROXIES_ENV = "COUNTERSIGN_TRUSTED_PROXIES"
SECURE_ENV = "COUNTERSIGN_SECURE_COOKIES"
SESSION_SECRET_ENV = "COUNTERSIGN_SESSION_SECRET"  # noqa: S105 - the variable's name
_MIN_SESSION_SECRET = 32
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def session_secret_from_env() -> str | None:
    """``COUNTERSIGN_SESSION_SECRET`` (None when unset: the pages then keep one in the
    database); SettingsError when it is too short, so ``serve`` refuses it before it serves
    anything."""
    configured = os.environ.get(SESSION_SECRET_ENV, "").strip()
    if configured and len(configured) < _MIN_SESSION_SECRET:
        raise SettingsError(
            f"{SESSION_SECRET_ENV} must have at least {_MIN_SESSION_SECRET} characters",
            f"{SESSION_SECRET_ENV} doit compter au moins {_MIN_SESSION_SECRET} caractères",
        )
    return configured or None


def trusted_proxies_from_env() -> list[str]:
    """The configured proxy addresses and networks, checked; empty when unset."""
    raw = os.environ.get(TRUSTED_PROXIES_ENV, "")
    entries = [entry.strip() for entry in raw.split(",") if entry.strip()]
    for entry in entries:
        try:
            if "/" in entry:
                ipaddress.ip_network(entry)  # strict, as uvicorn parses it
            else:
                ipaddress.ip_address(entry)
        except ValueError:
            raise SettingsError(
                f"{TRUSTED_PROXIES_ENV} lists IP addresses or networks separated by commas "
                f"(e.g. 127.0.0.1,::1 or 10.0.0.0/8); {entry!r} is neither",
                f"{TRUSTED_PROXIES_ENV} liste des adresses IP ou des réseaux séparés par des "
                f"virgules (par exemple 127.0.0.1,::1 ou 10.0.0.0/8) ; {entry!r} n'est ni l'un "
                "ni l'autre",
            ) from None
    return entries


def uvicorn_proxy_options(trusted: list[str]) -> dict[str, Any]:
    """The keyword arguments for ``uvicorn.run``/``uvicorn.Config``: forwarded headers are
    honoured only from ``trusted`` (and from nobody when it is empty)."""
    if not trusted:
        # No ProxyHeadersMiddleware at all; the explicit empty list also keeps uvicorn from
        # reading its own FORWARDED_ALLOW_IPS variable.
        return {"proxy_headers": False, "forwarded_allow_ips": []}
    return {"proxy_headers": True, "forwarded_allow_ips": list(trusted)}


def secure_from_env(default: bool = True) -> bool:
    """COUNTERSIGN_SECURE_COOKIES when it is set (1/true/yes/on or 0/false/no/off), else
    ``default``. An explicit setting always wins; callers only choose the default."""
    value = os.environ.get(SECURE_ENV, "").strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(
        f"{SECURE_ENV} must be 1 or 0 (true/false, yes/no, on/off), not {value!r}",
        f"{SECURE_ENV} vaut 1 ou 0 (true/false, yes/no, on/off), pas {value!r}",
    )


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


#: The directory several processes' metrics are shared through (prometheus_client's
#: multiprocess mode; ``observability.metrics.MULTIPROCESS_ENV``).
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def metrics_dir_from_env() -> str | None:
    """PROMETHEUS_MULTIPROC_DIR, made if it is missing; SettingsError, before anything is
    served, when it cannot be made or written to. (A directory that did not exist failed
    every count once serving: /metrics answered 500, and every approval calling a provider
    was answered 500 after the provider had moved the money.)"""
    configured = os.environ.get(METRICS_DIR_ENV, "").strip()
    if not configured:
        return None
    try:
        os.makedirs(configured, exist_ok=True)
    except OSError as error:
        raise SettingsError(
            f"{METRICS_DIR_ENV} {configured!r} cannot be made ({error.strerror}): point it at "
            "a directory this service may write to",
            f"{METRICS_DIR_ENV} {configured!r} ne peut pas être créé ({error.strerror}) : "
            "indiquez un dossier où ce service peut écrire",
        ) from None
    if not os.access(configured, os.W_OK | os.X_OK):
        raise SettingsError(
            f"{METRICS_DIR_ENV} {configured!r} is not writable by this service: point it at a "
            "directory it may write to",
            f"{METRICS_DIR_ENV} {configured!r} n'est pas accessible en écriture à ce service : "
            "indiquez un dossier où il peut écrire",
        )
    return configured
