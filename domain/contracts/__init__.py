"""The operation-contract registry: one line per operation kind."""

from __future__ import annotations

from typing import Any

from countersign.domain.club.organization import Permission
from countersign.domain.contracts.apply_broadcast_draft import ApplyBroadcastDraft
from countersign.domain.contracts.base import OperationContract
from countersign.domain.contracts.cancel_registration import CancelRegistration
from countersign.domain.contracts.move_member import MoveMember
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.refund_missing_discount import RefundMissingDiscount
from countersign.domain.contracts.remove_member import RemoveMember
from countersign.domain.contracts.send_broadcast import SendBroadcast
from countersign.domain.scope import Section

AnyContract = OperationContract[Any, Any, Any, Any, Any]


def _registry(*contracts: AnyContract) -> dict[str, AnyContract]:
    """Index contracts by kind, refusing one whose declarations do not fit together."""
    registry: dict[str, AnyContract] = {}
    for contract in contracts:
        kind = contract.kind
        if kind in registry:
            raise ValueError(f"{kind} is registered twice")
        fields = set(contract.Preview.model_fields)
        declared = set(contract.preview_fields) | contract.preview_hidden
        if declared != fields:
            raise ValueError(f"{kind} labels {sorted(declared)}, its preview has {sorted(fields)}")
        registry[kind] = contract
    return registry


REGISTRY: dict[str, AnyContract] = _registry(
    RefundMissingDiscount(),
    ApplyBroadcastDraft(),
    MoveMember(),
    CancelRegistration(),
    SendBroadcast(),
    RemoveMember(),
)


def contracts_in(section: Section) -> tuple[AnyContract, ...]:
    """The contracts a section's assistant may propose, in registry order."""
    return tuple(contract for contract in REGISTRY.values() if contract.section == section)


def _revision_reasons() -> dict[str, Localized]:
    reasons: dict[str, Localized] = {}
    for contract in REGISTRY.values():
        for code, sentence in contract.revision_reasons.items():
            if code in reasons:
                raise ValueError(f"revision reason {code!r} is declared twice")
            reasons[code] = sentence
    return reasons


REVISION_REASONS: dict[str, Localized] = _revision_reasons()
"""Every contract's revision reasons by code: a stored code names one sentence everywhere."""


PERMISSIONS: frozenset[str] = frozenset(
    {*Permission, *(contract.permission for contract in REGISTRY.values())}
)
"""Every permission a member may hold: the application's own, and each contract's."""
