"""The proposals' pages: the review card, approving and declining, the status page (the
inbox is ``inbox.py``)."""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from countersign.application.errors import ForbiddenError, NotApprovableError
from countersign.application.proposal_access import ProposalReview
from countersign.application.settlement import Settling
from countersign.domain.contracts import REGISTRY
from countersign.domain.errors import ConcurrencyConflictError, NotFoundError
from countersign.domain.messages import (
    APPROVED_WITH_PASSKEY,
    lapsed_approval_message,
    origin_line,
    proposal_headline,
    withdrawn_message,
    withdraws_line,
)
from countersign.domain.times import at_time, distance, since_time
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.approve_form import (
    assertion,
    confirm_token,
    unverified_text,
    vouched_here,
)
from countersign.infrastructure.entrypoints.web.site import Site, redirect
from countersign.infrastructure.entrypoints.web.views import (
    as_time,
    chat_address,
    decision,
    format_time,
    notice_outcome,
    policy_lines,
    proposal_view,
)
from countersign.infrastructure.entrypoints.web.visits import PageError, User, Visit
from starlette.responses import Response

log = logging.getLogger("countersign.web")

MAX_NOTE = 500


class ProposalPages:
    """The handlers of one proposal. Who may see and decide which proposal
    is the application's (``cs.access``); these pages show what it answers."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def review(self, visit: Visit) -> Response:
        user = visit.signed_in
        reviewed = self.cs.access.review(proposal_id_of(visit), user.caller)
        now = self.cs.clock.now()
        view = proposal_view(reviewed.record, visit.t, visit.language, now, _zone(visit))
        conversation = None
        if reviewed.conversation is not None:
            link = reviewed.conversation
            query = urlencode({"interaction": link.interaction_id})
            conversation = f"{chat_address(link.section, link.resource_id)}?{query}"
        mine = decision(view, reviewed, user.email)
        passkey = None
        # One its seals do not vouch for is set aside when approved, one the policy now asks
        # more of sent back, before any passkey or confirmation counts: none is asked for.
        sealed_as_shown = reviewed.unverified is None and not reviewed.policy_changed
        if (
            mine.may_approve
            and sealed_as_shown
            and (reviewed.record.get("policy") or {}).get("require_passkey")
        ):
            # Only a proposal open to approval gets one (one that expired since it was read
            # is refused, as the API refuses it): the page then offers no approval to sign.
            with contextlib.suppress(NotApprovableError):
                challenge = self.cs.access.approval_challenge(view["id"], user.caller)
                address = self.cs.passkeys.ceremonies.origins[0]
                passkey = {"options_json": json.dumps(challenge["options"]), **challenge}
                passkey["address"] = address
            if passkey is not None and not passkey["passkeys"]:
                # Nothing of theirs could sign it: no approval to offer, a passkey to add.
                mine, passkey = replace(mine, may_approve=False, needs_passkey=True), None
        signed = reviewed.record.get("approval_passkeys") or {}
        return self.site.render(
            visit,
            "review.html",
            script="passkey.js" if passkey else None,
            passkey=passkey,
            proposal=view,
            may_decide=reviewed.may_decide,
            # Its plug-in turned off: nobody may decide it, and "your role" would be wrong.
            operation_enabled=view["operation"] in REGISTRY,
            decision=mine,
            approvers=[
                self._name(user, email)
                + (
                    f" — {APPROVED_WITH_PASSKEY.text(visit.language, name=signed[email])}"
                    if email in signed
                    else ""
                )
                for email in view["approvals"]
            ],
            no_longer_counting=[
                lapsed_approval_message(
                    view["operation"], self._name(user, email), reason, visit.language
                )
                for email, reason in view["no_longer_counting"]
            ],
            policy=policy_lines(
                reviewed.record.get("policy"),
                dict(reviewed.record.get("preview") or {}),
                visit.t,
                visit.language,
            ),
            changes=self._changes(view, visit),
            conversation=conversation,
            next_step=_next_step(
                view, conversation or chat_address(view["section"], reviewed.chat_resource), visit
            ),
            requester=_requester(reviewed, visit),
            approved_by=self._who(user, view["approved_by"]),
            declined_by=self._who(user, view["declined_by"]),
            origin=origin_line(
                reviewed.record.get("origin"),
                visit.language,
                reviewed.record.get("requested_through"),
            ),
            notice=self.site.notice(visit, view["id"]),
            refresh=REFRESH.get(view["status"]),
            max_note=MAX_NOTE,
            withdraws=_withdraws(reviewed, visit),
            withdrawn=_withdrawn(reviewed, visit, now),
            replaces=self.site.replaces(visit, view),
            settling=settling_view(reviewed.settling, visit),
            unverified=unverified_text(reviewed, visit),
            policy_changed=reviewed.policy_changed and reviewed.unverified is None,
        )

    def _name(self, user: User, email: str) -> str:
        """A member's name as their club knows them now; their email once they left it."""
        try:
            return self.cs.club.membership(user.organization, email).member.name
        except NotFoundError:
            return email

    def _who(self, user: User, email: Any) -> str:
        """Who decided, as "Requested by" reads: their name and address (the address alone
        once they left the club)."""
        if not email:
            return ""
        name = self._name(user, str(email))
        return str(email) if name == email else f"{name} ({email})"

    def _changes(self, view: dict[str, Any], visit: Visit) -> list[dict[str, str]]:
        """What a revision changed against the version it revised, field by field."""
        if not view["revision_of"]:
            return []
        card = self.cs.access.card(view["id"], visit.signed_in.caller, visit.language)
        return [dict(change) for change in card.changes]

    def approve(self, visit: Visit) -> Response:
        """Approve; an effect that cannot be undone first shows what it is, once, on a page of
        its own (the form is answered by a redirect to it, so the browser's back button after
        approving reloads that page, never a form's answer), and runs when that page's form
        comes back with ``confirm``. The JSON API approves by id alone."""
        if visit.form.get("unverified") == "yes" and vouched_here(
            self.cs.access, visit, proposal_id_of(visit)
        ):
            # Sent from a warning that its seals do not vouch for it (another process read the
            # record changed in the database), to a process that holds it as sealed (the one
            # that proposed it, or read it before): what this one would carry out is not what
            # the person read. Nothing is approved; they read it again here.
            pid = proposal_id_of(visit)
            self.site.flash(visit, "unverified_elsewhere", pid)
            return redirect(f"/proposals/{pid}")
        if visit.form.get("confirm") != "yes" and self._to_confirm(visit) is not None:
            proposal_id = proposal_id_of(visit)
            asked = urlencode({"asked": confirm_token(visit, proposal_id)})
            return redirect(f"/proposals/{proposal_id}/approve?{asked}")
        return self._decide(visit, decline=False)

    def confirmation(self, visit: Visit) -> Response:
        """The confirmation page while it is still asked for, to the browser whose approve
        form asked for it (``asked``: a link to it, say one a model wrote, leads to the review
        page, which shows who asked for what, and how, before anyone approves); otherwise
        (approved since, or nothing to confirm) the proposal's own page. Showing it approves
        nothing."""
        proposal_id = proposal_id_of(visit)
        asked = visit.query("asked", 64).encode()
        if not hmac.compare_digest(asked, confirm_token(visit, proposal_id).encode()):
            return redirect(f"/proposals/{proposal_id}")
        found = self._to_confirm(visit)
        if found is None:
            return redirect(f"/proposals/{proposal_id}")
        view, reviewed = found
        return self.site.render(
            visit, "confirm.html", proposal=view, withdraws=_withdraws(reviewed, visit)
        )

    def _to_confirm(self, visit: Visit) -> tuple[dict[str, Any], ProposalReview] | None:
        """The proposal's view and review, if it needs a confirmation and the caller may
        approve it now; otherwise None, and approving answers as it always does."""
        try:
            reviewed = self.cs.access.review(proposal_id_of(visit), visit.signed_in.caller)
        except ForbiddenError:
            return None
        now = self.cs.clock.now()
        view = proposal_view(reviewed.record, visit.t, visit.language, now, _zone(visit))
        mine = decision(view, reviewed, visit.signed_in.email)
        # Only the approval that runs it: an earlier one of several changes nothing yet.
        if not (mine.may_approve and mine.final and view["irreversible"]):
            return None
        if reviewed.unverified is not None or reviewed.policy_changed:  # it runs nothing
            return None
        return view, reviewed

    def decline(self, visit: Visit) -> Response:
        return self._decide(visit, decline=True)

    def _decide(self, visit: Visit, *, decline: bool) -> Response:
        user = visit.signed_in
        pid = proposal_id_of(visit)
        kind: str
        try:
            if decline:
                note = visit.form.get("note", "").replace("\r\n", "\n").strip()[:MAX_NOTE]
                report = self.cs.access.decline(pid, user.caller, note or None)
            else:
                report = self.cs.access.approve(pid, user.caller, assertion(visit))
        except ConcurrencyConflictError:
            self.site.flash(visit, "busy", pid)
            return redirect(f"/proposals/{pid}")
        except ForbiddenError:
            kind = "forbidden"
        else:
            if report.result == "not_approvable" and report.reason == "not_found":
                raise PageError("not_found", 404)
            # Why not, or why not yet (already approved by you), else what happened.
            kind = str(report.reason or report.result)
            if kind == "superseded" and report.superseded_reason == "withdrawn":
                kind = "withdrawn"  # another proposal was carried out: not a newer one
            elif kind == "executed" and report.outcome:
                # The notice above the card says how it ended, as the card below does.
                kind = f"executed.{notice_outcome(report.outcome)}"
        if decline and kind in DECLINE_REFUSALS:
            kind = f"decline.{kind}"  # a decline that did not happen says so, in its words
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
        reviewed = self.cs.access.review(proposal_id_of(visit), visit.signed_in.caller)
        now = self.cs.clock.now()
        view = proposal_view(reviewed.record, visit.t, visit.language, now, _zone(visit))
        return self.site.render(
            visit,
            "status.html",
            proposal=view,
            next_step=None,
            checked_at=format_time(now, _zone(visit), visit.language),
            refresh=5 if view["status"] in ("reconciling", "executing") else None,
            settling=settling_view(reviewed.settling, visit),
            unverified=unverified_text(reviewed, visit),
        )


