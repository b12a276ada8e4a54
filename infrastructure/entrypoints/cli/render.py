"""The terminal's basics: JSON documents, text safe to print, boxes, and refused requests."""

from __future__ import annotations

import json
import textwrap
import unicodedata
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from countersign.domain.contracts.presentation import Localized
from countersign.domain.visible_text import shown_json

if TYPE_CHECKING:
    from countersign.domain.contracts.problems import Problem

WIDTH = 72


def to_json(document: Any) -> str:
    """The document as JSON, with control and invisible formatting characters written as
    JSON escapes (``visible_text.shown_json``): the same document, safe in a terminal."""
    return shown_json(json.dumps(document, default=json_value, ensure_ascii=False, indent=2))


def terminal(text: str) -> str:
    """Text for a terminal: each line ``printable``, its line breaks kept."""
    if text.isprintable():
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


def json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def printable(text: str) -> str:
    """Show control and format characters as escapes, so stored text cannot move the
    terminal's cursor or reorder what it shows; spaces of every kind stay spaces (French
    amounts hold no-break spaces: '48,00 $ CA')."""
    return "".join(ch if _shows_as_itself(ch) else repr(ch)[1:-1] for ch in text)


def _shows_as_itself(ch: str) -> bool:
    # str.isprintable() is False for every space but ' ': U+00A0, U+202F and the other
    # space separators (Zs) move nothing; line and paragraph separators (Zl, Zp) do.
    return ch.isprintable() or unicodedata.category(ch) == "Zs"


def box(title: str, rows: list[tuple[str, str]]) -> str:
    label_width = max((len(label) for label, _ in rows), default=0)
    value_width = WIDTH - label_width - 5
    lines = [f"┌─ {title} " + "─" * max(0, WIDTH - len(title) - 4) + "┐"]
    for label, value in rows:
        # A multi-line value (an e-mail body) keeps its lines; each is wrapped on its own.
        wrapped = [
            part
            for line in str(value).split("\n")
            for part in (textwrap.wrap(printable(line), value_width) or [""])
        ]
        for i, part in enumerate(wrapped):
            shown = label if i == 0 else ""
            lines.append(f"│ {shown:<{label_width}}  {part:<{value_width}} │")
    lines.append("└" + "─" * (WIDTH - 1) + "┘")
    return "\n".join(lines)


_NOT_ACCEPTED = Localized("The request was not accepted:", "La demande n'a pas été acceptée :")
_MORE_PROBLEMS = Localized(
    "  ... and {n} more problem(s) of the same request.",
    "  ... et {n} autre(s) problème(s) de la même demande.",
)


def render_refusal(problems: list[Problem], language: str = "en", more: int = 0) -> str:
    """A refused request: each distinct reason in the manager's words, once, and under it
    each field it concerns with the precise problem ('amount: unknown field; remove it')."""
    fields: dict[str, list[str]] = {}
    for problem in problems:
        fields.setdefault(problem.explain(language), []).append(
            f"{printable(problem.field)}: {printable(problem.message)}"
        )
    lines = [_NOT_ACCEPTED.text(language)]
    for sentence, concerned in fields.items():
        lines.append(f"  - {sentence}")
        lines += [f"      {field}" for field in concerned]
    if more:
        lines.append(_MORE_PROBLEMS.text(language, n=more))
    return "\n".join(lines)


def render_problems(problems: list[dict[str, str]], hint: str = "") -> str:
    lines = ["The request was not accepted:"]
    lines += [f"  - {problem['field']}: {problem['message']}" for problem in problems]
    if hint:
        lines[-1] += f" ({hint})"
    return "\n".join(lines)
