"""Where an operation applies: organization (tenant), section and resource."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType
from uuid import UUID, uuid5

from countersign.domain.frozen_records import direct_init

Section = NewType("Section", str)
"""The name of an application section ("orders"). A contract declares the section it belongs
to; the sections that exist are the ones registered contracts name, each with one
assistant (``application/assistant/sections/``).
"""


@direct_init
@dataclass(frozen=True)
class Scope:
    """The tenant, section and resource an operation is confined to."""

    organization_id: UUID
    section: Section
    resource_id: UUID
    key: str | None = None
    """The resource's own key in the system that holds it, when that is not the id: a
    company's invoice number ``INV-1042``, mapped to ``resource_id`` by ``keyed_resource_id``
    (a contract's ``resource_namespace``). None when the id is the resource's own."""


def keyed_resource_id(namespace: UUID, key: str) -> UUID:
    """The one id a resource known by ``key`` has, under a plug-in's ``namespace``: the same
    in every process and release (UUID version 5), so a key is mapped once and for all."""
    return uuid5(namespace, key)
