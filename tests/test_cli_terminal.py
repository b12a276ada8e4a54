"""What a person reads in the terminal: French cards read French (amounts with their
no-break spaces, status words, the chat's card), and stored text still cannot move the
cursor."""

from __future__ import annotations

import json
import re

import pytest
from countersign.infrastructure.entrypoints.cli import render

from tests.conftest import AVA, REFUND, TO_CARD

NBSP = "\N{NO-BREAK SPACE}"
NNBSP = "\N{NARROW NO-BREAK SPACE}"


@pytest.fixture
def command(command, seeded):
    """``countersign`` in this process (tests/conftest.py), on the seeded clubs."""
    return command


def test_a_french_card_reads_french_amounts_and_status_in_the_terminal(command, seeded):
    order = seeded["orders"]["refund-ok"]
    request = json.dumps(TO_CARD)
    status, created, err = command(
        *("propose", "--org", "granite", "--as", AVA, "--operation", REFUND),
        *("--resource", order, "--request", request, "--language", "fr"),
    )
    assert (status, err) == (0, "")
    assert "Examen : approuver ou refuser" in created
    assert f"48,00{NBSP}${NBSP}CA" in created
    assert "\\xa0" not in created
    proposal_id = created.split("Proposition", 1)[1].split()[0]

    status, card, err = command("show", proposal_id, "--as", AVA, "--language", "fr")
    assert (status, err) == (0, "")
    assert re.search(f"│ Montant du remboursement +48,00{NBSP}\\${NBSP}CA ", card)
    assert "\\x" not in card
    (status_row,) = [line for line in card.splitlines() if "│ Statut" in line]
    assert "en attente" in status_row
    assert "pending" not in card

    status, english, _ = command("show", proposal_id, "--as", AVA)
    assert "│ Status" in english
    assert "pending" in english  # English keeps the name --json gives


def test_chat_in_french_prints_the_card_in_french(command, seeded):
    status, out, err = command(
        *("chat", "--org", "granite", "--as", AVA, "--section", "orders"),
        *("--resource", seeded["orders"]["refund-ok"], "--language", "fr"),
        *("--message", "Olivia n'a pas eu sa remise d'inscription hâtive. Corrige-le."),
    )
    assert (status, err) == (0, "")
    assert "Examen : approuver ou refuser" in out
    assert "Statut" in out
    assert "en attente" in out
    assert f"48,00{NBSP}${NBSP}CA" in out
    assert "Approuvez-la avec : countersign approve" in out
    for english in ("Review", "Status", "Proposal", "Refund amount", "$48.00", "Approve "):
        assert english not in out, english


def test_spaces_pass_and_control_and_format_characters_stay_escapes():
    shown = render.printable(
        f"48,00{NBSP}${NBSP}CA; 1{NNBSP}234; \x1b[2J\r\x07\u202eevil\u200b\u2028end"
    )

    assert shown.startswith(f"48,00{NBSP}${NBSP}CA; 1{NNBSP}234; ")
    for escaped in ("\\x1b[2J", "\\r", "\\x07", "\\u202e", "\\u200b", "\\u2028"):
        assert escaped in shown
    assert all(ch.isprintable() or ch in (NBSP, NNBSP) for ch in shown)
