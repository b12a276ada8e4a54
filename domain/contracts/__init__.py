"""The operation-contract registry: one line per operation kind.

``REGISTRY``, ``REVISION_REASONS`` and ``PERMISSIONS`` are built from the built-in contracts at
import. A deployment's plug-ins (``COUNTERSIGN_PLUGINS``) add theirs with ``install``, called
once by bootstrap before anything reads them: the objects are changed in place, so every
importer (``from countersign.domain.contracts import REGISTRY``) sees the same registry, and a
lookup stays one dict get.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
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


def _registry(contracts: Iterable[AnyContract]) -> dict[str, AnyContract]:
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


BUILT_IN: tuple[AnyContract, ...] = (
    RefundMissingDiscount(),
    ApplyBroadcastDraft(),
    MoveMember(),
    CancelRegistration(),
    SendBroadcast(),
    RemoveMember(),
)
"""countersign's own contracts, in registry order."""

REGISTRY: dict[str, AnyContract] = _registry(BUILT_IN)


def contracts_in(section: Section) -> tuple[AnyContract, ...]:
    """The contracts a section's assistant may propose, in registry order."""
    return tuple(contract for contract in REGISTRY.values() if contract.section == section)


def _revision_reasons(contracts: Iterable[AnyContract]) -> dict[str, Localized]:
    reasons: dict[str, Localized] = {}
    for contract in contracts:
        for code, sentence in contract.revision_reasons.items():
            if code in reasons:
                raise ValueError(f"revision reason {code!r} is declared twice")
            reasons[code] = sentence
    return reasons


REVISION_REASONS: dict[str, Localized] = _revision_reasons(BUILT_IN)
"""Every contract's revision reasons by code: a stored code names one sentence everywhere."""


def _permissions(contracts: Iterable[AnyContract], extra: Iterable[str]) -> set[str]:
    return {*Permission, *(contract.permission for contract in contracts), *extra}


_PERMISSIONS: set[str] = _permissions(BUILT_IN, ())
PERMISSIONS: Set[str] = _PERMISSIONS
"""Every permission a member may hold: the application's own, each contract's, and the ones
a plug-in declares."""


def install(contracts: Iterable[AnyContract], permissions: Iterable[str] = ()) -> None:
    """Make the built-in contracts and these the registry (with their revision reasons and
    permissions): ValueError, saying which, when one breaks a registry rule, and then nothing
    changes. Called by bootstrap with the deployment's plug-ins (``install(())`` is the
    built-in registry again)."""
    every = (*BUILT_IN, *contracts)
    registry, reasons = _registry(every), _revision_reasons(every)
    REGISTRY.clear()
    REGISTRY.update(registry)
    REVISION_REASONS.clear()
    REVISION_REASONS.update(reasons)
    _PERMISSIONS.clear()
    _PERMISSIONS.update(_permissions(every, permissions))
