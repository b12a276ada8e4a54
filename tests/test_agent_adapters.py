"""Agent frameworks propose through countersign and never execute (issue 15, part 2).

Each framework runs with its own offline test model: the Agents SDK's ``ScriptedModel``,
langchain-core's ``GenericFakeChatModel`` in a LangGraph graph, Pydantic AI's
``FunctionModel``. In each, the model first sends an amount, which the contract's strict
request refuses (nothing is frozen); then the references alone, and the application computes
the amount, freezes the proposal with the framework as its origin and answers with its own
card. A manager's approval by id then executes it exactly once (one refund in the payment
sandbox) and no model is called again.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from countersign.application.assistant.schemas import strict_schema
from countersign.application.authorization import Caller
from countersign.domain.contracts.refund_missing_discount import RefundMissingDiscount
from countersign.infrastructure.adapters.agent_frameworks.proposing import (
    Proposed,
    Proposer,
    Refused,
    TooMany,
)
from countersign.infrastructure.bootstrap import Countersign

from tests.conftest import AVA, MIA, REFUND, TO_CARD, count_events
from tests.test_french import ENGLISH

if TYPE_CHECKING:  # the frameworks are imported by the tests that drive them: collecting
    # this module imports none of them (docs/testing.md)
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from pydantic_ai.messages import ModelMessage

ROOT = Path(__file__).resolve().parent.parent
TOOL = "propose_refund_missing_discount"
WITH_AMOUNT = {**TO_CARD, "amount_cents": 100_000}
REFUSED = [{"field": "amount_cents", "message": "unknown field; remove it"}]
AVA_IN_GRANITE = Caller(AVA, "granite")


def _refunds(cs: Countersign, proposal_id: str) -> int:
    return sum(
        int(r["requests"])  # type: ignore[call-overload]
        for r in cs.sandbox.refunds()
        if r["metadata"]["proposal_id"] == proposal_id  # type: ignore[index]
    )


def _assert_refused(tool_output: str) -> None:
    assert json.loads(tool_output)["problems"] == REFUSED


def _assert_frozen(cs: Countersign, proposal_id: str, channel: str, client: str) -> None:
    """One pending proposal (the refused call froze nothing), its amount the application's."""
    assert count_events(cs, "Proposal.Proposed") == 1
    record = cs.access.record(proposal_id, AVA)
    assert record["status"] == "pending"
    assert record["request"] == TO_CARD  # what the model sent: references, no amount
    assert record["preview"]["amount_cents"] == 4800  # what the application computed
    assert record["origin"] == {
        "channel": channel,
        "client": client,
        "client_version": metadata.version(client),
    }


def _assert_card(text: str, proposal_id: str) -> None:
    lines = text.splitlines()
    assert lines[0] == (
        f"Proposal {proposal_id}: Refund a missed discount. $48.00 CAD to Olivia Chen"
    )
    assert "Refund amount: $48.00 CAD" in lines
    assert f"a manager approves it by id ({proposal_id})" in lines[-1]


def _approve_once(cs: Countersign, proposal_id: str, model_calls: Callable[[], int]) -> None:
    """Approval by id executes once, and no model runs for it."""
    before = model_calls()
    first = cs.access.approve(proposal_id, AVA_IN_GRANITE)
    assert (first.result, first.status) == ("executed", "succeeded")
    assert str(first.message).startswith("Refunded $48.00 CAD")
    again = cs.access.approve(proposal_id, AVA_IN_GRANITE)
    assert again.result == "already_completed"
    assert _refunds(cs, proposal_id) == 1
    assert model_calls() == before


# -- the OpenAI Agents SDK ----------------------------------------------------------------------


def _openai_run(
    tools: list[Any], model: Any, prompt: str = "Refund it", *, stop: bool = True
) -> Any:
    """One run of an agent with ``tools`` and the scripted ``model``, ended by a proposal's
    card (``stop``) or letting the model run again after a tool. ``asyncio.run``: each
    framework's run_sync reuses one default loop, which the other's closes."""
    from agents import Agent, RunConfig, Runner
    from countersign.infrastructure.adapters.agent_frameworks import for_openai_agents

    behaviour = for_openai_agents.stop_on_proposal if stop else "run_llm_again"
    agent = Agent(name="billing", model=model, tools=tools, tool_use_behavior=behaviour)
    return asyncio.run(Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True)))