#: Why a decline was not recorded, where the approve path's words ("it can no longer be
#: approved", "nothing was executed again") would not say that the decline did not happen.
DECLINE_REFUSALS = frozenset(
    {"already_completed", "not_pending", "expired", "in_progress", "forbidden"}
)


#: Seconds after which a page of a proposal in this state reloads itself (no script needed).
REFRESH = {"executing": 3, "reconciling": 15}


def _next_step(view: dict[str, Any], conversation: str, visit: Visit) -> dict[str, str] | None:
    """The one thing the outcome asks of the manager next, as a button."""
    if view["reconciling"]:
        return {"href": f"/proposals/{view['id']}/status", "label": visit.t("review.status_page")}
    if view["status"] in ("revision_required", "expired") and not view["already_so"]:
        # Their own conversation shows why it was not executed (or that it expired); anyone
        # else starts one about the same record.
        return {"href": conversation, "label": visit.t("review.revise")}
    return None


def _withdraws(reviewed: ProposalReview, visit: Visit) -> dict[str, Any] | None:
    """The warning before approval: what approving also withdraws, each one named (and
    linked) where the person may read it."""
    if not reviewed.withdraws:
        return None
    items: list[dict[str, str | None]] = []
    for withdrawn in reviewed.withdraws:
        if withdrawn["readable"]:
            kind, preview = withdrawn["operation"], withdrawn["preview"]
            headline = proposal_headline(kind, preview, visit.language)
            items.append({"headline": headline, "href": f"/proposals/{withdrawn['proposal_id']}"})
        else:
            items.append({"headline": visit.t("review.withdraws_private"), "href": None})
    operation = str(reviewed.record["operation"])
    return {"lead": withdraws_line(operation, len(items), visit.language), "items": items}


