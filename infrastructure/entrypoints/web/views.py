"""What the templates show: proposals, previews and orders as plain, display-ready values.

Every value here is data for an autoescaping template: nothing is marked safe, so text a
model or a person wrote (a subject, a body, a member's name) is always shown as text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from countersign.application.cards import shown_status
from countersign.application.proposal_access import ProposalReview
from countersign.domain.club.time_zone import DEFAULT_TIME_ZONE
from countersign.domain.contracts import REGISTRY
from countersign.domain.handback import reason_text
from countersign.domain.messages import (
    approve_label,
    inbox_reason,
    irreversible_note,
    operation_title,
    outcome_message_under_title,
    outcome_title,
    outcome_title_says_why,
    preview_rows_of,
    proposal_headline,
    shows_amounts,
)
from countersign.domain.money import format_money
from countersign.domain.outcomes import RevisionReason, is_already_so
from countersign.domain.times import expiry, local_day, local_time

log = logging.getLogger("countersign.web")

Translate = Callable[..., str]
NBSP = "\N{NO-BREAK SPACE}"

#: status -> colour family in the stylesheet (tone-ok, tone-warn, ...)
STATUS_TONE = {
    "pending": "warn",
    "executing": "info",
    "reconciling": "info",
    "succeeded": "ok",
    "revision_required": "bad",
    "failed": "bad",
    "declined": "muted",
    "expired": "muted",
    "superseded": "muted",
}
#: The states an edit may start from (``ProposalService.revise``): never one that ran or
#: that a newer proposal replaced.
REVISABLE = frozenset({"pending", "declined", "expired", "revision_required"})
OUTCOME_TONE = {
    "succeeded": "ok",
    "needs_reconciliation": "info",
    "revision_required": "warn",
    "terminal_failure": "bad",
}


@dataclass(frozen=True)
class Row:
    """One labelled value of a preview or an order."""

    label: str
    value: str
    multiline: bool = False
    emphasis: bool = False
    alert: bool = False


def as_time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: Any, zone: str = DEFAULT_TIME_ZONE, language: str = "en") -> str:
    """'2026-11-30 04:00 EST' ('30 nov. 2026, 4 h 00 HNE' in French): in the club's time
    zone, with its abbreviation."""
    moment = as_time(value)
    if moment is None:
        return ""
    return local_time(moment, zone, language)


def iso_time(value: Any) -> str:
    """The instant for a ``<time datetime>`` attribute (UTC, ISO 8601)."""
    moment = as_time(value)
    return moment.astimezone(UTC).isoformat(timespec="minutes") if moment else ""


def money(cents: Any, currency: Any, language: str = "en") -> str:
    """An amount as ``language`` writes it ("48,00 $ CA" in French)."""
    try:
        return format_money(int(cents), str(currency or ""), language)
    except (TypeError, ValueError):
        return str(cents)


def preview_rows(operation: str, preview: dict[str, Any], language: str) -> list[Row]:
    """The fixed review presentation, as the operation's contract declares it."""
    return [
        Row(row.label, unbroken(row.value), row.multiline, row.emphasis, row.alert)
        for row in preview_rows_of(operation, preview, language)
    ]


_CARD_MASK = re.compile(r"(\S+) (•+) ?(\d{2,4})\b")


def role_name(role: Any, t: Translate) -> str:
    """A member's role in the reader's words ("manager" reads "gestionnaire" in French): the
    roles countersign seeds have words in the catalogue (``role.<name>``); one a club made up
    reads as it was given."""
    given = str(role or "")
    key = f"role.{given.strip().lower()}"
    named = t(key)
    return given if named == key else named


def unbroken(text: str | None) -> str:
    """``text`` with each masked card ("Visa •••• 4242") kept on one line: a line break
    inside it would read as two things."""
    if not text:
        return text or ""
    return _CARD_MASK.sub(lambda m: f"{m[1]}{NBSP}{m[2]}{NBSP}{m[3]}", text)


def localized_outcome(
    operation: str, preview: dict[str, Any], outcome: dict[str, Any] | None, language: str
) -> str | None:
    """The application's own outcome message (never a model's), in the reader's language, as
    it reads under the outcome's headline."""
    if not outcome or operation not in REGISTRY:
        return None
    try:
        return outcome_message_under_title(operation, preview, outcome, language)
    except (ValueError, KeyError, TypeError):
        log.warning("outcome of a %s proposal could not be described", operation)
        return None


