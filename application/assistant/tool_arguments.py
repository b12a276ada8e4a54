"""A model's tool-call arguments as the assistants read them: a JSON object of bounded size
and depth, or a sentence that tells the model why not (``service.AssistantService``)."""

from __future__ import annotations

import json
from typing import Any

#: The longest arguments a tool call may carry (characters): every tool's request is a few
#: short fields and an e-mail body of at most 5,000.
MAX_ARGUMENTS = 16_000
#: How deep its JSON may nest: every tool's request is a flat object and a list or two.
MAX_DEPTH = 8
NOT_AN_OBJECT = "the arguments were not a JSON object"
TOO_LARGE = "the arguments were longer than 16000 characters, or nested deeper than 8 levels"


def sent_back(raw: str) -> str:
    """What goes back to the model as the call it made: its arguments, or ``{}`` if too long
    to act on (each next request would carry them again)."""
    return raw if len(raw) <= MAX_ARGUMENTS else "{}"


def parsed(raw: str) -> dict[str, Any] | None:
    """The call's arguments as a JSON object; None if they are not one, are longer than
    ``MAX_ARGUMENTS`` or nest deeper than ``MAX_DEPTH``."""
    if len(raw or "") > MAX_ARGUMENTS:
        return None
    try:
        value = json.loads(raw or "{}")
    except (ValueError, TypeError, RecursionError):
        return None
    return value if isinstance(value, dict) and _depth(value) <= MAX_DEPTH else None


def why_unreadable(raw: str) -> str:
    """What the model reads when ``parsed`` found none in ``raw``."""
    if len(raw or "") > MAX_ARGUMENTS:
        return TOO_LARGE
    try:
        value = json.loads(raw or "{}")
    except (ValueError, TypeError):
        return NOT_AN_OBJECT
    except RecursionError:
        return TOO_LARGE
    return TOO_LARGE if isinstance(value, dict) else NOT_AN_OBJECT


def _depth(value: Any) -> int:
    """How deep ``value`` nests (its own containers, walked without recursion)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                todo.extend(
                    (child, depth + 1)
                    for child in (item.values() if isinstance(item, dict) else item)
                )
    return deepest
