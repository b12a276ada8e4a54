"""The account page ``/account/passkeys``: the signed-in member's passkeys in their club.

Adding one is a WebAuthn registration: the page carries the options (and the nonce their
challenge is made of); ``/assets/passkey.js`` asks the browser's authenticator and posts its
answer with the form; the application verifies it and records ``PasskeyRegistered`` with the
public key. Naming and removing are plain forms. Every form carries the CSRF token.
"""

from __future__ import annotations

import json
import logging

from countersign.domain.club.passkeys import PasskeyError
from countersign.domain.errors import DuplicateError, NotFoundError
from countersign.infrastructure.entrypoints.web.request_form import form_json
from countersign.infrastructure.entrypoints.web.site import Site, redirect
from countersign.infrastructure.entrypoints.web.views import format_time
from countersign.infrastructure.entrypoints.web.visits import Visit
from starlette.responses import Response

log = logging.getLogger("countersign.web")

PAGE = "/account/passkeys"


class AccountPages:
    """The handlers of ``/account/passkeys``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def page(self, visit: Visit) -> Response:
        user = visit.signed_in
        zone = user.membership.time_zone
        passkeys = [
            {**p, "registered_at": format_time(p["registered_at"], zone, visit.language)}
            for p in self.cs.passkeys.passkeys(user.organization, user.email)
        ]
        begun = self.cs.passkeys.begin_registration(user.organization, user.email)
        notice = visit.session.data.get("passkey_notice")
        if notice is not None:
            visit.session.pop("passkey_notice")
        return self.site.render(
            visit,
            "passkeys.html",
            script="passkey.js",
            passkeys=passkeys,
            options_json=json.dumps(begun["options"]),
            nonce=begun["nonce"],
            notice=visit.t(f"passkeys.{notice}") if isinstance(notice, str) else None,
            nav="passkeys",
        )

    def add(self, visit: Visit) -> Response:
        user = visit.signed_in
        try:
            credential = form_json(visit.form.get("credential", "") or "null")
            if not isinstance(credential, dict):
                raise PasskeyError("no passkey was given")
            self.cs.passkeys.finish_registration(
                user.organization,
                user.email,
                visit.form.get("name", ""),
                visit.form.get("nonce", ""),
                credential,
            )
        except (PasskeyError, DuplicateError, ValueError) as refused:
            log.info("%s could not add a passkey: %s", user.email, refused)
            return self._back(visit, "not_added")
        return self._back(visit, "registered")

    def rename(self, visit: Visit) -> Response:
        user = visit.signed_in
        try:
            self.cs.passkeys.rename(
                user.organization,
                user.email,
                visit.form.get("credential_id", ""),
                visit.form.get("name", ""),
            )
        except (PasskeyError, NotFoundError):
            return self._back(visit, "not_renamed")
        return self._back(visit, "renamed")

    def remove(self, visit: Visit) -> Response:
        user = visit.signed_in
        try:
            self.cs.passkeys.remove(
                user.organization, user.email, visit.form.get("credential_id", "")
            )
        except NotFoundError:
            return self._back(visit, "not_removed")
        return self._back(visit, "removed")

    @staticmethod
    def _back(visit: Visit, notice: str) -> Response:
        visit.session.set("passkey_notice", notice)
        return redirect(PAGE)
