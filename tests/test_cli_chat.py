"""The terminal chat's commands: what ``/approve`` approves is what the person names or the
last card they were shown, restated in the application's words before anything runs; a
model's words cannot choose it, and a mistyped command reaches nobody."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA

REFUND_WORDS = "Olivia says she registered early but never got her early-bird discount. Fix it?"
CANCEL_WORDS = "Olivia can't play this season after all. Please cancel her registration."
PROPOSAL = re.compile(r"Proposal +([0-9a-f-]{36})")


class Terminal:
    """The person at the keyboard: each line typed is made from what was printed so far."""

    def __init__(self, capsys: pytest.CaptureFixture[str], lines: list[Any]) -> None:
        self.capsys = capsys
        self.lines = lines
        self.printed = ""
        self.prompts: list[str] = []

    def input(self, prompt: str = "") -> str:
        self.printed += self.capsys.readouterr().out
        self.prompts.append(prompt)
        if not self.lines:
            raise EOFError
        line = self.lines.pop(0)
        return line(self) if callable(line) else line

    def proposals(self) -> list[str]:
        return list(dict.fromkeys(PROPOSAL.findall(self.printed)))


@pytest.fixture
def chat(
    database_url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch
) -> Callable[..., Terminal]:
    def run(*lines: Any, language: str = "en") -> Terminal:
        terminal = Terminal(capsys, list(lines))
        monkeypatch.setattr("builtins.input", terminal.input)
        status = main(
            [
                *("chat", "--org", "granite", "--as", AVA, "--section", "orders"),
                *("--resource", seeded["orders"]["refund-ok"], "--language", language),
                *("--database", database_url),
            ]
        )
        terminal.printed += capsys.readouterr().out
        assert status == 0
        return terminal

    return run


def test_approve_with_an_id_approves_that_proposal_not_the_model_s_latest(chat):
    """The model proposed a refund, then (asked only what a cancellation would cost) a
    cancellation; the manager approves the refund by its id: the refund runs, and the
    cancellation stays pending."""
    terminal = chat(
        REFUND_WORDS,
        CANCEL_WORDS,
        lambda t: f"/approve {t.proposals()[0]}",
        "yes",
    )
    refund, cancellation = terminal.proposals()
    assert terminal.prompts[-2].startswith(f"Approve {refund}: ")
    assert "$48.00" in terminal.prompts[-2]
    assert "Refunded $48.00 CAD for Olivia Chen" in terminal.printed
    assert "Cancelled" not in terminal.printed
    assert cancellation != refund


def test_approve_alone_restates_the_last_card_and_runs_nothing_without_yes(chat, seeded):
    terminal = chat(REFUND_WORDS, "/approve", "no", "/approve", "")
    [refund] = terminal.proposals()
    asked = [p for p in terminal.prompts if p.startswith("Approve ")]
    assert asked == [asked[0], asked[0]]
    assert asked[0] == f"Approve {refund}: $48.00 CAD to Olivia Chen? Type yes to approve: "
    assert terminal.printed.count("Not approved; nothing changed.") == 2
    assert "Executed" not in terminal.printed


def test_a_mistyped_command_is_sent_nowhere(chat):
    terminal = chat(REFUND_WORDS, "/approvex", "/aprove now")
    assert "Unknown command /approvex; nothing was sent." in terminal.printed
    assert "Unknown command /aprove; nothing was sent." in terminal.printed
    assert "Executed" not in terminal.printed
    assert len([p for p in terminal.prompts if p == "you> "]) == 4  # no turn in between


def test_decline_names_its_proposal_and_keeps_its_note(chat):
    terminal = chat(
        REFUND_WORDS,
        CANCEL_WORDS,
        lambda t: f"/decline {t.proposals()[0]} Wrong order",
    )
    assert "Declined" in terminal.printed or "declined" in terminal.printed
    assert "Cancelled" not in terminal.printed


def test_the_french_chat_asks_in_french_and_takes_oui(chat):
    terminal = chat(
        "Olivia n'a pas eu sa remise d'inscription hâtive. Corrige-le.",
        "/approve",
        "oui",
        language="fr",
    )
    [refund] = terminal.proposals() or re.findall(r"Proposition +([0-9a-f-]{36})", terminal.printed)
    [asked] = [p for p in terminal.prompts if p.startswith("Approuver ")]
    assert asked.startswith(f"Approuver {refund} : 48,00")
    assert asked.endswith(" ? Tapez oui pour approuver : ")
    assert "Exécutée : réussie.\n  Remboursement de 48,00" in terminal.printed
    assert "Executed" not in terminal.printed


def test_chat_at_info_logs_no_model_url(database_url, seeded, capsys, caplog, monkeypatch):
    """At INFO the model client's request lines named the scripted model's made-up address;
    a real endpoint's URL can carry credentials, so no line names the URL at all."""
    monkeypatch.setenv("COUNTERSIGN_LOG_LEVEL", "INFO")
    caplog.set_level(logging.INFO)
    status = main(
        [
            *("chat", "--org", "granite", "--as", AVA, "--section", "orders"),
            *("--resource", seeded["orders"]["refund-ok"], "--message", "hello"),
            *("--database", database_url),
        ]
    )
    assert status == 0
    assert "Here I can propose" in capsys.readouterr().out
    assert "scripted.countersign.invalid" not in caplog.text
    assert "http://" not in caplog.text


@pytest.fixture
def seeded_command(command, seeded):
    return command


@pytest.mark.parametrize(
    ("language", "decide", "go_on"),
    [
        (
            "en",
            "Approve it with: countersign approve {id} --as {actor} (or decline it: countersign "
            "decline {id} --as {actor} --note TEXT)",
            "Conversation {interaction}: add --interaction {interaction} to the next --message "
            "to continue it.",
        ),
        (
            "fr",
            "Approuvez-la avec : countersign approve {id} --as {actor} (ou refusez-la : "
            "countersign decline {id} --as {actor} --note TEXTE)",
            "Conversation {interaction} : ajoutez --interaction {interaction} au prochain "
            "--message pour la poursuivre.",
        ),
    ],
)
def test_one_message_says_the_commands_that_decide_its_card_and_continue_it(
    seeded_command, language, decide, go_on
):
    """A newcomer running README's `chat ... --message` was told "Approve or decline it by id
    (/approve or /decline in a chat)", in no chat, and nothing printed the conversation's id
    that --interaction takes. Each command it now prints does what it says."""
    chat = ["chat", "--org", "granite", "--as", AVA, "--section", "roster"]
    take_out = "Take Walter Brooks out of Thursday Seniors"

    status, out, _ = seeded_command(*chat, "--message", take_out, "--language", language)

    assert status == 0
    [proposal_id] = re.findall(r"countersign approve (\S+) --as", out)
    [interaction] = set(re.findall(r"--interaction (\S+) ", out))
    assert decide.format(id=proposal_id, actor=AVA) in out
    assert go_on.format(interaction=interaction) in out
    assert "/approve" not in out
    # the next message, as it says: the same conversation
    status, more, _ = seeded_command(
        *chat, "--message", "hello", "--interaction", interaction, "--language", language
    )
    assert status == 0
    assert go_on.format(interaction=interaction) in more
    # and the approval, as it says
    status, approved, _ = seeded_command("approve", proposal_id, "--as", AVA)
    assert status == 0
    assert approved.startswith("Executed: succeeded.")
