"""The command line's exit statuses and streams, as a script and a person see them: a refused
request exits 4 with its reason and field on stderr; --version and a bare ``countersign``;
and a reader that goes away (``countersign show ... | head``) stops it quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA, REFUND, TO_CARD
from tests.support.proposing import propose

COUNTERSIGN = Path(sys.executable).with_name("countersign")


def _propose(seeded, request: str, *more: str) -> list[str]:
    return [
        *("propose", "--org", "granite", "--as", AVA, "--operation", REFUND),
        *("--resource", seeded["orders"]["refund-ok"], "--request", request, *more),
    ]


def test_a_refused_request_exits_4_naming_its_field_and_reason_on_stderr(command, seeded):
    with_amount = json.dumps({**TO_CARD, "amount": 100})

    status, out, err = command(*_propose(seeded, with_amount))

    assert (status, out) == (4, "")
    assert err.splitlines() == [
        "The request was not accepted:",
        "  - The request holds something this operation does not take, so nothing was prepared.",
        "      amount: unknown field; remove it",
    ]

    status, out, err = command(*_propose(seeded, with_amount, "--json"))
    assert status == 4
    assert json.loads(out) == {
        "error": "invalid_request",
        "problems": [{"field": "amount", "message": "unknown field; remove it"}],
    }
    assert "amount: unknown field" in err


def test_a_request_that_is_not_json_says_where_it_broke(command, seeded):
    status, out, err = command(*_propose(seeded, '{"payment": "P1"', "--language", "fr"))

    assert (status, out) == (4, "")
    assert err.startswith("La demande n'a pas été acceptée :\n")
    assert "      request: not valid JSON (Expecting ',' delimiter)" in err.splitlines()


def test_a_request_nested_too_deep_or_with_a_number_too_long_is_refused_not_an_error(
    command, seeded
):
    """An agent running the command line with ``[`` 5,000 times, or a number of 5,000 digits,
    in --request got "Internal error" (exit 1) and json's RecursionError or ValueError
    traceback on stderr; it is a request that does not parse, exit 4, as any other."""
    deep = '{"payment": ' + "[" * 5000 + "]" * 5000 + "}"
    huge = '{"payment": ' + "1" * 5000 + "}"

    for request, why in ((deep, "nested too deeply"), (huge, "a number too large to read")):
        status, out, err = command(*_propose(seeded, request))
        assert (status, out) == (4, "")
        assert f"      request: not valid JSON ({why})" in err.splitlines()
        assert "Traceback" not in err


def test_an_unknown_operation_is_a_refused_request(command, seeded):
    argv = _propose(seeded, json.dumps(TO_CARD))
    argv[argv.index(REFUND)] = "order.refund_everything"

    status, out, err = command(*argv)

    assert (status, out) == (4, "")
    assert "operation: no such operation (`countersign operations` lists them)" in err


def test_version_and_a_bare_command(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith(f"countersign {metadata.version('countersign')}")

    assert main([]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("usage: countersign ")
    assert "seed" in out
    assert "propose" in out
    assert err == ""


def _with_reader_gone(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """Runs the console script with its standard output a pipe nobody reads any more."""
    reader, writer = os.pipe()
    os.close(reader)  # `| head` that already had its lines
    try:
        process = subprocess.Popen(
            [str(COUNTERSIGN), *argv], stdout=writer, stderr=subprocess.PIPE, env=env
        )
    finally:
        os.close(writer)
    _, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, b"", err)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # no database in play
def test_a_reader_that_goes_away_stops_every_command_quietly(database_url, seeded, cs):
    proposal_id = propose(cs, seeded)
    env = {**os.environ, "COUNTERSIGN_DATABASE_URL": database_url}

    for argv, status in (
        (("show", proposal_id, "--as", AVA), 141),  # a card: SIGPIPE's status
        (("audit", "export"), 141),  # a stream
        (("--help",), 0),  # argparse's own answer, which ignores a failed write
    ):
        stopped = _with_reader_gone(*argv, env=env)
        assert (stopped.returncode, stopped.stderr) == (status, b""), argv


# -- a database that is not there ----------------------------------------------------------------


def test_a_mistyped_database_is_refused_and_nothing_is_created(tmp_path, capsys):
    typo = tmp_path / "typo" / "x.db"
    url = f"sqlite:///{typo}"

    status = main(["show", "0" * 32, "--as", AVA, "--database", url])

    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (
        f"error: no database at {url}; run `countersign seed` to create the demo, or check the "
        "URL (--create makes an empty one)\n"
    )
    assert not typo.parent.exists()
    assert main(["inbox", "--org", "granite", "--as", AVA, "--json", "--database", url]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "no_database"

    assert main(["seed", "--database", url]) == 0  # seed makes it
    assert typo.is_file()
    capsys.readouterr()
    assert main(["inbox", "--org", "granite", "--as", AVA, "--database", url]) == 0
    assert capsys.readouterr().out.startswith("The inbox is empty")


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("afile/cs.db", "cannot create the folder of {path} (a file is in its way)"),
        ("garbage.db", "cannot open the SQLite database at {path} (the file is not a SQLite"),
        ("folder", "{path} is not a file"),
    ],
)
def test_a_creating_command_says_in_one_line_why_it_cannot_make_its_database(
    tmp_path, capsys, where, said
):
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "garbage.db").write_text("not a database")
    (tmp_path / "folder").mkdir()
    path = tmp_path / where
    for argv in (["seed"], ["inbox", "--org", "granite", "--as", AVA, "--create"]):
        status = main([*argv, "--database", f"sqlite:///{path}"])
        out, err = capsys.readouterr()
        assert (status, out) == (2, ""), argv
        assert err.startswith("error: " + said.format(path=path)), err
        assert err.count("\n") == 1  # one line, no traceback
    assert main(["seed", "--json", "--database", f"sqlite:///{path}"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "configuration"
    assert (tmp_path / "garbage.db").read_text() == "not a database"  # left as it was


def test_a_database_without_countersign_is_refused_until_create_makes_its_tables(command):
    """An empty database: a SQLite path whose file is not there yet; a PostgreSQL database
    that exists and holds no countersign tables (a database made for something else)."""
    status, out, err = command("projections", "status")
    assert (status, out) == (2, "")
    assert err.startswith("error: no database at ")
    assert "countersign seed" in err

    assert command("projections", "status", "--create")[0] == 0
    status, out, err = command("projections", "status")
    assert (status, err) == (0, "")
    assert "browser_view" in out


def test_a_postgres_database_the_server_does_not_have_is_named(postgres_url, capsys):
    server = postgres_url.rsplit("/", 1)[0].replace("postgres@", "postgres:hunter2@", 1)
    url = f"{server}/countersign_no_such_database"

    assert main(["inbox", "--org", "granite", "--as", AVA, "--database", url]) == 2

    err = capsys.readouterr().err
    assert "the server has no database countersign_no_such_database: createdb makes it" in err
    assert "hunter2" not in err  # the URL is shown without its password


@pytest.mark.parametrize(
    ("login", "server_said"),
    [
        (
            "countersign_no_such_role:hunter2@",
            'FATAL: role "countersign_no_such_role" does not exist',
        ),
        ("postgres:hunter2@", "server does not support SSL, but SSL was required"),
    ],
    ids=["unknown-role", "ssl-refused"],
)
def test_a_postgres_server_that_refuses_the_login_is_a_setting_to_fix(
    postgres_url, capsys, login, server_said
):
    """The server answered: not "cannot reach" (exit 1, try again later) but a configuration
    error (exit 2) quoting the refusal and naming what to check, in the reader's language."""
    url = postgres_url.replace("postgres@", login, 1)
    if "SSL" in server_said:
        url += "?sslmode=require"  # this machine's server has no SSL

    assert main(["inbox", "--org", "granite", "--as", AVA, "--database", url]) == 2
    err = capsys.readouterr().err
    assert "cannot reach" not in err
    assert f"the PostgreSQL server answered but refused this connection ({server_said})" in err
    assert "check the user, password, database name and sslmode in COUNTERSIGN_DATABASE_URL" in err
    assert "hunter2" not in err
    assert "Traceback" not in err

    assert (
        main(["--language", "fr", "inbox", "--org", "granite", "--as", AVA, "--database", url]) == 2
    )
    assert (
        "le serveur PostgreSQL a répondu mais a refusé cette connexion" in capsys.readouterr().err
    )


_INBOX = ("inbox", "--org", "granite", "--as", AVA, "--database")


def test_a_postgres_server_that_cannot_be_reached_says_what_to_check():
    """Run in a fresh interpreter: the driver is loaded only by wiring PostgreSQL, and the
    refusal must be recognised even when it is the first PostgreSQL this process meets."""
    url = "postgresql://postgres:hunter2@127.0.0.1:9/countersign"  # the discard port: refused
    done = subprocess.run(
        [sys.executable, "-m", "countersign.infrastructure.entrypoints.cli", *_INBOX, url],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1, done.stderr
    assert "cannot reach the PostgreSQL database" in done.stderr
    assert "check COUNTERSIGN_DATABASE_URL or --database" in done.stderr
    assert "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr


@pytest.mark.parametrize("port", ["${DB_PORT}", "5432x", "99999", "0"])
def test_a_database_url_whose_port_is_no_port_says_so_in_one_line(port: str, capsys):
    """An environment file's unexpanded ``${DB_PORT}`` (systemd does not expand it), a typo,
    a port out of range: every command and service stopped with exit status 1 and Python's
    traceback ending in ``ValueError: Port could not be cast to integer value``. Port 0 was
    read as no port at all, and the command connected to 5432, some other database."""
    url = f"postgresql://countersign:hunter2@db.internal:{port}/countersign"

    status = main(["inbox", "--org", "granite", "--as", AVA, "--database", url])

    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err.startswith("error: the database URL's port is not a port number (1 to 65535):")
    assert "Traceback" not in err
    assert "hunter2" not in err


@pytest.mark.parametrize(
    "argv",
    [("seed",), ("worker", "--once"), ("projections", "status"), ("audit", "verify")],
)
def test_port_zero_is_refused_by_every_command_that_reads_the_url(argv, capsys, monkeypatch):
    """The URL from the environment too: read by each command before it connects anywhere."""
    monkeypatch.setenv("COUNTERSIGN_DATABASE_URL", "postgresql://postgres@127.0.0.1:0/cs_hb_x")

    status = main(list(argv))

    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (
        "error: the database URL's port is not a port number (1 to 65535): '0'; "
        "check COUNTERSIGN_DATABASE_URL or --database\n"
    )


def _disk_full(*args: object, **kwargs: object) -> None:
    import psycopg
    from eventsourcing.persistence import OperationalError

    try:
        raise psycopg.errors.DiskFull('could not extend file "base/1/2": No space left on device')
    except psycopg.Error as error:
        raise OperationalError(str(error)) from error


def _no_connection(*args: object, **kwargs: object) -> None:
    from countersign.infrastructure.persistence.unavailable import NoConnectionError

    raise NoConnectionError("couldn't get a connection after 5.00 sec")


def _too_many_clients(*args: object, **kwargs: object) -> None:
    import psycopg

    raise psycopg.OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
        "FATAL:  sorry, too many clients already"
    )


#: What PostgreSQL 15 answers a role that is not a superuser once only the reserved
#: connections are left (SQLSTATE 53300, as "too many clients"); 16 and later say "...reserved
#: for roles with the SUPERUSER attribute". A service's own role meets this one, not that.
RESERVED = (
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  '
    "remaining connection slots are reserved for non-replication superuser connections"
)


def _only_reserved_slots(*args: object, **kwargs: object) -> None:
    import psycopg

    raise psycopg.OperationalError(RESERVED)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (_disk_full, "error: the database did not answer in time; try again in a few seconds"),
        (_no_connection, "error: the database did not answer in time; try again in a few seconds"),
        (
            _too_many_clients,
            "error: the PostgreSQL server has no connection left (connection failed: connection"
            ' to server at "127.0.0.1", port 5432 failed: FATAL:  sorry, too many clients'
            " already): raise its max_connections, or end other sessions, then try again",
        ),
        (
            _only_reserved_slots,
            f"error: the PostgreSQL server has no connection left ({RESERVED}): raise its "
            "max_connections, or end other sessions, then try again",
        ),
    ],
)
def test_a_database_that_fails_a_command_as_it_starts_is_one_line_not_a_traceback(
    fault, said: str, monkeypatch, capsys
):
    """The walk's full disk and the pool that gave no connection in time at a command's or a
    service's start: a traceback ending in ``OperationalError: could not extend file`` or
    ``NoConnectionError``, where the same fault a moment later, once started, is one line.
    And a server out of connections was answered "check COUNTERSIGN_DATABASE_URL"."""
    from countersign.infrastructure import bootstrap

    monkeypatch.setattr(bootstrap, "bootstrap", fault)
    url = "postgresql://countersign:hunter2@127.0.0.1:5432/countersign"

    status = main(["inbox", "--org", "granite", "--as", AVA, "--database", url])

    out, err = capsys.readouterr()
    assert (status, out, err) == (1, "", said + "\n")


