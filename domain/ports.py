"""Ports: what the domain and application need from the outside world, as Protocols.

Adapters in ``infrastructure`` implement them; tests use the same adapters or fakes that
implement the same Protocols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

A = TypeVar("A", bound=Aggregate)


class Clock(Protocol):
    """Tells the time; injectable so expiry and leases can be tested."""

    def now(self) -> datetime: ...


class Repository(Protocol):
    """Where a contract loads the aggregates it reads and changes. It never saves them: the
    service commits what a contract changed, together with the proposal, in one commit."""

    def get(self, aggregate_id: UUID, as_type: type[A]) -> A:
        """The aggregate, for an executor to change; NotFoundError when absent or of another
        type. (While a proposal is only being prepared, nothing may change it.)"""
        ...

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        """Like get, for reading only: the result may be shared and must never be changed."""
        ...


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


class ProviderResponseLostError(Exception):
    """Raised when a provider call's outcome is unknown: timeout, lost connection or a 5xx."""


class IdempotencyConflictError(Exception):
    """Raised when an idempotency key is reused with other parameters."""


class PaymentProvider(Protocol):
    """A card payment provider with idempotency keys and lookups, like a real one."""

    def refund(
        self,
        *,
        idempotency_key: str,
        charge_id: str,
        amount_cents: int,
        metadata: dict[str, str],
    ) -> ProviderRefund: ...

    def find_refund(self, idempotency_key: str) -> ProviderRefund | None: ...


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for; ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """What the model answered: text, tool calls, or both."""

    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)


class ModelUnavailableError(Exception):
    """Raised when the model could not answer, after bounded retries of transient failures."""


class ChatModel(Protocol):
    """A chat model with tools (any OpenAI-compatible endpoint, or the offline stand-in)."""

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply: ...
