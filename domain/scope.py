"""Where an operation applies: organization (tenant), section and resource."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType
from uuid import UUID

Section = NewType("Section", str)
"""The name of an application section ("orders"). A contract declares the section it belongs
to; the sections that exist are the ones registered contracts name, each with one
assistant (``application/assistant/sections/``).
"""


@dataclass(frozen=True)
class Scope:
    """The tenant, section and resource an operation is confined to."""

    organization_id: UUID
    section: Section
    resource_id: UUID
