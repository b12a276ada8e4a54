"""What the members' routes take and answer: a member's permissions."""

from __future__ import annotations

from typing import Annotated

from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.entrypoints.http.models import Body
from pydantic import BaseModel, Field

_KNOWN = ", ".join(sorted(PERMISSIONS)) + " (and an enabled plug-in's)"
#: The API answers codes, whatever the reader's language: the members page shows labels.
_CODES = (
    "Each is a stable code (orders.refund), not translated: the members page shows each in "
    "its reader's words; a client keys by the code."
)


class PermissionsIn(Body):
    """The permissions the member holds from now on: exactly these (the others are withdrawn)."""

    permissions: list[Annotated[str, Field(max_length=100)]] = Field(
        max_length=len(PERMISSIONS) + 100,
        description=(
            f"Permission names, each a stable code (not translated), one of: {_KNOWN}. An "
            "empty list withdraws them all."
        ),
    )


class MemberOut(BaseModel):
    """A member of the token's organization and the permissions they hold."""

    email: str = Field(description="The member's email, lower-cased.")
    name: str = Field(description="The member's name.")
    role: str = Field(
        description=(
            "The member's role in the club, a stable code (not translated): manager, staff, "
            "or a role the club named itself, as stored."
        )
    )
    permissions: list[str] = Field(description=f"The permissions they hold, sorted. {_CODES}")


class MembersOut(BaseModel):
    """Every member of the token's organization, by email."""

    members: list[MemberOut]


class PermissionsSetOut(BaseModel):
    """What the member holds now, and whether this request changed it."""

    email: str = Field(description="The member's email, lower-cased.")
    permissions: list[str] = Field(description=f"The permissions they hold now, sorted. {_CODES}")
    changed: bool = Field(description="False when they already held exactly these.")
