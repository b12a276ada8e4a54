"""A refund to the card, as the orders section's contracts ask the payment provider for one:
the request, the attempt recorded on the order before it is sent, and the provider's answer
recorded after."""

from __future__ import annotations

from typing import Any

from countersign.domain.club.orders import Order
from countersign.domain.contracts.base import Effect, Frozen, OperationContract
from countersign.domain.errors import EffectAlreadyRecordedError
from countersign.domain.outcomes import ExecutionContract
from countersign.domain.ports import EffectResponse


class CardRefund(Frozen):
    """What the payment provider is asked: refund this much of this charge."""

    charge_id: str
    amount_cents: int
    metadata: dict[str, str]


def card_refund(
    contract: OperationContract[Any, Any, Any, Any, Any],
    execution: ExecutionContract[Any],
    order: Order,
    payment: str,
    amount_cents: int,
) -> Effect:
    """The refund of ``amount_cents`` of ``payment``'s charge, under the proposal's key. A
    payment's charge and an order's key never change: the request is always the same."""
    charge_id = order.payment(payment).charge_id
    assert charge_id is not None  # a card payment always has a charge
    return contract.effect(
        execution.proposal_id,
        CardRefund(
            charge_id=charge_id,
            amount_cents=amount_cents,
            metadata={"proposal_id": str(execution.proposal_id), "order_key": order.key},
        ),
    )


def start_card_refund(
    contract: OperationContract[Any, Any, Any, Any, Any],
    execution: ExecutionContract[Any],
    order: Order,
    payment: str,
    discount: str | None,
    amount_cents: int,
) -> Effect:
    """Record the attempt on the order (committed with the claim), and the refund to send."""
    effect = card_refund(contract, execution, order, payment, amount_cents)
    order.start_refund_attempt(
        execution.proposal_id,
        payment,
        discount,
        amount_cents,
        idempotency_key=effect.idempotency_key,
    )
    return effect


def record_card_refund(
    execution: ExecutionContract[Any], order: Order, response: EffectResponse
) -> bool:
    """Record the provider's answer on the order: settled, or released when it declined;
    whether the money moved. EffectAlreadyRecordedError if another process recorded it."""
    attempt = order.attempt(execution.proposal_id)
    if attempt is None or attempt.status != "pending":
        raise EffectAlreadyRecordedError(str(execution.proposal_id))
    if response.status != "succeeded":
        order.release_refund_attempt(execution.proposal_id, reason="declined")
        return False
    order.settle_refund_attempt(execution.proposal_id, recorded_by=execution.approved_by)
    return True