def _withdrawn(reviewed: ProposalReview, visit: Visit, now: datetime) -> dict[str, Any] | None:
    """Why a proposal another one's success withdrew will not run, and that one's link."""
    by = reviewed.withdrawn_by
    if by is None:
        return None
    approved_at = as_time(by.get("approved_at"))
    if by["readable"] and approved_at is not None:
        when = at_time(approved_at, now, _zone(visit), visit.language)
        text = withdrawn_message(by["operation"], by["preview"], when, visit.language)
    else:  # named by what it did only to whoever may read it
        text = withdrawn_message("", {}, "", visit.language)
    href = f"/proposals/{by['proposal_id']}" if by["readable"] else None
    return {"text": text, "href": href}


def settling_view(settling: Settling | None, visit: Visit) -> dict[str, Any] | None:
    """How long an approved proposal has waited for its provider's answer ("Waiting since
    14:53, 9 min."), and, once overdue, what that means: the provider has not answered yet,
    or nothing is settling it and an operator must start the worker."""
    if settling is None:
        return None
    now = settling.since + settling.waited
    zone, language = _zone(visit), visit.language
    waiting = visit.t(
        "settling.waiting",
        since=since_time(settling.since, now, zone, language),
        waited=distance(settling.waited.total_seconds(), language),
    )
    alert = None
    if settling.unattended:
        alert = visit.t("settling.unattended")
    elif settling.overdue:
        alert = visit.t("settling.provider_silent", seconds=int(settling.every.total_seconds()))
    return {
        "waiting": waiting,
        "alert": alert,
        "overdue": settling.overdue,
        "unattended": settling.unattended,
    }


def _requester(reviewed: ProposalReview, visit: Visit) -> str:
    """Who asked for it: the person, and whether their assistant drafted it for them."""
    email = str(reviewed.record.get("requested_by") or "")
    who = f"{reviewed.requester_name} ({email})" if reviewed.requester_name else email
    if reviewed.drafted_by_assistant:
        return visit.t("review.requested_by_assistant", who=who)
    return who


def _zone(visit: Visit) -> str:
    """Where the signed-in person's club reads times."""
    return visit.signed_in.membership.time_zone


def proposal_id_of(visit: Visit) -> str:
    """The proposal id in the path, in its one spelling; a malformed one is not found."""
    try:
        return str(UUID(visit.params.get("proposal_id", "").strip()))
    except ValueError:
        raise PageError("not_found", 404) from None
