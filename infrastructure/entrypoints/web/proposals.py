"""The proposals' pages: the inbox, the review card, approving and declining, the status page."""

from __future__ import annotations

import logging
import math
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from countersign.domain.club.organization import Permission
from countersign.domain.contracts import REGISTRY
from countersign.domain.errors import ConcurrencyConflictError, NotFoundError
from countersign.domain.interaction import Interaction
from countersign.domain.proposal import Proposal
from countersign.domain.scope import Section
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.site import (
    PageError,
    Site,
    User,
    Visit,
    redirect,
)
from countersign.infrastructure.entrypoints.web.views import (
    format_time,
    proposal_record,
    proposal_view,
)
from starlette.responses import Response

log = logging.getLogger("countersign.web")

MAX_NOTE = 500
PAGE_SIZE = 10


class ProposalPages:
    """The handlers of the inbox and of one proposal."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def inbox(self, visit: Visit) -> Response:
        user = visit.signed_in
        readable = _readable_sections(user)
        section = visit.query("section")
        if section not in readable:
            section = ""
        page = _page_number(visit.query("page"))
        items: list[dict[str, Any]] = []
        total = 0
        if readable:
            for runner in self.cs.projection_runners(["browser_view"]):
                runner.catch_up()
            if section:
                chosen: str | None = section
            elif len(readable) == len(Section):
                chosen = None  # every section: no filter
            else:
                chosen = section = readable[0]
            found = self.cs.read_models.inbox(
                str(user.organization.id),
                self.cs.proposals.clock.now(),
                section=chosen,
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
            all_tab=len(readable) == len(Section),
            section=section,
            readable=readable,
            may_refund=user.may(Permission.REFUND_ORDERS),
            notice=notice,
            nav="inbox",
        )

    def _owned(self, visit: Visit) -> Proposal:
        """The club's proposal named in the path; anything else is the same 404 page."""
        proposal = proposal_of(self.cs, visit.signed_in, visit.params.get("proposal_id", ""))
        if proposal is None:
            raise PageError("not_found", 404)
        return proposal

    @staticmethod
    def _may_read(user: User, proposal: Proposal) -> bool:
        contract = REGISTRY.get(proposal.kind)
        return user.may(Permission.READ_AUDIT) or (
            contract is not None and user.may(contract.permission)
        )

    @staticmethod
    def _may_decide(user: User, proposal: Proposal) -> bool:
        contract = REGISTRY.get(proposal.kind)
        return contract is not None and user.may(contract.permission)

    def review(self, visit: Visit) -> Response:
        user = visit.signed_in
        proposal = self._owned(visit)
        if not self._may_read(user, proposal):
            raise PageError("forbidden", 403)
        now = self.cs.proposals.clock.now()
        view = proposal_view(proposal_record(proposal), visit.t, visit.language, now)
        return self.site.render(
            visit,
            "review.html",
            proposal=view,
            may_decide=self._may_decide(user, proposal),
            conversation=self._conversation_link(user, proposal),
            notice=self.site.notice(visit, view["id"]),
            refresh=3 if view["status"] == "executing" else None,
            max_note=MAX_NOTE,
        )

    def _conversation_link(self, user: User, proposal: Proposal) -> str | None:
        try:
            interaction = self.cs.store.read(UUID(proposal.interaction_id), Interaction)
        except (ValueError, NotFoundError):
            return None
        if interaction.organization_id != user.organization.id or interaction.manager != user.email:
            return None
        query = urlencode({"interaction": str(interaction.id)})
        return f"/chat/{interaction.section}/{interaction.resource_id}?{query}"

    def approve(self, visit: Visit) -> Response:
        return self._decide(visit, decline=False)

    def decline(self, visit: Visit) -> Response:
        return self._decide(visit, decline=True)

    def _decide(self, visit: Visit, *, decline: bool) -> Response:
        user = visit.signed_in
        proposal = self._owned(visit)
        pid = str(proposal.id)
        try:
            if decline:
                note = visit.form.get("note", "").replace("\r\n", "\n").strip()[:MAX_NOTE]
                report = self.cs.proposals.decline(pid, user.email, note or None)
            else:
                report = self.cs.proposals.approve(pid, user.email)
        except ConcurrencyConflictError:
            self.site.flash(visit, "busy", pid)
            return redirect(f"/proposals/{pid}")
        if report.result == "not_approvable" and report.reason == "not_found":
            raise PageError("not_found", 404)
        kind = report.reason if report.result == "not_approvable" else report.result
        log.info(
            "%s %s %s: %s (request %s)",
            user.email,
            "declined" if decline else "approved",
            pid,
            kind,
            correlation_id_of(visit.request),
        )
        self.site.flash(visit, str(kind), pid)
        return redirect(f"/proposals/{pid}")

    def status(self, visit: Visit) -> Response:
        user = visit.signed_in
        proposal = self._owned(visit)
        if not self._may_read(user, proposal):
            raise PageError("forbidden", 403)
        now = self.cs.proposals.clock.now()
        view = proposal_view(proposal_record(proposal), visit.t, visit.language, now)
        return self.site.render(
            visit,
            "status.html",
            proposal=view,
            checked_at=format_time(now),
            refresh=5 if view["status"] in ("reconciling", "executing") else None,
        )


def _page_number(value: str) -> int:
    return int(value) if value.isascii() and value.isdigit() and 0 < len(value) < 7 else 1


def _readable_sections(user: User) -> list[str]:
    """Sections whose proposals this person may see: their operations' permission, or audit."""
    return [
        str(section)
        for section in Section
        if user.may(Permission.READ_AUDIT)
        or any(user.may(c.permission) for c in REGISTRY.values() if c.section == section)
    ]


def proposal_of(cs: Countersign, user: User, proposal_id: str) -> Proposal | None:
    """The club's proposal of that id, or None (unknown, malformed, another club's)."""
    try:
        proposal = cs.store.read(UUID(proposal_id.strip()), Proposal)
    except (ValueError, NotFoundError):
        return None
    return proposal if proposal.organization_id == user.organization.id else None