def localized_outcome_title(
    operation: str, preview: dict[str, Any], outcome: dict[str, Any] | None, language: str
) -> str | None:
    """The outcome's headline in the reader's language ("Refund sent", "Account credited")."""
    if not outcome:
        return None
    try:
        return outcome_title(operation, preview, outcome, language)
    except (ValueError, KeyError, TypeError):
        log.warning("outcome of a %s proposal has no headline", operation)
        return None


def proposal_view(
    record: dict[str, Any],
    t: Translate,
    language: str,
    now: datetime,
    zone: str = DEFAULT_TIME_ZONE,
) -> dict[str, Any]:
    """A proposal for the templates, from its record (``ProposalAccess.record``, named like
    the columns) or a browser_view card; times in the club's ``zone``."""
    operation = str(record["operation"])
    preview = dict(record.get("preview") or {})
    expires_at = as_time(record.get("expires_at"))
    # Past its expiry: expired, though the sweeper records it later (as the API says it).
    status = shown_status(str(record["status"]), expires_at, now)
    outcome = record.get("outcome")
    outcome_kind = str(outcome.get("kind")) if isinstance(outcome, dict) else None
    # Not executed because what it asked for already holds: nothing is owed, nothing to do.
    already_so = is_already_so(outcome if isinstance(outcome, dict) else None)
    return {
        "id": str(record["proposal_id"]),
        "operation": operation,
        "title": operation_title(operation, language),
        "headline": unbroken(proposal_headline(operation, preview, language)),
        "section": str(record.get("section") or ""),
        "resource_id": str(record.get("resource_id") or ""),
        "interaction_id": str(record.get("interaction_id") or ""),
        "status": status,
        "status_label": t(
            "state.already_so"
            if already_so
            else _state_key(status, record.get("superseded_reason"))
        ),
        "tone": "muted" if already_so else STATUS_TONE.get(status, "muted"),
        "rows": preview_rows(operation, preview, language),
        "has_amounts": shows_amounts(operation, preview),
        "requested_by": str(record.get("requested_by") or ""),
        "proposed_at": format_time(record.get("proposed_at"), zone, language),
        "expires_at": format_time(expires_at, zone, language),
        "expires_iso": iso_time(expires_at),
        "expiry": expiry(expires_at, now, language) if expires_at else "",
        "approved_by": record.get("approved_by"),
        "approved_at": format_time(record.get("approved_at"), zone, language),
        "declined_by": record.get("declined_by"),
        "declined_at": format_time(
            record.get("declined_at")
            or (record.get("updated_at") if status == "declined" else None),
            zone,
            language,
        ),
        "decline_note": record.get("decline_note"),
        "outcome_kind": outcome_kind,
        "outcome_title": localized_outcome_title(
            operation, preview, outcome if isinstance(outcome, dict) else None, language
        ),
        "outcome_tone": "muted"
        if status == "declined" or already_so
        else OUTCOME_TONE.get(outcome_kind or "", "muted"),
        "declined": status == "declined",
        "already_so": already_so,
        "reason": inbox_reason(operation, preview, language),
        "why_not": _why_not(operation, outcome, language),
        "updated_at": format_time(record.get("updated_at"), zone, language),
        "support_reference": (
            str(outcome.get("correlation_id", ""))
            if isinstance(outcome, dict) and outcome_kind == "terminal_failure"
            else ""
        ),
        "approve_label": unbroken(
            approve_label(operation, preview, language) or t("review.approve")
        ),
        "irreversible": unbroken(irreversible_note(operation, preview, language)) or None,
        "message": localized_outcome(operation, preview, outcome, language),
        "pending": status == "pending",
        "reconciling": status == "reconciling",
        # Since when it waits on its provider; the inbox fills it in (ProposalCards.settling).
        "settling": None,
        # Whether the club's policy now asks more of it, or bars its reader, the requester,
        # from approving it (and so their approval no longer counts); the inbox fills them in.
        "policy_changed": False,
        "requester_barred": False,
        "your_approval_lapsed": False,
        **_governance(record, t),
        "no_longer_counting": [
            (str(lapsed.get("approved_by")), str(lapsed.get("reason")))
            for lapsed in record.get("no_longer_counting") or []
            if isinstance(lapsed, dict)
        ],
    }


