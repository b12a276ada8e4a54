"""A command that reads a projection (``inbox``, ``handback``, ``audit export``, ``audit
verify``) sets nothing up: on a store whose projections were never set up it says so, and
what to run, in English and French, and leaves the database as it was; once they are set
up it catches them up and reads them."""

from __future__ import annotations

import json

import pytest
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.settings import Database, Settings

from tests.conftest import AVA, REFUND
from tests.support.proposing import propose

READS = {
    "inbox": ("browser_view", ["inbox", "--org", "granite", "--as", AVA]),
    "handback": ("handback", ["handback", "i-1", "--org", "granite", "--as", AVA]),
    "audit export": ("audit_trail", ["audit", "export", "--org", "granite"]),
}


@pytest.fixture
def never_set_up(database_url: str) -> str:
    """A store with the demo clubs and a pending proposal, whose projections were never set
    up (as an earlier release's ``seed`` left it)."""
    cs = bootstrap(Settings(database_url=database_url))  # the clock the commands read
    try:
        propose(cs, seed(cs))
    finally:
        cs.close()
    return database_url


def tables(url: str) -> list[str]:
    sql = SqlDatabase(Database.parse(url))
    try:
        with sql.reading() as cursor:
            listed = (
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
                if sql.is_postgres
                else "SELECT name FROM sqlite_master WHERE type IN ('table', 'index')"
            )
            return sorted(str(name) for (name,) in cursor.execute(listed).fetchall())
    finally:
        sql.close()


def run(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str, str]:
    status = main([*argv, "--database", url])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("command", sorted(READS))
def test_a_read_of_a_projection_never_set_up_says_so_and_changes_nothing(
    never_set_up: str, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    projection, argv = READS[command]
    before = tables(never_set_up)
    assert not [name for name in before if name.startswith("projection_")]

    status, out, err = run(capsys, never_set_up, *argv)
    assert (status, out) == (2, "")
    assert err.strip() == (
        f"error: this command reads the projection {projection}, which is not set up in this "
        "database yet; nothing was changed. Build it with `countersign projections rebuild "
        f"{projection}` (from the log, once), or keep `countersign projections run` going "
        "beside the application"
    )
    status, out, err = run(capsys, never_set_up, *argv, "--language", "fr", "--json")
    assert status == 2
    document = json.loads(out)
    assert document["error"] == "projection_not_set_up"
    assert document["projections"] == [projection]
    assert document["message"].startswith(
        f"cette commande lit la projection {projection}, qui n'est pas encore installée"
    )
    assert f"`countersign projections rebuild {projection}`" in document["message"]
    assert tables(never_set_up) == before


def test_audit_verify_checks_the_chain_alone_and_sets_nothing_up(
    never_set_up: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tables(never_set_up)
    status, out, _ = run(capsys, never_set_up, "audit", "verify")
    assert status == 0
    assert out.startswith("audit verify: OK, 1 event of 1 proposal;")
    assert tables(never_set_up) == before


def test_once_set_up_the_reads_catch_up_and_answer(
    never_set_up: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, never_set_up, *READS["inbox"][1])[0] == 2
    status, _, _ = run(capsys, never_set_up, "projections", "rebuild", "browser_view")
    assert status == 0
    status, out, _ = run(capsys, never_set_up, *READS["inbox"][1], "--json")
    assert status == 0
    [item] = json.loads(out)["items"]
    assert item["operation"] == REFUND


def test_seed_sets_the_projections_up_for_the_reads(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The walkthrough: ``countersign seed``, then the reads."""
    assert run(capsys, database_url, "seed")[0] == 0
    made = tables(database_url)
    assert {"projection_tracking", "projection_schemas", "proposal_cards"} <= set(made)
    for _, argv in READS.values():
        status, _, err = run(capsys, database_url, *argv)
        assert status == 0, err


def test_listing_a_clubs_webhooks_makes_no_table(
    never_set_up: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The endpoints are the club's own record: listing them makes no table of the
    notification sender's delivery ledger."""
    before = tables(never_set_up)
    status, out, _ = run(capsys, never_set_up, "webhooks", "list", "--org", "granite")
    assert (status, out) == (0, "granite has no webhooks.\n")
    assert tables(never_set_up) == before


def test_listing_a_clubs_deliveries_before_the_sender_ran_makes_no_table(
    never_set_up: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deliveries are the notification sender's ledger: on a database where it never ran,
    reading them (or only the dead letters, or a page after a delivery) says there are none
    yet, in English and French, and makes none of its tables."""
    before = tables(never_set_up)
    deliveries = ("webhooks", "deliveries", "--org", "granite")
    assert run(capsys, never_set_up, *deliveries) == (0, "No deliveries yet.\n", "")
    assert run(capsys, never_set_up, *deliveries, "--language", "fr") == (
        0,
        "Aucun envoi pour l'instant.\n",
        "",
    )
    assert run(capsys, never_set_up, *deliveries, "--dead") == (0, "No dead letters.\n", "")
    assert run(capsys, never_set_up, *deliveries, "--json") == (0, "[]\n", "")
    _, out, _ = run(capsys, never_set_up, *deliveries, "--before", "dlv_1", "--json")
    assert json.loads(out)["error"] == "not_found"
    assert tables(never_set_up) == before
