"""docs/analytics.md's column descriptions say every value the columns take: who set a policy
or a member's permissions (a member's email, the command line's ``operator``, the demo's
``seed``), and when a proposal has no decision. Each history is made as people make it
(the command line, the Python API), on both backends, and read as an analyst reads it."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import psycopg
import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.projections.analytics import Analytics

from tests.support.proposing import MOVE, propose
from tests.test_analytics_docs import (
    GOVERNANCE_TABLES,
    NOTIFICATION_TABLES,
    analyst_connection,
    doc_text,
    documented_queries,
    run,
)

NOAH = "noah@granite.example"


def meaning(table: str, column: str) -> str:
    """The Meaning cell of ``column`` in the doc's ``## Table `table` `` section."""
    section = doc_text().split(f"## Table `{table}`", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"^\| `{column}` \|[^|]*\|[^|]*\|(.*)\|$", section, re.MULTILINE)
    assert found, f"{table}.{column} is not documented"
    return found.group(1)


def _caught_up(cs: Countersign, *names: str) -> None:
    for runner in cs.projection_runners(list(names)):
        runner.catch_up()


def _rows(cs: Countersign, sql: str) -> list[dict[str, Any]]:
    with analyst_connection(cs) as connection:
        return run(connection, sql)


@pytest.fixture
def command(command: Any, seeded: Any) -> Any:
    return command


def test_who_set_a_policy_or_permissions_is_documented_for_every_way_of_setting_them(cs, command):
    """The seed's policy says `seed`; the command line's, and its permission change, say
    `operator`: the doc said "Email of the person" for both columns."""
    assert (
        command("policy", "set", "--org", "granite", "--operation", MOVE, "--approvals", "2")[0]
        == 0
    )
    code, _, err = command(
        "members",
        "set-permissions",
        "--org",
        "granite",
        "--email",
        "ben@granite.example",
        "--permissions",
        "audit.read",
    )
    assert code == 0, err
    _caught_up(cs, "audit_trail")

    set_by = {r["set_by"] for r in _rows(cs, "SELECT set_by FROM policy_changes")}
    changed_by = {r["changed_by"] for r in _rows(cs, "SELECT changed_by FROM permission_changes")}
    assert {"seed", "operator"} <= set_by
    assert "operator" in changed_by
    for table, column, values in (
        ("policy_changes", "set_by", set_by),
        ("permission_changes", "changed_by", changed_by),
    ):
        said = meaning(table, column)
        for value in values - {None}:
            if "@" not in value:  # an email is "a member's email"
                assert f"`{value}`" in said, f"{table}.{column} takes {value!r}, undocumented"


def test_a_proposal_sent_back_before_any_approval_is_documented_as_undecided(cs, seeded):
    """A policy raised while a move waited: its approval sends it back (`policy_raised`),
    nothing approved. Its fact has an outcome and no decision, which the doc must say of
    `decision`, `decided_at` and `decided_by`, or an analyst reads the NULL as pending."""
    moved = propose(cs, seeded, operation=MOVE)
    cs.policies.set("granite", MOVE, 2, above_cents=None)
    report = cs.proposals.approve(moved, NOAH)
    assert report.outcome is not None
    assert report.outcome["reason"]["code"] == "policy_raised"
    _caught_up(cs, "analytics")

    [fact] = _rows(
        cs,
        "SELECT outcome, revision_reason, decision, decided_at, decided_by, seconds_to_decision"
        f" FROM proposal_facts WHERE proposal_id = '{moved}'",
    )
    assert (fact["outcome"], fact["revision_reason"]) == ("revision_required", "policy_raised")
    assert fact["decision"] is fact["decided_at"] is fact["decided_by"] is None
    assert fact["seconds_to_decision"] is None
    for column in ("decision", "decided_at", "decided_by"):
        said = meaning("proposal_facts", column)
        assert "`revision_required`" in said, column
        assert "`policy_raised`" in said, column
    assert "NULL wherever `decided_at` is" in meaning("proposal_facts", "seconds_to_decision")


def test_every_boolean_and_json_column_is_named_where_the_doc_says_how_to_read_them():
    """ "Times and types" lists the booleans (BOOLEAN on PostgreSQL, 0 or 1 on SQLite: `= 1`
    fails on PostgreSQL) and the JSON columns; it left out `already_so`, `active` and
    `approvers`, which an analyst then compared as the backend they tried first."""
    rule = doc_text().split("### Times and types", 1)[1].split("\n## ", 1)[0]
    booleans = rule.split("- Booleans", 1)[1]
    for table in (*Analytics.tables, *NOTIFICATION_TABLES, *GOVERNANCE_TABLES):
        for column in table.columns:
            if column.type not in ("bool", "json"):
                continue
            named = (f"`{table.name}.{column.name}`", f"`{column.name}`")
            assert any(name in booleans for name in named), f"{table.name}.{column.name}"


def test_the_delivery_queries_before_any_sender_ran_fail_as_the_doc_says(database_url):
    """Until a sender has run, the ledger's tables do not exist (a database `countersign
    seed` made): the doc quoted SQLite's error alone, and an analyst on PostgreSQL read
    another one."""
    assert main(["seed", "--create", "--database", database_url]) == 0
    sql = documented_queries()["Dead letters"]
    if database_url.startswith("sqlite:///"):
        connection: Any = sqlite3.connect(database_url.removeprefix("sqlite:///"))
    else:
        connection = psycopg.connect(database_url)
    try:
        run(connection, sql)
    except (sqlite3.Error, psycopg.Error) as error:
        said = str(error).splitlines()[0]
    else:
        pytest.fail("the ledger exists before any sender ran")
    finally:
        connection.close()
    notifications = doc_text().split("## Notifications", 1)[1].split("\n## ", 1)[0]
    assert f'"{said}"' in " ".join(notifications.split())