def notice_outcome(outcome: dict[str, Any]) -> str:
    """Which of the approval notices an outcome reads under: its kind, ``already_so`` for
    a revision required because what it asked for already holds, or ``sent_back`` for one
    a raised policy sent back (application/policy_recheck.py): no approval was recorded."""
    if (outcome.get("reason") or {}).get("code") == "policy_raised":
        return "sent_back"
    kind = "already_so" if is_already_so(outcome) else str(outcome.get("kind") or "")
    return kind if kind in _NOTICED_OUTCOMES else "other"


_NOTICED_OUTCOMES = (
    "succeeded",
    "revision_required",
    "already_so",
    "needs_reconciliation",
    "terminal_failure",
)


def _state_key(status: str, superseded_reason: Any) -> str:
    """The status's label: a proposal another one's success withdrew reads "Withdrawn", not
    "Replaced" (nothing newer took its place)."""
    withdrawn = status == "superseded" and superseded_reason == "withdrawn"
    return "state.withdrawn" if withdrawn else f"state.{status}"


def _governance(record: dict[str, Any], t: Translate) -> dict[str, Any]:
    """Quorum, supersession and revision, from a record or a card (a card of a projection
    without these columns reads as one approval needed, never replaced, no earlier version)."""
    approvals = [str(email) for email in record.get("approvals") or []]
    required = int(record.get("approvals_required") or 1)
    superseded_by = record.get("superseded_by")
    revision_of = record.get("revision_of")
    return {
        "approvals": approvals,
        "approvals_required": required,
        "quorum": required > 1 or len(approvals) > 1,
        "approvals_count": t("review.approvals_count", given=len(approvals), required=required),
        "approvals_line": t("inbox.approvals", given=len(approvals), required=required)
        if required > 1
        else "",
        "superseded_by": str(superseded_by) if superseded_by else None,
        "superseded_reason": record.get("superseded_reason"),
        "revision_of": str(revision_of) if revision_of else None,
    }


def page_number(value: str) -> int:
    """A list's page number from its query: 1 for anything but a plain positive number."""
    return int(value) if value.isascii() and value.isdigit() and 0 < len(value) < 7 else 1


@dataclass(frozen=True)
class Decision:
    """What the signed-in person may do about a proposal, and why not when they may not."""

    may_approve: bool
    you_approved: bool
    barred: bool
    final: bool
    """Whether their approval would be the last one needed (and so run it)."""
    may_edit: bool
    needs_passkey: bool = False
    """Whether approving needs a passkey the person has none of in the club (the page then
    offers to add one, not an approval that cannot work)."""


def decision(view: dict[str, Any], reviewed: ProposalReview, email: str) -> Decision:
    """The person's part in ``view`` (a proposal_view of ``reviewed.record``): approving
    needs the permission, a pending proposal, not having approved it already, and, for the
    requester, a policy that lets them (the one it was frozen under, and the club's in force:
    ``ProposalReview.requester_barred``); their approval runs it when it is the last one its
    quorum needs. Editing needs the permission, a state an edit starts from, a proposal that
    still owes something (not one already so), and a request with fields."""
    may_decide = reviewed.may_decide
    you_approved = email.strip().lower() in view["approvals"]
    barred = reviewed.requester_barred
    return Decision(
        may_approve=may_decide and view["pending"] and not you_approved and not barred,
        you_approved=you_approved,
        barred=barred,
        final=len(view["approvals"]) + 1 >= view["approvals_required"],
        may_edit=may_decide
        and view["status"] in REVISABLE
        and not view["already_so"]
        and not view["superseded_by"]
        and _has_request_fields(view["operation"]),
    )


def _has_request_fields(operation: str) -> bool:
    """Whether the operation's request has anything a person could change (a send has
    nothing: it sends the draft in the form)."""
    contract = REGISTRY.get(operation)
    return contract is not None and bool(contract.Request.model_fields)


def policy_lines(policy: Any, preview: dict[str, Any], t: Translate, language: str) -> list[str]:
    """The approval policy a proposal was frozen under, in sentences; none without one."""
    if not isinstance(policy, dict) or not isinstance(policy.get("rule"), dict):
        return []
    rule = policy["rule"]
    approvals = int(rule.get("approvals") or 1)
    quorum = t("policy.quorum", count=approvals) if approvals > 1 else t("policy.single")
    above = rule.get("above_cents")
    lines = [
        t("policy.rule", quorum=quorum)
        if above is None
        else t(
            "policy.rule_above",
            amount=money(above, preview.get("currency"), language),
            quorum=quorum,
        )
    ]
    applies = int(policy.get("approvals_required") or 1) == approvals and bool(
        policy.get("requester_may_approve", True)
    ) == bool(rule.get("requester_may_approve", True))
    if not applies:  # under the threshold: one approval by anyone permitted
        lines.append(t("policy.under_threshold"))
    elif not rule.get("requester_may_approve", True):
        lines.append(t("policy.not_requester"))
    if policy.get("require_passkey", rule.get("require_passkey")):
        lines.append(t("policy.passkey"))
    return lines


