"""The two ways out: an HTTP POST to a webhook endpoint, and an e-mail over SMTP.

Each call is bounded by a timeout and never raises: it answers how the attempt went (a status
code, or one of a few fixed codes such as ``CouldNotConnect``), which is all the ledger
records. A webhook attempt has one deadline for connecting, sending and reading together, so
a receiver that trickles its answer cannot hold a sender's thread past it. Redirects are not
followed: a webhook endpoint answers itself or the attempt failed.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from email.message import EmailMessage
from urllib.parse import urlsplit

from countersign.infrastructure.notifications.destinations import (
    Address,
    AddressNotAllowedError,
    Network,
    UnresolvableHostError,
    checked_addresses,
)
from countersign.infrastructure.notifications.ledger import Attempt

log = logging.getLogger("countersign.notify")

USER_AGENT = "countersign-webhooks/1"
#: The most of a receiver's answer that is read (it is not kept: only its status matters).
_MAX_ANSWER = 64 * 1024


#: What the ledger records when no answer came. Never an exception's class name or anything
#: else that would map the network behind the endpoint: the club reads it.
COULD_NOT_CONNECT = "CouldNotConnect"
ADDRESS_NOT_ALLOWED = "AddressNotAllowed"
#: The SMTP relay answered and took none of the addresses (or not all).
RECIPIENTS_REFUSED = "SMTPRecipientsRefused"


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to the address that was checked, whatever the name resolves to
    now, keeping the name for the Host header, TLS's SNI and certificate check; every step
    bounded by one deadline."""

    def __init__(
        self,
        host: str,
        port: int,
        address: Address,
        deadline: float,
        context: ssl.SSLContext | None,
    ) -> None:
        super().__init__(host, port)
        self._address = address
        self._deadline = deadline
        self._context = context
        self._aborted = threading.Event()

    def connect(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0 or self._aborted.is_set():
            raise TimeoutError
        sock = socket.create_connection((str(self._address), self.port), remaining)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        if self._context is not None:
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        if self._aborted.is_set():
            self.abort()

    def abort(self) -> None:
        """Past the deadline: end whatever is blocking on the socket, from another thread."""
        self._aborted.set()
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _resolved_by(deadline: float, host: str, port: int, allowed: Sequence[Network]) -> Address:
    """The checked address of ``host``, resolved within the attempt's deadline (the resolver
    cannot be interrupted: a lookup still running then is left to finish on its own thread).
    UnresolvableHostError once the deadline passes."""
    found: list[Address] = []
    failed: list[BaseException] = []

    def resolving() -> None:
        try:
            found.append(checked_addresses(host, port, allowed)[0])
        except BaseException as error:  # handed to the attempt's thread below
            failed.append(error)

    lookup = threading.Thread(target=resolving, name="countersign-resolve", daemon=True)
    lookup.start()
    lookup.join(max(deadline - time.monotonic(), 0))
    if failed:
        raise failed[0]
    if not found:
        raise UnresolvableHostError(host)
    return found[0]


def post_webhook(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    started_at: datetime,
    allowed: Sequence[Network] = (),
) -> Attempt:
    """POST ``body`` to ``url``; a 2xx answer is a delivery. The host is resolved once and
    checked (destinations.py); the request goes to the checked address. Connecting, sending
    and reading the answer share one deadline, ``timeout`` seconds from now."""
    begun = time.monotonic()
    deadline = begun + timeout
    parts = urlsplit(url)
    https = parts.scheme == "https"
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if https else 80)
        address = _resolved_by(deadline, host, port, allowed)
    except AddressNotAllowedError:
        # The host only: a URL's path or query may hold the receiver's own secret.
        log.warning("webhook to %s refused: it resolves to an internal address", host)
        return Attempt(started_at, _elapsed(begun), error_class=ADDRESS_NOT_ALLOWED)
    except (UnresolvableHostError, ValueError):
        log.info("webhook to %s: the name does not resolve", host)
        return Attempt(started_at, _elapsed(begun), error_class=COULD_NOT_CONNECT)
    context = ssl.create_default_context() if https else None
    connection = _PinnedConnection(host, port, address, deadline, context)
    watchdog = threading.Timer(max(deadline - time.monotonic(), 0), connection.abort)
    watchdog.daemon = True
    watchdog.start()
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request(
            "POST",
            path,
            body=body,
            headers={
                **headers,
                "host": parts.netloc,
                "content-type": "application/json",
                "user-agent": USER_AGENT,
            },
        )
        response = connection.getresponse()
        response.read(_MAX_ANSWER)
        status = response.status
    except Exception as error:
        # The operator's log may say more; the ledger (which the club reads) does not.
        log.info("webhook to %s got no answer (%s)", host, type(error).__name__)
        return Attempt(started_at, _elapsed(begun), error_class=COULD_NOT_CONNECT)
    finally:
        watchdog.cancel()
        connection.close()
    if time.monotonic() > deadline:  # the answer came, but only as the deadline cut it off
        return Attempt(started_at, _elapsed(begun), error_class=COULD_NOT_CONNECT)
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
    except smtplib.SMTPRecipientsRefused:  # the relay answered, and took no address
        return Attempt(started_at, _elapsed(begun), error_class=RECIPIENTS_REFUSED)
    except Exception as error:
        log.info("the SMTP relay got no message (%s)", type(error).__name__)
        return Attempt(started_at, _elapsed(begun), error_class=COULD_NOT_CONNECT)
    if refused:
        return Attempt(started_at, _elapsed(begun), error_class=RECIPIENTS_REFUSED)
    return Attempt(started_at, _elapsed(begun), status_code=250)


def _elapsed(begun: float) -> int:
    return round((time.monotonic() - begun) * 1000)
