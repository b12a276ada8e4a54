"""Where an operation applies: organization (tenant), section and resource."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from uuid import UUID


class Section(StrEnum):
    """The application sections that have an assistant."""

    ORDERS = "orders"
    EMAIL_BROADCASTS = "email_broadcasts"


@dataclass(frozen=True)
class Scope:
    """The tenant, section and resource an operation is confined to."""

    organization_id: UUID
    section: Section
    resource_id: UUID
