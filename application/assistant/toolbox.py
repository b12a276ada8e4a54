"""The section assistants' tools, offered to an agent outside countersign (the MCP server).

An outside agent (Claude Desktop, an IDE, another framework) gets the same catalogue as the
assistants: each section's read tools and one propose tool per registered contract, with the
same strict request schemas, limited to what its caller may do (the member's permissions,
narrowed by an API token's scopes). Two things differ, because one agent session talks about
many records of one organization, not one conversation about one record:

* the scope still comes from the server: the organization is the session's; a section with
  one resource per organization (its roster, its broadcast form) supplies it, and any other
  (an order) takes a ``resource_id`` argument, checked against the caller's organization
  like every id (another club's id answers exactly as an unknown one: not found);
* ``proposal_status`` and the review card answer only for the caller's own proposals.

The catalogue has no tool that approves, declines, revises or executes, in any configuration:
approval is a person's, by id, through countersign's own pages, CLI or API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from countersign.application.assistant.conversations import open_scope, section_assistant
from countersign.application.assistant.schemas import strict_schema
from countersign.application.assistant.sections import ASSISTANTS, ReadTool, SectionAssistant
from countersign.application.authorization import Caller, membership, organization_by_slug
from countersign.application.errors import ForbiddenError
from countersign.application.ports import AggregateStore
from countersign.application.proposal_access import ProposalAccess
from countersign.application.reports import ProposalCard, ProposalCreated, ProposalStatusReport
from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.problems import MAX_PROBLEMS, InvalidRequestError, Problem
from countersign.domain.contracts.request_errors import problems_from
from countersign.domain.errors import NotFoundError
from countersign.domain.scope import Section
from pydantic import ValidationError

RESOURCE_ID = "resource_id"
STATUS_TOOL = "proposal_status"
_RESOURCE_DESCRIPTION = (
    "The id of the record this is about, in the {section} section, exactly as countersign "
    "shows it (an order's id for orders)."
)
_PROPOSES_ONLY = (
    " This only proposes: countersign checks the request, computes every amount itself and "
    "freezes a review card; nothing changes until a person approves it by id in countersign."
)


class UnknownToolError(NotFoundError):
    """Raised when a tool name is not in the caller's catalogue (never there, or not theirs)."""


