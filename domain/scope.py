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
    in every process and release (UUID version 5), so a key is mapped once and for all.

    It is the key's id, not a tenant's: ``INV-1042`` maps to the same id in every
    organization. countersign keeps nothing by this id alone (a proposal, a conversation, the
    pending slot and every read model are the organization's *and* the resource's), and what
    keeps a company's record within its organization is the contract: its ``load``, and every
    other read of the record, answers NotFoundError when the record is not
    ``scope.organization_id``'s, exactly as for a key nobody has. (Deriving the id from the
    organization too would not keep a record in its club, since the company's system is read
    by key, and would change the stored ids of every existing proposal and plug-in aggregate.)
    """
    return uuid5(namespace, key)
