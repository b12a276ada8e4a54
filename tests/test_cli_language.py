"""The command line's language: ``--language`` chooses the language of every answer of every
command, before or after the command's name; ``members set-language`` names the member's
language on its own, the old spelling still working with a note."""

from __future__ import annotations

import json

import pytest
from countersign.application.authorization import organization_by_slug
from countersign.infrastructure.entrypoints.cli.answers import chosen_language

from tests.conftest import AVA, BEN, REFUND, TO_CARD


def _stored_language(cs, email: str) -> str:
    return organization_by_slug(cs.store, "granite").member(email).language


UNKNOWN = "00000000-0000-0000-0000-000000000000"
PROPOSE = (
    *("propose", "--org", "granite", "--as", AVA, "--operation", REFUND),
    *("--resource", "refund-ok", "--request", json.dumps(TO_CARD)),
)


@pytest.fixture
def command(command, seeded):
    """``countersign`` in this process (tests/conftest.py), on the seeded clubs."""
    return command


def test_not_found_is_answered_in_french_wherever_language_is_given(command):
    after = command("show", UNKNOWN, "--as", AVA, "--language", "fr")
    before = command("--language", "fr", "show", UNKNOWN, "--as", AVA)

    for status, out, _ in (after, before):
        assert status == 0
        assert out.startswith("Introuvable : vérifiez le club, le membre et l'identifiant")
    assert command("show", UNKNOWN, "--as", AVA)[1].startswith("Not found: check the club")


def test_commands_that_had_no_language_answer_in_french(command):
    proposed = command(*PROPOSE, "--json")
    proposal_id = json.loads(proposed[1])["proposal_id"]

    forbidden = command("inbox", "--org", "granite", "--as", BEN, "--language", "fr")
    policies = command("policy", "show", "--org", "granite", "--language", "fr")
    leagues = command("roster", "leagues", "--org", "granite", "--language", "fr")
    order = command("orders", "show", "refund-ok", "--org", "granite", "--language", "fr")
    inbox = command("inbox", "--org", "granite", "--as", AVA, "--language", "fr")
    declined = command("decline", proposal_id, "--as", AVA, "--language", "fr")

    assert forbidden[1].strip() == "Vous n'avez pas la permission de faire cela."
    assert policies[1].startswith("Règles d'approbation de granite")
    assert "2 approbations distinctes au-delà de 100,00" in policies[1]
    assert "Monday Night Open : 6 membres, capacité 8" in leagues[1]
    assert "Enquête sur la commande" in order[1]
    assert "remboursable" in order[1]
    assert inbox[1].startswith("En attente d'approbation (1), page 1 :")
    # "Refusée : révision requise." read as a second outcome: it is declined, as show says
    assert declined[1].startswith("Refusée.\n  Rien n'a été modifié.")
    assert "Declined" not in declined[1]
    assert "révision" not in declined[1]


def test_a_decline_says_declined_as_show_says_it(command):
    """A newcomer's decline answered "Declined: revision required.", while `show` then said
    its status is declined: the stored outcome's kind is no word for a decline."""
    proposal_id = json.loads(command(*PROPOSE, "--json")[1])["proposal_id"]

    status, said, _ = command("decline", proposal_id, "--as", AVA, "--note", "not now")

    assert status == 0
    assert said.startswith("Declined.\n  Nothing was changed. The manager declined this proposal.")
    assert "revision" not in said
    assert "declined" in command("show", proposal_id, "--as", AVA)[1]


def test_the_operators_commands_answer_in_french_too(command):
    proposed = json.loads(command(*PROPOSE, "--json")[1])["proposal_id"]

    said = {
        words[0]: command(*words, "--language", "fr")[1]
        for words in (
            ("webhooks", "list", "--org", "granite"),
            ("provider", "refunds"),
            ("expire",),
            ("history", proposed),
            ("operations",),
            ("tokens", "list", "--org", "maple"),
        )
    }
    refused = command("users", "set-password", "--as", "nobody@nowhere.example", "--language", "fr")

    assert said["webhooks"].strip() == "granite n'a aucun webhook."
    assert said["tokens"].strip() == "Aucun jeton."
    assert refused[0] == 4
    assert "nobody@nowhere.example n'est membre d'aucun club" in refused[2]
    assert said["provider"].strip() == "Le bac à sable ne contient aucun remboursement."
    assert said["expire"].strip() == "expire : rien à faire."
    assert said["history"].startswith(f"Historique de la proposition {proposed} (heures UTC)")
    assert (
        "opérations (proposer avec : countersign propose --operation KIND) :" in said["operations"]
    )


def test_usage_errors_are_in_french_too(command):
    status, out, err = command("approve", "--language", "fr")
    assert (status, out) == (2, "")
    assert "countersign approve: erreur : ces arguments sont requis : proposal_id, --as" in err

    status, out, err = command("--lang=fr", "approve", UNKNOWN, "--as", AVA, "--json", "--nope")
    assert status == 2
    assert json.loads(out) == {"error": "usage", "message": "arguments non reconnus : --nope"}

    status, _, err = command("org", "set-timezone", "--org", "granite", "--tz", "Mars/Olympus",
                             "--language", "fr")  # fmt: skip
    assert status == 2
    assert "erreur : « Mars/Olympus » n'est pas un fuseau horaire" in err


def test_set_language_stores_the_members_language_and_answers_in_the_readers(command, cs):
    status, out, _ = command(
        "members", "set-language", "fr", "--org", "granite", "--email", BEN, "--language", "en"
    )
    assert (status, out.strip()) == (0, f"{BEN} is written to in fr.")
    assert _stored_language(cs, BEN) == "fr"

    status, out, _ = command(
        "members", "set-language", "en", "--org", "granite", "--email", BEN, "--language", "fr"
    )
    assert (status, out.strip()) == (0, f"countersign écrit à {BEN} en en.")
    assert _stored_language(cs, BEN) == "en"


def test_the_old_spelling_still_names_the_members_language_with_a_note(command, cs):
    status, out, err = command("members", "set-language", "--org", "granite", "--email", BEN,
                               "--language", "fr")  # fmt: skip

    assert status == 0
    assert _stored_language(cs, BEN) == "fr"
    assert out.strip() == f"countersign écrit à {BEN} en fr."
    assert "members set-language fr --org" in err
    assert "--language choisit" in err

    status, _, err = command("members", "set-language", "--org", "granite", "--email", BEN)
    assert status == 2
    assert "name the member's language: countersign members set-language LANG" in err


@pytest.mark.parametrize(
    ("words", "language"),
    [
        (["show", "x", "--language", "fr"], "fr"),
        (["--language=fr", "show"], "fr"),
        (["--lang", "fr", "show"], "fr"),
        (["--language", "de"], "en"),
        (["--l", "fr"], "en"),  # too short to be --language alone (--limit)
        (["--language"], "en"),
    ],
)
def test_the_language_is_read_before_the_command_line_is(words, language):
    assert chosen_language(words) == language
