"""The remove_member contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for, and the words that show it in ``countersign demo``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import DemoScene

DEMO_SCENE = DemoScene(words="Take Walter Brooks out of Thursday Seniors")

_EXAMPLE = "For example: Take Walter Brooks out of Thursday Seniors."


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
    if len(named) != 1:
        return f"Which member should leave which league? {_EXAMPLE}"
    member = named[0]
    leagues = [name for name in member["leagues"] if name.casefold() in said]
    if len(leagues) != 1:
        plays = ", ".join(member["leagues"]) or "no league"
        return f"{member['name']} plays in {plays}. Which league should they leave?"
    who = member["email"] if member["email"] in said else member["name"]
    return {"member": who, "league": leagues[0]}
