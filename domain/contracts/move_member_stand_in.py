"""The move_member contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for. It sits beside the contract, not in the stand-in model, so that an operation's
files stay together."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.stand_in_words import language_of

_NO_LEAGUE = Localized("no league", "aucune ligue")
_LEAVE_AND_JOIN = Localized(
    "{name} plays in {plays}. Which league should they leave, and which should they join?",
    "{name} joue dans {plays}. Quelle ligue ce membre doit-il quitter, et laquelle rejoindre ?",
)
_EXAMPLE = Localized(
    "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors.",
    "Déplacer Olivia Chen de Sunday Mixed Doubles à Thursday Seniors.",
)
_NOBODY = Localized(
    "The member search found nobody by that name. Which member should move, and to which "
    "league? For example: {example}",
    "La recherche n'a trouvé aucun membre de ce nom. Quel membre faut-il déplacer, et vers "
    "quelle ligue ? Par exemple : {example}",
)
_WHICH_ONE = Localized(
    "Which member should move, and to which league? The member search found: {shown}. Name "
    "one of them, for example: {example}",
    "Quel membre faut-il déplacer, et vers quelle ligue ? La recherche a trouvé : {shown}. "
    "Nommez-en un, par exemple : {example}",
)
_MORE = Localized("{shown} and {left} more", "{shown} et {left} autres")


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """The move the manager's words describe: the one member they name (as the member
    search shows them; else the question names those it found) and the league they name
    that the member plays in (the source)
    and the one they do not (the destination). Naming only the destination is enough
    for a member who plays in one league."""
    said, language = words.casefold(), language_of(words)
    member = _one_named_member(said, reads.get("find_members"))
    if member is None:
        return _which_member(said, reads.get("find_members"), language)
    leagues = _named_leagues(said, reads.get("list_leagues"))
    plays_in = [name for name in leagues if name in member["leagues"]]
    joins = [name for name in leagues if name not in member["leagues"]]
    if len(plays_in) == 1 and len(joins) == 1 and plays_in[0] not in _joined(said, leagues):
        source, destination = plays_in[0], joins[0]
    elif not plays_in and len(joins) == 1 and len(member["leagues"]) == 1:
        source, destination = member["leagues"][0], joins[0]
    else:
        plays = ", ".join(member["leagues"]) or _NO_LEAGUE.text(language)
        return _LEAVE_AND_JOIN.text(language, name=member["name"], plays=plays)
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


def _which_member(said: str, found: Any, language: str) -> str:
    """The question when the words name no one member: the members the search found (the
    ones the words name, if several), so the manager can answer with one of them."""
    members = list(found.get("members", [])) if isinstance(found, Mapping) else []
    more = int(found.get("more_matches", 0)) if isinstance(found, Mapping) else 0
    named = [m for m in members if m["name"] and m["name"].casefold() in said]
    if len(named) > 1:
        members, more = named, 0
    example = _EXAMPLE.text(language)
    if not members:
        return _NOBODY.text(language, example=example)
    shown = ", ".join(m["name"] for m in members[:_NAMED_AT_MOST])
    left = len(members) - _NAMED_AT_MOST + more
    if left > 0:
        shown = _MORE.text(language, shown=shown, left=left)
    return _WHICH_ONE.text(language, shown=shown, example=example)


#: Words that name the league a member joins ("to Thursday Seniors", « à Thursday Seniors »).
_INTO = re.compile(r"\b(to|into|vers|dans)\s+$|(^|\s)à\s+$")


def _joined(said: str, leagues: list[str]) -> list[str]:
    """The named leagues the words say the member joins. One the member already plays in is
    not a league they leave: taken for the source, the move would run the other way."""
    return [name for name in leagues if _INTO.search(said[: said.find(name.casefold())])]


def _named_leagues(said: str, listing: Any) -> list[str]:
    """The leagues the words name, in the order they say them."""
    leagues = listing.get("leagues", []) if isinstance(listing, Mapping) else []
    at = {league["name"]: said.find(league["name"].casefold()) for league in leagues}
    return sorted((name for name in at if name and at[name] >= 0), key=at.__getitem__)
