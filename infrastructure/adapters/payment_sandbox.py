"""A payment-provider sandbox with the semantics of a real card provider.

Refunds are keyed by idempotency key: the same key with the same parameters returns the stored
response (and counts the request); the same key with other parameters is an error. Refunds can
be looked up by key. Each charge has a refundable balance. State lives in the configured
database, so a reconciler in another process sees what an approver's request did.

``refund`` and ``find_refund`` are the provider's own API; ``perform`` and ``lookup`` adapt
it to the EffectProvider port (application/ports.py), under which bootstrap registers it as
``"payments"``.

Like a card sandbox, test cards trigger behaviours:

====================  ================================================================
card                  behaviour of a refund request
====================  ================================================================
4242 4242 4242 4242   refunded
4000 0000 0000 0259   refunded, but the response is lost (the caller sees a timeout)
4000 0000 0000 0002   declined
4000 0000 0000 0119   provider outage: the first request under a key gets a 503 before
                      anything is applied; the provider has recovered for later requests
====================  ================================================================

Sequences of faults (a 503, then a lost response, then a slow answer...) are scripted per key
through ``faults`` (sandbox_faults.py); a declined script step fails with ``refund_declined``.

On PostgreSQL a refund request is one call of the sandbox's own function (``sandbox_refund``,
made with its tables): one round trip, a transaction of its own. On SQLite the same steps are
statements in one transaction.

Durability. A refund's commit does not wait for the disk (PostgreSQL's ``synchronous_commit``
off, SQLite's ``synchronous=NORMAL``, for that transaction alone), unlike the event store's
commits. Nothing countersign records can outlive it: the sandbox writes the same database, so
its refund is in the write-ahead log before the approver's next commit (the outcome, or
``Reconciling``), which waits for the disk and so makes everything before it in the log durable
too. A crash of the machine before that commit loses the refund and its answer together, with
the charge's balance; the claim stays, and the reconciler, finding nothing under the key,
replays the same request under the same key: one refund, as when a real provider never got a
request. A process killed at any point loses nothing (the database has the commit). A real
provider's durability costs an approver nothing but the call; this keeps the simulated one from
costing a disk flush of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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

CARD_OK = "4242424242424242"
CARD_LOST_RESPONSE = "4000000000000259"
CARD_DECLINED = "4000000000000002"
CARD_OUTAGE = "4000000000000119"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sandbox_charges ("
    " charge_id TEXT PRIMARY KEY, card_number TEXT NOT NULL,"
    " amount_cents BIGINT NOT NULL, refunded_cents BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS sandbox_refunds ("
    " idempotency_key TEXT PRIMARY KEY, refund_id TEXT NOT NULL, charge_id TEXT NOT NULL,"
    " amount_cents BIGINT NOT NULL, status TEXT NOT NULL, failure_code TEXT,"
    " metadata TEXT NOT NULL, requests INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sandbox_outages (idempotency_key TEXT PRIMARY KEY)",
)

# PostgreSQL: a refund request is one call of this function, in one round trip. It does what
# ``_refund_once`` does on SQLite, statement for statement: the outage card's first request,
# then the key's held refund (locked) or a new one applied to the charge's balance. It answers
# 'outage' (nothing applied), 'conflict' (the key holds other parameters, nothing written) or
# 'held', with the refund the key now holds and whether its answer is lost on the way back.
_REFUND_FUNCTION = f"""
CREATE OR REPLACE FUNCTION sandbox_refund(
    p_key text, p_charge_id text, p_amount bigint, p_metadata text, p_declined boolean,
    p_refund_id text)
RETURNS TABLE (r_answer text, r_refund_id text, r_charge_id text, r_amount_cents bigint,
    r_status text, r_failure_code text, r_metadata text, r_lost boolean)
LANGUAGE plpgsql AS $BODY$
DECLARE
    v_card text;
    v_held record;
    v_failure text;
    v_status text;
    v_count integer;
