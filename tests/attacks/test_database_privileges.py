"""A database role without the privileges countersign needs is said as such, with what to do.

An operator's walk connected the services as a role that could read countersign's tables but
not create in their schema (a role made for the services by hand, without ``GRANT CREATE``).
Every command and every service (``serve``, ``worker``, ``projections run``) stopped at its
start with exit status 1 and two screens of Python traceback ending in
``ProgrammingError: permission denied for schema public``: no word on which role, nor what to
grant. Now each stops with one line naming the role, what the server refused and what to
grant or whom to connect as, and exit status 2 (a setting to correct), as a wrong URL does;
the URL's password is never said.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import pytest
from countersign.infrastructure.entrypoints.cli import main

PASSWORD = "role-password-never-shown"


@pytest.fixture
def reader_url(database_url: str) -> Iterator[str]:
    """The test's database as a role that may connect and read, but create nothing."""
    if not database_url.startswith("postgresql"):
        pytest.skip("database roles are PostgreSQL's")
    import psycopg

    role = f"cs_reader_{uuid4().hex[:10]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        admin.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    parts = urlsplit(database_url)
    netloc = f"{role}:{PASSWORD}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    try:
        yield urlunsplit(parts._replace(netloc=netloc))
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


@pytest.mark.usefixtures("cs")
@pytest.mark.parametrize("command", [["projections", "status"], ["worker", "--once"]])
def test_a_role_that_may_not_create_stops_with_one_line_saying_what_to_grant(
    reader_url: str, command: list[str], capsys
):
    role = urlsplit(reader_url).username

    status = main([*command, "--database", reader_url])

    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert "Traceback" not in err
    assert PASSWORD not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert f"the database role {role} lacks a privilege countersign needs" in lines[0]
    assert "permission denied for schema public" in lines[0]
    assert f"GRANT CREATE ON SCHEMA public TO {role}" in lines[0]


@pytest.mark.usefixtures("cs")
def test_its_json_error_is_a_configuration_error(reader_url: str, capsys):
    status = main(["projections", "status", "--json", "--database", reader_url])

    out, err = capsys.readouterr()
    assert status == 2
    document = json.loads(out)
    assert document["error"] == "configuration"
    assert "permission denied for schema public" in document["message"]
    assert PASSWORD not in out + err
