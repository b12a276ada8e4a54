"""Deterministic ids for club aggregates, so seeding is idempotent and lookups need no index."""

from __future__ import annotations

from uuid import UUID, uuid5

_NAMESPACE = UUID("6f1d4c8e-2b57-4b8e-9a55-3c0c4a1f7e21")


def stable_id(*parts: object) -> UUID:
    return uuid5(_NAMESPACE, "/".join(str(part) for part in parts))
