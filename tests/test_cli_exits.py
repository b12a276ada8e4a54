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

COUNTERSIGN = Path(sys.executable).with_name("countersign")


@pytest.fixture
def command(database_url, capsys):
    """The ``countersign`` command in this process: (status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            status = main([*argv, "--database", database_url])
        except SystemExit as stopped:  # argparse's own answers
            status = int(stopped.code or 0)
        out, err = capsys.readouterr()
        return status, out, err

    return run


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
    assert capsys.readouterr().out == f"countersign {metadata.version('countersign')}\n"

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
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    )
    env = {**os.environ, "COUNTERSIGN_DATABASE_URL": database_url}

    for argv, status in (
        (("show", str(created.proposal_id), "--as", AVA), 141),  # a card: SIGPIPE's status
        (("audit", "export"), 141),  # a stream
        (("--help",), 0),  # argparse's own answer, which ignores a failed write
    ):
        stopped = _with_reader_gone(*argv, env=env)
        assert (stopped.returncode, stopped.stderr) == (status, b""), argv
