"""The two ways out: an HTTP POST to a webhook endpoint, and an e-mail over SMTP.

Each call is bounded by a timeout and never raises: it answers how the attempt went (a status
code, or the class of the error), which is all the ledger records. Redirects are not followed:
a webhook endpoint answers itself or the attempt failed.
"""

from __future__ import annotations

import http.client
import smtplib
import time
from datetime import datetime
from email.message import EmailMessage
from urllib.parse import urlsplit

from countersign.infrastructure.notifications.ledger import Attempt

USER_AGENT = "countersign-webhooks/1"
#: The most of a receiver's answer that is read (it is not kept: only its status matters).
_MAX_ANSWER = 64 * 1024


def post_webhook(
    url: str, body: bytes, headers: dict[str, str], timeout: float, started_at: datetime
) -> Attempt:
    """POST ``body`` to ``url``; a 2xx answer is a delivery."""
    begun = time.monotonic()
    try:
        parts = urlsplit(url)
        connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_class(parts.hostname or "", parts.port, timeout=timeout)
        try:
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request(
                "POST",
                path,
                body=body,
                headers={
                    **headers,
                    "content-type": "application/json",
                    "user-agent": USER_AGENT,
                },
            )
            response = connection.getresponse()
            response.read(_MAX_ANSWER)
            status = response.status
        finally:
            connection.close()
    except Exception as error:
        return Attempt(started_at, _elapsed(begun), error_class=type(error).__name__)
    return Attempt(started_at, _elapsed(begun), status_code=status)


def send_email(
    message: EmailMessage, host: str, port: int, timeout: float, started_at: datetime
) -> Attempt:
    """Hand the message to the SMTP relay; accepted is delivered (status 250)."""
    begun = time.monotonic()
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            refused = smtp.send_message(message)
    except smtplib.SMTPResponseException as error:
        return Attempt(
            started_at,
            _elapsed(begun),
            status_code=error.smtp_code,
            error_class=type(error).__name__,
        )
    except Exception as error:
        return Attempt(started_at, _elapsed(begun), error_class=type(error).__name__)
    if refused:
        return Attempt(started_at, _elapsed(begun), error_class="SMTPRecipientsRefused")
    return Attempt(started_at, _elapsed(begun), status_code=250)


def _elapsed(begun: float) -> int:
    return round((time.monotonic() - begun) * 1000)
