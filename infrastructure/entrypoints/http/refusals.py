"""What an approve or decline refused by the proposal itself (``not_approvable``) tells the
caller in ``message``: what happened and what to do next.

The application's report carries a message only where the proposal has a stored outcome (a
declined one: its sentence); the other refusals came with their reason's code alone, and a
service had nothing to show its people. The API's documents are in English, as the
outcome sentences they carry (the card alone is asked for in a language); each sentence
below says that nothing changed, then what the caller may do, naming the API's own steps.
``not_found`` and ``forbidden`` never get here: they are the 404 and 403 problems."""

from __future__ import annotations

from typing import Any

_REFUSALS = {
    "expired": (
        "This proposal expired before it was approved: nothing was changed, and it can no "
        "longer be approved or declined. If it is still wanted, propose it again."
    ),
    "in_progress": (
        "An approval is carrying this proposal out right now: this request changed nothing. "
        "Read the proposal again in a moment to see its outcome, and do not do it another "
        "way: it may already have happened."
    ),
    "not_pending": (
        "This proposal was already decided: this request changed nothing. Read the proposal "
        "to see its outcome."
    ),
    "requester_may_not_approve": (
        "Its approval policy does not let the person who requested it approve it, whichever "
        "token acts for them: nothing changed. Another manager must approve it."
    ),
    "passkey_required": (
        "Its approval policy requires each approval to be signed with the approver's passkey: "
        "nothing changed. Get a challenge from its approval-challenge, have the approver's "
        "passkey sign it, and send the result as passkey_assertion; or approve it on its page "
        "in the browser."
    ),
    "passkey_rejected": (
        "The passkey assertion given does not verify (not one of the approver's passkeys, an "
        "expired or foreign challenge, a bad signature or no user verification): nothing "
        "changed. Get a fresh approval-challenge and have the passkey sign it again."
    ),
    "operation_not_enabled": (
        "This proposal's operation is not enabled on this server: the plug-in that adds it is "
        "not named in COUNTERSIGN_PLUGINS. Nothing was approved, declined or changed: tell "
        "whoever runs countersign to enable the plug-in again to decide it."
    ),
    "not_verifiable_here": (
        "This proposal is sealed with a key this server does not hold yet (a seal key being "
        "rotated in), so it could not be verified here: nothing was approved or changed, and "
        "it is still pending. Try again shortly, when every server holds the key; if it "
        "persists, tell whoever runs countersign."
    ),
    # Only a passkey challenge answers it: approving it is not refused, it sends it back.
    "policy_raised": (
        "The club's approval policy for this operation changed after this was proposed and "
        "now asks more of it, so there is nothing for a passkey to sign: nothing changed. "
        "Approving it (with no passkey) will not carry it out but send it back to its "
        "requester to propose again, under the policy now in force; declining it also ends it."
    ),
}
_SUPERSEDED = (
    "A newer proposal replaced this one: nothing was changed by it, and it can no longer be "
    "approved or declined. Review the newer one instead: {newer}."
)
_WITHDRAWN = (
    "This proposal was withdrawn when proposal {newer} was carried out, which changed what it "
    "relied on: nothing was changed by it, and it can no longer be approved or declined. "
    "Propose it again if it is still wanted."
)
_REPLACED = (
    "A newer proposal replaced this one: nothing was changed by it, and it can no longer be "
    "approved or declined."
)
_ANY_OTHER = (
    "This proposal cannot be approved or declined now: this request changed nothing. Read the "
    "proposal to see where it stands."
)


def refusal_message(report: dict[str, Any]) -> str:
    """The ``message`` of a ``not_approvable`` answer that has none of its own."""
    reason = str(report.get("reason"))
    if reason == "superseded":
        newer = report.get("superseded_by")
        if not newer:
            return _REPLACED
        told = _WITHDRAWN if report.get("superseded_reason") == "withdrawn" else _SUPERSEDED
        return told.format(newer=newer)
    return _REFUSALS.get(reason, _ANY_OTHER)
