"""The OpenAI Agents SDK proposes a refund through countersign; a manager approves it by id.

Runs offline: the SDK's own ScriptedModel stands in for a model (no key, no network, no
tracing export). It first sends an amount, which the contract's strict request refuses, then
the references alone; the application computes the amount and freezes the card.

    pip install 'countersign[openai-agents]'
    python examples/openai_agents_refund.py
"""

from __future__ import annotations

from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel, function_call
from countersign.infrastructure.adapters.agent_frameworks.for_openai_agents import (
    proposal_ids,
    propose_tools,
    stop_on_proposal,
)
from demo_club import MESSAGE, REFUND, REQUEST, approve_by_id, demo_club, print_refusal

TOOL = "propose_refund_missing_discount"


def main() -> None:
    with demo_club() as club:
        model = ScriptedModel(
            [
                [function_call(TOOL, {**REQUEST, "amount_cents": 100_000}, call_id="call-1")],
                [function_call(TOOL, REQUEST, call_id="call-2")],
            ]
        )
        agent = Agent(
            name="Billing assistant",
            instructions="Propose refunds for the manager's review; you cannot execute them.",
            model=model,
            tools=propose_tools(club.cs.access, club.ava, {REFUND: club.order_id}),
            tool_use_behavior=stop_on_proposal,  # the card ends the run, word for word
        )
        result = Runner.run_sync(agent, MESSAGE, run_config=RunConfig(tracing_disabled=True))
        print_refusal(model.calls[1].input[-1]["output"])
        print(result.final_output)  # the app-authored card
        (proposal_id,) = proposal_ids(result)
        approve_by_id(club, proposal_id, lambda: len(model.calls))


if __name__ == "__main__":
    main()
