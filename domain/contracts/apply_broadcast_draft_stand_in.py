"""The apply_broadcast_draft contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """A short draft to the leagues the manager named, about what follows "about"."""
    leagues = (reads.get("list_leagues") or {}).get("leagues", [])
    named = [
        league["name"]
        for league in leagues
        if league["name"].lower() in words.lower()
        or league["name"].split()[0].lower() in words.lower().split()
    ]
    if not named:
        names = ", ".join(league["name"] for league in leagues)
        return f"Which leagues should receive it? The club has: {names}."
    topic = words.split(" about ", 1)[1].rstrip(".") if " about " in words else "club news"
    return {
        "filters": {"leagues": named},
        "subject": topic[:1].upper() + topic[1:80],
        "body": f"Hello curlers,\n\nA quick note about {topic}.\n\nSee you on the ice!",
    }
