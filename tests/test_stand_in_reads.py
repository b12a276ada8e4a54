"""The offline stand-in model reads before it proposes: every read tool it can call without
choosing an argument, once per manager message. Strict tool schemas list every parameter as
required, so an optional one (a search query) is one that accepts null: it is sent as null."""

from __future__ import annotations

import json
from typing import Any

from countersign.application.assistant.schemas import function_tool
from countersign.application.assistant.sections import ReadToolRequest
from countersign.infrastructure.adapters.scripted_model import Call, Say, StandInPolicy
from pydantic import Field


class ListThings(ReadToolRequest):
    """List the things."""


class SearchThings(ReadToolRequest):
    """Search the things; without a query, the first ones."""

    query: str | None = Field(default=None, description="Part of a thing's name, or null.")


class CountThings(ReadToolRequest):
    """Count the things in these boxes."""

    boxes: list[str] = Field(description="Box names.")


TOOLS = [
    function_tool("list_things", ListThings),
    function_tool("search_things", SearchThings),
    function_tool("count_things", CountThings),
]


def _ask(messages: list[dict[str, Any]]) -> Any:
    return StandInPolicy()({"messages": messages, "tools": TOOLS})


def _answered(messages: list[dict[str, Any]], call: Call, result: Any) -> None:
    call_id = f"call_{len(messages)}"
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})


def test_it_reads_with_every_tool_whose_parameters_may_all_be_null_then_stops_reading():
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Anything to do?"}]

    first = _ask(messages)
    assert first == Call("list_things", {})
    _answered(messages, first, {"things": []})

    second = _ask(messages)
    assert second == Call("search_things", {"query": None})
    assert SearchThings.model_validate(second.arguments).query is None
    _answered(messages, second, {"things": []})

    # count_things needs box names: the stand-in never makes them up. No contract is
    # offered, so nothing can be proposed.
    assert isinstance(_ask(messages), Say)
