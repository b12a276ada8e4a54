"""A token table made before tokens recorded their issuer's membership gets the column, and
the tokens in it keep working for as long as that (id-less, older) membership lasts."""

from __future__ import annotations

from countersign.infrastructure.identity.tokens import authenticate, issue_token

from tests.conftest import AVA

OLD_SCHEMA = (
    "CREATE TABLE api_tokens ("
    " token_id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,"
    " organization_slug TEXT NOT NULL, name TEXT NOT NULL, issued_by TEXT NOT NULL,"
    " permissions TEXT NOT NULL, token_sha256 TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL, revoked_at TEXT)"
)


def test_an_old_token_table_gains_the_membership_column_and_new_tokens_work(cs, seeded):
    with cs.sql.transaction() as cursor:
        # The test databases hold today's table (infrastructure/testing/databases.py): put the
        # old one in its place, as a database from before the column has it.
        cursor.execute("DROP TABLE api_tokens")
        cursor.execute(OLD_SCHEMA)
    issued = issue_token(
        cs, "granite", "billing-bot", ["orders.refund"], issued_by=AVA, kind="approver"
    )
    caller = authenticate(cs, issued.token)
    assert caller is not None
    assert caller.acting_member == AVA
    with cs.sql.transaction() as cursor:
        stored = cursor.execute(
            "SELECT membership_id FROM api_tokens WHERE token_id = ?", (issued.token_id,)
        ).fetchone()
    assert stored[0] is not None  # the membership it belongs to
