"""A LangGraph graph proposes a refund through countersign; a manager approves it by id.

Runs offline: langchain-core's GenericFakeChatModel stands in for a chat model. Its first
tool call sends an amount, which the contract's strict request refuses; the second sends the
references alone, the propose node freezes the proposal, and the graph ends the turn with
its id. It never interrupts and is never resumed: approval needs neither the graph nor the
model.

    pip install 'countersign[langgraph]'
    python examples/langgraph_refund.py
"""

from __future__ import annotations

from collections.abc import Iterator

from countersign.infrastructure.adapters.agent_frameworks.for_langgraph import (
    ProposeNode,
    propose_graph,
)
from demo_club import MESSAGE, REFUND, REQUEST, approve_by_id, demo_club, print_refusal
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

TOOL = "propose_refund_missing_discount"


def main() -> None:
    calls = 0

    def replies() -> Iterator[AIMessage]:
        nonlocal calls
        for args in ({**REQUEST, "amount_cents": 100_000}, REQUEST):
            calls += 1
            yield AIMessage("", tool_calls=[{"name": TOOL, "args": args, "id": f"call-{calls}"}])

    with demo_club() as club:
        node = ProposeNode(club.cs.access, club.ava, {REFUND: club.order_id})
        # A real chat model is bound to the tools first: llm.bind_tools(node.tools).
        graph = propose_graph(GenericFakeChatModel(messages=replies()), node)
        state = graph.invoke({"messages": [HumanMessage(MESSAGE)]})
        print_refusal(str(state["messages"][2].content))
        print(state["messages"][-1].content)  # the app-authored card
        approve_by_id(club, state["proposal_id"], lambda: calls)


if __name__ == "__main__":
    main()
