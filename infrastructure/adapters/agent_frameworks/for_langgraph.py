"""LangGraph (``pip install 'countersign[langgraph]'``): a tool node that proposes instead of
executing, and a graph whose turn ends with the proposal id.

``ProposeNode`` answers the model's tool calls: each call of a propose tool freezes a
proposal through countersign and its ``ToolMessage`` is the app-authored card (its
``artifact`` holds the proposal id); a refused call's message holds the problems, for the
model to correct its call. ``propose_graph`` wires it after a chat model: model, then the
node; after a proposal the graph ends with ``proposal_id`` in its state, after a refusal the
model runs again (at most ``max_rounds`` model calls in a turn). It never interrupts and is
never resumed to execute: a manager approves the proposal by id and the application executes
it, without the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from countersign.application.authorization import Caller
from countersign.application.proposal_access import ProposalAccess
from countersign.infrastructure.adapters.agent_frameworks.proposing import (
    NOT_RUN,
    Proposed,
    Proposer,
    framework_origin,
)
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

CHANNEL = "langgraph"
MAX_ROUNDS = 4
NO_TOOL = "there is no tool named {name!r} here"


class ProposalState(TypedDict):
    """The graph's state: the conversation, and the proposal that ended the turn."""

    messages: Annotated[list[AnyMessage], add_messages]
    proposal_id: NotRequired[str | None]


class ProposeNode:
    """The graph's tool node: it proposes through countersign, as one caller, and executes
    nothing. ``tools`` are the function specs to bind to the chat model."""

    def __init__(
        self,
        access: ProposalAccess,
        caller: Caller,
        resources: Mapping[str, str],
        *,
        language: str = "en",
    ) -> None:
        self.proposer = Proposer(
            access, caller, framework_origin(CHANNEL, "langgraph"), language=language
        )
        self._tools = {tool.name: tool for tool in self.proposer.tools(resources)}

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The propose tools in the function-calling format ``bind_tools`` takes, with the
        contracts' strict request schemas."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": True,
                },
            }
            for tool in self._tools.values()
        ]

    def __call__(self, state: ProposalState) -> dict[str, Any]:
        """Answer the last model message's tool calls; the first proposal ends the turn and
        the calls after it are answered, not run."""
        last = state["messages"][-1]
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        answers: list[ToolMessage] = []
        proposal_id: str | None = None
        for call in calls:
            call_id = call["id"] or ""
            tool = self._tools.get(call["name"])
            if proposal_id is not None:
                answers.append(_answer(call, NOT_RUN.format(proposal_id=proposal_id)))
            elif tool is None:
                answers.append(_answer(call, NO_TOOL.format(name=call["name"][:60]), "error"))
            else:
                answer = self.proposer.propose(tool, call["args"])
                if isinstance(answer, Proposed):
                    proposal_id = answer.proposal_id
                    answers.append(
                        ToolMessage(
                            answer.text,
                            tool_call_id=call_id,
                            name=tool.name,
                            artifact={"proposal_id": proposal_id},
                        )
                    )
                else:
                    answers.append(_answer(call, answer.text, "error"))
        return {"messages": answers, "proposal_id": proposal_id}


def propose_graph(
    model: Runnable[Any, Any], node: ProposeNode, *, max_rounds: int = MAX_ROUNDS
) -> CompiledStateGraph[ProposalState, None, ProposalState, ProposalState]:
    """Model, then the propose node, until a proposal ends the turn. ``model`` is a chat
    model that knows the tools already (``llm.bind_tools(node.tools)``)."""

    def call_model(state: ProposalState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])], "proposal_id": None}

    def after_model(state: ProposalState) -> str:
        last = state["messages"][-1]
        return "propose" if isinstance(last, AIMessage) and last.tool_calls else END

    def after_proposing(state: ProposalState) -> str:
        if state.get("proposal_id") or _rounds(state["messages"]) >= max_rounds:
            return END
        return "model"

    graph = StateGraph(ProposalState)
    graph.add_node("model", call_model)
    graph.add_node("propose", node)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["propose", END])
    graph.add_conditional_edges("propose", after_proposing, ["model", END])
    return graph.compile()


def _answer(call: Any, text: str, status: Literal["success", "error"] = "success") -> ToolMessage:
    return ToolMessage(text, tool_call_id=call["id"] or "", name=call["name"], status=status)


def _rounds(messages: Sequence[AnyMessage]) -> int:
    """The model's messages since the person's last one: this turn's model calls."""
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        count += isinstance(message, AIMessage)
    return count
