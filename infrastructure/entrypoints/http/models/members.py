"""What the members' routes take and answer: a member's permissions."""

from __future__ import annotations

from typing import Annotated

from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.entrypoints.http.models import Body
from pydantic import BaseModel, Field

_KNOWN = ", ".join(sorted(PERMISSIONS)) + " (and an enabled plug-in's)"


class PermissionsIn(Body):
    """The permissions the member holds from now on: exactly these (the others are withdrawn)."""

    permissions: list[Annotated[str, Field(max_length=100)]] = Field(
        max_length=len(PERMISSIONS) + 100,
        description=f"Permission names, each one of: {_KNOWN}. An empty list withdraws them all.",
    )


class MemberOut(BaseModel):
    """A member of the token's organization and the permissions they hold."""

    email: str = Field(description="The member's email, lower-cased.")
    name: str = Field(description="The member's name.")
    role: str = Field(description="The member's role in the club (manager, staff...).")
    permissions: list[str] = Field(description="The permissions they hold, sorted.")


class MembersOut(BaseModel):
    """Every member of the token's organization, by email."""

    members: list[MemberOut]


class PermissionsSetOut(BaseModel):
    """What the member holds now, and whether this request changed it."""

    email: str = Field(description="The member's email, lower-cased.")
    permissions: list[str] = Field(description="The permissions they hold now, sorted.")
    changed: bool = Field(description="False when they already held exactly these.")
