"""The sandbox providers a seeded deployment runs on, and how a test scripts their faults.

``cs.sandbox`` is the payment sandbox (provider ``"payments"``) and ``cs.email_sandbox`` the
e-mail delivery sandbox (``"email"``). Each has fixed behaviours chosen by its input (test
cards, test addresses: the constants below) and, for sequences, scripted faults per
idempotency key (``script_faults``; the faults are listed in ``sandbox_faults``). Both list
what they hold with ``held()``, which the conformance suite reads (``provider_requests``).
"""

from __future__ import annotations

from collections.abc import Sequence

from countersign.infrastructure.adapters.email_sandbox import (
    LOST_RESPONSE,
    OUTAGE,
    SUPPRESSED,
    TEST_DOMAIN,
    SandboxEmailProvider,
)
from countersign.infrastructure.adapters.payment_sandbox import (
    CARD_DECLINED,
    CARD_LOST_RESPONSE,
    CARD_OK,
    CARD_OUTAGE,
    SandboxPaymentProvider,
)
from countersign.infrastructure.adapters.sandbox import SandboxProvider
from countersign.infrastructure.adapters.sandbox_faults import FAULTS, Fault, ScriptedFaults
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.observability.counting import CountedProvider

__all__ = [
    "CARD_DECLINED",
    "CARD_LOST_RESPONSE",
    "CARD_OK",
    "CARD_OUTAGE",
    "FAULTS",
    "LOST_RESPONSE",
    "OUTAGE",
    "SUPPRESSED",
    "TEST_DOMAIN",
    "Fault",
    "SandboxEmailProvider",
    "SandboxPaymentProvider",
    "ScriptedFaults",
    "provider",
    "sandbox",
    "script_faults",
]


def provider(cs: Countersign, name: str) -> object:
    """The effect provider registered as ``name`` in ``cs`` (a sandbox, a plug-in's own), as
    it was given: not the wrapper that counts its calls for the metrics."""
    found: object = cs.proposals.settlement.providers[name]
    return found.inner if isinstance(found, CountedProvider) else found


def sandbox(cs: Countersign, name: str) -> SandboxProvider[object]:
    """The sandbox registered as ``name`` (``"payments"``, ``"email"``) in ``cs``."""
    found = provider(cs, name)
    if not isinstance(found, SandboxProvider):
        raise TypeError(f"provider {name!r} is a {type(found).__name__}, not a sandbox")
    return found


def script_faults(cs: Countersign, name: str, key: str, faults: Sequence[Fault]) -> None:
    """What the next requests under idempotency key ``key`` meet at sandbox ``name``,
    one fault each (then it behaves normally again). Every process sharing the database
    meets the same script: ``follow`` makes this one read scripts from now on."""
    scripted = sandbox(cs, name).faults
    scripted.follow()
    scripted.script(key, faults)
