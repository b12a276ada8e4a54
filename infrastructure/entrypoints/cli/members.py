"""A club's members from the command line: ``members set-permissions``.

The command line is the operator's: it changes a member's permissions without naming a
member (the ``PermissionsChanged`` event records ``changed_by`` "operator"), which is how a
club gets its first holder of ``members.manage``. A refused change (a permission that does
not exist, a person who is not a member, taking ``members.manage`` from its last holder)
writes nothing, says why on stderr in the chosen language, and exits 4.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from countersign.domain.club.permissions import LastMemberManagerError, UnknownPermissionError
from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import NotFoundError, NotMemberError
from countersign.infrastructure.entrypoints.cli.common import RefusedError, Result

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign

_HOLDS = Localized(
    "{email} now holds: {permissions}.", "{email} détient maintenant : {permissions}."
)
_HELD = Localized("{email} already held: {permissions}.", "{email} détenait déjà : {permissions}.")
_HOLDS_NONE = Localized(
    "{email} now holds no permission.", "{email} ne détient plus aucune permission."
)
_HELD_NONE = Localized(
    "{email} already held no permission.", "{email} ne détenait déjà aucune permission."
)
_UNKNOWN_PERMISSION = Localized(
    "No such permission: {unknown}. The permissions are: {known}.",
    "Permission inconnue : {unknown}. Les permissions sont : {known}.",
)
_NOT_MEMBER = Localized(
    "{email} is not a member of {organization}.", "{email} n'est pas membre de {organization}."
)
_NO_CLUB = Localized("There is no club {organization}.", "Il n'y a pas de club {organization}.")
_LAST_MANAGER = Localized(
    "{email} is the last member who holds members.manage: give it to someone else first, or "
    "nobody could change a member's permissions again.",
    "{email} est le dernier membre à détenir members.manage : donnez-la d'abord à quelqu'un "
    "d'autre, sinon personne ne pourrait plus changer les permissions d'un membre.",
)


def permission_list(value: str) -> list[str]:
    """``--permissions``: names separated by commas (``orders.refund,audit.read``); an empty
    value withdraws every permission."""
    return [name.strip() for name in value.split(",") if name.strip()]


def cmd_members_set_permissions(cs: Countersign, args: argparse.Namespace) -> Result:
    organization = args.org.strip().lower()
    email = args.email.strip().lower()
    try:
        held = cs.club.set_permissions(organization, email, args.permissions)
    except (
        UnknownPermissionError,
        NotMemberError,
        LastMemberManagerError,
        NotFoundError,
    ) as refused:
        raise refusal(refused, organization, email, args.language) from None
    document: dict[str, Any] = {"organization": organization, **held}
    return document, _held_text(held, args.language)


def _held_text(held: dict[str, Any], language: str) -> str:
    permissions = ", ".join(held["permissions"])
    if permissions:
        said = _HOLDS if held["changed"] else _HELD
        return said.text(language, email=held["email"], permissions=permissions)
    said = _HOLDS_NONE if held["changed"] else _HELD_NONE
    return said.text(language, email=held["email"])


def refusal(error: Exception, organization: str, email: str, language: str) -> RefusedError:
    """The refusal in the reader's language, its reason a code a program can branch on."""
    if isinstance(error, UnknownPermissionError):
        unknown, known = ", ".join(error.unknown), ", ".join(error.known)
        text = _UNKNOWN_PERMISSION.text(language, unknown=unknown, known=known)
        return RefusedError("unknown_permission", text, unknown=error.unknown, known=error.known)
    if isinstance(error, LastMemberManagerError):
        return RefusedError("last_member_manager", _LAST_MANAGER.text(language, email=email))
    if isinstance(error, NotMemberError):
        text = _NOT_MEMBER.text(language, email=email, organization=organization)
        return RefusedError("not_a_member", text)
    return RefusedError("no_such_club", _NO_CLUB.text(language, organization=organization))
