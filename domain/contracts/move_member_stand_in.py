"""The move_member contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """The move the manager's words describe: the one member they name (as the member
    search shows them; else the question names those it found) and the league they name
    that the member plays in (the source)
    and the one they do not (the destination). Naming only the destination is enough
    for a member who plays in one league."""
    said = words.casefold()
    member = _one_named_member(said, reads.get("find_members"))
    if member is None:
        return _which_member(said, reads.get("find_members"))
    leagues = _named_leagues(said, reads.get("list_leagues"))
    plays_in = [name for name in leagues if name in member["leagues"]]
    joins = [name for name in leagues if name not in member["leagues"]]
    if len(plays_in) == 1 and len(joins) == 1:
        source, destination = plays_in[0], joins[0]
    elif not plays_in and len(joins) == 1 and len(member["leagues"]) == 1:
        source, destination = member["leagues"][0], joins[0]
    else:
        plays = ", ".join(member["leagues"]) or "no league"
        return (
            f"{member['name']} plays in {plays}. Which league should they leave, and which "
            "should they join?"
        )
    return {"email": member["email"], "from_league": source, "to_league": destination}


def _one_named_member(said: str, found: Any) -> dict[str, Any] | None:
    """The one member whose name or email the words contain, among those the search found."""
    members = found.get("members", []) if isinstance(found, Mapping) else []
    named = [
        member
        for member in members
        if any(member[key].casefold() in said for key in ("name", "email") if member[key])
    ]
    return named[0] if len(named) == 1 else None


#: How many of the members a search found the stand-in names when it asks which one.
_NAMED_AT_MOST = 6


def _which_member(said: str, found: Any) -> str:
    """The question when the words name no one member: the members the search found (the
    ones the words name, if several), so the manager can answer with one of them."""
    members = list(found.get("members", [])) if isinstance(found, Mapping) else []
    more = int(found.get("more_matches", 0)) if isinstance(found, Mapping) else 0
    named = [m for m in members if m["name"] and m["name"].casefold() in said]
    if len(named) > 1:
        members, more = named, 0
    if not members:
        return (
            "The member search found nobody by that name. Which member should move, and to "
            "which league? For example: Move Olivia Chen from Sunday Mixed Doubles to "
            "Thursday Seniors."
        )
    shown = ", ".join(m["name"] for m in members[:_NAMED_AT_MOST])
    left = len(members) - _NAMED_AT_MOST + more
    if left > 0:
        shown += f" and {left} more"
    return (
        f"Which member should move, and to which league? The member search found: {shown}. "
        "Name one of them, for example: Move Olivia Chen from Sunday Mixed Doubles to "
        "Thursday Seniors."
    )


def _named_leagues(said: str, listing: Any) -> list[str]:
    """The leagues the words name, in the order they say them."""
    leagues = listing.get("leagues", []) if isinstance(listing, Mapping) else []
    at = {league["name"]: said.find(league["name"].casefold()) for league in leagues}
    return sorted((name for name in at if name and at[name] >= 0), key=at.__getitem__)
