"""Words the offline stand-in model reads the same way for every operation (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model), in English and French,
the two languages a manager writes in: what the words ask for, and which language to answer
them in."""

from __future__ import annotations

import re

_ACCOUNT_CREDIT = re.compile(r"\b(credit|account|crédit|compte)", re.IGNORECASE)
#: Short words of each language a manager's request uses; names and leagues are in neither.
_FRENCH = re.compile(
    r"\b(le|la|les|des|une|un|est|et|pour|sur|vers|au|aux|du|de|il|elle|son|sa|ses|a-t-il|"
    r"a-t-elle|encore|remise|rabais|rembours\w*|annul\w*|ligue|membres?|courriel|écri\w*|"
    r"déplac\w*|retir\w*|envo\w*|ajout\w*|inscri\w*)\b",
    re.IGNORECASE,
)
_ENGLISH = re.compile(
    r"\b(the|and|to|for|of|her|his|she|he|is|was|anything|still|missed|refund\w*|please|"
    r"about|cancel\w*|email|move|remove|take|out|send|add|league|members?)\b",
    re.IGNORECASE,
)


def wants_account_credit(words: str) -> bool:
    """Whether the manager's words ask for the money as account credit ("account credit",
    "crédit au compte") rather than back to the payment it came from."""
    return _ACCOUNT_CREDIT.search(words) is not None


def language_of(words: str) -> str:
    """The language to answer the manager's words in: "fr" when they hold more French words
    than English ones, else "en"."""
    french, english = len(_FRENCH.findall(words)), len(_ENGLISH.findall(words))
    return "fr" if french > english else "en"
