"""JSON text from outside, read by one set of rules: a model's tool-call arguments
(``application.assistant.tool_arguments``), a page's form field (``web.request_form``), the
command line's ``--request`` and an agent framework's tool call. Each reader used to guard
``json.loads`` on its own, and each missed something once: text nested thousands deep raised
RecursionError, a number of thousands of digits raised int()'s ValueError, and either became
an internal error; an escaped lone surrogate (``"\\ud800"``: valid JSON, but a string no UTF-8
text can hold) or a NUL (``"\\u0000"``, which PostgreSQL refuses) failed later, where the
value was validated or stored (``domain.storable_text``). ``NaN``, ``Infinity`` and
``-Infinity``, which Python's reader takes and JSON does not have, and a number whose value
no float holds (``1e999``, read as infinity), went on to be validated and stored as numbers
(PostgreSQL's jsonb refuses them too). Here each is refused as unreadable, with text too
long, before anything else reads the value; each caller words the refusal for its own reader
(the page's message, the command's exit 4, the model's error)."""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from countersign.domain.storable_text import WHY, holds_unstorable

#: The longest text read (characters): the API's default body limit (COUNTERSIGN_API_MAX_BODY).
MAX_CHARS = 64 * 1024
#: How deep arrays and objects may nest: a request is an object of fields and a list or two.
MAX_DEPTH = 32
#: The longest number (characters): a 64-bit integer has 20, a float's exact decimal fewer
#: than 100, and int() reads up to 4,300 digits, slowly, before it raises ValueError.
MAX_NUMBER = 100

Kind = Literal["syntax", "length", "depth", "number", "text"]


class UnreadableJsonError(ValueError):
    """Raised when text is not JSON, or is longer, nests deeper or holds a longer number than
    the rules read. ``why`` says which in a few words that never quote the text."""

    def __init__(self, kind: Kind, why: str) -> None:
        super().__init__(why)
        self.kind: Kind = kind
        self.why = why


def read_json(text: str, *, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """The value ``text`` holds; UnreadableJsonError if it is not JSON or breaks a rule.
    A caller with tighter bounds (a model's call is short and flat) passes its own."""
    if len(text) > max_chars:
        raise UnreadableJsonError("length", f"longer than {max_chars} characters")
    try:
        value = json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise UnreadableJsonError("syntax", error.msg) from None
    except RecursionError:  # deeper than the parser goes, far past any bound
        raise UnreadableJsonError("depth", "nested too deeply") from None
    if _depth(value, max_depth) > max_depth:
        raise UnreadableJsonError("depth", "nested too deeply")
    if holds_unstorable(value):
        raise UnreadableJsonError("text", f"a string holding {WHY}")
    return value


def _integer(digits: str) -> int:
    _check_length(digits)
    return int(digits)


def _float(digits: str) -> float:
    _check_length(digits)
    value = float(digits)
    if not math.isfinite(value):  # 1e999: more than any float holds
        raise UnreadableJsonError("number", "a number too large to read")
    return value


def _not_json(constant: str) -> Any:
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's reader takes them, JSON has none."""
    raise UnreadableJsonError("syntax", f"{constant} is not a JSON value")


def _check_length(number: str) -> None:
    if len(number) > MAX_NUMBER:
        raise UnreadableJsonError("number", "a number too large to read")


def _depth(value: Any, bound: int) -> int:
    """How deep ``value`` nests (walked without recursion, and no further than one past
    ``bound``)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth <= bound:
                todo.extend(
                    (child, depth + 1)
                    for child in (item.values() if isinstance(item, dict) else item)
                )
    return deepest