@dataclass(frozen=True)
class AgentTool:
    """One tool as an outside agent sees it: its name, what it does and its input schema,
    and what it runs (a section's read tool, a contract's proposal, or the status)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    section: Section | None = None
    read: ReadTool | None = None
    contract: AnyContract | None = None
    takes_resource: bool = field(default=False)


class AgentToolbox:
    """The catalogue for a caller, and the calls it makes; every check is the application's."""

    def __init__(
        self,
        store: AggregateStore,
        access: ProposalAccess,
        *,
        assistants: Mapping[Section, SectionAssistant] = ASSISTANTS,
    ) -> None:
        self.store = store
        self.access = access
        self.assistants = assistants

    # -- the catalogue ----------------------------------------------------------------------------

    def catalogue(self, caller: Caller) -> list[AgentTool]:
        """Every tool the caller may use now: a section's read tools if they may propose at
        least one of its operations, a propose tool per operation they may propose, and the
        status of their own proposals. NotFoundError for an unknown organization or a
        non-member."""
        if caller.organization is None:
            raise NotFoundError("organization")
        member = membership(organization_by_slug(self.store, caller.organization), caller.email)
        tools: list[AgentTool] = []
        for section, assistant in self.assistants.items():
            offered = assistant.for_holder(lambda permission: caller.may(member, permission))
            if not offered.contracts:
                continue
            takes_resource = assistant.club_resource is None
            tools += [_read_tool(section, read, takes_resource) for read in assistant.read_tools]
            tools += [_propose_tool(c, takes_resource) for c in offered.contracts]
        tools.append(_status_tool())
        return tools

    def tool(self, caller: Caller, name: str) -> AgentTool:
        """The caller's tool of that name; UnknownToolError for any other name."""
        for tool in self.catalogue(caller):
            if tool.name == name:
                return tool
        raise UnknownToolError("tool")

    # -- the calls --------------------------------------------------------------------------------

    def read(self, caller: Caller, tool: AgentTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run a section's read tool in the caller's organization. InvalidRequestError for
        arguments that do not fit its schema; NotFoundError for a resource that is not the
        organization's."""
        if tool.read is None or tool.section is None:
            raise UnknownToolError("not a read tool")
        request, resource_id = _split(tool, arguments)
        opened = open_scope(
            self.store,
            self.assistants,
            str(caller.organization),
            caller,
            str(tool.section),
            resource_id or self._club_resource(caller, tool.section),
        )
        try:
            parsed = tool.read.request.model_validate(request)
        except ValidationError as error:
            problems = problems_from(error, MAX_PROBLEMS)
            raise InvalidRequestError(problems, error.error_count() - len(problems)) from None
        return tool.read.run(parsed, opened.scope, self.store)

    def propose(
        self,
        caller: Caller,
        tool: AgentTool,
        arguments: Mapping[str, Any],
        origin: Mapping[str, str] | None = None,
    ) -> ProposalCreated:
        """Propose the tool's operation, exactly as ProposalAccess.propose does, with the
        resource the arguments name (or the section's one resource) and ``origin``, as an
        assistant (``Caller.as_assistant``: whoever holds the session, a model's call never
        decides). HeldForPeopleError when it would replace a pending proposal another member
        made or someone approved."""
        if tool.contract is None or tool.section is None:
            raise UnknownToolError("not a propose tool")
        request, resource_id = _split(tool, arguments)
        return self.access.propose(
            caller.as_assistant(),
            operation=tool.contract.kind,
            resource_id=resource_id or self._club_resource(caller, tool.section),
            request=request,
            origin=origin,
        )

    def status(
        self, caller: Caller, proposal_id: str, language: str = "en"
    ) -> ProposalStatusReport:
        """Where one of the caller's own proposals stands; NotFoundError for anyone else's."""
        self._own(caller, proposal_id)
        return self.access.status(proposal_id, caller, language)

    def card(self, caller: Caller, proposal_id: str, language: str = "en") -> ProposalCard:
        """The review card of one of the caller's own proposals; NotFoundError otherwise."""
        self._own(caller, proposal_id)
        return self.access.card(proposal_id, caller, language)

    def _own(self, caller: Caller, proposal_id: str) -> None:
        """NotFoundError unless the caller may read the proposal and requested it: another
        member's proposal answers exactly as an unknown id."""
        try:
            record = self.access.record(proposal_id, caller)
        except ForbiddenError:
            raise NotFoundError("proposal") from None
        requester = str(record.get("requested_by") or "").strip().lower()
        if requester != caller.email.strip().lower():
            raise NotFoundError("proposal")

    def _club_resource(self, caller: Caller, section: Section) -> str:
        assistant = section_assistant(self.assistants, str(section))
        assert assistant.club_resource is not None  # a tool that takes none names it
        if caller.organization_id is None:
            raise NotFoundError("organization")
        return str(assistant.club_resource(caller.organization_id))


def _split(tool: AgentTool, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The request the contract or read tool parses, and the resource id the call names."""
    request = dict(arguments)
    if not tool.takes_resource:
        return request, None
    resource_id = request.pop(RESOURCE_ID, None)
    if not isinstance(resource_id, str) or not resource_id.strip():
        raise InvalidRequestError(
            [Problem(field=RESOURCE_ID, message="required: the id of the record, as a string")]
        )
    return request, resource_id[:100]


def _with_resource(schema: dict[str, Any], section: Section) -> dict[str, Any]:
    """A strict request schema with the ``resource_id`` the server cannot supply, first."""
    properties = schema.get("properties", {})
    if RESOURCE_ID in properties:
        raise ValueError(f"a {section} request already has a field named {RESOURCE_ID}")
    resource = {"type": "string", "description": _RESOURCE_DESCRIPTION.format(section=section)}
    return {
        **schema,
        "properties": {RESOURCE_ID: resource, **properties},
        "required": [RESOURCE_ID, *schema.get("required", [])],
    }


def _described(model: type[Any]) -> str:
    return " ".join((model.__doc__ or "").split())


def _read_tool(section: Section, read: ReadTool, takes_resource: bool) -> AgentTool:
    schema = strict_schema(read.request)
    return AgentTool(
        name=f"{section}_{read.name}",
        description=_described(read.request),
        input_schema=_with_resource(schema, section) if takes_resource else schema,
        section=section,
        read=read,
        takes_resource=takes_resource,
    )


def _propose_tool(contract: AnyContract, takes_resource: bool) -> AgentTool:
    schema = strict_schema(contract.Request)
    return AgentTool(
        name="propose_" + contract.kind.replace(".", "_"),
        description=_described(contract.Request) + _PROPOSES_ONLY,
        input_schema=_with_resource(schema, contract.section) if takes_resource else schema,
        section=contract.section,
        contract=contract,
        takes_resource=takes_resource,
    )


def _status_tool() -> AgentTool:
    return AgentTool(
        name=STATUS_TOOL,
        description=(
            "Where one of your own proposals stands: pending, approved and executed, declined, "
            "expired or not executed, with countersign's own message about the outcome. "
            "Approval is a person's, by id, in countersign: no tool here approves or executes."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "proposal_id": {
                    "type": "string",
                    "description": "The proposal id a propose tool returned.",
                }
            },
            "required": ["proposal_id"],
            "additionalProperties": False,
        },
    )
