"""Text every store takes: no NUL character and no lone surrogate, checked where text comes in.

PostgreSQL's text and jsonb refuse NUL (psycopg.DataError), and no UTF-8 text (a database
column, a stored event, a model's request) holds a lone surrogate (valid JSON, ``"\\ud800"``,
reads as one). Such text was taken by whichever entry point met it first and failed where it
was stored or projected: a 500, a half-saved turn, a projection stopped. So every boundary
refuses it on the way in, with its own words (the API's 422, a page's 400, a tool error):
the JSON API's bodies (``Body``), paths and query strings (``ApiGate``), the pages' forms,
paths and queries (``Site``), JSON read from outside (``untrusted_json``: a model's tool-call
arguments, a page's JSON field, the command line's ``--request``) and MCP's arguments.
"""

from __future__ import annotations

import re
from typing import Any

#: A NUL, or a surrogate code point: JSON reads a valid pair as one character, so any left in
#: a str is a lone one.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
WHY = "a NUL character or a lone surrogate, which no database stores"
#: The validation error's type where a request model refuses such text (its safe message).
UNSTORABLE_TEXT = "unstorable_text"


def unstorable(text: str) -> bool:
    """Whether ``text`` holds a character no database stores."""
    # Printable text has neither (NUL is Cc, a surrogate Cs): one pass in C, most text ends here.
    return not text.isprintable() and _UNSTORABLE.search(text) is not None


def holds_unstorable(value: Any) -> bool:
    """Whether a string of ``value`` (a dict's key, a list's item, however nested) is
    ``unstorable``; walked without recursion."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if unstorable(item):
                return True
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
    return False


def unstorable_target(path: str, query: bytes) -> bool:
    """Whether a URL's decoded ``path`` or raw ``query`` string holds a NUL (``%00`` or the
    byte itself). (A lone surrogate cannot come this way: servers decode both as UTF-8 with
    replacement characters.)"""
    return "\x00" in path or b"\x00" in query or b"%00" in query
