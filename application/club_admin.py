"""The operator's club administration: a new club, and its people added or removed.

A deployment serving its own clubs had no way to make them but code (``seed`` makes the
demo's): an operator running countersign for several clubs can now register a club and add
its first manager from the command line, and the club's managers go on from there on the
pages and with ``members set-permissions``. Each is the operator's act, recorded as such
(the events name no member), and each refuses what it cannot keep: a club's short name is its
id for good (``Organization.create_id``), so it is checked here, as are an address, a name
and a role a page will show.
"""

from __future__ import annotations

import re
from typing import Any

from countersign.application.ports import AggregateStore, Answer, Commit, Reads
from countersign.domain.club.organization import Organization
from countersign.domain.club.permissions import UnknownPermissionError
from countersign.domain.contracts import PERMISSIONS
from countersign.domain.errors import CountersignError, DuplicateError, NotFoundError
from countersign.domain.ports import Repository

#: A club's short name: its id, in every URL and command (``granite``, ``maple-leafs``).
SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")
#: An address as the roster's contracts take one.
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
#: A name or a role as shown on the pages: letters, digits, spaces and a few marks.
_SHOWN = re.compile(r"[\w][\w .,'&()/+-]*")
NAME_LENGTH = 80
ROLE_LENGTH = 40


class ClubSetupError(CountersignError):
    """A value the operator gave that cannot be kept: ``reason`` (``bad_slug``,
    ``bad_name``, ``bad_email``, ``bad_role``, ``club_exists``) and the value."""

    def __init__(self, reason: str, value: str) -> None:
        super().__init__(f"{reason}: {value!r}")
        self.reason = reason
        self.value = value


def register_club(store: AggregateStore, slug: str, name: str) -> dict[str, Any]:
    """A new club under ``slug``, named ``name``; what was registered. ClubSetupError for a
    short name or name it cannot keep, or a club that exists already."""
    slug, name = slug.strip().lower(), " ".join(name.split())
    if SLUG.fullmatch(slug) is None:
        raise ClubSetupError("bad_slug", slug)
    _check_shown(name, "bad_name", NAME_LENGTH)
    club_id = Organization.create_id(slug)

    def registering(facts: Repository) -> Commit[dict[str, Any]]:
        try:
            facts.get(club_id, Organization)
        except NotFoundError:
            made = {"organization": slug, "name": name, "id": str(club_id)}
            return Commit([Organization(slug=slug, name=name)], made)
        raise ClubSetupError("club_exists", slug)

    return store.decide(Reads([club_id]), registering)


def add_member(
    store: AggregateStore,
    organization: str,
    email: str,
    name: str,
    role: str,
    permissions: list[str],
) -> dict[str, Any]:
    """``email`` joins the club as ``name`` in ``role`` with exactly ``permissions``; the
    member as added. ClubSetupError for an address, name or role it cannot keep,
    UnknownPermissionError, NotFoundError (no such club), DuplicateError (a member already)."""
    email, name, role = email.strip().lower(), " ".join(name.split()), " ".join(role.split())
    if EMAIL.fullmatch(email) is None:
        raise ClubSetupError("bad_email", email)
    _check_shown(name, "bad_name", NAME_LENGTH)
    _check_shown(role, "bad_role", ROLE_LENGTH)
    wanted = sorted({p.strip() for p in permissions if p.strip()})
    unknown = [p for p in wanted if p not in PERMISSIONS]
    if unknown:
        raise UnknownPermissionError(unknown, PERMISSIONS)
    club_id = Organization.create_id(organization.strip().lower())

    def adding(facts: Repository) -> Commit[dict[str, Any]]:
        org = facts.get(club_id, Organization)
        org.add_member(email, name, role, wanted)
        added = {"email": email, "name": name, "role": role, "permissions": wanted}
        return Commit([org], added)

    return store.decide(Reads([club_id]), adding)


def remove_member(store: AggregateStore, organization: str, email: str) -> dict[str, Any]:
    """``email`` leaves the club. NotFoundError (no such club), NotMemberError,
    LastMemberManagerError (the last member who holds members.manage: nobody could change a
    member's permissions again)."""
    email = email.strip().lower()
    club_id = Organization.create_id(organization.strip().lower())

    def removing(facts: Repository) -> Commit[dict[str, Any]] | Answer[dict[str, Any]]:
        org = facts.get(club_id, Organization)
        member = org.member(email)
        if member is not None:
            org.check_keeps_a_member_manager(member, ())
        org.remove_member(email)  # NotMemberError for one who is not
        return Commit([org], {"email": email, "removed": True})

    return store.decide(Reads([club_id]), removing)


def _check_shown(value: str, reason: str, longest: int) -> None:
    if not value or len(value) > longest or _SHOWN.fullmatch(value) is None:
        raise ClubSetupError(reason, value)


__all__ = ["ClubSetupError", "DuplicateError", "add_member", "register_club", "remove_member"]
