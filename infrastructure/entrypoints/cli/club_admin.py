"""The operator's club administration from the command line: ``org create``, ``members add``,
``members remove`` and ``members list``.

Before these, no command made a club or a member (``seed`` makes the demo's), so an operator
could not start a club of their own without writing code. Each is the operator's act: a
club's first manager is added here, and its managers carry on from the pages. A refused one
writes nothing, says why in the reader's language and exits 4, its reason a code a program
can branch on (``--json``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from countersign.application.club_admin import ClubSetupError
from countersign.domain.club.permissions import LastMemberManagerError, UnknownPermissionError
from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import DuplicateError, NotFoundError, NotMemberError, TimeZoneError
from countersign.infrastructure.entrypoints.cli.common import RefusedError, Result
from countersign.infrastructure.entrypoints.cli.members import refusal
from countersign.infrastructure.entrypoints.cli.render import printable

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign

_REGISTERED = Localized(
    "Club {organization} ({name}) registered; its times are shown in {zone}. Add its first "
    "manager: countersign members add --org {organization} --email ... --name ... "
    "--role manager --permissions members.manage,...",
    "Club {organization} ({name}) enregistré ; ses heures sont affichées en {zone}. Ajoutez "
    "son premier responsable : countersign members add --org {organization} --email ... "
    "--name ... --role manager --permissions members.manage,...",
)
_ADDED = Localized(
    "{email} ({name}, {role}) joined {organization}, holding: {permissions}.",
    "{email} ({name}, {role}) a rejoint {organization} et détient : {permissions}.",
)
_NOTHING = Localized("no permission", "aucune permission")
_REMOVED = Localized("{email} left {organization}.", "{email} a quitté {organization}.")
_REFUSED = {
    "bad_slug": Localized(
        '"{value}" cannot be a club\'s short name: use 1 to 40 lowercase letters, digits and '
        "hyphens (granite, maple-leafs); it is the club's id for good",
        "« {value} » ne peut pas être le nom court d'un club : utilisez de 1 à 40 lettres "
        "minuscules, chiffres et tirets (granite, maple-leafs) ; c'est l'identifiant du club "
        "pour de bon",
    ),
    "bad_name": Localized(
        '"{value}" cannot be shown as a name: use letters, digits, spaces and . , \' & ( ) / + -',
        "« {value} » ne peut pas s'afficher comme un nom : utilisez des lettres, des chiffres, "
        "des espaces et . , ' & ( ) / + -",
    ),
    "bad_role": Localized(
        '"{value}" cannot be shown as a role: use a word or two (manager, treasurer)',
        "« {value} » ne peut pas s'afficher comme un rôle : utilisez un mot ou deux (manager, "
        "trésorier)",
    ),
    "bad_email": Localized(
        '"{value}" is not an e-mail address', "« {value} » n'est pas une adresse e-mail"
    ),
    "club_exists": Localized(
        "there is a club {value} already; nothing was changed",
        "il y a déjà un club {value} ; rien n'a été modifié",
    ),
}
_MEMBER_ALREADY = Localized(
    "{email} is a member of {organization} already; members set-permissions changes what they hold",
    "{email} est déjà membre de {organization} ; members set-permissions change ce qu'il détient",
)


def cmd_org_create(cs: Countersign, args: argparse.Namespace) -> Result:
    try:
        made = cs.club.register(args.slug, args.name)
    except ClubSetupError as refused:
        raise _setup_refusal(refused, args.language) from None
    zone = DEFAULT_TIME_ZONE  # until set
    if args.tz:
        try:
            zone = cs.club.set_time_zone(made["organization"], args.tz)
        except TimeZoneError:
            # Registered all the same: the zone is set on its own (org set-timezone).
            zone = DEFAULT_TIME_ZONE
    text = _REGISTERED.text(
        args.language, organization=made["organization"], name=made["name"], zone=zone
    )
    return {**made, "time_zone": zone}, text


def cmd_members_add(cs: Countersign, args: argparse.Namespace) -> Result:
    organization, email = args.org.strip().lower(), args.email.strip().lower()
    try:
        added = cs.club.add_member(organization, email, args.name, args.role, args.permissions)
    except ClubSetupError as refused:
        raise _setup_refusal(refused, args.language) from None
    except DuplicateError:
        text = _MEMBER_ALREADY.text(args.language, email=email, organization=organization)
        raise RefusedError("already_a_member", text) from None
    except (UnknownPermissionError, NotFoundError) as refused:
        raise refusal(refused, organization, email, args.language) from None
    held = ", ".join(added["permissions"]) or _NOTHING.text(args.language)
    text = _ADDED.text(
        args.language,
        email=added["email"],
        name=added["name"],
        role=added["role"],
        organization=organization,
        permissions=held,
    )
    return {"organization": organization, **added}, text


def cmd_members_remove(cs: Countersign, args: argparse.Namespace) -> Result:
    organization, email = args.org.strip().lower(), args.email.strip().lower()
    try:
        removed = cs.club.remove_member(organization, email)
    except (NotMemberError, LastMemberManagerError, NotFoundError) as refused:
        raise refusal(refused, organization, email, args.language) from None
    text = _REMOVED.text(args.language, email=email, organization=organization)
    return {"organization": organization, **removed}, text


def cmd_members_list(cs: Countersign, args: argparse.Namespace) -> Result:
    organization = args.org.strip().lower()
    members: list[dict[str, Any]] = []
    lines = []
    for member in cs.club.members(organization, None):  # NotFoundError: no such club
        permissions = sorted(member.permissions)
        members.append(
            {
                "email": member.email,
                "name": member.name,
                "role": member.role,
                "permissions": permissions,
            }
        )
        held = ", ".join(permissions) or _NOTHING.text(args.language)
        lines.append(printable(f"{member.email}  {member.name} ({member.role}): {held}"))
    return {"organization": organization, "members": members}, "\n".join(lines)


def _setup_refusal(error: ClubSetupError, language: str) -> RefusedError:
    said = _REFUSED[error.reason].text(language, value=printable(error.value)[:80])
    return RefusedError(error.reason, said[:1].upper() + said[1:] + ".")
