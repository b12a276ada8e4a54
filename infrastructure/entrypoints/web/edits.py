"""Editing a proposal: a form of its request, and a new proposal from what it holds.

An edit is a new revision, never a change in place: the form (``request_form.py``) shows
what the request asked for, and posting it asks the application to run the whole contract
again (``ProposalAccess.revise``). Problems come back next to the fields they are about, in
the application's own people-worded sentences, with everything the person typed kept. An
edit of a pending proposal that asks for exactly what it already asks for is refused, and
says so. A success goes to the new proposal, which shows what changed. A proposal that was
already so (not executed because what it asked for already held) owes nothing: there is
nothing to edit, and its page says so; a different change is a new proposal.
"""

from __future__ import annotations

import logging
from typing import Any

from countersign.application.errors import NotRevisableError
from countersign.application.proposal_access import ProposalReview
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import ConcurrencyConflictError
from countersign.domain.outcomes import is_already_so
from countersign.infrastructure.correlation import correlation_id_of
from countersign.infrastructure.entrypoints.web.proposals import proposal_id_of
from countersign.infrastructure.entrypoints.web.request_form import (
    FormField,
    Spec,
    form_fields,
    place,
    posted,
    request_of,
    shown,
    specs,
)
from countersign.infrastructure.entrypoints.web.site import Site, redirect
from countersign.infrastructure.entrypoints.web.views import REVISABLE
from countersign.infrastructure.entrypoints.web.visits import PageError, Visit
from starlette.responses import Response

log = logging.getLogger("countersign.web")


