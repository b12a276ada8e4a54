"""Ports: what the domain itself needs from the outside world. A contract loads its facts
through a ``Repository`` and interprets an outside system's ``EffectResponse``; everything
else the use cases need is in ``application/ports.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

A = TypeVar("A", bound=Aggregate)


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
