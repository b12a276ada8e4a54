"""The webhooks page: a club's endpoints with their health, adding and removing one, and its
dead letters, each with a Redeliver button.

Only members holding ``webhooks.manage`` see it (others get the forbidden page; the
application decides). Every change is a POST with the session's CSRF token, answered with a
redirect back to the page; adding an endpoint, with the page itself. An endpoint added here
goes through the same checks as one added from the command line or the API
(``Webhooks.add``: an http(s) URL, never an internal address), and its signing secret is
shown once, on the page that answers the form: never in the session store, whose row would
hold it until the page after a redirect was seen (a tab closed first, or the session
revoked meanwhile: until the row expired).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from countersign.domain.club.webhooks import MAX_URL_LENGTH, WebhookUrlError
from countersign.domain.contracts import REGISTRY
from countersign.domain.errors import DuplicateError, NotFoundError
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.site import Site, redirect
from countersign.infrastructure.entrypoints.web.views import format_time
from countersign.infrastructure.entrypoints.web.visits import User, Visit
from countersign.infrastructure.identity import session_store
from countersign.infrastructure.notifications.webhooks import EndpointRemovedError, Webhooks
from starlette.responses import Response

log = logging.getLogger("countersign.web")

MAX_DEAD_LETTERS = 50
#: How far back an endpoint's error rate looks.
HEALTH_WINDOW = timedelta(hours=24)
#: The session key that once carried a new endpoint's secret to the page after a redirect:
#: erased from every session row (``WebhookPages``), never set again.
NEW_SECRET = "webhook_secret"  # noqa: S105 - the name of a session key, not a secret


class WebhookPages:
    """The handlers of ``/webhooks``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs
        session_store.erase(self.cs.sql, NEW_SECRET)  # left by an earlier version

    def page(
        self,
        visit: Visit,
        url: str = "",
        error: str | None = None,
        status: int = 200,
        added: dict[str, str] | None = None,
    ) -> Response:
        user = visit.signed_in
        webhooks = Webhooks(self.cs)
        now = self.cs.clock.now()
        endpoints = webhooks.health(user.caller, user.organization, now - HEALTH_WINDOW)
        urls = {e["endpoint_id"]: e["url"] for e in endpoints}
        dead = webhooks.deliveries(
            user.caller, user.organization, dead_only=True, limit=MAX_DEAD_LETTERS
        )
        return self.site.render(
            visit,
            "webhooks.html",
            status,
            endpoints=[_endpoint(e, visit, self._name(user, e["added_by"])) for e in endpoints],
            dead_letters=[_dead_letter(d, urls, visit) for d in dead],
            failing=webhooks.failing(user.caller, user.organization),
            added=added,
            url=url,
            error=error,
            max_url=MAX_URL_LENGTH,
            notice=self.site.notice(visit),
            nav="webhooks",
        )

    def add(self, visit: Visit) -> Response:
        """Register the URL typed in the form and answer with the page showing its secret,
        this once (201); the page again, saying what is wrong and keeping what was typed,
        when it is refused."""
        user = visit.signed_in
        self.cs.token_writes.admit(user.organization, user.email)  # a person's budget
        url = visit.form.get("url", "").strip()[: MAX_URL_LENGTH + 1]
        try:
            added = Webhooks(self.cs).add(user.caller, user.organization, url)
        except WebhookUrlError as refused:
            error = visit.t(f"webhooks.error.{refused.code}")
            return self.page(visit, url=url, error=error, status=422)
        except DuplicateError:
            return self.page(visit, url=url, error=visit.t("webhooks.error.duplicate"), status=422)
        log.info(
            "%s added webhook endpoint %s (request %s)",
            user.email,
            added.endpoint_id,
            correlation_id_of(visit.request),
        )
        return self.page(visit, status=201, added={"url": added.url, "secret": added.secret})

    def remove(self, visit: Visit) -> Response:
        user = visit.signed_in
        self.cs.token_writes.admit(user.organization, user.email)  # a person's budget
        endpoint_id = visit.form.get("endpoint", "").strip()[:80]
        try:
            Webhooks(self.cs).remove(user.caller, user.organization, endpoint_id)
        except NotFoundError:  # removed meanwhile, or never this club's
            self.site.flash(visit, "endpoint_not_removed")
        else:
            log.info(
                "%s removed webhook endpoint %s (request %s)",
                user.email,
                endpoint_id,
                correlation_id_of(visit.request),
            )
            self.site.flash(visit, "endpoint_removed")
        return redirect("/webhooks")

    def redeliver(self, visit: Visit) -> Response:
        user = visit.signed_in
        self.cs.token_writes.admit(user.organization, user.email)  # a person's budget
        chosen = visit.form.get("delivery", "").strip()[:80]
        try:
            ids = Webhooks(self.cs).redeliver(
                user.caller, user.organization, None if chosen == "all" else chosen
            )
        except EndpointRemovedError:
            self.site.flash(visit, "redeliver_endpoint_removed")
            return redirect("/webhooks")
        nothing = "nothing_redelivered_all" if chosen == "all" else "nothing_redelivered"
        self.site.flash(visit, "redelivered" if ids else nothing)
        return redirect("/webhooks")

    def _name(self, user: User, added_by: str) -> str | None:
        """Who added an endpoint, by name; None for the operator's command line."""
        if added_by == "operator":
            return None
        try:
            return self.cs.club.membership(user.organization, added_by).member.name
        except NotFoundError:
            return added_by  # no longer a member: the address is all the club knows