def _why_not(operation: str, outcome: Any, language: str) -> str | None:
    """Why a proposal was not executed, in one sentence (a revision's reason), unless its
    headline already says it."""
    if not isinstance(outcome, dict) or outcome.get("kind") != "revision_required":
        return None
    try:
        if outcome_title_says_why(operation, outcome):
            return None
        return reason_text(RevisionReason.model_validate(outcome.get("reason")), language)
    except ValueError:
        return None


def order_view(
    investigation: dict[str, Any],
    t: Translate,
    language: str = "en",
    refund_days: dict[str, datetime] | None = None,
    zone: str = DEFAULT_TIME_ZONE,
) -> dict[str, Any]:
    """The order the conversation is about, as staff see it (no provider ids), its amounts
    written as ``language`` writes them; a discount already refunded says so, and when
    (``refund_days``: each refund's time, by its reference)."""
    currency = investigation["currency"]

    def amount(cents: Any) -> str:
        return money(cents, currency, language)

    refunded = {
        str(r["discount"]): r for r in investigation["refunds"] if r.get("discount") is not None
    }

    def discount_state(discount: dict[str, Any]) -> tuple[str, str]:
        """What the discount's pill says, and its tone."""
        refund = refunded.get(str(discount["ref"]))
        if refund is not None:
            day = (refund_days or {}).get(str(refund["ref"]))
            when = {"day": local_day(day, zone, language)} if day is not None else {}
            key = "order.refunded_on" if when else "order.refunded"
            return t(key, amount=amount(refund["amount_cents"]), **when), "ok"
        if discount["applied"]:
            return t("order.applied"), "ok"
        return t("order.not_applied"), "warn"

    return {
        "participant": investigation["participant"],
        "total": amount(investigation["total_cents"]),
        "registration": _registration(investigation.get("registration") or {}, t),
        "note": investigation.get("note") or "",
        "items": [
            Row(str(item["product"]), amount(item["amount_cents"]))
            for item in investigation["line_items"]
        ],
        "discounts": [
            {
                "name": d["name"],
                "value": amount(d["value_cents"]),
                "applied": bool(d["applied"]),
                "state": discount_state(d)[0],
                "tone": discount_state(d)[1],
                "eligibility": d["eligibility"],
            }
            for d in investigation["discounts"]
        ],
        "payments": [
            Row(
                unbroken(str(p["label"])),
                amount(p["amount_cents"])
                + " · "
                + t("order.refundable", amount=amount(p["refundable_cents"])),
            )
            for p in investigation["payments"]
        ],
        "refunds": [
            Row(_refund_label(str(r["destination"]), t), amount(r["amount_cents"]))
            for r in investigation["refunds"]
        ],
    }


def _registration(registration: dict[str, Any], t: Translate) -> str:
    if registration.get("status") == "cancelled":
        return t("order.registration_cancelled")
    league = registration.get("league")
    return t("order.registration_in", league=league) if league else t("order.registration_active")


def _refund_label(destination: str, t: Translate) -> str:
    text = t(f"refund.{destination}")
    return destination.replace("_", " ") if text == f"refund.{destination}" else text


def chat_address(section: str, resource: str) -> str:
    """A conversation's page: its section and its resource as the section names it (an id, or
    a key, which may hold any character: each is escaped)."""
    return f"/chat/{quote(section, safe='')}/{quote(resource, safe='')}"


def replaces_view(replaced: list[dict[str, Any]], t: Translate) -> dict[str, Any] | None:
    """What a pending proposal took the place of when it was made (an edit revises the
    version it edits; one made again for the same thing replaces the earlier), so that its
    reviewer knows approving it is not in addition to that one, with a link to each (of the
    same operation, so whoever reads this one may read them)."""
    if not replaced:
        return None
    how = "revised" if any(old["reason"] == "revised" for old in replaced) else "replaced"
    return {
        "title": t(f"review.replaces_title.{how}"),
        "text": t(f"review.replaces_text.{how}"),
        "links": [f"/proposals/{old['proposal_id']}" for old in replaced],
    }
