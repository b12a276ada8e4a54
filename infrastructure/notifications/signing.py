"""Standard Webhooks signatures: what lets a receiver check a request came from us, unaltered.

Headers: ``webhook-id`` (the notification's stable event id, the same on every retry),
``webhook-timestamp`` (seconds since the epoch, of this attempt) and ``webhook-signature``,
``v1,`` then the base64 HMAC-SHA256, keyed by the secret's base64-decoded bytes, of
``"{id}.{timestamp}.{body}"``. Secrets read ``whsec_`` and base64 (24 random bytes).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format's public prefix, not a secret


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }
