"""The words README offers a newcomer for the offline stand-in model ("See it in the
browser") are words it turns into the proposals README says, on the seeded clubs.

A newcomer who signed in, opened the order assistant and asked "Hi, what happened with this
order?" was handed a refund proposal, and README said neither that the stand-in proposes from
any words nor which words ask for what; this keeps the words it now gives true."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from countersign.application.assistant.sections.email_broadcasts import EMAIL_BROADCASTS
from countersign.application.assistant.sections.roster import ROSTER

from tests.conftest import AVA

README = Path(__file__).resolve().parents[1] / "README.md"

#: Each sentence README quotes, where it is said, and the operation it asks for.
WORDS = [
    ("Hi, what happened with this order?", "orders", "refund-ok", "order.refund_missing_discount"),
    (
        "She never got her early-bird discount",
        "orders",
        "refund-ok",
        "order.refund_missing_discount",
    ),
    (
        "Refund it as account credit",
        "orders",
        "refund-two-approvers",
        "order.refund_missing_discount",
    ),
    ("Cancel her registration", "orders", "refund-ok", "order.cancel_registration"),
    (
        "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors",
        "roster",
        None,
        "roster.move_member",
    ),
    ("Take Walter Brooks out of Thursday Seniors", "roster", None, "roster.remove_member"),
    (
        "Add Chloe Dubois, chloe.dubois@example.com, to Junior Program",
        "roster",
        None,
        "roster.add_member",
    ),
    (
        "Email the Thursday Seniors about ice times moving 30 minutes later",
        "email_broadcasts",
        None,
        "email_broadcast.apply_draft",
    ),
]


def _readme() -> str:
    return " ".join(README.read_text().split())


@pytest.fixture
def command(command, seeded):
    return command


def _turn(command, section: str, resource: str | None, words: str) -> dict:
    where = ["--resource", resource] if resource else []
    status, out, err = command(
        "chat",
        "--org",
        "granite",
        "--as",
        AVA,
        "--section",
        section,
        *where,
        "--message",
        words,
        "--json",
    )
    assert status == 0, err
    return json.loads(out)


@pytest.mark.parametrize(("words", "section", "resource", "operation"), WORDS)
def test_the_words_readme_gives_ask_for_what_it_says(command, words, section, resource, operation):
    assert f'"{words}"' in _readme()

    turn = _turn(command, section, resource, words)

    assert turn["proposal"] is not None, turn["messages"]
    assert turn["proposal"]["operation"] == operation


def test_the_places_readme_names_are_the_inbox_buttons_and_other_words_propose_nothing(command):
    readme = _readme()
    for section in (ROSTER, EMAIL_BROADCASTS):
        assert f'Under "{section.texts.start.text("en")}"' in readme

    turn = _turn(command, "roster", None, "What leagues are there?")

    assert turn["proposal"] is None
    assert "Here I can only propose" in turn["messages"][-1]["text"]
    assert re.search(
        r"Words it\s+cannot turn into a proposal are answered with what it can", readme
    )
