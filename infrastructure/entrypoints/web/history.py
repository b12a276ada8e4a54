"""The auditor's history of one proposal, as a page: every event of its stream in order,
when (in the club's zone) and who, in a plain sentence; and, from any event, the proposal as
it stood then (``?as_of=<event>``).

Who may read it, and what it holds, is the application's (``ProposalAccess.history``, the
API's history route and ``countersign history`` read the same): this module only words it.
An event it has no sentence for (a plug-in's, a newer release's) is listed by its type; which
event it is, is read from its whole topic (module and class), never its class name alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from countersign.application.audit import PROPOSAL_EVENT_TOPIC, RECORDED_TOGETHER
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.domain.messages import (
    APPROVED_WITH_PASSKEY,
    credential_note,
    lapsed_approval_message,
    origin_line,
)
from countersign.domain.outcomes import is_already_so
from countersign.infrastructure.entrypoints.web.proposals import proposal_id_of
from countersign.infrastructure.entrypoints.web.site import Site
from countersign.infrastructure.entrypoints.web.views import (
    as_time,
    format_time,
    proposal_view,
    role_name,
)
from countersign.infrastructure.entrypoints.web.visits import PageError, Visit
from starlette.responses import Response

#: The longest ``?as_of=`` read, as the API's history route (its ``max_length``).
AS_OF_LENGTH = 40

#: How long an unknown event's name may be shown (a name is short; anything longer is cut).
TYPE_LENGTH = 80
#: Where an unknown event's name goes in its sentence, found again after the translation.
_NAME_MARK = "\x00name\x00"
#: A name's words, each with the dot or underscore that ends it (``plugin_``, ``checks.``).
_NAME_PARTS = re.compile(r"[^._]+[._]?|[._]")


class HistoryPages:
    """``/proposals/{id}/history``: read-only, for whoever may read the proposal's history."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def page(self, visit: Visit) -> Response:
        # One request's reads (as the API's): the club, read to name each person the history
        # names, and the proposal, read by each check, are queried once for the page, not
        # once a person (a quorum's history names dozens).
        with self.cs.one_request():
            return self._page(visit)

    def _page(self, visit: Visit) -> Response:
        user = visit.signed_in
        proposal_id = proposal_id_of(visit)
        # The whole history first: it is the access check (404 for an unknown or another
        # club's id, 403 without the permission), before the query is read at all.
        history = whole = self.cs.access.history(proposal_id, user.caller, None, visit.language)
        total = len(history["events"])
        as_of = _version(visit.query("as_of", AS_OF_LENGTH + 1))
        if as_of is not None:
            try:
                history = self.cs.access.history(proposal_id, user.caller, as_of)
            except InvalidRequestError:
                raise PageError("no_such_point", 404) from None
        record = self.cs.access.record(proposal_id, user.caller)
        zone, language = user.membership.time_zone, visit.language
        now = self.cs.clock.now()
        proposal = proposal_view(record, visit.t, language, now, zone)
        wording = Wording(visit, record, self._namer(visit))
        listed = history["events"]
        events = [wording.event(event, listed[:index]) for index, event in enumerate(listed)]
        state = history.get("as_of")
        unverified = whole.get("unverified") or {}
        return self.site.render(
            visit,
            "history.html",
            proposal=proposal,
            events=events,
            total=total,
            # Its seals do not vouch for it: said first, and the event they fail at marked.
            unverified=unverified.get("message"),
            unvouched_version=unverified.get("event_version"),
            as_of=wording.state(state, events[-1]["when"], whole["events"]) if state else None,
        )

    def _namer(self, visit: Visit) -> Callable[[str], str]:
        """Who someone is, as the review page names a decider: their name and address, the
        address alone once they left the club (each looked up once a page)."""
        names: dict[str, str] = {}
        club = visit.signed_in.organization

        def who(email: str) -> str:
            if email not in names:
                try:
                    name = self.cs.club.membership(club, email).member.name
                except NotFoundError:
                    name = email
                names[email] = email if name == email else f"{name} ({email})"
            return names[email]

        return who


def _version(value: str) -> int | None:
    """The event asked for (``?as_of=3``); anything but a number is no such event, and so is
    anything longer than the API's ``as_of`` may be (read whole: never a number cut from
    the front of something longer)."""
    if not value:
        return None
    if len(value) > AS_OF_LENGTH or not re.fullmatch(r"[0-9]{1,9}", value.strip()):
        raise PageError("no_such_point", 404)
    return int(value)


