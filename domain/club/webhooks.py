"""Webhook endpoints a club registers: where its notifications are POSTed.

Only the URL is domain state (it is recorded in the organization's events, for the audit);
the signing secret never is: it lives beside the delivery ledger in the infrastructure.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from countersign.domain.errors import CountersignError

MAX_URL_LENGTH = 2000
MAX_ENDPOINTS = 10
"""The most endpoints one club may hold at once: each notification is POSTed to every one."""


#: Characters RFC 3986 never allows unencoded in a URL (markup and quoting among them).
_NOT_IN_URLS = frozenset('<>"{}|\\^`')


class WebhookUrlError(CountersignError):
    """Raised when a webhook URL is not an http(s) URL countersign may POST to; the message
    says what is wrong in words safe to show anyone who typed it, and ``code`` which rule it
    broke (for pages that say it in another language)."""

    def __init__(self, message: str, code: str = "invalid") -> None:
        super().__init__(message)
        self.code = code


def valid_webhook_url(url: str) -> str:
    """``url`` without surrounding spaces, if it is an absolute http(s) URL with a host and no
    credentials (they would be recorded in the club's events) nor fragment; WebhookUrlError
    otherwise."""
    url = url.strip()
    if not url:
        raise WebhookUrlError("the webhook URL is empty", "empty")
    if len(url) > MAX_URL_LENGTH:
        raise WebhookUrlError(
            f"the webhook URL is longer than {MAX_URL_LENGTH} characters", "too_long"
        )
    # Spaces, control characters (C0, DEL, C1) and invisible formatting characters: a
    # right-to-left override would make the club's list show another address than the one
    # deliveries go to.
    if not url.isprintable() or " " in url:
        raise WebhookUrlError(
            "the webhook URL contains spaces, control or invisible formatting characters",
            "spaces",
        )
    if any(character in _NOT_IN_URLS for character in url):
        raise WebhookUrlError(
            'the webhook URL contains characters a URL may not hold unencoded (<>"{}|\\^`)',
            "characters",
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise WebhookUrlError("the webhook URL is not a valid URL", "invalid") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise WebhookUrlError("the webhook URL must start with https:// or http://", "scheme")
    if not parts.hostname:
        raise WebhookUrlError("the webhook URL has no host", "no_host")
    if parts.username is not None or parts.password is not None:
        raise WebhookUrlError(
            "the webhook URL must not carry a user name or password", "credentials"
        )
    if parts.fragment or url.endswith("#"):
        raise WebhookUrlError("the webhook URL must not have a #fragment", "fragment")
    if port == 0:
        raise WebhookUrlError("the webhook URL's port is not valid", "port")
    return url
