"""A newcomer's walk: every command that names an order takes what `orders show` takes (its
number, as the registration system shows it, or its id), in the club it names only; a club's
one roster or broadcast form needs no id at all; and what matches nothing says what to pass.
"""

from __future__ import annotations

import json
import re

import pytest
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.testing.fixtures import SeededDatabase

from tests.conftest import AVA, DRAFT, REFUND, TO_CARD

NBSP = "\N{NO-BREAK SPACE}"


@pytest.fixture
def db(seeded_database: SeededDatabase, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """``--database`` and the test's database, seeded by the command as a newcomer would. It
    runs on a copy of the seeded template, where it changes nothing (idempotent) but the
    people's passwords and the projections' tables: an empty database made and seeded by the
    command cost 1.6-3.3 s a test's setup on PostgreSQL, the copy 0.1-0.5 (-n 0, the loaded
    2-core machine, 2026-12-07; the file 25.1 s, now 11.2)."""
    where = ["--database", seeded_database.url]
    assert main(["seed", *where]) == 0
    capsys.readouterr()
    return where


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    shown = capsys.readouterr()
    return status, shown.out.replace(NBSP, " "), shown.err


def propose(db: list[str], *more: str) -> list[str]:
    return ["propose", "--org", "granite", "--as", AVA, "--operation", REFUND, *more, *db]


def test_propose_and_chat_take_the_order_number_orders_show_takes(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, shown, _ = run(capsys, "orders", "show", "refund-ok", "--org", "granite", *db)
    assert status == 0
    assert "Olivia Chen" in shown
    request = json.dumps(TO_CARD)
    status, card, _ = run(capsys, *propose(db, "--resource", "refund-ok", "--request", request))
    assert status == 0
    assert "Review: approve or decline" in card, card
    assert "Olivia Chen" in card
    chat = ["chat", "--org", "granite", "--as", AVA, "--section", "orders"]
    status, turn, _ = run(
        capsys, *chat, "--resource", "refund-ok", "--message", "refund the missed discount", *db
    )
    assert status == 0
    assert "Olivia Chen" in turn, turn


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        (
            "en",
            'Not found: granite has no order whose number or id is "{ref}". Name the order by '
            "its number, as the registration system shows it, or by its "
            "id; `countersign orders show NUMBER --org granite` shows one.",
        ),
        (
            "fr",
            "Introuvable : granite n'a aucune commande dont le numéro ou l'identifiant est "
            "« {ref} ». Nommez la commande par son numéro, tel que le système d'inscription "
            "l'affiche, ou par son identifiant ; `countersign orders "
            "show NUMÉRO --org granite` en affiche une.",
        ),
    ],
)
def test_an_order_the_club_does_not_have_says_what_to_pass(
    db: list[str], capsys: pytest.CaptureFixture[str], language: str, expected: str
) -> None:
    """A typo, another club's order number and another club's order id read alike."""
    _, maple, _ = run(capsys, "orders", "show", "maple-refund", "--org", "maple", "--json", *db)
    maple_id = json.loads(maple)["order_id"]
    request = json.dumps(TO_CARD)
    chat = ["chat", "--org", "granite", "--as", AVA, "--section", "orders", "--message", "hi"]
    for ref in ("refund-okk", "maple-refund", maple_id):
        said = expected.format(ref=ref)
        answer = (*propose(db, "--resource", ref, "--request", request), "--language", language)
        assert run(capsys, *answer) == (0, said + "\n", "")
        assert run(capsys, *chat, "--resource", ref, "--language", language, *db) == (
            0,
            said + "\n",
            "",
        )
    typo = propose(db, "--resource", "refund-okk", "--request", request, "--json")
    status, document, _ = run(capsys, *typo, "--language", language)
    assert status == 0
    assert json.loads(document) == {
        "error": "not_found",
        "resource": "order",
        "message": expected.format(ref="refund-okk"),
    }


def test_orders_show_and_a_manual_refund_say_the_same(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    said = 'Not found: granite has no order whose number or id is "maple-refund".'
    status, shown, _ = run(capsys, "orders", "show", "maple-refund", "--org", "granite", *db)
    assert (status, shown[: len(said)]) == (0, said)
    manual = ["orders", "refund-manually", "maple-refund", "--org", "granite", "--as", AVA]
    status, shown, _ = run(capsys, *manual, "--payment", "P1", "--amount", "100", *db)
    assert (status, shown[: len(said)]) == (0, said)
    # An unknown club is not an unknown order.
    status, shown, _ = run(capsys, "orders", "show", "refund-ok", "--org", "nowhere", *db)
    assert (status, shown[:25]) == (0, "Not found: check the club")


def test_an_order_operation_without_a_resource_is_told_what_to_name(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    request = json.dumps(TO_CARD)
    status, _, err = run(capsys, *propose(db, "--request", request))
    assert status == 2
    assert (
        "--resource is needed for the orders section: the order's number, as the "
        "registration system shows it, or its id." in err
    )
    status, _, err = run(capsys, *propose(db, "--request", request, "--language", "fr"))
    assert status == 2
    assert (
        "--resource est nécessaire pour la section orders : le numéro de la commande, tel "
        "que le système d'inscription l'affiche, ou son identifiant." in err
    )


def test_a_clubs_own_form_and_roster_need_no_id_as_roster_leagues_needs_none(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    draft = {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "Hi", "body": "Hello"}
    status, card, _ = run(
        capsys,
        *["propose", "--org", "granite", "--as", AVA, "--operation", DRAFT],
        *["--request", json.dumps(draft), *db],
    )
    assert status == 0
    assert "members of Thursday Seniors" in card, card
    status, leagues, _ = run(capsys, "roster", "leagues", "--org", "granite", *db)
    assert status == 0
    assert "Monday Night Open" in leagues
    chat = ["chat", "--org", "granite", "--as", AVA, "--section", "roster", "--language", "fr"]
    words = "Retirer Walter Brooks de Thursday Seniors"
    status, turn, _ = run(capsys, *chat, "--message", words, *db)
    assert status == 0
    assert re.search(r"Opération\s+roster.remove_member", turn), turn
    assert re.search(r"Ligue quittée\s+Thursday Seniors", turn), turn
