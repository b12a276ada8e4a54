"""Ports: what the domain and application need from the outside world, as Protocols.

Adapters in ``infrastructure`` implement them; tests use the same adapters or fakes that
implement the same Protocols.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

A = TypeVar("A", bound=Aggregate)


class Clock(Protocol):
    """Tells the time; injectable so expiry and leases can be tested."""

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class StoredEventView:
    """One stored event, as an auditor reads it."""

    version: int
    type: str
    at: datetime
    fields: dict[str, Any]


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


class AggregateStore(Protocol):
    """Loads and saves aggregates of the one event stream."""

    def get(self, aggregate_id: UUID, as_type: type[A], version: int | None = None) -> A:
        """Raises NotFoundError when absent, of another type, or unreadable."""
        ...

    def preload(
        self,
        aggregate_ids: Sequence[UUID],
        *,
        optimistic: bool = False,
        unchecked: Sequence[UUID] = (),
    ) -> AbstractContextManager[None]:
        """Read these aggregates in one round trip; inside the block, get() and read() of
        them return that state without reading again. Unknown ids are simply not loaded.

        Every save in the block checks, inside its commit, that nothing read in the block has
        changed since, and raises StaleReadError (writing nothing) if something has: a
        decision is never committed on out-of-date facts.

        ``unchecked``: aggregates the block reads without basing its decision on their state
        (a save does not check them).

        ``optimistic``: reads in the block may be served from state this process already
        holds, without any query. An answer decided from such reads WITHOUT a save (a
        refusal, a stored outcome) must be checked against fresh reads before it is given.
        """
        ...

    def read(self, aggregate_id: UUID, as_type: type[A]) -> A:
        """Like get, for reading only: the result is shared and must never be changed."""
        ...

    def save(self, *aggregates: Aggregate, final: bool = False) -> None:
        """One atomic commit of every pending event; ConcurrencyConflictError on a race.

        ``final``: the caller is done with these objects. After the commit they may be kept
        as shared read-only state, and a command given to one of them raises."""
        ...

    def history(self, aggregate_id: UUID) -> list[StoredEventView]: ...

    def ids_with_events(
        self, aggregate_class: type[Aggregate], event_names: Sequence[str]
    ) -> Iterator[UUID]:
        """Distinct ids of aggregates that recorded any of these events, oldest first."""
        ...


class OpenWorkIndex(Protocol):
    """Finds the proposals the sweepers must look at, without scanning every proposal."""

    def expiry_candidates(self, now: datetime) -> list[UUID]:
        """Pending proposals whose expiry has passed."""
        ...

    def reconciliation_candidates(self, claimed_before: datetime) -> list[UUID]:
        """Reconciling proposals, and executing ones claimed before the given time."""
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
