"""Deterministic ids for club aggregates, so seeding is idempotent and lookups need no index."""

from __future__ import annotations

from functools import lru_cache
from uuid import UUID, uuid5

_NAMESPACE = UUID("6f1d4c8e-2b57-4b8e-9a55-3c0c4a1f7e21")


# Remembered: the same few ids are derived on every request. ``typed`` keeps equal values of
# different types (which may print differently) apart.
@lru_cache(maxsize=4096, typed=True)
def stable_id(*parts: str | UUID) -> UUID:
    return uuid5(_NAMESPACE, "/".join(str(part) for part in parts))
