"""The auditor's replay of one proposal's history."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from countersign.application.errors import parse_id
from countersign.application.ports import AggregateStore, StoredEventView
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.proposal import Proposal

#: What a person reads of an ``as_of`` outside the proposal's history.
OUTSIDE_HISTORY = Localized(
    "The history has no such point: nothing was shown.",
    "L'historique n'a pas ce point : rien n'a été affiché.",
)


#: How the topics of countersign's own proposal events begin ("…:Proposal.Approved"): a class
#: of the same name in another module (a plug-in's) is another event.
PROPOSAL_EVENT_TOPIC = f"{Proposal.__module__}:{Proposal.__qualname__}."


#: An event and the one after it that the domain always commits in one step: the last
#: approval and the claim (``Proposal.approve_and_claim``: an approval followed by a claim
#: was the last one needed), the claim and what the claim's own commit records next
#: (revalidated, or why it went no further: ``approve_path``), a decline and its closing
#: (``Proposal.decline``). Nobody could read the proposal as it stood between them.
RECORDED_TOGETHER = frozenset(
    {
        ("Approved", "Claimed"),
        *(("Claimed", after) for after in ("Revalidated", "RevisionRequired", "Failed")),
        ("Declined", "RevisionRequired"),
    }
)


def recorded_with_next(topics: list[str], version: int) -> int | None:
    """The version of the event committed in one step with event ``version`` of a history
    whose events have ``topics`` (oldest first), or None: the proposal as it stood after
    ``version`` was then never there to be seen (RECORDED_TOGETHER)."""
    pair = tuple(
        topic.removeprefix(PROPOSAL_EVENT_TOPIC)
        for topic in topics[version - 1 : version + 1]
        if topic.startswith(PROPOSAL_EVENT_TOPIC)
    )
    return version + 1 if pair in RECORDED_TOGETHER else None


#: The package countersign's own events are stored under.
_OWN_PACKAGE = Proposal.__module__.partition(".")[0]


def event_name(topic: str, namespaces: Mapping[str, str]) -> str:
    """An event's stable name, which a client keys by (``proposal.approved``): its aggregate
    and event classes in snake case, not the module it is stored under (``topic``), which a
    refactoring may move and which is no client's business. A plug-in's is prefixed by its
    namespace (``sample.invoice_tags.tagged``), as its permissions and operations are, so that
    it never reads as one of countersign's; ``namespaces`` maps each enabled plug-in's event
    packages to its namespace. A package neither declares is ``unknown.…`` (the store reads no
    such event: a name all the same, never the module)."""
    module, _, qualname = topic.partition(":")
    name = ".".join(re.sub(r"(?<!^)(?=[A-Z])", "_", part).lower() for part in qualname.split("."))
    if module.partition(".")[0] == _OWN_PACKAGE:
        return name
    for package, namespace in namespaces.items():
        if module == package or module.startswith(package + "."):
            return f"{namespace}.{name}"
    return f"unknown.{name}"


class AuditService:
    """Reads proposal histories exactly as stored."""

    def __init__(self, store: AggregateStore, namespaces: Mapping[str, str] | None = None) -> None:
        self.store = store
        #: The enabled plug-ins' event packages, each with its plug-in's namespace.
        self.namespaces = dict(namespaces or {})

    def history(self, proposal_id: str, as_of: int | datetime | None = None) -> dict[str, Any]:
        """Every event in order; with ``as_of`` (a version or a time) only those up to it,
        and the state then: exactly what the approver was shown and what had happened."""
        return self.checked_history(proposal_id, as_of)[0]

    def checked_history(
        self, proposal_id: str, as_of: int | datetime | None = None
    ) -> tuple[dict[str, Any], Proposal]:
        """``history``, and the proposal made from the very events it lists (never a snapshot
        a process holds: ``AggregateStore.recorded``), for its seals to be checked: what is
        checked is what is shown (application/shown_seals.py)."""
        pid = parse_id(proposal_id, "proposal")
        # NotFoundError if it is not a proposal.
        proposal, events, then = self.store.recorded(pid, Proposal)
        # Out of range, ``as_of`` is the request's problem (422 on the API, exit 4 on the
        # command line), not a missing proposal: it was a 404, as for an unknown id.
        if isinstance(as_of, datetime):
            versions = [event.version for event in events if event.at <= as_of]
            if not versions:
                first = events[0].at.isoformat() if events else "its first event"
                raise InvalidRequestError.one(
                    "as_of", f"a time at or after the proposal was made ({first})", OUTSIDE_HISTORY
                )
            as_of = max(versions)
        if as_of is not None:
            if not 1 <= as_of <= proposal.version:
                raise InvalidRequestError.one(
                    "as_of", f"a version from 1 to {proposal.version} (its events)", OUTSIDE_HISTORY
                )
            events = [event for event in events if event.version <= as_of]
        document: dict[str, Any] = {
            "proposal_id": str(pid),
            "events": [
                {
                    "version": e.version,
                    "type": e.type,
                    "event": event_name(e.topic, self.namespaces),
                    "topic": e.topic,
                    "at": e.at.isoformat(),
                    **_fields(e),
                }
                for e in events
            ],
        }
        if as_of is not None:
            state = then(as_of)  # from the rows just read and checked, not a second read
            document["as_of"] = {
                "version": as_of,
                "status": str(state.status),
                "preview": state.preview,
                # The approval that completed the quorum (None until one did): an earlier one
                # of several, or one that stopped counting, is in ``approvals`` and
                # ``no_longer_counting`` (it named the first approver of a quorum still short).
                "approved_by": (
                    state.approved_by if len(state.approvals) >= state.approvals_required else None
                ),
                "approvals": list(state.approvals),
                "approvals_required": state.approvals_required,
                "no_longer_counting": [dict(lapsed) for lapsed in state.lapsed_approvals],
                "outcome": state.outcome,
            }
        return document, proposal


#: What every event of a history says first: its version, type, stable name (``event_name``),
#: the type's whole topic (module and class) and when it was recorded.
_ENVELOPE = ("version", "type", "event", "topic", "at")


def _fields(event: StoredEventView) -> dict[str, Any]:
    """The event's own fields; one named as the envelope is (``Expired.at``, when the expiry
    was decided) is kept under its event's name (``expired_at``): it took the place of the
    time the event was recorded, which the trail, ``as_of`` and the export use."""
    fields: dict[str, Any] = event.fields
    if not any(name in fields for name in _ENVELOPE):
        return fields
    prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", event.type).lower()
    return {(f"{prefix}_{k}" if k in _ENVELOPE else k): v for k, v in fields.items()}
