"""Words the offline stand-in model reads the same way for every operation (the demo's
``COUNTERSIGN_MODEL=scripted`` and the tests; never a real model), in English and French,
the two languages a manager writes in: what the words ask for, and which language to answer
them in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ACCOUNT_CREDIT = re.compile(r"\b(credit|account|crédit|compte)", re.IGNORECASE)
#: Short words of each language a manager's request uses; names and leagues are in neither.
_FRENCH = re.compile(
    r"\b(le|la|les|des|une|un|est|et|pour|sur|vers|au|aux|du|de|il|elle|son|sa|ses|a-t-il|"
    r"a-t-elle|encore|remise|rabais|rembours\w*|annul\w*|ligue|membres?|courriel|écri\w*|"
    r"déplac\w*|retir\w*|envo\w*|ajout\w*|inscri\w*|bonjour|bonsoir|salut|allô|coucou|merci|"
    r"aide[rz]?|peux|pouvez|faire|quoi|comment)\b",
    re.IGNORECASE,
)
_ENGLISH = re.compile(
    r"\b(the|and|to|for|of|her|his|she|he|is|was|anything|still|missed|refund\w*|please|"
    r"about|cancel\w*|email|move|remove|take|out|send|add|league|members?|hello|hi|hey|"
    r"thanks|help|what|can|you|do|how|good|morning)\b",
    re.IGNORECASE,
)


def wants_account_credit(words: str) -> bool:
    """Whether the manager's words ask for the money as account credit ("account credit",
    "crédit au compte") rather than back to the payment it came from."""
    return _ACCOUNT_CREDIT.search(words) is not None


#: A manager's message that only greets ("Bonjour", "Hello!").
_GREETING = re.compile(
    r"\W*(bonjour|bonsoir|salut|allô|allo|coucou|hello|hi|hey|good (morning|afternoon|evening))"
    r"\b[\W\s]*(\w+\W*)?$",
    re.IGNORECASE,
)
#: A manager's message that only asks what the assistant does ("help", "que pouvez-vous
#: faire ?"); "help me refund her" asks for something else.
_HELP = re.compile(
    r"\W*(help|aide[rz]?|aidez-moi|what can you do( here| for me)?|how does (this|it) work|"
    r"que (peux|pouvez)[- ](tu|vous) faire( ici| pour moi)?|"
    r"comment (ça|ca|cela) (marche|fonctionne))\W*",
    re.IGNORECASE,
)
#: The language of the conversation the stand-in answers in (``answering_in``).
_CONVERSATION: ContextVar[str] = ContextVar("stand_in_conversation", default="en")


@contextmanager
def answering_in(language: str) -> Iterator[None]:
    """While the stand-in answers a conversation in ``language`` (the one its instructions
    name): words that say too little to tell their own are answered in it."""
    token = _CONVERSATION.set(language if language in ("en", "fr") else "en")
    try:
        yield
    finally:
        _CONVERSATION.reset(token)


def language_of(words: str) -> str:
    """The language to answer the manager's words in: the one of which they hold more words
    ("fr" or "en"); where they say too little to tell ("Olivia?", "ok"), the conversation's
    (English outside ``answering_in``)."""
    french, english = len(_FRENCH.findall(words)), len(_ENGLISH.findall(words))
    if french == english:
        return _CONVERSATION.get()
    return "fr" if french > english else "en"


def only_greets(words: str) -> bool:
    """Whether the manager's words only greet the assistant ("Bonjour", "Hello there!")."""
    return _GREETING.fullmatch(words.strip()) is not None


def asks_for_help(words: str) -> bool:
    """Whether the manager's words ask what the assistant can do ("help", "aide")."""
    return _HELP.fullmatch(words.strip()) is not None
