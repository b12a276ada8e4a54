"""Ports: what the domain and application need from the outside world, as Protocols.

Adapters in ``infrastructure`` implement them; tests use the same adapters or fakes that
implement the same Protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar
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
class EffectResponse:
    """An outside system's definitive answer to one request, as it holds it under the
    request's idempotency key: it was done, or it was refused (a refusal is an answer too).

    A contract interprets it (``finish_external``); what it means depends on the provider."""

    idempotency_key: str
    status: Literal["succeeded", "refused"]
    #: The provider's own reference for what it did or refused (a refund id, a message id).
    reference: str
    #: Why it refused, in the provider's words (a failure code); None when it succeeded.
    reason: str | None = None
    #: Anything else the provider answered, as plain JSON-like values.
    details: Mapping[str, Any] = field(default_factory=dict)


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
