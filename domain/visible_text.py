"""Text a person reads as it is: no character that formats without being seen.

A model's request, a participant's name, a club's webhook URL all reach a reviewer's eyes.
A bidirectional override in one of them reorders what follows it on the same line: the
headline “Spring schedule<U+202E>” to 13 recipients reads "31 ot" on the card, and a name
ending in one makes "refund $345.00" read "00.543$". A zero-width space or a line separator
hides or splits text the same quiet way. So such text is refused where it comes in
(``invisible_formatting``: a model's request, a roster name, a webhook URL) and shown as
escapes wherever stored text goes out (``shown``: the pages, the command line), for what was
stored before.
"""

from __future__ import annotations

import json
import re
import unicodedata

#: Joiners stay: they join letters in Persian and Indic scripts and make one emoji of several.
_JOINERS = frozenset("\u200c\u200d")
#: Formatting (Cf) and the line and paragraph separators (Zl, Zp).
_INVISIBLE = frozenset({"Cf", "Zl", "Zp"})
#: Line breaks and tabs lay multi-line text out; every other control character is shown.
_LAYOUT = frozenset("\n\t")


def _hidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    if category == "Cc":
        return ch not in _LAYOUT
    return category in _INVISIBLE and ch not in _JOINERS


def invisible_formatting(value: str) -> bool:
    """Whether ``value`` holds a character that formats without being seen: a bidirectional
    override, embedding, isolate or mark, a zero-width space, a soft hyphen, a tag character,
    a line or paragraph separator (control characters are refused on their own)."""
    if value.isprintable():  # one pass in C: most text ends here
        return False
    category = unicodedata.category
    return any(category(ch) in _INVISIBLE and ch not in _JOINERS for ch in value)


def shown(value: str) -> str:
    """``value`` with each control character (but line breaks and tabs) and each invisible
    formatting character written as its escape (``\\u202e``), so it can neither reorder nor
    hide what a person reads; other text as it is."""
    if value.isprintable():
        return value
    return "".join(_escape(ch) if _hidden(ch) else ch for ch in value)


def shown_json(document: str) -> str:
    """A JSON text with the same characters escaped as JSON escapes (``\\u202e``): still the
    same JSON, and nothing in it moves a terminal's cursor or reorders its line (its own
    line breaks and indentation, outside its strings, stay: ``json.dumps`` escapes those
    inside them)."""
    if document.isprintable():
        return document
    return "".join(json.dumps(ch)[1:-1] if _hidden(ch) else ch for ch in document)


def _escape(ch: str) -> str:
    return repr(ch)[1:-1]  # '\u202e', '\x1b', '\U000e0041'


#: What goes before each further line of a multi-line value in a text card.
CONTINUED = "  | "


def one_value(value: str) -> str:
    """A value of a text card (an e-mail body), ``shown``, its further lines each after
    ``CONTINUED``: a line of it cannot pass for one of the card's own ("Approvals: 1/1",
    "Review page: ...") wherever the card is read as text."""
    first, *more = shown(value).split("\n")
    return first if not more else "\n".join([first, *(CONTINUED + line for line in more)])


def plain_line(value: str) -> bool:
    """Whether ``value`` is one line a person reads as it is: no control character (a line
    break included) and no invisible formatting character; spaces of every kind and the
    joiners are fine (a name, a league)."""
    if value.isprintable():
        return True
    category = unicodedata.category
    return all(ch.isprintable() or category(ch) == "Zs" or ch in _JOINERS for ch in value)


def visible_only(value: str) -> str:
    """``value`` without its control characters (but line breaks and tabs) and invisible
    formatting characters: for a person's own words (a decline note), where refusing what
    they cannot see would only puzzle them."""
    if value.isprintable():
        return value
    return "".join(ch for ch in value if not _hidden(ch))


#: Why a message that shows nothing is refused (``blank``), in the words a problem shows.
NOTHING_WRITTEN = "nothing is written in it: only spaces or invisible characters"


def blank(value: str) -> bool:
    """Whether ``value`` shows a reader nothing: it is empty, or holds only spaces of any
    kind, line breaks and tabs, control characters, and characters that format without being
    seen (a zero-width space, non-joiner or joiner, a word joiner, a byte order mark). An
    assistant is never asked to answer one."""
    if value.isprintable():  # one pass in C: most text ends here
        return not value.strip()
    category = unicodedata.category
    return all(ch.isspace() or category(ch) in _UNSEEN for ch in value)


#: What shows nothing by itself: control and formatting characters, line and paragraph
#: separators (the joiners are formatting characters too).
_UNSEEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


#: What a name a client gives itself keeps: letters, digits, single spaces and ``. _ - + /``,
#: enough for a product's name and version ("Claude Desktop", "1.2.0-beta+3"). An MCP client
#: names itself, so its name is the agent's to write: with brackets, quotes and other
#: punctuation it closed the "(...)" the card, the review page and the audit trail show it
#: in, and went on in the application's own voice ("through MCP (Claude) — approved by Noah
#: Okafor (…").
_NOT_NAME_TEXT = re.compile(r"[^\w .+/-]+")
#: The longest name kept.
NAME_LENGTH = 40
#: A name already plain: one match in C, for the names shown at every proposal's line.
_PLAIN_NAME = re.compile(r"[\w.+/-]+(?: [\w.+/-]+)*")


def plain_name(value: str) -> str:
    """``value`` with only a name's plain characters (``_NOT_NAME_TEXT``), at most
    ``NAME_LENGTH``: kept so where a client's name comes in (an origin), and shown so where
    it goes out, for what was stored before."""
    if len(value) <= NAME_LENGTH and _PLAIN_NAME.fullmatch(value):
        return value
    return " ".join(_NOT_NAME_TEXT.sub("", value).split())[:NAME_LENGTH].strip()
