"""The members page: the club's members, each with the permissions they hold, and a form that
gives one of them exactly the permissions ticked.

Only members holding ``members.manage`` see it (others get the forbidden page; the
application decides). A change is a POST with the session's CSRF token, answered with a
redirect back to the page; a refused change (taking ``members.manage`` from its last holder,
a person no longer in the club) shows the page again, saying why, and changes nothing. A
person who gave up ``members.manage`` themselves is told on the inbox that it was saved.
"""

from __future__ import annotations

import logging
from typing import Any

from countersign.domain.club.organization import (
    LastMemberManagerError,
    Member,
    Permission,
    UnknownPermissionError,
)
from countersign.domain.contracts import PERMISSIONS, REGISTRY
from countersign.domain.errors import NotMemberError
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.site import Site, redirect
from countersign.infrastructure.entrypoints.web.views import role_name
from countersign.infrastructure.entrypoints.web.visits import Visit
from starlette.responses import Response

log = logging.getLogger("countersign.web")

#: A ticked permission's field: ``permission.orders.refund`` (a form keeps one value a name).
FIELD = "permission."
MAX_EMAIL = 254
MANAGE = Permission.MANAGE_MEMBERS


class MemberPages:
    """The handlers of ``/members``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def page(self, visit: Visit, error: str | None = None, status: int = 200) -> Response:
        user = visit.signed_in
        members = self.cs.club.members(user.organization, user.caller)
        return self.site.render(
            visit,
            "members.html",
            status,
            members=[_member(m, visit) for m in members],
            # Each permission's code, for the command line the foot names (not the boxes').
            codes=[{"name": n, "label": _label(n, visit)} for n in sorted(PERMISSIONS)],
            error=error,
            notice=self.site.notice(visit),
            nav="members",
        )

    def set_permissions(self, visit: Visit) -> Response:
        """Give the member exactly the permissions ticked; the page again, saying why, when
        the change is refused."""
        user = visit.signed_in
        self.cs.token_writes.admit(user.organization, user.email)  # a person's budget too
        email = visit.form.get("email", "").strip()[:MAX_EMAIL]
        ticked = [name[len(FIELD) :] for name in visit.form if name.startswith(FIELD)]
        try:
            held = self.cs.club.set_permissions(user.organization, email, ticked, by=user.caller)
        except LastMemberManagerError:
            return self.page(visit, visit.t("members.error.last_manager", email=email), 422)
        except UnknownPermissionError:  # a form this page never wrote
            return self.page(visit, visit.t("members.error.unknown_permission"), 422)
        except NotMemberError:  # removed meanwhile
            return self.page(visit, visit.t("members.error.not_member", email=email), 422)
        log.info(
            "%s set the permissions of %s (request %s)",
            user.email,
            held["email"],
            correlation_id_of(visit.request),
        )
        if held["email"] == user.email.strip().lower() and MANAGE not in held["permissions"]:
            # Saved, and this page is no longer theirs: say so where they may read it, not
            # with the forbidden page the members page would now answer.
            self.site.flash(visit, "permissions_saved_own")
            return redirect("/")
        self.site.flash(visit, "permissions_saved" if held["changed"] else "permissions_unchanged")
        return redirect("/members")


def _member(member: Member, visit: Visit) -> dict[str, Any]:
    """A member's card: who they are, and every permission with whether they hold it."""
    return {
        "email": member.email,
        "name": member.name,
        "role": _capitalised(role_name(member.role, visit.t)),
        "permissions": [
            {
                "name": name,
                "field": FIELD + name,
                "label": _label(name, visit),
                "held": member.may(name),
            }
            for name in sorted(PERMISSIONS)
        ],
    }


def _label(permission: str, visit: Visit) -> str:
    """The permission in the reader's words. One the catalogue lacks (a plug-in's, or a new
    operation's until its words are written) reads as the titles of the operations it allows,
    in the reader's language; its own name when none does."""
    key = f"members.permission.{permission}"
    label = visit.t(key)
    if label != key:
        return label
    titles = [c.title.text(visit.language) for c in REGISTRY.values() if c.permission == permission]
    return ", ".join(titles) or permission


def _capitalised(text: str) -> str:
    """A role as a label of its own: "Gestionnaire", not "gestionnaire"."""
    return text[:1].upper() + text[1:]
