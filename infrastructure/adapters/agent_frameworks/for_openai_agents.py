"""The OpenAI Agents SDK (``pip install 'countersign[openai-agents]'``): function tools that
propose through countersign.

``propose_tools`` gives one ``FunctionTool`` per operation, its parameters the contract's
strict request schema. Its output is the app-authored card (``ProposalText``, a ``str`` that
also carries the proposal id while the run holds it); a refused call's output is the
problems, for the model to correct its call. Give the agent
``tool_use_behavior=stop_on_proposal`` and a proposal ends the run with the card as its final
output, the model not paraphrasing it: ``result.final_output`` is the card's text (a plain
``str`` once the SDK has copied it), and ``proposal_ids(result)`` the proposal's id. The tools never
set ``needs_approval``: the SDK's own pause-and-resume would run the model again to execute,
where here a manager approves the proposal by id and the application executes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from agents import (
    FunctionTool,
    FunctionToolResult,
    RunContextWrapper,
    ToolCallOutputItem,
    ToolsToFinalOutputResult,
)
from agents.result import RunResultBase
from agents.tool_context import ToolContext
from countersign.application.authorization import Caller
from countersign.application.proposal_access import ProposalAccess
from countersign.infrastructure.adapters.agent_frameworks.proposing import (
    Proposed,
    Proposer,
    ProposeTool,
    framework_origin,
)

CHANNEL = "openai-agents"


class ProposalText(str):
    """A tool output that is a proposal's card; ``proposal_id`` names the proposal."""

    proposal_id: str

    def __new__(cls, text: str, proposal_id: str) -> ProposalText:
        made = super().__new__(cls, text)
        made.proposal_id = proposal_id
        return made

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        """How a copy is made (the SDK deep-copies tool outputs)."""
        return str(self), self.proposal_id


def propose_tools(
    access: ProposalAccess,
    caller: Caller,
    resources: Mapping[str, str],
    *,
    language: str = "en",
) -> list[FunctionTool]:
    """Function tools proposing, as ``caller`` (a member of one club), each operation kind in
    ``resources`` on the resource id it maps to."""
    proposer = Proposer(
        access, caller, framework_origin(CHANNEL, "openai-agents"), language=language
    )
    return [_function_tool(proposer, tool) for tool in proposer.tools(resources)]


def _function_tool(proposer: Proposer, tool: ProposeTool) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        # The store's calls block: they run beside the event loop, not on it. The run's usage
        # names the run, and what it has counted so far (requests and tokens, as the model
        # reports them) the response the call is from: the SDK runs a response's calls side
        # by side, and only the first proposal counts. A model that reports no usage at all
        # leaves its run one proposal.
        usage = context.usage
        counted = (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens)
        turn = (usage, counted)
        answer = await asyncio.to_thread(proposer.propose, tool, arguments, turn)
        if isinstance(answer, Proposed):
            return ProposalText(answer.text, answer.proposal_id)
        return answer.text

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )


def stop_on_proposal(
    _context: RunContextWrapper[Any], results: list[FunctionToolResult]
) -> ToolsToFinalOutputResult:
    """An agent's ``tool_use_behavior``: the run ends with the first proposal's card as its
    final output; after a refusal (or any other tool) the model runs again."""
    for result in results:
        if isinstance(result.output, ProposalText):
            return ToolsToFinalOutputResult(is_final_output=True, final_output=result.output)
    return ToolsToFinalOutputResult(is_final_output=False)


def proposal_ids(result: RunResultBase) -> list[str]:
    """The proposals a run's tools froze, in order."""
    return [
        item.output.proposal_id
        for item in result.new_items
        if isinstance(item, ToolCallOutputItem) and isinstance(item.output, ProposalText)
    ]
