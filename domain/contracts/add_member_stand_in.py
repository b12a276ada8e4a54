"""The add_member contract: the offline stand-in model's part (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model): the request the manager's
words ask for, and the words that show it in ``countersign demo``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from countersign.domain.contracts.presentation import DemoScene, Localized
from countersign.domain.contracts.stand_in_words import language_of

DEMO_SCENE = DemoScene(
    words=Localized(
        "Add Chloe Dubois, chloe.dubois@example.com, to Junior Program",
        "Ajouter Chloe Dubois, chloe.dubois@example.com, à Junior Program",
    )
)

#: What the words give as an address: anything with an @ (a sentence's last full stop left
#: out), so the contract, not the stand-in, says when it is not an email address.
_EMAIL = re.compile(r"[^@\s,;()<>]+@(?:[^@\s,;()<>]*[^@\s,;()<>.])?")
#: The verb before the name, in the words the cue matches.
_VERB = re.compile(r"\b(add|enrol|enroll|sign up|ajoute[rz]?|inscri(re|vez))\b", re.IGNORECASE)
_EXAMPLE = Localized(
    "For example: Add Chloe Dubois, chloe.dubois@example.com, to Junior Program.",
    "Par exemple : Ajouter Chloe Dubois, chloe.dubois@example.com, à Junior Program.",
)
_WHO = Localized(
    "Who should join which league? Name a member, or give a new person's name and email "
    "address. {example}",
    "Qui doit rejoindre quelle ligue ? Nommez un membre, ou donnez le nom et l'adresse "
    "courriel d'une nouvelle personne. {example}",
)
_WHICH_LEAGUE = Localized(
    "Which league should {name} join? {example}",
    "Quelle ligue {name} doit rejoindre ? {example}",
)


def request_from_words(words: str, reads: Mapping[str, Any]) -> dict[str, Any] | str | None:
    """The addition the manager's words describe: the person (by the email the words hold, or
    the one member among those the search found whose name they say), their name when the
    search does not know them or the words give a member another name than the club's (the
    words before their email), and the one league they name
    that the person does not play in yet (or the only league named, though they play in it,
    for the contract to tell the manager so instead of asking which league)."""
    said, language = words.casefold(), language_of(words)
    example = _EXAMPLE.text(language)
    found = reads.get("find_members")
    members = found.get("members", []) if isinstance(found, Mapping) else []
    written = _EMAIL.search(words)
    email = written.group(0).lower() if written else None
    named = [
        m
        for m in members
        if m["email"] == email or (email is None and m["name"] and m["name"].casefold() in said)
    ]
    name = _name_before(words, written) if written else None
    if len(named) != 1 and (email is None or not name):
        return _WHO.text(language, example=example)
    member = named[0] if named else {"email": email, "name": name, "leagues": []}
    listing = reads.get("list_leagues")
    leagues = listing.get("leagues", []) if isinstance(listing, Mapping) else []
    named_leagues = [league["name"] for league in leagues if league["name"].casefold() in said]
    joins = [league for league in named_leagues if league not in member["leagues"]]
    if not joins and len(named_leagues) == 1:
        joins = named_leagues  # the one league named, which they play in: the contract says so
    if len(joins) != 1:
        return _WHICH_LEAGUE.text(language, name=member["name"], example=example)
    request: dict[str, Any] = {"email": member["email"], "league": joins[0]}
    if name and (not named or member["name"].casefold() not in said):
        request["name"] = name  # another name than the club's for a member: the contract says so
    return request


def _name_before(words: str, email: re.Match[str]) -> str | None:
    """The name the words give the person: what they say between the verb and the email."""
    before = words[: email.start()]
    verbs = list(_VERB.finditer(before))
    name = before[verbs[-1].end() :] if verbs else before
    name = " ".join(name.strip(" ,;:(<\t").split())
    return name or None