class Wording:
    """Each event of one history in the reader's words."""

    def __init__(self, visit: Visit, record: dict[str, Any], who: Callable[[str], str]) -> None:
        self.t = visit.t
        self.language = visit.language
        self.zone = visit.signed_in.membership.time_zone
        self.record = record
        self.who = who
        self.operation = str(record["operation"])
        self.required = int(record.get("approvals_required") or 1)

    def event(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        """One event: its number, when, and what it means (``text``, then ``details``)."""
        at = as_time(event.get("at"))
        shown: dict[str, Any] = {
            "version": int(event["version"]),
            "when": format_time(at, self.zone, self.language),
            "iso": at.astimezone(UTC).isoformat(timespec="milliseconds") if at else "",
            "details": [],
            "note": None,
            "link": None,
            "unknown": None,
        }
        kind = _kind(event)
        describe = _DESCRIBE.get(kind)
        if describe is None:
            name = _unknown_name(event)
            lead, _, tail = self.t("history.unknown", type=_NAME_MARK).partition(_NAME_MARK)
            # The name's parts, so that the page offers a line break after each dot and each
            # underscore (``<wbr>``): a long name on a phone then wraps between its words,
            # not in the middle of one.
            unknown = {"lead": lead, "parts": _NAME_PARTS.findall(name), "tail": tail}
            return {**shown, "text": self.t("history.unknown", type=name), "unknown": unknown}
        return {**shown, **describe(self, event, before)}

    def state(
        self, state: dict[str, Any], when: str, every: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The proposal as it stood after an event, as its review page would have shown it;
        ``together``: the next event's number, if the two were committed in one step, so
        that nobody could have read it as it stands here (``RECORDED_TOGETHER``)."""
        version = int(state["version"])
        kinds = [_kind(event) for event in every[version - 1 : version + 1]]
        together = version + 1 if tuple(kinds) in RECORDED_TOGETHER else None
        record = {
            **self.record,
            "status": state["status"],
            "preview": state["preview"],
            "outcome": state["outcome"],
            "approvals": state["approvals"],
            "approvals_required": state["approvals_required"],
            "no_longer_counting": state["no_longer_counting"],
            "expires_at": None,  # as recorded then: not as read today
        }
        view = proposal_view(record, self.t, self.language, _EPOCH, self.zone)
        return {
            "version": state["version"],
            "when": when,
            "together": together,
            "proposal": view,
            "approvals": [self.who(str(email)) for email in state["approvals"]],
            "required": state["approvals_required"],
            "no_longer_counting": [
                _line(
                    lapsed_approval_message(self.operation, self.who(email), reason, self.language)
                )
                for email, reason in view["no_longer_counting"]
            ],
        }

    # -- one method an event type -----------------------------------------------------------

    def proposed(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        who = self.who(str(event.get("requested_by") or ""))
        revision_of = event.get("revision_of")
        key = "history.proposed_revision" if revision_of else "history.proposed"
        details = [
            line
            for line in (
                origin_line(event.get("origin"), self.language, event.get("requested_through")),
                self._expires(event.get("expires_at")),
            )
            if line
        ]
        link = None
        if revision_of:
            href = f"/proposals/{revision_of}/history"
            link = {"href": href, "label": self.t("history.earlier_version")}
        return {"text": self.t(key, who=who), "details": details, "link": link}

    def _expires(self, value: Any) -> str | None:
        moment = as_time(value)
        if moment is None:
            return None
        return self.t("history.expires", when=format_time(moment, self.zone, self.language))

    def approved(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        who = self.who(str(event.get("approved_by") or ""))
        counting = _count(before) + 1
        if self.required > 1:
            text = self.t(
                "history.approved_quorum", who=who, given=counting, required=self.required
            )
        else:
            text = self.t("history.approved", who=who)
        details = []
        if event.get("role"):
            details.append(self.t("history.role", role=role_name(event["role"], self.t)))
        how = credential_note(event.get("credential"), self.language)
        if how:
            details.append(_line(how) + ".")
        passkey = event.get("passkey")
        if isinstance(passkey, dict) and passkey.get("name"):
            details.append(APPROVED_WITH_PASSKEY.text(self.language, name=str(passkey["name"])))
        return {"text": text, "details": details}

    def lapsed(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        who = self.who(str(event.get("approved_by") or ""))
        why = lapsed_approval_message(self.operation, who, str(event.get("reason")), self.language)
        return {"text": self.t("history.lapsed", who=who), "details": [_line(why)]}

    def declined(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        who = self.who(str(event.get("declined_by") or ""))
        how = credential_note(event.get("credential"), self.language)
        details = [_line(how) + "."] if how else []
        return {
            "text": self.t("history.declined", who=who),
            "details": details,
            "note": event.get("note") or None,
        }

    def outcome(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        """What the application recorded of carrying it out, in its own outcome words."""
        kind = _kind(event)
        outcome = event.get("outcome") if isinstance(event.get("outcome"), dict) else None
        if kind == "RevisionRequired" and before and _kind(before[-1]) == "Declined":
            return {"text": self.t("history.declined_closed")}
        details = []
        if kind == "Failed":
            text = self.t("history.failed")
            details.append(self._failure(event.get("error_class")))
        elif kind == "RevisionRequired" and is_already_so(outcome):
            text = self.t("history.already_so")  # what it asked for already holds
        else:
            text = self.t(_OUTCOME_TEXT[kind])
        if kind != "Reconciling" and any(_kind(e) == "Reconciling" for e in before):
            details.append(self.t("history.settled"))
        view = proposal_view(
            {**self.record, "status": "", "outcome": outcome, "expires_at": None},
            self.t,
            self.language,
            _EPOCH,
            self.zone,
        )
        if view["message"]:
            details.append(view["message"])
        if view["support_reference"]:
            details.append(self.t("history.reference", reference=view["support_reference"]))
        return {"text": text, "details": details}

    def _failure(self, error_class: Any) -> str:
        """Why it failed, in the reader's words; a failure this page has no words for (a
        newer release's) as its code, labelled as one."""
        code = str(error_class or "?")[:TYPE_LENGTH]
        key = f"history.failure.{code}"
        why = self.t(key)
        return self.t("history.failure.code", code=code) if why == key else why

    def superseded(self, event: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
        reason = str(event.get("reason") or "unknown")
        if reason not in ("revised", "replaced", "withdrawn"):
            reason = "unknown"
        link = None
        if event.get("by"):
            # A withdrawing proposal took no place: it is named as the review page names it.
            key = "history.withdrawn_link" if reason == "withdrawn" else "history.superseded_link"
            link = {"href": f"/proposals/{event['by']}", "label": self.t(key)}
        return {"text": self.t(f"history.superseded.{reason}"), "link": link}


def _kind(event: dict[str, Any]) -> str:
    """Which of countersign's events it is ("Approved"), by its whole topic; for any other
    (a plug-in's, a newer release's) its topic, which no sentence of this page is keyed by."""
    topic = str(event.get("topic") or "")
    if topic.startswith(PROPOSAL_EVENT_TOPIC):
        return topic.removeprefix(PROPOSAL_EVENT_TOPIC)
    return topic or f":{event.get('type')}"


def _unknown_name(event: dict[str, Any]) -> str:
    """An event the page has no sentence for, as it is listed: by its type, or, when the type
    is also one of countersign's (a plug-in's ``Approved`` is not), by its stable name, its
    plug-in's namespace first (``audit.event_name``), never its module path."""
    name = str(event.get("type"))
    shown = str(event.get("event") or name) if name in _DESCRIBE else name
    return shown[:TYPE_LENGTH]


def _line(text: str) -> str:
    """A phrase the application words to follow something ("no longer counts: …"), as a line
    of its own: capitalised."""
    return text[:1].upper() + text[1:]


def _count(before: list[dict[str, Any]]) -> int:
    """How many approvals counted before an event: each approval, less those that lapsed."""
    types = [_kind(event) for event in before]
    return types.count("Approved") - types.count("ApprovalLapsed")


_OUTCOME_TEXT = {
    "Succeeded": "history.succeeded",
    "Reconciling": "history.reconciling",
    "RevisionRequired": "history.revision_required",
}

#: A reading time for the views of past states: nothing in them is read against today.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Describe = Callable[[Wording, dict[str, Any], list[dict[str, Any]]], dict[str, Any]]


def _text(key: str) -> Describe:
    """An event the application records of itself, said in one fixed sentence."""
    return lambda wording, event, before: {"text": wording.t(key)}


_DESCRIBE: dict[str, Describe] = {
    "Proposed": Wording.proposed,
    "Approved": Wording.approved,
    "ApprovalLapsed": Wording.lapsed,
    "Claimed": _text("history.claimed"),
    "Revalidated": _text("history.revalidated"),
    "Succeeded": Wording.outcome,
    "Reconciling": Wording.outcome,
    "RevisionRequired": Wording.outcome,
    "Failed": Wording.outcome,
    "Declined": Wording.declined,
    "Expired": _text("history.expired"),
    "Superseded": Wording.superseded,
}