BEGIN
    -- This transaction's commit does not wait for the disk (see "Durability" above).
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT c.card_number INTO v_card FROM sandbox_charges AS c WHERE c.charge_id = p_charge_id;
    IF v_card = '{CARD_OUTAGE}' THEN
        INSERT INTO sandbox_outages (idempotency_key) VALUES (p_key)
            ON CONFLICT (idempotency_key) DO NOTHING;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count = 1 THEN
            RETURN QUERY SELECT 'outage'::text, NULL::text, NULL::text, NULL::bigint,
                NULL::text, NULL::text, NULL::text, false;
            RETURN;
        END IF;
    END IF;
    r_lost := v_card IS NOT DISTINCT FROM '{CARD_LOST_RESPONSE}';
    SELECT * INTO v_held FROM sandbox_refunds AS r WHERE r.idempotency_key = p_key FOR UPDATE;
    IF NOT FOUND THEN
        IF v_card IS NULL THEN
            v_failure := 'no_such_charge';
        ELSIF p_declined OR v_card = '{CARD_DECLINED}' THEN
            v_failure := 'refund_declined';
        ELSE
            UPDATE sandbox_charges AS c SET refunded_cents = c.refunded_cents + p_amount
                WHERE c.charge_id = p_charge_id AND c.amount_cents - c.refunded_cents >= p_amount;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            IF v_count <> 1 THEN
                v_failure := 'insufficient_funds';
            END IF;
        END IF;
        v_status := CASE WHEN v_failure IS NULL THEN 'succeeded' ELSE 'failed' END;
        -- A racing request with the same key loses here on the primary key and rolls back.
        INSERT INTO sandbox_refunds (idempotency_key, refund_id, charge_id, amount_cents,
            status, failure_code, metadata, requests)
            VALUES (p_key, p_refund_id, p_charge_id, p_amount, v_status, v_failure,
                p_metadata, 1);
        RETURN QUERY SELECT 'held'::text, p_refund_id, p_charge_id, p_amount, v_status,
            v_failure, p_metadata, r_lost;
        RETURN;
    END IF;
    IF v_held.charge_id <> p_charge_id OR v_held.amount_cents <> p_amount THEN
        RETURN QUERY SELECT 'conflict'::text, NULL::text, NULL::text, NULL::bigint,
            NULL::text, NULL::text, NULL::text, false;
        RETURN;
    END IF;
    UPDATE sandbox_refunds AS r SET requests = r.requests + 1 WHERE r.idempotency_key = p_key;
    RETURN QUERY SELECT 'held'::text, v_held.refund_id, v_held.charge_id, v_held.amount_cents,
        v_held.status, v_held.failure_code, v_held.metadata, r_lost;
END;
$BODY$
"""


@dataclass(frozen=True)
class ProviderRefund:
    """What the payment provider holds for one idempotency key."""

    idempotency_key: str
    refund_id: str
    charge_id: str
    amount_cents: int
    status: str  # "succeeded" | "failed"
    failure_code: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


class ProviderResponseLostError(EffectResponseLostError):
    """Raised when a refund's outcome is unknown: a timeout, a lost connection or a 5xx."""


class ProviderOutageError(ProviderResponseLostError, ProviderUnavailableError):
    """Raised when the provider is down and says so before applying anything (the outage
    card's first request): nothing was refunded; the same key may be asked again later."""


class SandboxPaymentProvider(SandboxProvider[ProviderRefund]):
    """A card payment provider, simulated in the application's database; as an
    EffectProvider it performs CardRefund requests (domain/contracts/card_refund.py)."""

    name = "payments"
    schema = _SCHEMA
    postgres_schema = (_REFUND_FUNCTION,)
    table = "sandbox_refunds"
    outages_table = "sandbox_outages"
    unavailable = ProviderOutageError
    lost = ProviderResponseLostError

    def create_charge(self, charge_id: str, card_number: str, amount_cents: int) -> None:
        with self.db.transaction() as cursor:
            cursor.execute(
                "INSERT INTO sandbox_charges (charge_id, card_number, amount_cents)"
                " VALUES (?, ?, ?) ON CONFLICT (charge_id) DO NOTHING",
                (charge_id, card_number, amount_cents),
            )

    def refund(
        self,
        *,
        idempotency_key: str,
        charge_id: str,
        amount_cents: int,
        metadata: dict[str, str],
    ) -> ProviderRefund:
        return self._request(
            idempotency_key,
            lambda declined: self._refund_once(
                idempotency_key, charge_id, amount_cents, metadata, declined
            ),
        )

    def _refund_once(
        self, key: str, charge_id: str, amount_cents: int, metadata: dict[str, str], declined: bool
    ) -> tuple[ProviderRefund | None, bool]:
        """One transaction (``Once``): the refund held, and whether its answer is lost."""
        if self.db.is_postgres:
            return self._refund_once_postgres(key, charge_id, amount_cents, metadata, declined)
        with self.db.transaction(durable=False) as cursor:  # see "Durability" above
            row = cursor.execute(
                "SELECT card_number FROM sandbox_charges WHERE charge_id = ?", (charge_id,)
            ).fetchone()
            card = str(row[0]) if row else None
            if card == CARD_OUTAGE and self._first_outage(cursor, key):
                return None, False
            lost = card == CARD_LOST_RESPONSE
            stored = _select(cursor, key, for_update=self.db.is_postgres)
            if stored is None:
                return _apply(cursor, key, charge_id, card, amount_cents, metadata, declined), lost
            if (stored.charge_id, stored.amount_cents) != (charge_id, amount_cents):
                raise IdempotencyConflictError("idempotency key reused with different parameters")
            self._count_request(cursor, key)
            return stored, lost

    def _refund_once_postgres(
        self, key: str, charge_id: str, amount_cents: int, metadata: dict[str, str], declined: bool
    ) -> tuple[ProviderRefund | None, bool]:
        """``_refund_once`` as one call of the ``sandbox_refund`` function: one round trip, its
        own transaction."""
        with self.db.statements() as cursor:
            row = cursor.execute(
                "SELECT * FROM sandbox_refund(?, ?, ?, ?, ?, ?)",
                (
                    key,
                    charge_id,
                    amount_cents,
                    json.dumps(metadata, sort_keys=True),
                    declined,
                    _new_refund_id(),
                ),
            ).fetchone()
        assert row is not None  # the function always answers one row
        answer, refund_id, charge, amount, status, failure, stored_metadata, lost = row
        if answer == "outage":
            return None, False
        if answer == "conflict":
            raise IdempotencyConflictError("idempotency key reused with different parameters")
        refund = ProviderRefund(
            idempotency_key=key,
            refund_id=refund_id,
            charge_id=charge,
            amount_cents=int(amount),
            status=status,
            failure_code=failure,
            metadata=json.loads(stored_metadata),
        )
        return refund, bool(lost)

    def find_refund(self, idempotency_key: str) -> ProviderRefund | None:
        with self.db.transaction() as cursor:
            return _select(cursor, idempotency_key, for_update=False)

    # -- the EffectProvider port ----------------------------------------------------------------

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        refund = self.refund(
            idempotency_key=key,
            charge_id=str(request["charge_id"]),
            amount_cents=int(request["amount_cents"]),
            metadata={str(k): str(v) for k, v in request.get("metadata", {}).items()},
        )
        return _response(refund)

    def lookup(self, key: str) -> EffectResponse | None:
        refund = self.find_refund(key)
        return None if refund is None else _response(refund)

    def held(self) -> list[dict[str, object]]:
        """What the sandbox holds under each idempotency key, with the number of requests it
        got and the request's metadata: the view every sandbox provider gives its tests."""
        return self.refunds()

    def refunds(self) -> list[dict[str, object]]:
        """What the sandbox holds, per idempotency key, with the number of requests it got."""
        with self.db.transaction() as cursor:
            rows = cursor.execute(
                "SELECT idempotency_key, requests, amount_cents, status, metadata"
                " FROM sandbox_refunds ORDER BY idempotency_key"
            ).fetchall()
        return [
            {
                "idempotency_key": key,
                "requests": requests,
                "amount_cents": amount,
                "status": status,
                "metadata": json.loads(metadata),
            }
            for key, requests, amount, status, metadata in rows
        ]


