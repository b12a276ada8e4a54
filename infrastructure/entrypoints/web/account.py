"""The account page ``/account/passkeys``: the signed-in member's passkeys in their club.

Adding one is a WebAuthn registration: the page carries the options (and the nonce their
challenge is made of); ``/assets/passkey.js`` asks the browser's authenticator and posts its
answer with the form; the application verifies it and records ``PasskeyRegistered`` with the
public key. Naming and removing are plain forms. Every form carries the CSRF token.

Adding, naming and removing count against the member's budget of passkey changes
(``COUNTERSIGN_PASSKEY_CHANGE_LIMIT``): past it the page is shown again with 429 and
``Retry-After``, saying that too many changes were made and when to try again; nothing is
written.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable

from countersign.application.passkey_limit import TooManyPasskeyChangesError
from countersign.domain.club.passkeys import PasskeyError
from countersign.domain.errors import DuplicateError, NotFoundError
from countersign.domain.times import distance, seconds_wait
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

    def page(self, visit: Visit, refusal: str | None = None, status: int = 200) -> Response:
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
            address=self.cs.passkeys.ceremonies.origins[0],
            nonce=begun["nonce"],
            # Not "notice": the frame would say it a second time above the page's title.
            changed=visit.t(f"passkeys.{notice}") if isinstance(notice, str) else None,
            refusal=refusal,
            nav="passkeys",
            status=status,
        )

    def _limited(self, visit: Visit, change: Callable[[], Response]) -> Response:
        """``change``'s answer; past the member's budget of passkey changes, the page again
        (429, ``Retry-After``) saying when to try again, nothing written."""
        try:
            return change()
        except TooManyPasskeyChangesError as too_many:
            wait = _wait(too_many.retry_after, visit.language)
            page = self.page(visit, visit.t("passkeys.too_many", wait=wait), status=429)
            page.headers["Retry-After"] = str(too_many.retry_after)
            return page

    def add(self, visit: Visit) -> Response:
        return self._limited(visit, lambda: self._add(visit))

    def rename(self, visit: Visit) -> Response:
        return self._limited(visit, lambda: self._rename(visit))

    def remove(self, visit: Visit) -> Response:
        return self._limited(visit, lambda: self._remove(visit))

    def _add(self, visit: Visit) -> Response:
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

    def _rename(self, visit: Visit) -> Response:
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

    def _remove(self, visit: Visit) -> Response:
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


def _wait(seconds: int, language: str) -> str:
    """How long until a change may be made, as the page says it: "40 seconds", "12 min",
    "1 h" (minutes rounded up: never sooner than it may)."""
    if seconds < 60:
        return seconds_wait(seconds, language)
    return distance(math.ceil(seconds / 60) * 60, language)