class EditPages:
    """The edit form of one proposal, and the new revision it makes."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def form(self, visit: Visit) -> Response:
        """The form, filled with the request the proposal was frozen from (blank for one
        frozen before requests were kept)."""
        found = self._editable(visit)
        if isinstance(found, Response):
            return found
        reviewed, contract = found
        fields = specs(contract.Request)
        values = shown(fields, reviewed.record.get("request"))
        return self._page(visit, reviewed, contract, fields, values)

    def revise(self, visit: Visit) -> Response:
        """A new proposal from the posted form; the form again, with what is wrong, if the
        application refuses it. The same edit posted again (a double click, the back button
        and the form sent once more) answers as the first did, with the proposal it made."""
        found = self._editable(visit)
        if isinstance(found, Response):
            return self._made_already(visit) or found
        reviewed, contract = found
        fields = specs(contract.Request)
        values = posted(fields, visit.form)
        request, unreadable = request_of(fields, values)
        pid = str(reviewed.record["proposal_id"])
        if unreadable:
            # What the form cannot read, and every problem of the rest, at once.
            left_out = sorted({path.split(".", 1)[0] for path in unreadable})
            others = self.cs.access.revision_problems(
                pid, visit.signed_in.caller, request, left_out
            )
            by_field, general = place(fields, others, visit.language)
            for path, key in unreadable.items():
                by_field.setdefault(path, []).insert(0, visit.t(key))
            return self._page(
                visit, reviewed, contract, fields, values, by_field, general, status=422
            )
        pending = reviewed.record.get("status") == "pending"
        if pending and _unchanged(contract, request, reviewed.record.get("request")):
            # It would only replace this one with a copy. (A declined or expired one asked for
            # again unchanged is proposed afresh: that is an edit worth making.)
            general = [visit.t("edit.unchanged")]
            return self._page(
                visit, reviewed, contract, fields, values, {}, general, status=422, unchanged=True
            )
        try:
            created = self.cs.access.revise(pid, visit.signed_in.caller, request)
        except InvalidRequestError as refused:
            by_field, general = place(fields, refused.problems, visit.language)
            return self._page(
                visit, reviewed, contract, fields, values, by_field, general, status=422
            )
        except NotRevisableError as refused:
            # Approved or replaced meanwhile: its page says which, and links the newer one.
            made = self._made_already(visit)
            return made or self._not_revisable(visit, pid, already_so=refused.already_so)
        except ConcurrencyConflictError:
            general = [visit.t("notice.busy")]
            return self._page(visit, reviewed, contract, fields, values, {}, general, status=409)
        log.info(
            "%s revised %s as %s (request %s)",
            visit.signed_in.email,
            pid,
            created.proposal_id,
            correlation_id_of(visit.request),
        )
        self.site.flash(visit, "revised", created.proposal_id)
        return redirect(f"/proposals/{created.proposal_id}")

    def _editable(self, visit: Visit) -> tuple[ProposalReview, AnyContract] | Response:
        """The proposal and its contract, if the person may edit it now: 404 for another
        club's or an unknown one, 403 without the permission to decide it, and its own page
        (saying why) when its state no longer takes an edit."""
        pid = proposal_id_of(visit)
        reviewed = self.cs.access.review(pid, visit.signed_in.caller)
        contract = REGISTRY.get(str(reviewed.record["operation"]))
        if contract is None:
            raise PageError("not_found", 404)
        if not reviewed.may_decide:
            raise PageError("forbidden", 403)
        if is_already_so(reviewed.record.get("outcome")):
            # It owes nothing (docs/design.md): no edit, and its page says why.
            return self._not_revisable(visit, pid, already_so=True)
        if str(reviewed.record["status"]) not in REVISABLE:
            return self._not_revisable(visit, pid)
        return reviewed, contract

    def _not_revisable(self, visit: Visit, pid: str, *, already_so: bool = False) -> Response:
        self.site.flash(visit, "not_revisable.already_so" if already_so else "not_revisable", pid)
        return redirect(f"/proposals/{pid}")

    def _made_already(self, visit: Visit) -> Response | None:
        """The proposal this person's own edit of this one made from exactly the posted form,
        with the notice a first post shows; None when something else replaced it (another
        member's edit, other words, a newer proposal from an assistant) or it is not replaced.
        """
        pid = proposal_id_of(visit)
        record = self.cs.access.review(pid, visit.signed_in.caller).record
        newer_id = record.get("superseded_by")
        contract = REGISTRY.get(str(record["operation"]))
        if record.get("superseded_reason") != "revised" or not newer_id or contract is None:
            return None
        newer = self.cs.access.review(str(newer_id), visit.signed_in.caller).record
        fields = specs(contract.Request)
        request, unreadable = request_of(fields, posted(fields, visit.form))
        if (
            unreadable
            or newer.get("revision_of") != pid
            or str(newer.get("requested_by", "")).lower() != visit.signed_in.email.lower()
            or not _unchanged(contract, request, newer.get("request"))
        ):
            return None
        self.site.flash(visit, "revised", str(newer_id))
        return redirect(f"/proposals/{newer_id}")

    def _page(
        self,
        visit: Visit,
        reviewed: ProposalReview,
        contract: AnyContract,
        fields: tuple[Spec, ...],
        values: dict[str, str],
        errors: dict[str, list[str]] | None = None,
        general: list[str] | None = None,
        status: int = 200,
        unchanged: bool = False,
    ) -> Response:
        record: dict[str, Any] = reviewed.record
        shown_fields = form_fields(
            fields, values, errors or {}, contract.request_fields, visit.language, visit.t
        )
        return self.site.render(
            visit,
            "edit.html",
            status=status,
            proposal_id=str(record["proposal_id"]),
            title=contract.title.text(visit.language),
            fields=shown_fields,
            marked=_marked(shown_fields),
            general=general or [],
            invalid=bool(errors or general) and not unchanged,
            unchanged=unchanged,
        )


def _marked(fields: list[FormField]) -> list[FormField]:
    """The fields with a problem, in the form's order (a group's fields after it), each
    linked from the summary at the top of the form: every one to correct, at once."""
    found: list[FormField] = []
    for one in fields:
        found += [one] if one.errors else []
        found += _marked(list(one.children))
    return found


def _unchanged(contract: AnyContract, request: dict[str, Any], stored: Any) -> bool:
    """Whether the edited request asks for exactly what the proposal was frozen from (as the
    contract reads both); False when either does not read, or no request was kept."""
    if not isinstance(stored, dict):
        return False
    try:
        return bool(contract.parse_request(request) == contract.parse_request(stored))
    except InvalidRequestError:
        return False