def test_the_demo_refuses_a_database_url_it_cannot_use(capsys):
    assert main(["demo", "--database", "mysql://x/y"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: unsupported database URL scheme 'mysql'")


def test_operations_reads_no_database(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'nothing.db'}"
    assert main(["operations", "--database", url]) == 0
    assert "order.refund_missing_discount" in capsys.readouterr().out
    assert not (tmp_path / "nothing.db").exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["approve", "--json"], "the following arguments are required: proposal_id, --as"),
        (
            [
                "policy",
                "set",
                "--json",
                "--org",
                "g",
                "--operation",
                "roster.move_member",
                "--approvals",
                "9",
            ],
            "argument --approvals: must be a whole number from 1 to 5",
        ),
        (["--json", "serve", "--port", "99999"], "argument --port: a port from 1 to 65535"),
    ],
)
def test_a_usage_error_under_json_is_one_json_document_too(capsys, argv, said):
    """--json promises one JSON document on stdout, its answer or its error: argparse's own
    errors printed nothing there."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["error"] == "usage"
    assert document["message"].startswith(said)
    assert said in err  # argparse's usage and words on stderr, as without --json

    with pytest.raises(SystemExit):
        main([word for word in argv if word != "--json"])
    assert capsys.readouterr().out == ""


def test_an_abbreviated_json_flag_gets_a_json_usage_error_and_the_flag_ends_with_it(capsys):
    with pytest.raises(SystemExit):
        main(["approve", "--js"])  # argparse takes --js for --json
    assert json.loads(capsys.readouterr().out)["error"] == "usage"
    # A parser built later in the process (a test's, a library's) prints no JSON of its own.
    from countersign.infrastructure.entrypoints.cli.parser import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["approve", "--no-such-option"])
    assert capsys.readouterr().out == ""


def test_a_database_file_another_process_holds_is_not_called_something_else(
    tmp_path, capsys, monkeypatch
):
    """Every error opening an existing file read "the file is not a SQLite database"."""
    import sqlite3

    from countersign.infrastructure.persistence import presence

    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(presence.sqlite3, "connect", locked)
    path = tmp_path / "cs.db"
    assert main(["seed", "--database", f"sqlite:///{path}"]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: cannot open the SQLite database at {path} (database is locked)"
    )


#: The server process is started as uvicorn's supervisor starts one (spawned); only the child
#: imports the server, as under ``serve --workers``: imported in the parent too, it cost this
#: test a second import of the whole application (half its time on the loaded machine).
_SERVER_PROCESS = """
import multiprocessing

