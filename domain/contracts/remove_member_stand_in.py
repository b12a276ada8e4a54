"""The remove_member contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for, and the words that show it in ``countersign demo``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import DemoScene, Localized
from countersign.domain.contracts.stand_in_words import language_of

DEMO_SCENE = DemoScene(
    words=Localized(
        "Take Walter Brooks out of Thursday Seniors",
        "Retirer Walter Brooks de Thursday Seniors",
    )
)

_EXAMPLE = Localized(
    "For example: Take Walter Brooks out of Thursday Seniors.",
    "Par exemple : Retirer Walter Brooks de Thursday Seniors.",
)
_WHICH = Localized(
    "Which member should leave which league? {example}",
    "Quel membre doit quitter quelle ligue ? {example}",
)
_NO_LEAGUE = Localized("no league", "aucune ligue")
_WHICH_LEAGUE = Localized(
    "{name} plays in {plays}. Which league should they leave?",
    "{name} joue dans {plays}. De quelle ligue faut-il retirer ce membre ?",
)


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """The removal the manager's words describe: the one member they name, by name or email,
    among those the member search found, and the one league of theirs the words name. The
    member is named as the words name them (the application finds them by either)."""
    said = words.casefold()
    found = reads.get("find_members")
    members = found.get("members", []) if isinstance(found, Mapping) else []
    named = [
        member
        for member in members
        if member["email"] in said or (member["name"] and member["name"].casefold() in said)
    ]
    language = language_of(words)
    if len(named) != 1:
        return _WHICH.text(language, example=_EXAMPLE.text(language))
    member = named[0]
    leagues = [name for name in member["leagues"] if name.casefold() in said]
    if len(leagues) != 1:
        plays = ", ".join(member["leagues"]) or _NO_LEAGUE.text(language)
        return _WHICH_LEAGUE.text(language, name=member["name"], plays=plays)
    who = member["email"] if member["email"] in said else member["name"]
    return {"member": who, "league": leagues[0]}
