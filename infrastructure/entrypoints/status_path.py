"""Where an uncertain outcome points a machine: the JSON API's status resource.

A stored ``NeedsReconciliation`` holds facts only (its cause). The route a machine follows
until the reconciler settles it, ``status_path``, is the API's, built here from the
proposal's id for every answer that shows an outcome: the API's documents, and the command
line's and the MCP server's JSON, which are the same documents. (Here, not in http/: the four
entry points import none of each other.)
"""

from __future__ import annotations

from typing import Any

STATUS_PATH = "/api/v1/proposals/{proposal_id}/status"
"""The status resource (``GET``, http/proposals.py) of one proposal."""


def shown_outcome(outcome: dict[str, Any] | None, proposal_id: str) -> dict[str, Any] | None:
    """The outcome as answers show it: a ``needs_reconciliation`` one with its
    ``status_path`` after its kind, as outcomes were always shown; any other as stored."""
    if outcome is None or outcome.get("kind") != "needs_reconciliation":
        return outcome
    path = STATUS_PATH.format(proposal_id=proposal_id)
    return {"kind": outcome["kind"], "status_path": path, **outcome}


def with_status_path(document: dict[str, Any]) -> dict[str, Any]:
    """A report's document (an approval's answer, a card, a sweep) whose ``outcome`` is
    shown with its ``status_path``."""
    if not document.get("outcome"):
        return document
    outcome = shown_outcome(document["outcome"], str(document["proposal_id"]))
    return {**document, "outcome": outcome}


def history_with_status_paths(history: dict[str, Any]) -> dict[str, Any]:
    """The auditor's replay, each outcome in it (an event's, the state ``as_of``'s) shown
    with its ``status_path``."""
    proposal_id = str(history["proposal_id"])
    shown = {
        **history,
        "events": [
            {**event, "outcome": shown_outcome(event["outcome"], proposal_id)}
            if "outcome" in event
            else event
            for event in history["events"]
        ],
    }
    if history.get("as_of") is not None:
        as_of = history["as_of"]
        shown["as_of"] = {**as_of, "outcome": shown_outcome(as_of["outcome"], proposal_id)}
    return shown
