"""A Pydantic AI agent proposes a refund through countersign; a manager approves it by id.

Runs offline: Pydantic AI's FunctionModel stands in for a model. Its first tool call sends
an amount, which the contract's strict request refuses (the model is asked to retry); the
second sends the references alone and gets the app-authored card back; then it answers.

    pip install 'countersign[pydantic-ai]'
    python examples/pydantic_ai_refund.py
"""

from __future__ import annotations

from countersign.infrastructure.adapters.agent_frameworks.for_pydantic_ai import (
    proposal_ids,
    propose_toolset,
)
from demo_club import MESSAGE, REFUND, REQUEST, approve_by_id, demo_club, print_refusal
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

TOOL = "propose_refund_missing_discount"


def main() -> None:
    calls = 0

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            args = {**REQUEST, "amount_cents": 100_000}
            return ModelResponse(parts=[ToolCallPart(TOOL, args, tool_call_id="call-1")])
        if calls == 2:
            return ModelResponse(parts=[ToolCallPart(TOOL, REQUEST, tool_call_id="call-2")])
        return ModelResponse(parts=[TextPart("The refund awaits a manager's approval.")])

    with demo_club() as club:
        toolset = propose_toolset(club.cs.access, club.ava, {REFUND: club.order_id})
        result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync(MESSAGE)
        refused, proposed = [
            part
            for message in result.new_messages()
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        print_refusal(str(refused.content))  # returned to the model as a retry
        print(proposed.content)  # the app-authored card
        (proposal_id,) = proposal_ids(result.new_messages())
        approve_by_id(club, proposal_id, lambda: calls)


if __name__ == "__main__":
    main()
