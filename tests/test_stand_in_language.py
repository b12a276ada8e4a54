"""The offline stand-in model answers in the conversation's language: a French "bonjour" is
greeted in French, a request for help gets what it can propose, and words that say too little
to tell their language ("ok") are answered in the language the instructions name (the page's,
or the chat command's ``--language``). It greets rather than proposes on a greeting."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from countersign.application.assistant.closing_texts import WRITE_TO_THE_MANAGER
from countersign.domain.contracts.stand_in_words import (
    answering_in,
    asks_for_help,
    language_of,
    only_greets,
)
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import Say, ScriptedEndpoint, StandInPolicy
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA


@pytest.fixture
def stand_in(seeded_database, clock) -> Iterator[tuple[Countersign, dict[str, Any]]]:
    """A seeded countersign whose model is the offline stand-in, behind the real client."""
    model = OpenAIChatModel(ScriptedEndpoint(StandInPolicy()).client(), "scripted")
    cs = bootstrap(Settings(database_url=seeded_database.url), clock=clock, model=model)
    yield cs, seeded_database.seeded
    model.client.close()
    cs.close()


def _said(cs: Countersign, seeded: dict[str, Any], section: str, words: str, language: str):
    resource = {
        "orders": seeded["orders"]["refund-ok"],
        "roster": seeded["rosters"]["granite"],
        "email_broadcasts": seeded["broadcast_forms"]["granite"],
    }[section]
    return cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section=section,
        resource_id=str(resource),
        message=words,
        language=language,
    )


@pytest.mark.parametrize(
    ("words", "language", "expected"),
    [
        (
            "bonjour",
            "fr",
            "Bonjour ! Ici, je peux proposer : rembourser une remise manquée ; annuler une "
            "inscription. Dites-moi ce qu'il vous faut, et je le préparerai pour qu'une "
            "personne l'approuve.",
        ),
        (
            "Hello!",
            "en",
            "Hello! Here I can propose: refund a missed discount; cancel a registration. Tell "
            "me what you need, and I will prepare it for a person to approve.",
        ),
        ("Bonjour", "en", "Bonjour ! Ici, je peux proposer : rembourser une remise manquée"),
        ("Que pouvez-vous faire ?", "fr", "Ici, je peux proposer : rembourser une remise"),
        ("help", "en", "Here I can propose: refund a missed discount; cancel a registration."),
    ],
)
def test_a_greeting_or_a_call_for_help_is_answered_in_its_language_proposing_nothing(
    stand_in, words, language, expected
):
    cs, seeded = stand_in

    report = _said(cs, seeded, "orders", words, language)

    assert report.proposal is None
    assert report.ended == "reply"
    assert report.messages[0]["text"].startswith(expected)


def test_words_that_do_not_tell_their_language_are_answered_in_the_conversations(stand_in):
    cs, seeded = stand_in

    french = _said(cs, seeded, "email_broadcasts", "ok", "fr")
    english = _said(cs, seeded, "email_broadcasts", "ok", "en")
    roster = _said(cs, seeded, "roster", "ok", "fr")

    assert french.messages[0]["text"].startswith("Quelles ligues doivent le recevoir ?")
    assert english.messages[0]["text"].startswith("Which leagues should receive it?")
    assert roster.messages[0]["text"].startswith("Je n'ai rien trouvé à proposer à partir de")


def test_asked_with_nothing_to_answer_it_offers_help_in_the_conversations_language():
    for language, expected in (("fr", "Comment puis-je vous aider ici ?"),
                               ("en", "How can I help with this?")):  # fmt: skip
        system = {"role": "system", "content": f"Instructions.\n{WRITE_TO_THE_MANAGER[language]}"}
        assert StandInPolicy()({"messages": [system], "tools": []}) == Say(expected)


@pytest.mark.parametrize(
    ("words", "greets", "helps"),
    [
        ("bonjour", True, False),
        ("Bonjour Ava !", True, False),
        ("Hello there", True, False),
        ("Bonjour, remboursez la remise manquée", False, False),
        ("aide", False, True),
        ("What can you do here?", False, True),
        ("Help me refund her missed discount", False, False),
    ],
)
def test_what_only_greets_and_what_only_asks_for_help(words, greets, helps):
    assert only_greets(words) is greets
    assert asks_for_help(words) is helps


def test_the_words_own_language_comes_first_the_conversations_otherwise():
    with answering_in("fr"):
        assert language_of("ok") == "fr"
        assert language_of("Is anything still owed to Jack?") == "en"
    assert language_of("ok") == "en"
    assert language_of("bonjour") == "fr"
