"""A model's tool-call arguments as the assistants read them: a JSON object of bounded size
and depth (read by ``domain.untrusted_json``, with the tighter bounds below), or a sentence
that tells the model why not (``service.AssistantService``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from countersign.domain.untrusted_json import UnreadableJsonError, read_json

if TYPE_CHECKING:
    from countersign.application.ports import ModelReply

#: The longest arguments a tool call may carry (characters): every tool's request is a few
#: short fields and an e-mail body of at most 5,000.
MAX_ARGUMENTS = 16_000
#: How deep its JSON may nest: every tool's request is a flat object and a list or two.
MAX_DEPTH = 8
NOT_AN_OBJECT = "the arguments were not a JSON object"
TOO_LARGE = "the arguments were longer than 16000 characters, or nested deeper than 8 levels"
NOT_TEXT = (
    "the arguments held a string no database stores (a NUL character or a lone surrogate escape)"
)


def sent_back(raw: str) -> str:
    """What goes back to the model as the call it made: its arguments, or ``{}`` if too long
    to act on (each next request would carry them again)."""
    return raw if len(raw) <= MAX_ARGUMENTS else "{}"


def parsed(raw: str) -> dict[str, Any] | None:
    """The call's arguments as a JSON object; None if they are not one, are longer than
    ``MAX_ARGUMENTS`` or nest deeper than ``MAX_DEPTH``."""
    value = _read(raw)
    return value if isinstance(value, dict) else None


def why_unreadable(raw: str) -> str:
    """What the model reads when ``parsed`` found none in ``raw``."""
    try:
        read_json(raw or "{}", max_chars=MAX_ARGUMENTS, max_depth=MAX_DEPTH)
    except UnreadableJsonError as refused:
        if refused.kind == "text":
            return NOT_TEXT
        return TOO_LARGE if refused.kind in ("length", "depth") else NOT_AN_OBJECT
    return NOT_AN_OBJECT


def _read(raw: str) -> Any:
    try:
        return read_json(raw or "{}", max_chars=MAX_ARGUMENTS, max_depth=MAX_DEPTH)
    except UnreadableJsonError:
        return None


def assistant_message(reply: ModelReply) -> dict[str, Any]:
    """A model's answer as the next request carries it back to the model."""
    return {
        "role": "assistant",
        "content": reply.text,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                # Arguments too large to act on are not sent back either: each next request
                # would carry them again.
                "function": {"name": c.name, "arguments": sent_back(c.arguments)},
            }
            for c in reply.tool_calls
        ],
    }
