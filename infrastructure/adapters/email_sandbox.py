"""An e-mail delivery sandbox with the semantics of a real e-mail delivery service.

Deliveries are keyed by idempotency key: the same key with the same message (subject, body and
recipients) returns the stored response (and counts the request); the same key with another
message is an error. Deliveries can be looked up by key. State lives in the configured
database, so a reconciler in another process sees what an approver's request did.

``deliver`` and ``find_delivery`` are the service's own API; ``perform`` and ``lookup`` adapt
it to the EffectProvider port (application/ports.py), under which bootstrap registers it as
``"email"``.

Like a mail service's simulator, addresses on the reserved test domain ``delivery.test``
trigger behaviours when they are among a delivery's recipients (every other address is
delivered to):

============================  ==========================================================
recipient                     behaviour of a delivery request
============================  ==========================================================
lost-response@delivery.test   delivered, but the response is lost (the caller sees a
                              timeout)
suppressed@delivery.test      refused: the address is on the suppression list, and
                              nothing is sent to anyone
outage@delivery.test          service outage: the first request under a key gets a 503
                              before anything is sent; the service has recovered for
                              later requests
============================  ==========================================================

A delivery without recipients, or with an address that is not one, is refused as well.

Sequences of faults (a 503, then a lost response, then a slow answer...) are scripted per key
through ``faults`` (sandbox_faults.py); a declined script step fails with ``delivery_declined``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from countersign.application.ports import (
    EffectResponseLostError,
    IdempotencyConflictError,
    ProviderUnavailableError,
)
from countersign.domain.ports import EffectResponse
from countersign.infrastructure.adapters.sandbox import SandboxProvider
from countersign.infrastructure.persistence.sql import Cursor

TEST_DOMAIN = "delivery.test"
LOST_RESPONSE = f"lost-response@{TEST_DOMAIN}"
SUPPRESSED = f"suppressed@{TEST_DOMAIN}"
OUTAGE = f"outage@{TEST_DOMAIN}"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sandbox_deliveries ("
    " idempotency_key TEXT PRIMARY KEY, delivery_id TEXT NOT NULL, subject TEXT NOT NULL,"
    " body TEXT NOT NULL, recipients TEXT NOT NULL, status TEXT NOT NULL, failure_code TEXT,"
    " metadata TEXT NOT NULL, requests INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sandbox_delivery_outages (idempotency_key TEXT PRIMARY KEY)",
)
_COLUMNS = "idempotency_key, delivery_id, subject, body, recipients, status, failure_code, metadata"


@dataclass(frozen=True)
class Message:
    """One message to deliver: the same subject and body to every recipient."""

    subject: str
    body: str
    recipients: tuple[str, ...]


@dataclass(frozen=True)
class ProviderDelivery:
    """What the e-mail service holds for one idempotency key."""

    idempotency_key: str
    delivery_id: str
    message: Message
    status: str  # "succeeded" | "failed"
    failure_code: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


class DeliveryResponseLostError(EffectResponseLostError):
    """Raised when a delivery's outcome is unknown: a timeout, a lost connection or a 5xx."""


class DeliveryUnavailableError(DeliveryResponseLostError, ProviderUnavailableError):
    """Raised when the service refused before sending anything (an outage): nothing was sent,
    and the same request may be sent again under the same key."""


