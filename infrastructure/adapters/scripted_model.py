"""An OpenAI-compatible endpoint served in-process, for the offline demo and the tests.

It sits behind the real ``openai`` client (through the HTTP client's transport), so the
production adapter's whole code path runs: request building, response parsing, retries. A
policy decides each answer: ``StandInPolicy`` is a small deterministic model for the demo
(``COUNTERSIGN_MODEL=scripted``); ``Script`` plays a fixed sequence for tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

BASE_URL = "http://scripted.countersign.invalid/v1"


@dataclass(frozen=True)
class Say:
    """Answer with text."""

    text: str


@dataclass(frozen=True)
class Call:
    """Answer with one tool call; ``arguments`` may be a dict or raw (even malformed) text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error, like an overloaded or broken endpoint."""

    status: int
    retry_after: float | None = None


Answer = Say | Call | Fail
Policy = Callable[[dict[str, Any]], Answer]


class ScriptedEndpoint:
    """Chat completions over ``httpx2.MockTransport``; keeps every request it received."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []

    def client(self) -> openai.OpenAI:
        transport = httpx2.MockTransport(self.handle)
        return openai.OpenAI(
            api_key="offline",
            base_url=BASE_URL,
            http_client=httpx2.Client(transport=transport),
            max_retries=0,
        )

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.raw_requests.append(request.content)
        body = json.loads(request.content)
        self.requests.append(body)
        answer = self.policy(body)
        if isinstance(answer, Fail):
            headers = {"retry-after": str(answer.retry_after)} if answer.retry_after else {}
            return httpx2.Response(
                answer.status, headers=headers, json={"error": {"message": "scripted"}}
            )
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(answer, Say):
            message["content"] = answer.text
        else:
            arguments = answer.arguments
            message["tool_calls"] = [
                {
                    "id": f"call_{len(self.requests)}",
                    "type": "function",
                    "function": {
                        "name": answer.name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
            ]
            finish = "tool_calls"
        return httpx2.Response(
            200,
            json={
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            },
        )


class Script:
    """Plays answers in order, whatever it is asked; for tests."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)

    def __call__(self, request: dict[str, Any]) -> Answer:
        if not self.answers:
            return Say("(the script has ended)")
        return self.answers.pop(0)


class StandInPolicy:
    """A small deterministic model: it reads, then proposes what the facts support.

    Orders: it reads the investigation and proposes the first missed discount, to account
    credit when the manager mentions credit, else to the original payment method. Email: it
    lists the leagues and drafts to the ones the manager named. Like a model, it knows no
    operation by name: it proposes with the offered tool whose parameters fit its request. It
    corrects a rejected request once by dropping the fields the application called unknown.
    """

    def __call__(self, request: dict[str, Any]) -> Answer:
        messages = request.get("messages", [])
        tools = {t["function"]["name"] for t in request.get("tools", [])}
        manager = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        last = messages[-1] if messages else {}
        if last.get("role") == "user":
            if "get_order_investigation" in tools:
                return Call("get_order_investigation")
            return Call("list_leagues")
        if last.get("role") != "tool":
            return Say("How can I help with this?")
        answered = _answered_call(messages, last.get("tool_call_id"))
        result = _json(last.get("content"))
        if "problems" in result and answered is not None:
            return self._correct(answered, result["problems"])
        offered = request.get("tools", [])
        if answered is not None and answered["name"] == "get_order_investigation":
            return _propose(_refund_request(result, manager), offered)
        if answered is not None and answered["name"] == "list_leagues":
            return _propose(_draft_request(result, manager), offered)
        return Say("I could not find anything to propose.")

    @staticmethod
    def _correct(call: dict[str, Any], problems: list[dict[str, str]]) -> Answer:
        unknown = {p["field"] for p in problems if "unknown field" in p.get("message", "")}
        arguments = _json(call.get("arguments"))
        if not unknown or not isinstance(arguments, dict):
            first = problems[0] if problems else {"field": "?", "message": "rejected"}
            return Say(f"I could not prepare it: {first['field']}: {first['message']}.")
        return Call(call["name"], {k: v for k, v in arguments.items() if k not in unknown})


def _propose(request: dict[str, Any] | Say, offered: list[dict[str, Any]]) -> Answer:
    """Call the offered tool whose parameters are exactly the request's fields: the stand-in
    picks its propose tool by reading the schemas it was given, like a model does."""
    if isinstance(request, Say):
        return request
    for tool in offered:
        function = tool.get("function") or {}
        if set((function.get("parameters") or {}).get("properties") or {}) == set(request):
            return Call(function["name"], request)
    return Say("None of my tools can propose that.")


def _refund_request(order: dict[str, Any], manager: str) -> dict[str, Any] | Say:
    for discount in order.get("discounts", []):
        if discount.get("applied_at_checkout") or discount.get("already_refunded"):
            continue
        payments = [p for p in order.get("payments", []) if p.get("refundable_cents", 0) > 0]
        if not payments:
            break
        wants_credit = re.search(r"\b(credit|account)\b", manager, re.IGNORECASE) is not None
        return {
            "payment": payments[0]["ref"],
            "line_item": discount["line_item"],
            "discount": discount["ref"],
            "destination": "account_credit" if wants_credit else "original_payment_method",
        }
    return Say("Nothing is owed on this order: every eligible discount was applied or refunded.")


def _draft_request(listing: dict[str, Any], manager: str) -> dict[str, Any] | Say:
    named = [
        league["name"]
        for league in listing.get("leagues", [])
        if league["name"].lower() in manager.lower()
        or league["name"].split()[0].lower() in manager.lower().split()
    ]
    if not named:
        names = ", ".join(league["name"] for league in listing.get("leagues", []))
        return Say(f"Which leagues should receive it? The club has: {names}.")
    topic = manager.split(" about ", 1)[1].rstrip(".") if " about " in manager else "club news"
    return {
        "filters": {"leagues": named},
        "subject": topic[:1].upper() + topic[1:80],
        "body": f"Hello curlers,\n\nA quick note about {topic}.\n\nSee you on the ice!",
    }


def _answered_call(messages: list[dict[str, Any]], call_id: Any) -> dict[str, Any] | None:
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                return {
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                }
    return None


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else (text or {})
    except json.JSONDecodeError:
        return {}