def _endpoint(endpoint: dict[str, Any], visit: Visit, added_by: str | None) -> dict[str, Any]:
    """An endpoint's card: who added it, and its health in the reader's words."""
    t, zone = visit.t, visit.signed_in.membership.time_zone
    last = endpoint["last_attempt"]
    attempts, failed = endpoint["attempts"], endpoint["failed"]
    if last is None:
        state, tone = "new", "muted"
    elif last["result_key"] == "delivered":
        state, tone = "healthy", "ok"
    else:
        state, tone = "failing", "bad"
    percent = round(100 * failed / attempts) if attempts else 0
    return {
        "id": endpoint["endpoint_id"],
        "url": endpoint["url"],
        "added_by": (
            t("webhooks.added_by", who=added_by) if added_by else t("webhooks.added_by_operator")
        ),
        "state": t(f"webhooks.state.{state}"),
        "tone": tone,
        "last": (
            t(
                "webhooks.last_attempt_was",
                result=_result(last, t),
                when=format_time(last["started_at"], zone, visit.language),
            )
            if last
            else t("webhooks.no_attempt")
        ),
        "error_rate": (
            t("webhooks.error_rate_value", percent=percent, failed=failed, count=attempts)
            if attempts
            else t("webhooks.no_recent_attempts")
        ),
        "next_retry": (
            t(
                "webhooks.next_retry_value",
                when=format_time(endpoint["next_retry_at"], zone, visit.language),
                count=endpoint["retrying"],
            )
            if endpoint["retrying"]
            else t("webhooks.no_retry")
        ),
    }


def _result(attempt: dict[str, Any], t: Any) -> str:
    return str(t(f"webhooks.result.{attempt['result_key']}", code=attempt["status_code"]))


def _dead_letter(delivery: dict[str, Any], urls: dict[str, str], visit: Visit) -> dict[str, Any]:
    last = delivery["attempt_log"][-1] if delivery["attempt_log"] else None
    contract = REGISTRY.get(delivery["operation"])
    zone = visit.signed_in.membership.time_zone
    target = delivery["target"]
    return {
        "id": delivery["delivery_id"],
        "event_id": delivery["event_id"],
        "type": visit.t(f"webhooks.type.{delivery['type'].removeprefix('proposal.')}"),
        "operation": contract.title.text(visit.language) if contract else delivery["operation"],
        "proposal_id": delivery["proposal_id"],
        "channel": visit.t(f"webhooks.channel.{delivery['channel']}"),
        "target": urls.get(target, target) if delivery["channel"] == "webhook" else target,
        "attempts": delivery["attempts"],
        "answer": _result(last, visit.t) if last is not None else "",
        "endpoint_removed": delivery["endpoint_removed"],
        "last_at": format_time(last["started_at"], zone, visit.language) if last else "",
    }
