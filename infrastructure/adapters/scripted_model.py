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
from countersign.application.assistant.closing_texts import WRITE_TO_THE_MANAGER
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.stand_in_words import (
    answering_in,
    asks_for_help,
    language_of,
    only_greets,
)

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

    Like a model, it knows no operation by name. It first calls each offered read tool that
    needs no choice of arguments (it has no parameters, or only ones that accept null, such as
    an optional search query: it sends them as null), once per manager message. Then it asks
    the contracts behind the offered propose tools to fill their request from the manager's
    words and what it read (``OperationContract.stand_in``), those whose ``stand_in_cue``
    matches the words first, and proposes the first request it gets. It corrects a rejected
    request once by dropping the fields the application called unknown; a refusal it cannot
    correct, it explains to the manager in the words the application gave for them. What it
    says of its own (a greeting, what it can propose) is in the language of the manager's
    words, or, where they say too little to tell, the one its instructions name.
    """

    def __call__(self, request: dict[str, Any]) -> Answer:
        messages = request.get("messages", [])
        with answering_in(_conversation_language(messages)):
            return self._answer(messages, request.get("tools", []))

    def _answer(self, messages: list[dict[str, Any]], offered: list[dict[str, Any]]) -> Answer:
        last = messages[-1] if messages else {}
        words = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        language = language_of(words)
        if last.get("role") not in ("user", "tool"):
            return Say(_HOW_CAN_I_HELP.text(language))
        if last.get("role") == "tool":
            answered = _answered_call(messages, last.get("tool_call_id"))
            result = _json(last.get("content"))
            if "problems" in result and answered is not None:
                return self._correct(answered, result, language)
        reads = _read_this_turn(messages)
        proposers = _proposers(offered)
        for tool in offered:
            function = tool.get("function") or {}
            name = str(function.get("name", ""))
            arguments = _all_null(function.get("parameters") or {})
            if name not in proposers and arguments is not None and name not in reads:
                return Call(name, arguments)
        return _propose(words, reads, proposers, language)

    @staticmethod
    def _correct(call: dict[str, Any], refusal: dict[str, Any], language: str) -> Answer:
        """Drop the fields the application called unknown and call again; otherwise tell the
        manager what the application said is wrong, in the words it gave for them."""
        problems = refusal.get("problems") or []
        unknown = {p.get("field") for p in problems if "unknown field" in p.get("message", "")}
        arguments = _json(call.get("arguments"))
        if not unknown or not isinstance(arguments, dict):
            said = refusal.get("explain_to_manager") or _COULD_NOT_PREPARE.text(language)
            return Say(str(said))
        return Call(call["name"], {k: v for k, v in arguments.items() if k not in unknown})


def _all_null(parameters: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments for a tool called without choosing anything: every parameter null (strict
    schemas require them all); None when one of them does not accept null."""
    properties = parameters.get("properties") or {}
    if not all(_accepts_null(schema) for schema in properties.values()):
        return None
    return dict.fromkeys(properties)


def _accepts_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    types = [option.get("type") for option in [schema, *(schema.get("anyOf") or [])]]
    return any(kind == "null" or (isinstance(kind, list) and "null" in kind) for kind in types)


def _proposers(offered: list[dict[str, Any]]) -> dict[str, AnyContract]:
    """The contracts behind the offered propose tools: same name, same parameters."""
    found = {}
    for tool in offered:
        function = tool.get("function") or {}
        fields = set((function.get("parameters") or {}).get("properties") or {})
        for contract in REGISTRY.values():
            if (
                contract.tool_name == function.get("name")
                and set(contract.Request.model_fields) == fields
            ):
                found[contract.tool_name] = contract
    return found


def _conversation_language(messages: list[dict[str, Any]]) -> str:
    """The language the instructions tell the model to write to the manager in."""
    system = next((m for m in messages if m.get("role") == "system"), {})
    instructions = str(system.get("content") or "")
    return next((k for k, line in WRITE_TO_THE_MANAGER.items() if line in instructions), "en")


def _propose(
    words: str, reads: dict[str, Any], proposers: dict[str, AnyContract], language: str
) -> Answer:
    """Words that only greet or ask for help: a greeting back and what it can propose, in
    ``language``. Else the first request a contract fills, cued contracts first; else what
    one said; else that it can propose only what it can."""
    if only_greets(words) or asks_for_help(words):
        greeting = _HELLO.text(language) if only_greets(words) else ""
        return Say(greeting + _what_i_can_do(proposers, language, _I_CAN))
    cued = [
        c
        for c in proposers.values()
        if c.stand_in_cue and re.search(c.stand_in_cue, words, re.IGNORECASE)
    ]
    uncued = [c for c in proposers.values() if not c.stand_in_cue]
    said = None
    for contract in cued + uncued:
        filled = contract.stand_in(words, reads)
        if isinstance(filled, dict):
            return Call(contract.tool_name, filled)
        said = said or filled
    return Say(said or _what_i_can_do(proposers, language))


_HOW_CAN_I_HELP = Localized("How can I help with this?", "Comment puis-je vous aider ici ?")
_COULD_NOT_PREPARE = Localized("I could not prepare it.", "Je n'ai pas pu la préparer.")
_HELLO = Localized("Hello! ", "Bonjour ! ")
_I_CAN = Localized(
    "Here I can propose: {can}. Tell me what you need, and I will prepare it for a person to "
    "approve.",
    "Ici, je peux proposer : {can}. Dites-moi ce qu'il vous faut, et je le préparerai pour "
    "qu'une personne l'approuve.",
)
_NOTHING = Localized("I could not find anything to propose.", "Je n'ai rien trouvé à proposer.")
_ONLY = Localized(
    "I could not find anything to propose from that. Here I can only propose: {can}. Say what "
    "you need in those terms.",
    "Je n'ai rien trouvé à proposer à partir de cela. Ici, je peux seulement proposer : {can}. "
    "Dites ce qu'il vous faut en ces termes.",
)


def _what_i_can_do(
    proposers: dict[str, AnyContract], language: str, said: Localized | None = None
) -> str:
    """What this assistant proposes (``said``: by default, that nothing the words asked for
    is among it), in ``language``."""
    titles = (contract.title.text(language).lower() for contract in proposers.values())
    can = (" ; " if language == "fr" else "; ").join(titles)
    return (said or _ONLY).text(language, can=can) if can else _NOTHING.text(language)


def _read_this_turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What each tool called since the manager's last message returned, by tool name."""
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    reads: dict[str, Any] = {}
    for message in messages[start + 1 :]:
        if message.get("role") == "tool":
            call = _answered_call(messages, message.get("tool_call_id"))
            if call is not None:
                reads[call["name"]] = _json(message.get("content"))
    return reads


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
