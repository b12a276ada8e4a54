"""What a section's assistant is: its texts, its read tools and (from the registry) its contracts.

A section is a plug-in: one module in this package declares its ``SectionAssistant``, and one
line in the package's registry enrols it. It names no operation: what it may propose is every
registered contract of its section, each contributing its own propose tool (name derived from
its kind, description from its ``Request``) and instructions sentence.

Read tools take no tenant or resource from the model: the server supplies both. What they
return is written by the application for the model: references the conversation can use, no
database ids, no tenant ids, no provider payloads, no other customer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from countersign.application.assistant.schemas import function_tool
from countersign.domain.contracts import AnyContract, contracts_in
from countersign.domain.contracts.presentation import Localized
from countersign.domain.ports import Repository
from countersign.domain.scope import Scope, Section
from pydantic import BaseModel, ConfigDict


class ReadToolRequest(BaseModel):
    """Base of read-tool arguments: strict, closed."""

    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass(frozen=True)
class ReadTool:
    """A server-scoped read: ``run`` gets the request and the server's own scope, and reads
    through ``Repository.read`` only (a read tool changes nothing)."""

    name: str
    request: type[ReadToolRequest]
    run: Callable[[Any, Scope, Repository], dict[str, Any]]
    label: Localized | None = None
    """How a conversation's timeline shows that the assistant used it; None: not shown."""


@dataclass(frozen=True)
class SectionTexts:
    """How the section reads for people, in every language."""

    name: Localized
    """The section's name, as the inbox's filter tabs show it."""
    assistant: Localized
    """The assistant's name: the chat page's title and its navigation link."""
    lead: Localized
    """One sentence under the chat page's title: what the assistant can and cannot do."""
    placeholder: Localized
    """An example message in the composer."""
    start: Localized | None = None
    """The start page's link to the assistant, for a section with one resource per club."""


@dataclass(frozen=True)
class SectionAssistant:
    """One section's assistant: its texts, instructions and read tools. What it may propose is
    every registered contract of its section, each with its own tool and instructions."""

    section: Section
    texts: SectionTexts
    role: str
    """Who the assistant is; the instructions of its contracts follow."""
    rules: str
    """What holds for everything it does in the section."""
    read_tools: tuple[ReadTool, ...]
    summary: Callable[[Scope, Repository], str]
    offered: frozenset[str] | None = None
    """The kinds this assistant may propose here (None: every one of its section's): a
    conversation of someone who holds only some of the section's permissions is offered only
    the contracts they may propose (``for_holder``)."""
    club_resource: Callable[[UUID], UUID] | None = None
    """For a section with one resource per organization (its roster, its broadcast form):
    that resource's id, from the organization's. None when each conversation is about one
    of many (an order)."""

    @property
    def contracts(self) -> tuple[AnyContract, ...]:
        return tuple(
            contract
            for contract in contracts_in(self.section)
            if self.offered is None or contract.kind in self.offered
        )

    def for_holder(self, may: Callable[[str], bool]) -> SectionAssistant:
        """This assistant as it is offered to someone: only the contracts whose permission
        ``may`` says they hold (their tools and instruction sentences; the rest are absent)."""
        kinds = frozenset(c.kind for c in self.contracts if may(c.permission))
        return replace(self, offered=kinds)

    @property
    def instructions(self) -> str:
        proposing = [c.assistant_instructions.format(tool=c.tool_name) for c in self.contracts]
        return " ".join([self.role, *proposing, self.rules])

    def tools(self) -> list[dict[str, Any]]:
        """Exactly the tools this section's model receives."""
        reads = [function_tool(tool.name, tool.request) for tool in self.read_tools]
        proposes = [function_tool(c.tool_name, c.Request) for c in self.contracts]
        return reads + proposes

    def read_tool(self, name: str) -> ReadTool | None:
        return next((tool for tool in self.read_tools if tool.name == name), None)

    def contract_for(self, name: str) -> AnyContract | None:
        return next((c for c in self.contracts if c.tool_name == name), None)

    @property
    def permissions(self) -> frozenset[str]:
        """Holding any one of these lets a member use the assistant: its contracts'."""
        return frozenset(c.permission for c in self.contracts)
