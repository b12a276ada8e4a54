"""The inbox: what awaits the person's decision, what they approved that waits on others,
what needs attention after a decision; or, a filter away, every recent outcome."""

from __future__ import annotations

import math
from datetime import datetime
from functools import partial
from typing import Any
from urllib.parse import urlencode

from countersign.application.authorization import sections_of
from countersign.application.cards import InboxCards
from countersign.application.policy_recheck import REQUESTER_BARRED
from countersign.infrastructure.entrypoints.web.order_field import order_field
from countersign.infrastructure.entrypoints.web.proposals import settling_view
from countersign.infrastructure.entrypoints.web.site import Site
from countersign.infrastructure.entrypoints.web.views import (
    as_time,
    format_time,
    page_number,
    proposal_view,
)
from countersign.infrastructure.entrypoints.web.visits import Visit
from starlette.responses import Response

PAGE_SIZE = 10
#: At most this many proposals the person approved are listed as waiting on others.
WAITING_SIZE = 20


class InboxPage:
    """The inbox's handler. Which proposals the person may list is the application's
    (``cs.access.inbox_scope``); the page shows what the read models answer for it."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def inbox(self, visit: Visit) -> Response:
        """Four lists: what awaits the person's decision, what they may read but another
        manager decides (both paged alike), what they approved that waits on others, and
        what needs attention after a decision; or, a filter away (``?view=recent``), every
        recent outcome."""
        user = visit.signed_in
        readable = self.cs.access.readable_sections(user.caller)
        section = visit.query("section")
        if section not in readable:
            section = ""
        recent = visit.query("view") == "recent"
        page = page_number(visit.query("page"))
        now = self.cs.clock.now()
        listed: dict[str, Any] = {"items": [], "total": 0}
        attention: dict[str, Any] = {"items": [], "total": 0}
        waiting: dict[str, Any] = {"items": [], "total": 0}
        followed: dict[str, Any] = {"items": [], "total": 0}
        decides = False
        if readable:
            # Without a section: every section the person may read.
            scope = self.cs.access.inbox_scope(user.caller, section or None)
            section = scope.section or ""
            decides = bool(scope.decidable)
            self.site.catch_up_inbox(visit)
            found = self.cs.read_models
            if recent:
                listed = found.recent(
                    scope.organization_id,
                    sections=scope.sections,
                    operations=scope.operations,
                    page=page,
                    page_size=PAGE_SIZE,
                )
            else:
                # What the person approved waits on others, in a group of its own; what
                # they may read but not decide awaits another manager, in another.
                pending = partial(
                    found.inbox,
                    scope.organization_id,
                    now,
                    sections=scope.sections,
                    operations=scope.pending_operations,
                    barred=scope.barred,  # their own that a policy bars them from approving
                )
                to_decide = partial(pending, not_approved_by=user.email, page=page)
                # Its count also counts the club's pending proposals nobody can decide here
                # (a plug-in turned off), which no list shows: one statement for both.
                listed = to_decide(
                    deciding=scope.decidable, page_size=PAGE_SIZE, enabled=scope.enabled
                )
                followed = to_decide(not_deciding=scope.decidable, page_size=PAGE_SIZE)
                waiting = pending(approved_by=user.email, page_size=WAITING_SIZE)
                attention = found.needs_attention(
                    scope.organization_id,
                    sections=scope.sections,
                    operations=scope.operations,
                    overdue_before=self.cs.cards.overdue_claims_before(),
                )

        cards = [*listed["items"], *followed["items"], *waiting["items"], *attention["items"]]
        read = self.cs.access.inbox_cards(user.caller, cards)  # one read of the club

        def views(found: dict[str, Any]) -> list[dict[str, Any]]:
            return [self._inbox_card(item, visit, now, read) for item in found["items"]]

        total = int(listed["total"])
        not_enabled = listed.get("not_enabled") or {"total": 0}
        first_expiry = not_enabled.get("first_expires_at")
        zone = user.membership.time_zone
        pages = max(1, math.ceil(max(total, int(followed["total"])) / PAGE_SIZE))

        def page_link(number: int) -> str:
            query = {"page": str(number)}
            if section:
                query["section"] = section
            if recent:
                query["view"] = "recent"
            return "/?" + urlencode(query)

        def list_end(count: int) -> dict[str, Any]:
            """Where a list of ``count`` proposals ends, for a page past it."""
            last = max(1, math.ceil(count / PAGE_SIZE))
            return {"last": last, "href": page_link(last)}

        def filter_link(view: str, name: str) -> str:
            query = {key: value for key, value in (("section", name), ("view", view)) if value}
            return "/" + ("?" + urlencode(query) if query else "")

        return self.site.render(
            visit,
            "inbox.html",
            items=views(listed),
            total=total,
            decides=decides,
            followed=views(followed),
            followed_total=int(followed["total"]),
            waiting=views(waiting),
            waiting_total=int(waiting["total"]),
            attention=views(attention),
            attention_total=int(attention["total"]),
            not_enabled=int(not_enabled["total"]),
            not_enabled_expiry=format_time(first_expiry, zone, visit.language),
            recent=recent,
            open_link=filter_link("", section),
            recent_link=filter_link("recent", section),
            section_link=lambda name: filter_link("recent" if recent else "", name),
            page=page,
            pages=pages,
            # Past the last page, back to it rather than to a page as far past.
            newer=page_link(min(page - 1, pages)) if page > 1 else None,
            list_end=list_end,
            older=page_link(page + 1) if page < pages else None,
            sections=readable if len(readable) > 1 else [],
            all_tab=len(readable) == len(sections_of()),
            section=section,
            readable=readable,
            order_field=order_field(visit),
            notice=self.site.notice(visit),
            nav="inbox",
        )

    def _inbox_card(
        self, row: dict[str, Any], visit: Visit, now: datetime, read: InboxCards
    ) -> dict[str, Any]:
        """An inbox card, counted as its card counts it and flagged when approving sends it
        back (``read``); one waiting on its provider says since when, and what settles it."""
        record = read.card(row)
        view = proposal_view(
            record, visit.t, visit.language, now, visit.signed_in.membership.time_zone
        )
        waiting = self.cs.cards.settling(view["status"], as_time(record.get("approved_at")))
        barred = view["id"] in read.requester_barred
        return {
            **view,
            "settling": settling_view(waiting, visit),
            "policy_changed": view["id"] in read.policy_changed,
            "requester_barred": barred,
            "your_approval_lapsed": barred and _lapsed_by(record, visit.signed_in.email),
        }


def _lapsed_by(record: dict[str, Any], email: str) -> bool:
    """Whether ``email``'s approval of ``record`` no longer counts because a policy bars its
    requester (counted out by ``InboxCards.card``, or recorded so: ``ApprovalLapsed``)."""
    return any(
        str(lapsed.get("approved_by")).lower() == email.strip().lower()
        and lapsed.get("reason") == REQUESTER_BARRED
        for lapsed in record.get("no_longer_counting") or ()
    )
