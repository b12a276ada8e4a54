"""``countersign --help`` in the reader's language: with ``--language fr`` (before or after
the command), argparse's headings and every command's and option's help are French; English
otherwise. Every help string of the grammar has its French."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.cli.help_fr import HELP_FR
from countersign.infrastructure.entrypoints.cli.parser import build_parser


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(list(argv))
    assert stopped.value.code == 0
    return capsys.readouterr().out


def _help_strings(parser: argparse.ArgumentParser) -> Iterator[str]:
    if parser.description:
        yield parser.description
    for action in parser._actions:
        if action.help and action.help != argparse.SUPPRESS:
            yield action.help
        if isinstance(action, argparse._SubParsersAction):
            yield from (choice.help for choice in action._choices_actions if choice.help)
            for command in {id(p): p for p in action.choices.values()}.values():
                yield from _help_strings(command)


def test_the_commands_help_is_french_with_language_fr(capsys):
    french = _help(capsys, "--language", "fr", "--help")
    english = _help(capsys, "--help")

    assert french.startswith("utilisation : countersign ")
    assert "Les assistants IA proposent ; les personnes approuvent" in french
    assert "arguments positionnels :" in french
    assert "afficher cette aide et quitter" in french
    assert "approuver une proposition par son identifiant" in french
    assert "approve a proposal by its id" not in french
    assert english.startswith("usage: countersign ")
    assert "approve a proposal by its id" in english
    assert "show this help message and exit" in english


def test_a_commands_own_help_is_french_wherever_language_is_given(capsys):
    after = _help(capsys, "audit", "verify", "--help", "--language", "fr")
    before = _help(capsys, "--language=fr", "projections", "run", "--help")
    english = _help(capsys, "audit", "verify", "--help")

    assert after.startswith("utilisation : countersign audit verify ")
    assert "prouver qu'aucun événement de proposition n'a été altéré ni retiré" in after
    said = " ".join(after.split())  # as read, whatever argparse's line breaks
    assert "la langue dans laquelle countersign répond : en (par défaut) ou fr" in said
    assert "avec --anchor : faire échouer la vérification (code de sortie 5)" in said
    assert "suivre le journal (s'arrête proprement sur SIGTERM ou Ctrl-C)" in before
    assert "prove no proposal event was altered or removed" in english


def test_every_help_string_of_the_grammar_has_its_french():
    placeholders = {"%(choices)s", "%(known)s"}  # filled in with names, the same in French
    missing = {text for text in _help_strings(build_parser()) if text not in placeholders}
    missing -= HELP_FR.keys()

    assert missing == set()