def _response(refund: ProviderRefund) -> EffectResponse:
    return EffectResponse(
        idempotency_key=refund.idempotency_key,
        status="succeeded" if refund.status == "succeeded" else "refused",
        reference=refund.refund_id,
        reason=refund.failure_code,
        details={
            "charge_id": refund.charge_id,
            "amount_cents": refund.amount_cents,
            "metadata": dict(refund.metadata),
        },
    )


def _select(cursor: Cursor, key: str, *, for_update: bool) -> ProviderRefund | None:
    row = cursor.execute(
        "SELECT idempotency_key, refund_id, charge_id, amount_cents, status, failure_code,"
        " metadata FROM sandbox_refunds WHERE idempotency_key = ?"
        + (" FOR UPDATE" if for_update else ""),
        (key,),
    ).fetchone()
    if row is None:
        return None
    return ProviderRefund(
        idempotency_key=row[0],
        refund_id=row[1],
        charge_id=row[2],
        amount_cents=int(row[3]),
        status=row[4],
        failure_code=row[5],
        metadata=json.loads(row[6]),
    )


def _apply(
    cursor: Cursor,
    key: str,
    charge_id: str,
    card: str | None,
    amount_cents: int,
    metadata: dict[str, str],
    declined: bool,
) -> ProviderRefund:
    failure = None
    if card is None:
        failure = "no_such_charge"
    elif declined or card == CARD_DECLINED:
        failure = "refund_declined"
    else:
        updated = cursor.execute(
            "UPDATE sandbox_charges SET refunded_cents = refunded_cents + ?"
            " WHERE charge_id = ? AND amount_cents - refunded_cents >= ?",
            (amount_cents, charge_id, amount_cents),
        ).rowcount
        if updated != 1:
            failure = "insufficient_funds"
    refund = ProviderRefund(
        idempotency_key=key,
        refund_id=_new_refund_id(),
        charge_id=charge_id,
        amount_cents=amount_cents,
        status="failed" if failure else "succeeded",
        failure_code=failure,
        metadata=dict(metadata),
    )
    # A racing request with the same key loses here on the primary key and rolls back.
    cursor.execute(
        "INSERT INTO sandbox_refunds (idempotency_key, refund_id, charge_id, amount_cents,"
        " status, failure_code, metadata, requests) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
        (
            key,
            refund.refund_id,
            charge_id,
            amount_cents,
            refund.status,
            failure,
            json.dumps(metadata, sort_keys=True),
        ),
    )
    return refund


def _new_refund_id() -> str:
    return f"re_{uuid4().hex[:20]}"