def test_openai_agents_function_tool_proposes_and_approval_executes_without_the_model(cs, seeded):
    from agents.testing import ScriptedModel, function_call
    from countersign.infrastructure.adapters.agent_frameworks import for_openai_agents

    tools = for_openai_agents.propose_tools(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    assert [t.name for t in tools] == [TOOL]
    assert tools[0].params_json_schema == strict_schema(RefundMissingDiscount.Request)
    assert tools[0].strict_json_schema
    assert tools[0].needs_approval is False  # no pause-and-resume in the SDK
    model = ScriptedModel(
        [
            [function_call(TOOL, WITH_AMOUNT, call_id="call-1")],
            [function_call(TOOL, TO_CARD, call_id="call-2")],
        ]
    )
    result = _openai_run(tools, model)

    assert len(model.calls) == 2
    assert model.remaining_steps == 0
    _assert_refused(model.calls[1].input[-1]["output"])  # type: ignore[index]
    (proposal_id,) = for_openai_agents.proposal_ids(result)
    _assert_card(str(result.final_output), proposal_id)  # the card ends the run, verbatim
    _assert_frozen(cs, proposal_id, "openai-agents", "openai-agents")
    _approve_once(cs, proposal_id, lambda: len(model.calls))


def test_openai_agents_two_propose_calls_in_one_response_freeze_one_proposal(cs, seeded):
    """The SDK runs a response's calls side by side: each froze a proposal, the second
    superseding the first, whose card the run showed (approving it answered "superseded";
    an integrator's walk). The first to propose ends the turn; the other is told so."""
    from agents.testing import ScriptedModel, function_call
    from countersign.infrastructure.adapters.agent_frameworks import for_openai_agents

    tools = for_openai_agents.propose_tools(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    credit = {**TO_CARD, "destination": "account_credit"}
    model = ScriptedModel(
        [[function_call(TOOL, TO_CARD, call_id="c1"), function_call(TOOL, credit, call_id="c2")]]
    )
    result = _openai_run(tools, model)

    (proposal_id,) = for_openai_agents.proposal_ids(result)
    _assert_card(str(result.final_output), proposal_id)
    assert count_events(cs, "Proposal.Proposed") == 1
    outputs = [str(item.output) for item in result.new_items if hasattr(item, "output")]
    assert f"not run: this turn already ended with proposal {proposal_id}" in "".join(outputs)
    # The next run proposes again (its proposal replacing this one): the guard is one model
    # response's, not the tools'.
    later = _openai_run(tools, ScriptedModel([[function_call(TOOL, credit, call_id="c3")]]))
    (newer,) = for_openai_agents.proposal_ids(later)
    assert cs.access.approve(newer, AVA_IN_GRANITE).status == "succeeded"


# -- LangGraph ----------------------------------------------------------------------------------


class FakeChat:
    """Scripted AI messages for GenericFakeChatModel, counting the model's calls."""

    def __init__(self, *arguments: dict[str, Any]) -> None:
        self.arguments = arguments
        self.calls = 0

    def replies(self) -> Iterator[AIMessage]:
        from langchain_core.messages import AIMessage

        for args in self.arguments:
            self.calls += 1
            yield AIMessage("", tool_calls=[{"name": TOOL, "args": args, "id": f"c{self.calls}"}])

    def model(self) -> GenericFakeChatModel:
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

        return GenericFakeChatModel(messages=self.replies())


def test_langgraph_propose_node_ends_the_turn_with_the_proposal_id(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks import for_langgraph
    from langchain_core.messages import HumanMessage, ToolMessage

    node = for_langgraph.ProposeNode(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    (spec,) = node.tools
    assert spec["function"]["name"] == TOOL
    assert spec["function"]["parameters"] == strict_schema(RefundMissingDiscount.Request)
    chat = FakeChat(WITH_AMOUNT, TO_CARD, TO_CARD)  # a third call would be a bug
    graph = for_langgraph.propose_graph(chat.model(), node)

    state = graph.invoke({"messages": [HumanMessage("Refund it")]})

    assert chat.calls == 2
    proposal_id = state["proposal_id"]
    refusal, card = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert refusal.status == "error"
    _assert_refused(str(refusal.content))
    assert state["messages"][-1] is card  # the turn ends on the card
    assert card.artifact == {"proposal_id": proposal_id}
    _assert_card(str(card.content), proposal_id)
    _assert_frozen(cs, proposal_id, "langgraph", "langgraph")
    _approve_once(cs, proposal_id, lambda: chat.calls)


def test_langgraph_gives_up_after_its_rounds_with_nothing_frozen(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks import for_langgraph
    from langchain_core.messages import HumanMessage

    node = for_langgraph.ProposeNode(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    chat = FakeChat(*[WITH_AMOUNT] * 5)
    graph = for_langgraph.propose_graph(chat.model(), node, max_rounds=3)

    state = graph.invoke({"messages": [HumanMessage("Refund it")]})

    assert chat.calls == 3
    assert state["proposal_id"] is None
    assert count_events(cs, "Proposal.Proposed") == 0


def test_langgraph_answers_calls_after_a_proposal_without_running_them(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks import for_langgraph
    from langchain_core.messages import AIMessage

    node = for_langgraph.ProposeNode(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    calls = [
        {"name": TOOL, "args": TO_CARD, "id": "c1"},
        {"name": TOOL, "args": TO_CARD, "id": "c2"},
        {"name": "approve_proposal", "args": {}, "id": "c3"},
    ]
    answer = node({"messages": [AIMessage("", tool_calls=calls)]})

    first, second, third = answer["messages"]
    assert first.artifact == {"proposal_id": answer["proposal_id"]}
    assert (
        second.content
        == third.content
        == f"not run: this turn already ended with proposal {answer['proposal_id']}"
    )
    assert count_events(cs, "Proposal.Proposed") == 1


# -- Pydantic AI --------------------------------------------------------------------------------


def test_pydantic_ai_toolset_proposes_and_approval_executes_without_the_agent(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks import for_pydantic_ai
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    toolset = for_pydantic_ai.propose_toolset(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    seen: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart(TOOL, WITH_AMOUNT, tool_call_id="c1")])
        if len(seen) == 2:
            return ModelResponse(parts=[ToolCallPart(TOOL, TO_CARD, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("It awaits approval.")])

    agent = PydanticAgent(FunctionModel(model), toolsets=[toolset])
    result = asyncio.run(agent.run("Refund it"))

    (tool,) = seen[0].function_tools
    assert tool.name == TOOL
    assert tool.strict is True
    assert tool.parameters_json_schema == strict_schema(RefundMissingDiscount.Request)
    assert len(seen) == 3
    returns = [
        part
        for message in result.new_messages()
        for part in message.parts
        if getattr(part, "part_kind", "") == "tool-return"
    ]
    refusal, card = returns
    _assert_refused(str(refusal.content))
    (proposal_id,) = for_pydantic_ai.proposal_ids(result.new_messages())
    assert card.metadata == {"proposal_id": proposal_id}
    _assert_card(str(card.content), proposal_id)
    _assert_frozen(cs, proposal_id, "pydantic-ai", "pydantic-ai-slim")
    _approve_once(cs, proposal_id, lambda: len(seen))


def test_pydantic_ai_two_propose_calls_in_one_response_freeze_one_proposal(cs, seeded):
    from countersign.infrastructure.adapters.agent_frameworks import for_pydantic_ai
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    toolset = for_pydantic_ai.propose_toolset(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    credit = {**TO_CARD, "destination": "account_credit"}
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        if len(seen) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(TOOL, TO_CARD, tool_call_id="c1"),
                    ToolCallPart(TOOL, credit, tool_call_id="c2"),
                ]
            )
        return ModelResponse(parts=[TextPart("It awaits approval.")])

    result = asyncio.run(PydanticAgent(FunctionModel(model), toolsets=[toolset]).run("Refund"))

    (proposal_id,) = for_pydantic_ai.proposal_ids(result.new_messages())
    assert count_events(cs, "Proposal.Proposed") == 1
    assert cs.access.card(proposal_id, AVA_IN_GRANITE).status == "pending"
    told = json.dumps([str(getattr(p, "content", "")) for m in seen[1] for p in m.parts])
    assert f"not run: this turn already ended with proposal {proposal_id}" in told


def test_the_proposal_limit_reaches_the_model_with_when_to_try_again(cs, seeded, caplog):
    """Past COUNTERSIGN_PROPOSAL_LIMIT a framework's tool said "could not take this proposal
    now" with a reference, and logged an error with a traceback: it says the limit, as MCP
    does, with the seconds to wait, and logs one line."""
    from countersign.application.proposal_limit import TooManyProposalsError

    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]

    def limited(*args: Any, **kwargs: Any) -> None:
        raise TooManyProposalsError(42)

    cs.access.propose = limited  # type: ignore[method-assign]
    answer = proposer.propose(tool, TO_CARD)

    assert isinstance(answer, TooMany)  # Pydantic AI answers it, not a retry of the call
    assert json.loads(answer.text) == {
        "error": "too_many_proposals",
        "message": "too many proposals in a short time; try again in 42 seconds",
        "retry_after": 42,
        "explain_to_manager": "You have made many proposals in a short time, so I cannot "
        "prepare another one now. Nothing was changed; try again in 42 seconds.",
    }
    assert "Traceback" not in caplog.text
    assert "ERROR" not in [r.levelname for r in caplog.records]


# -- what every framework's tool does -----------------------------------------------------------


def _proposer(cs: Countersign, caller: Caller = AVA_IN_GRANITE, language: str = "en") -> Proposer:
    return Proposer(cs.access, caller, {"channel": "test"}, language=language)


def test_another_clubs_resource_and_a_non_member_are_not_possible_alike(cs, seeded):
    foreign = _proposer(cs).tools({REFUND: seeded["orders"]["maple-refund"]})[0]
    stranger = _proposer(cs, Caller(MIA, "granite"))
    own = stranger.tools({REFUND: seeded["orders"]["refund-ok"]})[0]

    answers = [_proposer(cs).propose(foreign, TO_CARD), stranger.propose(own, TO_CARD)]

    assert answers == [Refused('{"error": "this proposal is not possible here"}')] * 2
    assert count_events(cs, "Proposal.Proposed") == 0


def test_arguments_that_are_not_an_object_are_refused(cs, seeded):
    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]

    for arguments in ("[1, 2]", "{not json", 7):
        answer = proposer.propose(tool, arguments)
        assert answer == Refused('{"error": "the arguments were not a JSON object"}')


def test_arguments_too_deep_or_too_long_to_read_are_refused_not_raised(cs, seeded):
    """A model's arguments nested thousands deep, or holding a number of thousands of digits,
    raised RecursionError and ValueError out of the tool into the framework's run; they are
    refused as the section assistants refuse them, and nothing is proposed."""
    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]
    too_large = "the arguments were longer than 16000 characters, or nested deeper than 8 levels"

    deep = proposer.propose(tool, '{"payment": ' + "[" * 5000 + "]" * 5000 + "}")
    huge = proposer.propose(tool, '{"payment": ' + "1" * 5000 + "}")
    long = proposer.propose(tool, json.dumps({**TO_CARD, "payment": "P" * 20_000}))

    assert deep == Refused(json.dumps({"error": too_large}))
    assert huge == Refused('{"error": "the arguments were not a JSON object"}')
    assert long == Refused(json.dumps({"error": too_large}))
    assert count_events(cs, "Proposal.Proposed") == 0


def test_an_unexpected_failure_reaches_the_model_as_a_reference_only(cs, seeded, monkeypatch):
    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("SELECT * FROM stored_events at /srv/countersign.db")

    monkeypatch.setattr(cs.access, "propose", broken)
    answer = proposer.propose(tool, TO_CARD)

    assert isinstance(answer, Refused)
    assert re.fullmatch(
        r'\{"error": "countersign could not take this proposal now; nothing was changed '
        r'\(reference (cs-[0-9a-f]{16})\)", "explain_to_manager": "countersign could not take '
        r'this proposal now. Nothing was changed; try again shortly \(reference \1\)."\}',
        answer.text,
    )


def test_a_language_the_cards_are_not_written_in_is_refused_when_built(cs):
    with pytest.raises(ValueError, match="language must be one of en, fr, not 'de'"):
        _proposer(cs, language="de")


def test_the_caller_and_the_operations_are_bound_when_the_adapter_is_built(cs):
    with pytest.raises(ValueError, match="organization"):
        Proposer(cs.access, Caller(AVA), {"channel": "test"})
    with pytest.raises(ValueError, match="unknown operation"):
        _proposer(cs).tools({"order.execute_anything": "x"})


def test_a_second_proposal_says_which_pending_one_it_replaced(cs, seeded):
    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]
    first = proposer.propose(tool, TO_CARD)
    second = proposer.propose(tool, TO_CARD)

    assert isinstance(first, Proposed)
    assert isinstance(second, Proposed)
    assert (
        f"It replaces the pending proposal {first.proposal_id}, which can no longer be "
        "approved." in second.text
    )


def test_a_card_says_when_it_needs_more_than_one_approval(cs, seeded):
    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-two-approvers"]})[0]

    answer = proposer.propose(tool, TO_CARD)

    assert isinstance(answer, Proposed)
    assert "It needs 2 approvals by different people." in answer.text.splitlines()


def test_the_card_reads_in_french(cs, seeded):
    proposer = _proposer(cs, language="fr")
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]

    answer = proposer.propose(tool, TO_CARD)

    assert isinstance(answer, Proposed)
    text = answer.text
    assert text.startswith(f"Proposition {answer.proposal_id} : Rembourser une remise manquée.")
    assert "Montant du remboursement : 48,00\N{NO-BREAK SPACE}$\N{NO-BREAK SPACE}CA" in text
    assert f"l'approuve par son identifiant ({answer.proposal_id})" in text
    records = ("Olivia Chen", "Fall Monday Night League", "Early-bird 15% discount", "Visa")
    for record in records:
        text = text.replace(record, "")
    assert ENGLISH.findall(text) == []


# -- the examples -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "model_calls"),
    [("openai_agents_refund", 2), ("langgraph_refund", 2), ("pydantic_ai_refund", 3)],
)
def test_each_example_runs_offline_and_approves_by_id(example, model_calls):
    ran = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{example}.py")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "First call refused, nothing frozen (amount_cents: unknown field; remove it)"
    assert re.fullmatch(r"Proposal [0-9a-f-]{36}: Refund a missed discount\. .*", lines[1])
    assert "Refund amount: $48.00 CAD" in lines
    assert lines[-4].startswith("Approved by id: executed, succeeded. Refunded $48.00 CAD")
    assert lines[-3].startswith("Approved again: already_completed")
    assert lines[-2] == "Refunds the payment sandbox received for it: 1"
    assert lines[-1] == f"Model calls: {model_calls} before approval, {model_calls} after"


# -- the turn guard, as a review probed it ---------------------------------------------------------

CREDIT = {**TO_CARD, "destination": "account_credit"}


def test_pydantic_ai_a_continued_conversation_sharing_its_usage_proposes_again(cs, seeded):
    """Pydantic AI's documented ``usage=`` (a conversation continued, one budget): run 2 is a
    new run, whose first step is not run 1's (a review found it refused, keyed on the usage)."""
    from countersign.infrastructure.adapters.agent_frameworks import for_pydantic_ai
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RunUsage

    toolset = for_pydantic_ai.propose_toolset(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )

    def scripted(args):
        def model(messages, info):
            if len([m for m in messages if m.kind == "response"]) == len(
                [m for m in messages if m.kind == "request"]
            ) - 1 and not any(
                getattr(p, "part_kind", "") == "tool-return" for p in messages[-1].parts
            ):
                return ModelResponse(parts=[ToolCallPart(TOOL, args, tool_call_id="c")])
            return ModelResponse(parts=[TextPart("done")])

        return FunctionModel(model)

    usage = RunUsage()
    r1 = asyncio.run(Agent(scripted(TO_CARD), toolsets=[toolset]).run("refund", usage=usage))
    first = for_pydantic_ai.proposal_ids(r1.new_messages())
    r2 = asyncio.run(
        Agent(scripted(CREDIT), toolsets=[toolset]).run(
            "no, as account credit", message_history=r1.all_messages(), usage=usage
        )
    )
    second = for_pydantic_ai.proposal_ids(r2.new_messages())
    told = [str(getattr(p, "content", "")) for m in r2.new_messages() for p in m.parts]
    assert len(first) == 1
    assert len(second) == 1, told


def test_openai_agents_a_model_that_reports_no_request_count_proposes_in_each_response(cs, seeded):
    """A custom Model whose responses carry no request count leaves ``usage.requests`` at 0:
    the second response's revision was refused (a review); its token counts tell them apart."""
    from agents import Usage
    from agents.testing import ModelStep, ScriptedModel, function_call
    from countersign.infrastructure.adapters.agent_frameworks import for_openai_agents

    tools = for_openai_agents.propose_tools(
        cs.access, AVA_IN_GRANITE, {REFUND: seeded["orders"]["refund-ok"]}
    )
    no_count = Usage(input_tokens=10)  # tokens, no request count
    model = ScriptedModel(
        [
            ModelStep(output=[function_call(TOOL, TO_CARD, call_id="c1")], usage=no_count),
            ModelStep(output=[function_call(TOOL, CREDIT, call_id="c2")], usage=no_count),
            ModelStep(output=[], usage=no_count),
        ]
    )
    result = _openai_run(tools, model, stop=False)  # the model runs again after each call
    outputs = [str(i.output) for i in result.new_items if hasattr(i, "output")]
    assert len(for_openai_agents.proposal_ids(result)) == 2, outputs


def test_forgetting_old_runs_never_drops_a_response_still_proposing(cs, seeded, monkeypatch):
    """Evicting the entry whose lock a call held let the response's next call propose too."""
    from countersign.infrastructure.adapters.agent_frameworks import proposing

    monkeypatch.setattr(proposing, "TURNS_KEPT", 2)
    proposer = _proposer(cs)
    tool = proposer.tools({REFUND: seeded["orders"]["refund-ok"]})[0]
    real = proposer._propose
    inside, go = threading.Event(), threading.Event()

    def slow(t, a):
        if a is TO_CARD:
            inside.set()
            go.wait(5)
        return real(t, a)

    proposer._propose = slow  # type: ignore[method-assign]

    class Usage: ...

    run = Usage()
    answers: list[Any] = []
    first = threading.Thread(
        target=lambda: answers.append(proposer.propose(tool, TO_CARD, (run, 1)))
    )
    first.start()
    inside.wait(5)
    others = [Usage() for _ in range(3)]
    for other in others:  # three other runs touch the proposer (refused calls: no proposal)
        proposer.propose(tool, "not json", (other, 1))
    second = threading.Thread(
        target=lambda: answers.append(proposer.propose(tool, CREDIT, (run, 1)))
    )
    second.start()
    second.join(0.5)
    go.set()
    first.join()
    second.join()
    assert sum(isinstance(a, Proposed) for a in answers) == 1


@pytest.mark.parametrize(
    ("raised", "french"),
    [
        (
            "held",
            "Une proposition pour ceci attend déjà une décision (quelqu'un l'a déjà approuvée) : "
            "je ne l'ai pas remplacée. Rien n'a été modifié ; ouvrez-la depuis « À traiter » "
            "pour l'approuver, la modifier ou la refuser.",
        ),
        (
            "limited",
            "Vous avez fait beaucoup de propositions en peu de temps : je ne peux pas en préparer "
            "une autre maintenant. Rien n'a été modifié ; réessayez dans 42 secondes.",
        ),
        (
            "broken",
            "countersign n'a pas pu prendre cette proposition maintenant. Rien n'a été modifié ; "
            "réessayez bientôt (référence cs-",
        ),
    ],
)
def test_a_refusal_the_manager_must_hear_of_is_in_the_proposers_language(
    cs, seeded, raised, french
):
    """A French proposer's card was French, but a proposal held for people, the proposal
    limit and an unexpected failure answered in English only, where the section assistants
    tell the manager in the conversation's language. The error the model reads is as before;
    ``explain_to_manager`` says it in the proposer's language, the section assistants'
    words."""
    from countersign.application.errors import HeldForPeopleError
    from countersign.application.proposal_limit import TooManyProposalsError

    def refused(*args: Any, **kwargs: Any) -> None:
        if raised == "held":
            raise HeldForPeopleError(HeldForPeopleError.APPROVED)
        if raised == "limited":
            raise TooManyProposalsError(42)
        raise RuntimeError("SELECT * FROM stored_events")

    cs.access.propose = refused  # type: ignore[method-assign]
    tool = _proposer(cs).tools({REFUND: seeded["orders"]["refund-ok"]})[0]

    answers = {
        language: json.loads(_proposer(cs, language=language).propose(tool, TO_CARD).text)
        for language in ("en", "fr")
    }

    assert answers["fr"]["explain_to_manager"].startswith(french)
    assert ENGLISH.findall(answers["fr"]["explain_to_manager"].replace("countersign", "")) == []
    assert answers["en"].keys() == answers["fr"].keys()
    assert "Nothing was changed" in answers["en"]["explain_to_manager"]
