"""The proposals' pages: the inbox, the review card, approving and declining, the status page."""

from __future__ import annotations

import logging
import math
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from countersign.application.access import sections_of
from countersign.application.errors import ForbiddenError
from countersign.domain.club.organization import Permission
from countersign.domain.errors import ConcurrencyConflictError
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.site import (
    PageError,
    Site,
    Visit,
    redirect,
)
from countersign.infrastructure.entrypoints.web.views import (
    format_time,
    proposal_view,
)
from starlette.responses import Response

log = logging.getLogger("countersign.web")

MAX_NOTE = 500
PAGE_SIZE = 10


class ProposalPages:
    """The handlers of the inbox and of one proposal. Who may see and decide which proposal
    is the application's (``cs.access``); these pages show what it answers."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def inbox(self, visit: Visit) -> Response:
        user = visit.signed_in
        readable = self.cs.access.readable_sections(user.caller)
        section = visit.query("section")
        if section not in readable:
            section = ""
        page = _page_number(visit.query("page"))
        items: list[dict[str, Any]] = []
        total = 0
        if readable:
            # Without a section: every section the person may read.
            listed = self.cs.access.inbox_scope(user.caller, section or None)
            section = listed.section or ""
            for runner in self.cs.projection_runners(["browser_view"]):
                runner.catch_up()
            found = self.cs.read_models.inbox(
                listed.organization_id,
                self.cs.proposals.clock.now(),
                sections=listed.sections,
                page=page,
                page_size=PAGE_SIZE,
            )
            now = self.cs.proposals.clock.now()
            items = [proposal_view(item, visit.t, visit.language, now) for item in found["items"]]
            total = int(found["total"])
        pages = max(1, math.ceil(total / PAGE_SIZE))

        def page_link(number: int) -> str:
            query = {"page": str(number)}
            if section:
                query["section"] = section
            return "/?" + urlencode(query)

        notice = self.site.notice(visit)
        return self.site.render(
            visit,
            "inbox.html",
            items=items,
            total=total,
            page=page,
            pages=pages,
            newer=page_link(page - 1) if page > 1 else None,
            older=page_link(page + 1) if page < pages else None,
            sections=readable if len(readable) > 1 else [],
            all_tab=len(readable) == len(sections_of()),
            section=section,
            readable=readable,
            may_refund=user.may(Permission.REFUND_ORDERS),
            notice=notice,
            nav="inbox",
        )

    def review(self, visit: Visit) -> Response:
        reviewed = self.cs.access.review(_proposal_id(visit), visit.signed_in.caller)
        now = self.cs.proposals.clock.now()
        view = proposal_view(reviewed.record, visit.t, visit.language, now)
        conversation = None
        if reviewed.conversation is not None:
            link = reviewed.conversation
            query = urlencode({"interaction": link.interaction_id})
            conversation = f"/chat/{link.section}/{link.resource_id}?{query}"
        return self.site.render(
            visit,
            "review.html",
            proposal=view,
            may_decide=reviewed.may_decide,
            conversation=conversation,
            notice=self.site.notice(visit, view["id"]),
            refresh=3 if view["status"] == "executing" else None,
            max_note=MAX_NOTE,
        )

    def approve(self, visit: Visit) -> Response:
        return self._decide(visit, decline=False)

    def decline(self, visit: Visit) -> Response:
        return self._decide(visit, decline=True)

    def _decide(self, visit: Visit, *, decline: bool) -> Response:
        user = visit.signed_in
        pid = _proposal_id(visit)
        kind: str
        try:
            if decline:
                note = visit.form.get("note", "").replace("\r\n", "\n").strip()[:MAX_NOTE]
                report = self.cs.access.decline(pid, user.caller, note or None)
            else:
                report = self.cs.access.approve(pid, user.caller)
        except ConcurrencyConflictError:
            self.site.flash(visit, "busy", pid)
            return redirect(f"/proposals/{pid}")
        except ForbiddenError:
            kind = "forbidden"
        else:
            if report.result == "not_approvable" and report.reason == "not_found":
                raise PageError("not_found", 404)
            kind = str(report.reason if report.result == "not_approvable" else report.result)
        log.info(
            "%s %s %s: %s (request %s)",
            user.email,
            "declined" if decline else "approved",
            pid,
            kind,
            correlation_id_of(visit.request),
        )
        self.site.flash(visit, kind, pid)
        return redirect(f"/proposals/{pid}")

    def status(self, visit: Visit) -> Response:
        record = self.cs.access.record(_proposal_id(visit), visit.signed_in.caller)
        now = self.cs.proposals.clock.now()
        view = proposal_view(record, visit.t, visit.language, now)
        return self.site.render(
            visit,
            "status.html",
            proposal=view,
            checked_at=format_time(now),
            refresh=5 if view["status"] in ("reconciling", "executing") else None,
        )


def _proposal_id(visit: Visit) -> str:
    """The proposal id in the path, in its one spelling; a malformed one is not found."""
    try:
        return str(UUID(visit.params.get("proposal_id", "").strip()))
    except ValueError:
        raise PageError("not_found", 404) from None


def _page_number(value: str) -> int:
    return int(value) if value.isascii() and value.isdigit() and 0 < len(value) < 7 else 1