class SandboxEmailProvider(SandboxProvider[ProviderDelivery]):
    """An e-mail delivery service, simulated in the application's database; as an
    EffectProvider it performs deliveries of one message to a list of recipients."""

    name = "email"
    schema = _SCHEMA
    table = "sandbox_deliveries"
    outages_table = "sandbox_delivery_outages"
    unavailable = DeliveryUnavailableError
    lost = DeliveryResponseLostError
    unavailable_message = "503 Service Unavailable: nothing was sent"

    def deliver(
        self, *, idempotency_key: str, message: Message, metadata: dict[str, str]
    ) -> ProviderDelivery:
        return self._request(
            idempotency_key,
            lambda declined: self._deliver_once(idempotency_key, message, metadata, declined),
        )

    def _deliver_once(
        self, key: str, message: Message, metadata: dict[str, str], declined: bool
    ) -> tuple[ProviderDelivery | None, bool]:
        """One transaction (``Once``): the delivery held, and whether its answer is lost."""
        lost = LOST_RESPONSE in message.recipients
        with self.db.transaction() as cursor:
            if OUTAGE in message.recipients and self._first_outage(cursor, key):
                return None, False
            stored = _select(cursor, key, for_update=self.db.is_postgres)
            if stored is None:
                return _apply(cursor, key, message, metadata, declined), lost
            if stored.message != message:
                raise IdempotencyConflictError("idempotency key reused with another message")
            self._count_request(cursor, key)
            return stored, lost

    def find_delivery(self, idempotency_key: str) -> ProviderDelivery | None:
        with self.db.transaction() as cursor:
            return _select(cursor, idempotency_key, for_update=False)

    # -- the EffectProvider port ----------------------------------------------------------------

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        delivery = self.deliver(
            idempotency_key=key,
            message=Message(
                subject=str(request["subject"]),
                body=str(request["body"]),
                recipients=tuple(str(r) for r in request["recipients"]),
            ),
            metadata={str(k): str(v) for k, v in request.get("metadata", {}).items()},
        )
        return _response(delivery)

    def lookup(self, key: str) -> EffectResponse | None:
        delivery = self.find_delivery(key)
        return None if delivery is None else _response(delivery)

    def held(self) -> list[dict[str, Any]]:
        """What the sandbox holds under each idempotency key, with the number of requests it
        got and the request's metadata: the view every sandbox provider gives its tests."""
        return self.deliveries()

    def deliveries(self) -> list[dict[str, Any]]:
        """What the sandbox holds, per idempotency key, with the number of requests it got."""
        with self.db.transaction() as cursor:
            rows = cursor.execute(
                "SELECT idempotency_key, delivery_id, requests, status, failure_code, subject,"
                " recipients, metadata FROM sandbox_deliveries ORDER BY idempotency_key"
            ).fetchall()
        return [
            {
                "idempotency_key": key,
                "delivery_id": delivery_id,
                "requests": requests,
                "status": status,
                "failure_code": failure_code,
                "subject": subject,
                "recipients": json.loads(recipients),
                "metadata": json.loads(metadata),
            }
            for key, delivery_id, requests, status, failure_code, subject, recipients, metadata in (
                rows
            )
        ]


def _response(delivery: ProviderDelivery) -> EffectResponse:
    return EffectResponse(
        idempotency_key=delivery.idempotency_key,
        status="succeeded" if delivery.status == "succeeded" else "refused",
        reference=delivery.delivery_id,
        reason=delivery.failure_code,
        details={
            "recipients": len(delivery.message.recipients),
            "metadata": dict(delivery.metadata),
        },
    )


def _select(cursor: Cursor, key: str, *, for_update: bool) -> ProviderDelivery | None:
    row = cursor.execute(
        f"SELECT {_COLUMNS} FROM sandbox_deliveries WHERE idempotency_key = ?"
        + (" FOR UPDATE" if for_update else ""),
        (key,),
    ).fetchone()
    if row is None:
        return None
    return ProviderDelivery(
        idempotency_key=row[0],
        delivery_id=row[1],
        message=Message(subject=row[2], body=row[3], recipients=tuple(json.loads(row[4]))),
        status=row[5],
        failure_code=row[6],
        metadata=json.loads(row[7]),
    )


def _refusal(recipients: Sequence[str]) -> str | None:
    """Why the service refuses to send to these recipients, if it does."""
    if not recipients:
        return "no_recipients"
    if any(not _is_address(address) for address in recipients):
        return "invalid_recipient"
    if SUPPRESSED in recipients:
        return "recipient_suppressed"
    return None


def _is_address(address: str) -> bool:
    local, at, domain = address.rpartition("@")
    return bool(at and local and "." in domain) and not any(c.isspace() for c in address)


def _apply(
    cursor: Cursor, key: str, message: Message, metadata: dict[str, str], declined: bool
) -> ProviderDelivery:
    failure = "delivery_declined" if declined else _refusal(message.recipients)
    delivery = ProviderDelivery(
        idempotency_key=key,
        delivery_id=f"msg_{uuid4().hex[:20]}",
        message=message,
        status="failed" if failure else "succeeded",
        failure_code=failure,
        metadata=dict(metadata),
    )
    # A racing request with the same key loses here on the primary key and rolls back.
    cursor.execute(
        f"INSERT INTO sandbox_deliveries ({_COLUMNS}, requests) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
        (
            key,
            delivery.delivery_id,
            message.subject,
            message.body,
            json.dumps(list(message.recipients)),
            delivery.status,
            failure,
            json.dumps(metadata, sort_keys=True),
        ),
    )
    return delivery
