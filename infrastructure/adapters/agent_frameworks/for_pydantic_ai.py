"""Pydantic AI (``pip install 'countersign[pydantic-ai]'``, which needs only
``pydantic-ai-slim``): a toolset whose tools propose through countersign.

``propose_toolset`` is a ``FunctionToolset`` with one tool per operation, its parameters the
contract's strict request schema. A tool's return is the app-authored card, with the
proposal id in the return's ``metadata`` (the application reads it, the model does not:
``proposal_ids`` finds it in a run's messages). A refused call raises ``ModelRetry`` with the
problems, for the model to correct its call, at most ``max_retries`` times. No tool asks for
Pydantic AI's deferred approval, which would resume the run to execute: a manager approves
the proposal by id and the application executes it, without the agent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from countersign.application.authorization import Caller
from countersign.application.proposal_access import ProposalAccess
from countersign.infrastructure.adapters.agent_frameworks.proposing import (
    NotRun,
    Proposed,
    Proposer,
    ProposeTool,
    TooMany,
    framework_origin,
)
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturn, ToolReturnPart
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

CHANNEL = "pydantic-ai"
MAX_RETRIES = 3


def propose_toolset(
    access: ProposalAccess,
    caller: Caller,
    resources: Mapping[str, str],
    *,
    language: str = "en",
    max_retries: int = MAX_RETRIES,
) -> FunctionToolset[Any]:
    """A toolset proposing, as ``caller`` (a member of one club), each operation kind in
    ``resources`` on the resource id it maps to."""
    proposer = Proposer(
        access, caller, framework_origin(CHANNEL, "pydantic-ai-slim"), language=language
    )
    tools = [_tool(proposer, tool) for tool in proposer.tools(resources)]
    return FunctionToolset(tools, max_retries=max_retries)


def _tool(proposer: Proposer, tool: ProposeTool) -> Tool[Any]:
    def propose(ctx: RunContext[Any], **request: Any) -> ToolReturn | str:
        # A plain function: Pydantic AI runs it in a worker thread, off the event loop. The
        # run's id names the run (new for every run, a continued conversation's too) and its
        # step the model response: of a response's calls, only the first proposal counts
        # (the others are told which ended the turn).
        answer = proposer.propose(tool, request, (ctx.run_id, ctx.run_step))
        if isinstance(answer, Proposed):
            return ToolReturn(answer.text, metadata={"proposal_id": answer.proposal_id})
        if isinstance(answer, NotRun | TooMany):
            # Not a mistake of the call's: a retry cannot help, and would count as one.
            return answer.text
        raise ModelRetry(answer.text)

    made = Tool.from_schema(propose, tool.name, tool.description, tool.parameters, takes_ctx=True)
    made.strict = True  # the schema is strict already: closed, every field required
    return made


def proposal_ids(messages: Iterable[ModelMessage]) -> list[str]:
    """The proposals a run's tools froze, in order (``result.new_messages()``)."""
    return [
        part.metadata["proposal_id"]
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
        and isinstance(part.metadata, dict)
        and "proposal_id" in part.metadata
    ]