def serve():
    from countersign.infrastructure.server import create_app
    create_app()

if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=serve)
    child.start()
    child.join()
    raise SystemExit(child.exitcode)
"""


def test_a_server_process_that_meets_the_database_out_of_reach_logs_one_line(tmp_path):
    """A process of ``serve --workers N`` that the supervisor starts (again) while the
    database is out of reach: the multiprocessing bootstrap printed a raw traceback on
    stderr, outside the JSON logs, every few seconds until the database was back."""
    script = tmp_path / "server_process.py"
    script.write_text(_SERVER_PROCESS)
    environment = {
        **os.environ,
        "COUNTERSIGN_DATABASE_URL": "postgresql://postgres:hunter2@127.0.0.1:9/countersign",
        "COUNTERSIGN_LOG_FORMAT": "json",
        "COUNTERSIGN_SESSION_SECRET": "s" * 40,
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    record = json.loads(line)
    assert record["level"] == "ERROR"
    assert record["message"].startswith(
        "serve: a server process could not start: the database is out of reach ("
    )
    assert "hunter2" not in done.stderr


def test_a_session_the_server_ended_as_a_command_started_says_try_again(monkeypatch, capsys):
    """A service started while its sessions were being ended (pg_terminate_backend, a
    restarting server) said "cannot reach the PostgreSQL database (terminating connection
    due to administrator command); check COUNTERSIGN_DATABASE_URL", sending the operator to
    a URL that was right."""
    psycopg = pytest.importorskip("psycopg")
    from countersign.infrastructure import bootstrap

    def ended(*args: object, **kwargs: object) -> None:
        raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")

    monkeypatch.setattr(bootstrap, "bootstrap", ended)
    assert main(["inbox", "--org", "granite", "--as", AVA, "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "error": "database_unavailable",
        "message": "the PostgreSQL server ended the connection as this command started "
        "(terminating connection due to administrator command); try again in a few seconds",
    }
    assert "COUNTERSIGN_DATABASE_URL" not in err


@pytest.mark.parametrize(
    ("mistyped", "meant"),
    [
        ("COUNTERSIGN_SEAL_KEY_FILE", "COUNTERSIGN_SEAL_KEYS_FILE"),
        ("COUNTERSIGN_DATABSE_TIMEOUT", "COUNTERSIGN_DATABASE_TIMEOUT"),
        ("COUNTERSIGN_TRUSTED_PROXY", "COUNTERSIGN_TRUSTED_PROXIES"),
    ],
)
def test_a_mistyped_setting_name_is_refused_naming_the_setting_meant(
    tmp_path, capsys, monkeypatch, mistyped, meant
):
    """COUNTERSIGN_SEAL_KEY_FILE in an environment file was ignored without a word, and every
    proposal went unsealed (an operator's finding: an earlier release that did not read
    COUNTERSIGN_SEAL_KEYS_FILE ignored it the same way). A name close to a setting's is refused
    with one line naming the setting meant; the test suite's and tools' own names pass."""
    url = f"sqlite:///{tmp_path / 'countersign.db'}"
    assert main(["seed", "--database", url]) == 0
    capsys.readouterr()
    monkeypatch.setenv("COUNTERSIGN_TEST_WORKERS", "2")
    monkeypatch.setenv("COUNTERSIGN_UPDATE_GOLDEN", "0")
    assert main(["inbox", "--org", "granite", "--as", AVA, "--database", url]) == 0
    capsys.readouterr()
    monkeypatch.setenv(mistyped, "/etc/countersign/seal-keys")

    status = main(["inbox", "--org", "granite", "--as", AVA, "--database", url])

    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (
        f"error: {mistyped} is not a countersign setting: did you mean {meant}? Correct its "
        "name (as it is, it is ignored), or remove it\n"
    )


def test_every_setting_the_product_reads_is_a_known_setting_name():
    """The names the check above compares with: every COUNTERSIGN_ name the product reads from
    the environment, but the test suite's and the tools' own, and every one the README's
    configuration tables list."""
    import re

    from countersign.infrastructure.settings import SETTING_NAMES

    root = Path(__file__).resolve().parent.parent
    not_settings = {
        "COUNTERSIGN_CRASH_AT",
        "COUNTERSIGN_UPDATE_GOLDEN",
        "COUNTERSIGN_TEST_BACKENDS",
    }
    not_settings |= {"COUNTERSIGN_TEST_POSTGRES", "COUNTERSIGN_NOTIFY_"}  # a prefix, in a message
    read = set()
    for folder in ("application", "domain", "projections", "infrastructure"):
        for path in (root / folder).rglob("*.py"):
            read |= set(re.findall(r"COUNTERSIGN_[A-Z0-9_]+", path.read_text()))
    readme = (root / "README.md").read_text()
    listed = set(re.findall(r"^\| `(COUNTERSIGN_[A-Z0-9_]+)`", readme, re.MULTILINE))
    assert read - not_settings - SETTING_NAMES == set()
    assert listed - SETTING_NAMES == set()
    assert len(listed) > 20


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("en", "argument --page: must be a whole number from "),
        ("fr", "argument --page : doit être un nombre entier de "),
    ],
)
@pytest.mark.parametrize("page", ["two", "1.5", ""])
def test_a_whole_number_argument_that_is_no_number_says_so_in_words(capsys, language, said, page):
    """``--page two`` read "invalid whole_number value: 'two'" (French: "valeur whole_number
    invalide"), the name of a Python function, once every whole number's type was it."""
    with pytest.raises(SystemExit) as stopped:
        main(["--language", language, "inbox", "--org", "g", "--as", AVA, "--page", page])

    out, err = capsys.readouterr()
    assert (stopped.value.code, out) == (2, "")
    assert said in err
    assert "whole_number" not in err


@pytest.mark.parametrize("limit", ["-1", "0"])
def test_a_deliveries_limit_below_one_is_a_usage_error(command, seeded, limit):
    """``webhooks deliveries --limit -1`` was an internal error on PostgreSQL (a negative
    LIMIT) and every delivery on SQLite; the API refuses a limit below 1 too."""
    status, out, err = command("webhooks", "deliveries", "--org", "granite", "--limit", limit)

    assert (status, out) == (2, "")
    assert "argument --limit: must be a whole number from 1 to " in err
    assert "Internal error" not in err


def test_a_rebuild_batch_size_below_one_is_a_usage_error(command, seeded):
    """``projections rebuild --batch-size -1`` was an internal error on PostgreSQL."""
    status, out, err = command("projections", "rebuild", "browser_view", "--batch-size", "-1")

    assert (status, out) == (2, "")
    assert "argument --batch-size: must be a whole number from 1 to " in err
