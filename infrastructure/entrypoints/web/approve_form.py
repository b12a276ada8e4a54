"""What the review page's approve form carries, and what its answer checks of it: the passkey
assertion, the confirmation page's token, and the seals' warning (application/shown_seals.py)
as the page showed it and as this process holds the proposal.

Apart from the pages themselves (proposals.py) to keep each module short.
"""

from __future__ import annotations

import hashlib
from typing import Any

from countersign.application.errors import ForbiddenError
from countersign.application.proposal_access import ProposalAccess, ProposalReview
from countersign.infrastructure.entrypoints.web.request_form import form_json
from countersign.infrastructure.entrypoints.web.visits import Visit


def assertion(visit: Visit) -> dict[str, Any] | None:
    """The passkey assertion the approve form carries (passkey.js puts the authenticator's
    answer in ``credential``), or None; something unreadable is passed on to be refused."""
    raw = visit.form.get("credential", "")
    if not raw:
        return None
    try:
        credential = form_json(raw)
    except ValueError:
        credential = None
    return {"nonce": visit.form.get("nonce", ""), "credential": credential}


def confirm_token(visit: Visit, proposal_id: str) -> str:
    """What the approve form's redirect carries to its confirmation page: a digest of this
    session's form token and the proposal, which no link made elsewhere can know (and which
    does not give the token away in the browser's history)."""
    token = visit.session.csrf_token
    return hashlib.sha256(f"confirm\0{token}\0{proposal_id}".encode()).hexdigest()[:32]


def unverified_text(reviewed: ProposalReview, visit: Visit) -> str | None:
    """What the reader is told first when its seals do not vouch for the proposal."""
    if reviewed.unverified is None:
        return None
    return reviewed.unverified.message(visit.language)


def vouched_here(access: ProposalAccess, visit: Visit, proposal_id: str) -> bool:
    """Whether approving the proposal here would carry it out as this process holds it, with
    no warning (``ProposalAccess.approves_as_sealed``); False when the caller may not read
    it (the approval answers that)."""
    try:
        return access.approves_as_sealed(proposal_id, visit.signed_in.caller)
    except ForbiddenError:
        return False
