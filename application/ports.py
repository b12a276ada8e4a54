"""Ports: what the application's use cases need from the outside world, as Protocols.

Adapters in ``infrastructure`` implement them; tests use the same adapters or fakes that
implement the same Protocols. (What the domain itself needs is in ``domain/ports.py``.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.ports import A


@dataclass(frozen=True)
class StoredEventView:
    """One stored event, as an auditor reads it."""

    version: int
    type: str
    at: datetime
    fields: dict[str, Any]


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



