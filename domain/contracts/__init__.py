"""The operation-contract registry: one line per operation kind."""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts.apply_broadcast_draft import ApplyBroadcastDraft
from countersign.domain.contracts.base import OperationContract
from countersign.domain.contracts.refund_missing_discount import RefundMissingDiscount

AnyContract = OperationContract[Any, Any, Any, Any, Any]

REGISTRY: dict[str, AnyContract] = {
    RefundMissingDiscount.kind: RefundMissingDiscount(),
    ApplyBroadcastDraft.kind: ApplyBroadcastDraft(),
}
