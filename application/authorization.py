"""Who may do what, checked on every request against the organization's current state."""

from __future__ import annotations

from uuid import UUID

from countersign.application.errors import MissingPermissionError
from countersign.domain.club.organization import Member, Organization
from countersign.domain.errors import NotFoundError
from countersign.domain.ports import Repository


def organization_by_slug(store: Repository, slug: str) -> Organization:
    return store.read(Organization.create_id(slug.strip().lower()), Organization)


def member_of(store: Repository, organization_id: UUID, email: str) -> Member:
    """The caller's membership, read freshly; NotFoundError for a non-member."""
    return membership(store.read(organization_id, Organization), email)


def membership(organization: Organization, email: str) -> Member:
    """A non-member gets NotFoundError, exactly like an unknown id would."""
    member = organization.member(email)
    if member is None:
        raise NotFoundError("not a member")
    return member


def require(member: Member, permission: str) -> None:
    """MissingPermissionError (a ForbiddenError naming the permission) unless it is held."""
    if not member.may(permission):
        raise MissingPermissionError([permission])
