"""The apply_broadcast_draft contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.stand_in_words import language_of

#: What the draft is about: what follows "about" (English) or "sur", "à propos de", "au
#: sujet de" (French), as the assistant's examples word it in each language.
_TOPIC = re.compile(r"\s(about|sur|à propos de|au sujet de)\s(.+)", re.IGNORECASE | re.DOTALL)
_WHICH_LEAGUES = Localized(
    "Which leagues should receive it? The club has: {names}.",
    "Quelles ligues doivent le recevoir ? Ligues du club : {names}.",
)
_DRAFT = {
    "en": ("club news", "Hello curlers,\n\nA quick note about {topic}.\n\nSee you on the ice!"),
    "fr": (
        "nouvelles du club",
        "Bonjour,\n\nUn mot sur {topic}.\n\nAu plaisir de vous voir sur la glace\u00a0!",
    ),
}


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """A short draft to the leagues the manager named, about what follows "about" ("sur"),
    in the language the manager wrote in."""
    leagues = (reads.get("list_leagues") or {}).get("leagues", [])
    named = [
        league["name"]
        for league in leagues
        if league["name"].lower() in words.lower()
        or league["name"].split()[0].lower() in words.lower().split()
    ]
    if not named:
        names = ", ".join(league["name"] for league in leagues)
        return _WHICH_LEAGUES.text(language_of(words), names=names)
    found = _TOPIC.search(words)
    french = found.group(1).lower() != "about" if found else language_of(words) == "fr"
    default, body = _DRAFT["fr" if french else "en"]
    topic = found.group(2).strip().rstrip(".") if found else default
    return {
        "filters": {"leagues": named},
        "subject": topic[:1].upper() + topic[1:80],
        "body": body.format(topic=topic),
    }
