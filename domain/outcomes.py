"""Typed outcomes of an approved proposal, and the results of asking to approve one.

An outcome is stored once, in the proposal's stream, and every later reader (a repeated
approval, the browser, the assistant hand-back, the auditor) gets exactly those bytes back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, TypeVar
from uuid import UUID

from countersign.domain.frozen_records import direct_init
from countersign.domain.scope import Scope
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

ReasonParam = str | int | bool
ReconciliationCause = Literal["response_lost", "provider_unavailable"]


class RevisionReason(BaseModel):
    """A safe, app-authored, localizable reason code with its parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    params: dict[str, ReasonParam] = Field(default_factory=dict)


class Succeeded(BaseModel):
    """The operation's effect is recorded; ``result`` is the contract's typed result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["succeeded"] = "succeeded"
    result: dict[str, Any]


class NeedsReconciliation(BaseModel):
    """An external effect is uncertain; the reconciler will settle it. Never retry by hand.

    ``cause`` tells why: the provider's answer was lost (the effect may have happened), or the
    provider said it was unavailable and applied nothing (nothing happened yet). Either way the
    reconciler settles it under the same idempotency key. Outcomes stored before ``cause``
    existed read as a lost answer, the only cause there was then.

    It stores facts only: where a machine follows the settlement (the JSON API's status
    resource, ``status_path`` in its answers) is the entry points' business, built from the
    proposal's id. Outcomes stored before this held that route (``Proposal.Reconciling``
    version 1); the upcaster leaves it out.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["needs_reconciliation"] = "needs_reconciliation"
    cause: ReconciliationCause = "response_lost"


class RevisionRequired(BaseModel):
    """Nothing was executed: a material fact changed, or the manager declined.

    ``already_so``: the fact that changed is that what the proposal asked for already holds
    (a removal whose member has left the league meanwhile, however they left it): the
    contract's recheck said so of its finding (``Finding(already_so=True)``). Nothing is
    owed and nothing is left to do, so it needs nobody's attention. It is stored only when
    true (``Proposal.RevisionRequired`` version 2): every other outcome is stored, and
    answered, as before; an outcome stored before it existed never says it, and reads as
    not already so, which is what its recheck found (it did not tell)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["revision_required"] = "revision_required"
    reason: RevisionReason
    already_so: bool = False

    @model_serializer(mode="wrap")
    def _already_so_only_when_true(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if not self.already_so and isinstance(dumped, dict):
            dumped.pop("already_so", None)
        return dumped


class TerminalFailure(BaseModel):
    """An internal failure; not retryable. The correlation id is also in the logs.

    ``cause``: ``unverified_record`` when the reconciler failed a claimed proposal whose
    record its seals do not vouch for (a claim made up, or changed, in the database): an
    integrity check failed, not the operation, and nothing was executed from that record.
    Stored only then: every other failure is stored, and answered, as before."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["terminal_failure"] = "terminal_failure"
    correlation_id: str
    cause: Literal["unverified_record"] | None = None

    @model_serializer(mode="wrap")
    def _cause_only_when_known(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if self.cause is None and isinstance(dumped, dict):
            dumped.pop("cause", None)
        return dumped


Outcome = Annotated[
    Succeeded | NeedsReconciliation | RevisionRequired | TerminalFailure,
    Field(discriminator="kind"),
]
OUTCOME_ADAPTER: TypeAdapter[Outcome] = TypeAdapter(Outcome)


def outcome_from_stored(stored: dict[str, Any]) -> Outcome:
    """Decode an outcome exactly as it was stored. A read model's copy of an outcome that a
    version 1 ``Reconciling`` event stored may still hold the API's route (``status_path``):
    it is no fact of the outcome, and is left out, as the event's upcaster leaves it out."""
    if stored.get("kind") == "needs_reconciliation" and "status_path" in stored:
        stored = {key: value for key, value in stored.items() if key != "status_path"}
    return OUTCOME_ADAPTER.validate_python(stored)


def is_already_so(stored: Mapping[str, Any] | None) -> bool:
    """Whether a stored outcome is a revision required because what the proposal asked for
    already holds (``RevisionRequired.already_so``): read from the stored values alone, as a
    projection reads them."""
    return (
        stored is not None
        and stored.get("kind") == "revision_required"
        and stored.get("already_so") is True
    )


class NotApprovableReason(StrEnum):
    """Why a proposal cannot be approved now."""

    NOT_FOUND = "not_found"
    NOT_PENDING = "not_pending"
    EXPIRED = "expired"
    FORBIDDEN = "forbidden"
    IN_PROGRESS = "in_progress"
    SUPERSEDED = "superseded"
    """A newer proposal (an edit, or a fresh one for the same thing) replaced it, or an
    execution made its preview stale: ``superseded_by`` names the one that did."""
    REQUESTER_MAY_NOT_APPROVE = "requester_may_not_approve"
    """Separation of duties: the policy it was frozen under lets others approve it, not the
    person who requested it."""
    PASSKEY_REQUIRED = "passkey_required"
    """The policy it was frozen under requires each approval to be signed with the
    approver's passkey, and none was given."""
    PASSKEY_REJECTED = "passkey_rejected"
    """A passkey assertion was given and does not verify: not one of the approver's
    passkeys, an expired or foreign challenge, a bad signature or no user verification."""
    POLICY_RAISED = "policy_raised"
    """Only a passkey challenge answers it: the club's policy now asks more of it than the one
    it was frozen under, so no passkey is to sign for it. Approving it records
    RevisionRequired(policy_raised) instead, with no passkey: proposed again, it is frozen
    under the policy in force (application/policy_recheck.py)."""
    OPERATION_NOT_ENABLED = "operation_not_enabled"
    """Its operation is not registered in this process: the plug-in that adds it is not
    enabled here (no longer named in ``COUNTERSIGN_PLUGINS``). Nothing was recorded: it is
    decided once the plug-in is enabled again."""
    NOT_VERIFIABLE_HERE = "not_verifiable_here"
    """Its record is sealed with a key this process does not hold (a rotation's new key,
    not yet on every process): nothing says it is forged, nothing here can vouch for it, so
    nothing was recorded and a process holding the key may approve it."""


ArgumentsT = TypeVar("ArgumentsT")


@direct_init
@dataclass(frozen=True)
class ExecutionContract(Generic[ArgumentsT]):
    """What a successful claim yields, and the only thing an executor accepts."""

    proposal_id: UUID
    kind: str
    scope: Scope
    arguments: ArgumentsT
    approved_by: str
    approved_at: datetime
    attempt_id: UUID


@dataclass(frozen=True)
class Claimed(Generic[ArgumentsT]):
    """The caller won the claim and holds the only execution contract."""

    contract: ExecutionContract[ArgumentsT]


@dataclass(frozen=True)
class AlreadyCompleted:
    """The proposal already has an outcome; here it is, as stored."""

    outcome: dict[str, Any]


@dataclass(frozen=True)
class NotApprovable:
    """The proposal cannot be approved now, for this reason."""

    reason: NotApprovableReason
