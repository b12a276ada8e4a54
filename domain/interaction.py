"""The Interaction aggregate: one conversation between a manager and a section assistant.

It records what was said and done, in the same stream as the proposals it leads to, so the
hand-back projection can thread the application's outcome messages into the conversation.
Tool calls are recorded by name with redacted arguments: free text is kept as its length.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

MAX_KEPT_TEXT = 40


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")


#: How deep a recorded tool call's arguments are kept.
MAX_KEPT_DEPTH = 10


def redact(arguments: Any, depth: int = 0) -> Any:
    """Keep references and choices; replace longer free text, and any field name that is not
    a plain identifier (the model can invent one to smuggle text in), by its length; what
    nests deeper than ``MAX_KEPT_DEPTH`` by a mark."""
    if isinstance(arguments, dict | list) and depth >= MAX_KEPT_DEPTH:
        return "<nested deeper>"
    if isinstance(arguments, dict):
        return {
            _redact_name(str(key)): redact(value, depth + 1)
            for key, value in list(arguments.items())[:40]
        }
    if isinstance(arguments, list):
        return [redact(item, depth + 1) for item in arguments[:20]]
    if isinstance(arguments, str) and len(arguments) > MAX_KEPT_TEXT:
        return f"<{len(arguments)} characters>"
    return arguments


def _redact_name(name: str) -> str:
    return name if _NAME.fullmatch(name) else f"<{len(name)}-character name>"


class Interaction(Aggregate):
    """A manager's conversation with one section assistant about one resource."""

    #: What the manager presented to start it: ``person`` (signed in, or the command line),
    #: or a token's kind and name (``agent_token:ops-bot``); None for a conversation started
    #: before it was recorded (and read so from a state taken before it was).
    started_through: str | None = None

    @event("Started")
    def __init__(
        self,
        *,
        id: UUID,
        organization_id: UUID,
        section: str,
        resource_id: UUID,
        manager: str,
        started_through: str | None = None,
    ) -> None:
        self.organization_id = organization_id
        self.section = section
        self.resource_id = resource_id
        self.manager = manager
        self.started_through = started_through
        self.transcript: list[dict[str, str]] = []
        self.proposal_ids: list[str] = []
        self.turns = 0

    def hear(self, text: str) -> None:
        self._manager_messaged(text=text)

    def say(self, text: str, author: str) -> None:
        """``author`` is "application" for app-authored text, "model" for the model's reply."""
        self._assistant_replied(text=text, author=author)

    def record_tool_call(self, name: str, arguments: Any, outcome: str) -> None:
        self._tool_called(name=_redact_name(name), arguments=redact(arguments), outcome=outcome)

    def link(self, proposal_id: UUID) -> None:
        self._proposal_created(proposal_id=str(proposal_id))

    def end_turn(self, reason: str) -> None:
        self._turn_ended(reason=reason)

    @property
    def last_proposal_id(self) -> str | None:
        return self.proposal_ids[-1] if self.proposal_ids else None

    @event("ManagerMessaged")
    def _manager_messaged(self, text: str) -> None:
        self.transcript.append({"role": "manager", "text": text})

    @event("AssistantReplied")
    def _assistant_replied(self, text: str, author: str) -> None:
        self.transcript.append({"role": "assistant", "text": text, "author": author})

    @event("ToolCalled")
    def _tool_called(self, name: str, arguments: Any, outcome: str) -> None:
        pass  # the audit record is the event itself

    @event("ProposalCreated")
    def _proposal_created(self, proposal_id: str) -> None:
        self.proposal_ids.append(proposal_id)

    @event("TurnEnded")
    def _turn_ended(self, reason: str) -> None:
        self.turns += 1
