"""The webhooks page: a club's endpoints and its dead letters, each with a Redeliver button.

Only members holding ``webhooks.manage`` see it (others get the forbidden page; the
application decides). Redelivering is a POST with the session's CSRF token, answered with a
redirect back to the page. Endpoints are added and removed from the command line or the API,
where the signing secret can be shown once.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts import REGISTRY
from countersign.infrastructure.entrypoints.web.site import Site, Visit, redirect
from countersign.infrastructure.entrypoints.web.views import format_time
from countersign.infrastructure.notifications.webhooks import Webhooks
from starlette.responses import Response

MAX_DEAD_LETTERS = 50


class WebhookPages:
    """The handlers of ``/webhooks``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def page(self, visit: Visit) -> Response:
        user = visit.signed_in
        webhooks = Webhooks(self.cs)
        endpoints = webhooks.endpoints(user.caller, user.organization)
        urls = {e["endpoint_id"]: e["url"] for e in endpoints}
        dead = webhooks.deliveries(
            user.caller, user.organization, dead_only=True, limit=MAX_DEAD_LETTERS
        )
        zone = user.membership.time_zone
        return self.site.render(
            visit,
            "webhooks.html",
            endpoints=endpoints,
            dead_letters=[_dead_letter(d, urls, visit, zone) for d in dead],
            notice=self.site.notice(visit),
            nav="webhooks",
        )

    def redeliver(self, visit: Visit) -> Response:
        user = visit.signed_in
        chosen = visit.form.get("delivery", "").strip()[:80]
        ids = Webhooks(self.cs).redeliver(
            user.caller, user.organization, None if chosen == "all" else chosen
        )
        self.site.flash(visit, "redelivered" if ids else "nothing_redelivered")
        return redirect("/webhooks")


def _dead_letter(
    delivery: dict[str, Any], urls: dict[str, str], visit: Visit, zone: str
) -> dict[str, Any]:
    last = delivery["attempt_log"][-1] if delivery["attempt_log"] else None
    contract = REGISTRY.get(delivery["operation"])
    answer = ""
    if last is not None:
        answer = visit.t(f"webhooks.result.{last['result_key']}", code=last["status_code"])
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
        "answer": answer,
        "last_at": format_time(last["started_at"], zone, visit.language) if last else "",
    }
