"""Signing in and out: the sign-in form and its throttle, choosing a club, signing out
(here or everywhere), and the language switch."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter

from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.i18n import LANGUAGES
from countersign.infrastructure.entrypoints.web.sessions import new_browser_id
from countersign.infrastructure.entrypoints.web.site import Site, redirect, safe_next
from countersign.infrastructure.entrypoints.web.throttle import (
    Refusal,
    SignInThrottle,
    address_key,
)
from countersign.infrastructure.entrypoints.web.visits import Visit
from countersign.infrastructure.identity.passwords import verify_password
from countersign.infrastructure.identity.session_store import browser_known, remember_browser
from starlette.responses import Response

log = logging.getLogger("countersign.web")

_SIGN_IN_NOTICES = ("signed_out", "signed_out_everywhere", "expired", "session_ended")
CHOOSE_CLUB_SECONDS = 300
#: Password checks one process makes at once. Each is Argon2id at 64 MiB and about a
#: CPU-second, on the thread pool every club's pages share: 45 at once (one address's burst
#: of failures, which the throttle admits up to fifty) grew a server by 2.2 GB and held a
#: signed-in manager's inbox for 8.8 s. A sign-in that finds no check free for it is
#: answered at once (503, Retry-After), nothing checked or counted. One client address
#: holds at most two of them and one account one, so a member looping their own right
#: password (which the throttle never refuses), or one address's burst, leaves the others
#: free for everyone else.
PASSWORD_CHECKS = max(4, 2 * (os.cpu_count() or 1))
CHECKS_PER_ADDRESS = 2
CHECKS_PER_ACCOUNT = 1
BUSY_RETRY_SECONDS = 2


class SignInPages:
    """The handlers of signing in and out."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs
        self._checks = _Checks()

    def sign_in_form(self, visit: Visit) -> Response:
        if visit.user is not None:
            return redirect(safe_next(visit.query("next", 2000)))
        flash = visit.session.data.get("flash")
        notice = None
        if isinstance(flash, dict) and flash.get("kind") in _SIGN_IN_NOTICES:
            visit.session.pop("flash")
            notice = visit.t(f"sign_in.{flash['kind']}")
        return self.site.render(
            visit,
            "sign_in.html",
            next=safe_next(visit.query("next", 2000)),
            email="",
            error=None,
            notice=notice,
        )

    def sign_in(self, visit: Visit) -> Response:
        """A sign-in, while a password check is free for it (``PASSWORD_CHECKS``); otherwise
        the form again at once (503), nothing checked, counted or started."""
        email = visit.form.get("email", "").strip().lower()[:320]
        client = visit.request.client.host if visit.request.client else "unknown"
        keys = (f"account:{email}", address_key(client))
        if not self._checks.take(keys):
            log.info(
                "sign-in refused, no password check free for it (request %s, client %s)",
                correlation_id_of(visit.request),
                client,
            )
            busy = self.site.render(
                visit,
                "sign_in.html",
                503,
                next=safe_next(visit.form.get("next", "")),
                email=email,
                error=visit.t("sign_in.busy"),
            )
            busy.headers["Retry-After"] = str(BUSY_RETRY_SECONDS)
            return busy
        try:
            return self._sign_in(visit)
        finally:
            self._checks.give_back(keys)

    def _sign_in(self, visit: Visit) -> Response:
        email = visit.form.get("email", "").strip().lower()[:320]
        password = visit.form.get("password", "")
        target = safe_next(visit.form.get("next", ""))
        client = visit.request.client.host if visit.request.client else "unknown"
        throttle = SignInThrottle(self.cs.sql, self.cs.clock)
        sessions = self.site.sessions
        browser = sessions.browser_of(visit.request.cookies)
        known = browser is not None and browser_known(self.cs.sql, email, browser, sessions.now())
        attempt = throttle.admit(email, client, browser if known else None)
        if isinstance(attempt, Refusal):
            # Refused before any password check: no Argon2 work, and nothing that depends on
            # whether the email exists (not even the email itself) goes into the page.
            log.info(
                "sign-in refused, too many failures for this %s; retry after %d s"
                " (request %s, client %s)",
                attempt.scope,
                attempt.retry_after,
                correlation_id_of(visit.request),
                client,
            )
            minutes = attempt.minutes
            error = (
                visit.t("sign_in.throttled_one")
                if minutes == 1
                else visit.t("sign_in.throttled", minutes=minutes)
            )
            refused = self.site.render(
                visit, "sign_in.html", 429, next=target, email="", error=error
            )
            refused.headers["Retry-After"] = str(attempt.retry_after)
            return refused
        clubs = self.cs.club.clubs_of(email) if verify_password(self.cs, email, password) else []
        if not clubs:
            log.info(
                "failed sign-in (request %s, client %s)", correlation_id_of(visit.request), client
            )
            return self.site.render(
                visit,
                "sign_in.html",
                next=target,
                email=email,
                error=visit.t("sign_in.failed"),
            )
        throttle.succeeded(attempt)
        # This browser is known for the account from now on (for 180 days from this sign-in):
        # a guesser elsewhere cannot lock its person out of it (throttle.py).
        browser = browser or new_browser_id()
        remember_browser(self.cs.sql, email, browser, sessions.now())
        cookie = sessions.browser_header(browser)
        if len(clubs) == 1:
            visit.session.sign_in(email, clubs[0].organization, clubs[0].version)
            return _remembering(redirect(target), cookie)
        visit.session.choosing(
            email,
            {
                "clubs": [c.organization for c in clubs],
                "at": self.site.sessions.now(),
                "next": target,
            },
        )
        choosing = self.site.render(
            visit,
            "choose_club.html",
            clubs=[{"slug": c.organization, "name": c.club} for c in clubs],
        )
        return _remembering(choosing, cookie)

    def choose_club(self, visit: Visit) -> Response:
        choice = visit.session.pop("choose")
        email = visit.session.email
        slug = visit.form.get("club", "")
        fresh = (
            isinstance(choice, dict)
            and email is not None
            and self.site.sessions.now() - int(choice.get("at", 0)) < CHOOSE_CLUB_SECONDS
        )
        if not fresh or email is None or slug not in choice.get("clubs", []):
            self.site.flash(visit, "expired")
            return redirect("/sign-in")
        club = next((c for c in self.cs.club.clubs_of(email) if c.organization == slug), None)
        if club is None:
            self.site.flash(visit, "expired")
            return redirect("/sign-in")
        visit.session.sign_in(email, slug, club.version)
        return redirect(safe_next(str(choice.get("next", ""))))

    def sign_out(self, visit: Visit) -> Response:
        visit.session.sign_out()
        self.site.flash(visit, "signed_out")
        return redirect("/sign-in")

    def sign_out_everywhere(self, visit: Visit) -> Response:
        """End every session of this person: this browser's, other devices', other clubs'."""
        user = visit.signed_in
        ended = self.site.sessions.revoke_person(user.email)
        log.info(
            "%s signed out everywhere: %d session(s) ended (request %s)",
            user.email,
            ended,
            correlation_id_of(visit.request),
        )
        visit.session.sign_out()
        self.site.flash(visit, "signed_out_everywhere")
        return redirect("/sign-in")

    def switch_language(self, visit: Visit) -> Response:
        chosen = visit.form.get("lang", "")
        response = redirect(safe_next(visit.form.get("next", "")))
        if chosen in LANGUAGES:
            response.headers.append("set-cookie", self.site.sessions.language_header(chosen))
        return response


class _Checks:
    """The password checks under way in this process, by account and by client address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._under_way = 0
        self._held: Counter[str] = Counter()

    def take(self, keys: tuple[str, str]) -> bool:
        """One check for the account and the address ``keys`` name, if one is free for them."""
        account, address = keys
        with self._lock:
            if (
                self._under_way >= PASSWORD_CHECKS
                or self._held[account] >= CHECKS_PER_ACCOUNT
                or self._held[address] >= CHECKS_PER_ADDRESS
            ):
                return False
            self._under_way += 1
            self._held.update(keys)
            return True

    def give_back(self, keys: tuple[str, str]) -> None:
        with self._lock:
            self._under_way -= 1
            self._held.subtract(keys)
            for key in keys:
                if self._held[key] <= 0:
                    del self._held[key]


def _remembering(response: Response, browser_cookie: str) -> Response:
    """``response``, setting the known browser's cookie a sign-in gives."""
    response.headers.append("set-cookie", browser_cookie)
    return response
