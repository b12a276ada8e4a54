"""Counting the event store's queries in a test: what a request or a decision asks for."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from countersign.infrastructure.bootstrap import Countersign


def store_queries(cs: Countersign, monkeypatch: pytest.MonkeyPatch) -> list[list[UUID]]:
    """The ids of every event-store query from now on (each call of ``_load_many``)."""
    asked: list[list[UUID]] = []
    load_many = cs.store._load_many

    def counting(aggregate_ids: list[UUID]) -> Any:
        asked.append(list(aggregate_ids))
        return load_many(aggregate_ids)

    monkeypatch.setattr(cs.store, "_load_many", counting)
    return asked
