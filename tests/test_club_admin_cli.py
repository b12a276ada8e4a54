"""An operator starts a club of their own from the command line: ``org create``, then its
first manager with ``members add``, and the club's people listed and removed. Before these,
no command made a club or a member (h5's operator hour): ``seed`` made the demo's alone."""

from __future__ import annotations

import json

import pytest
from countersign.domain.club.organization import Organization
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.settings import Settings

REFUSED = 4


@pytest.fixture
def run(database_url, capsys):
    """The command's exit status, stdout and stderr, on an empty database of the test's own
    (``org create`` makes countersign's tables, as ``seed`` does)."""

    def command(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--database", database_url])
        out, err = capsys.readouterr()
        return code, out, err

    return command


def _add(run, email: str, *more: str) -> tuple[int, str, str]:
    return run("members", "add", "--org", "rivers", "--email", email, *more)


def test_an_operator_registers_a_club_and_its_first_manager(run, database_url):
    code, out, err = run(
        "org", "create", "rivers", "--name", "Rivers  Tennis Club", "--tz", "America/Vancouver"
    )
    assert (code, err) == (0, "")
    assert (
        "Club rivers (Rivers Tennis Club) registered; its times are shown in America/Vancouver"
        in out
    )
    assert "countersign members add --org rivers" in out

    code, out, err = _add(
        run,
        " Zoe@Rivers.example",
        "--name",
        "Zoé Martin",
        "--role",
        "manager",
        "--permissions",
        "members.manage,orders.refund",
    )
    assert (code, err) == (0, "")
    assert out.strip() == (
        "zoe@rivers.example (Zoé Martin, manager) joined rivers, holding: members.manage, "
        "orders.refund."
    )
    assert _add(run, "sam@rivers.example", "--name", "Sam Lee", "--role", "coach")[0] == 0

    code, out, _ = run("members", "list", "--org", "rivers", "--json")
    assert code == 0
    assert json.loads(out)["members"] == [
        {"email": "sam@rivers.example", "name": "Sam Lee", "role": "coach", "permissions": []},
        {
            "email": "zoe@rivers.example",
            "name": "Zoé Martin",
            "role": "manager",
            "permissions": ["members.manage", "orders.refund"],
        },
    ]
    # Another process reads the club as the command left it: the pages', the API's.
    cs = bootstrap(Settings(database_url=database_url))
    try:
        club = cs.store.read(Organization.create_id("rivers"), Organization)
        assert (club.name, club.time_zone) == ("Rivers Tennis Club", "America/Vancouver")
        zoe = club.member("zoe@rivers.example")
        assert zoe is not None
        assert zoe.may("members.manage")
    finally:
        cs.close()

    assert run("members", "remove", "--org", "rivers", "--email", "sam@rivers.example") == (
        0,
        "sam@rivers.example left rivers.\n",
        "",
    )


def test_what_cannot_be_kept_is_refused_and_nothing_is_written(run):
    assert run("org", "create", "rivers", "--name", "Rivers")[0] == 0
    refusals = [
        (
            ("org", "create", "rivers", "--name", "Other"),
            "club_exists",
            "There is a club rivers already; nothing was changed.",
        ),
        (
            ("org", "create", "Bad Slug", "--name", "X"),
            "bad_slug",
            '"bad slug" cannot be a club\'s short name',
        ),
        (
            ("org", "create", "ok", "--name", "<script>"),
            "bad_name",
            '"<script>" cannot be shown as a name',
        ),
    ]
    for argv, reason, said in refusals:
        code, out, err = run(*argv, "--json")
        assert code == REFUSED, (argv, out, err)
        document = json.loads(out)
        assert document["reason"] == reason
        assert said in document["message"]
    code, out, err = _add(
        run, "a@b.example", "--name", "A", "--role", "manager", "--permissions", "fly"
    )
    assert code == REFUSED
    assert "No such permission: fly." in err
    assert (
        _add(run, "nope", "--name", "A", "--role", "x")[2].strip()
        == '"nope" is not an e-mail address.'
    )
    code, _, err = run(
        "members", "add", "--org", "nowhere", "--email", "a@b.example", "--name", "A", "--role", "x"
    )
    assert (code, err.strip()) == (REFUSED, "There is no club nowhere.")
    assert (
        _add(
            run,
            "zoe@rivers.example",
            "--name",
            "Zoé",
            "--role",
            "manager",
            "--permissions",
            "members.manage",
        )[0]
        == 0
    )
    code, _, err = _add(run, "ZOE@rivers.example", "--name", "Zoé", "--role", "manager")
    assert code == REFUSED
    assert "zoe@rivers.example is a member of rivers already" in err
    code, _, err = run("members", "remove", "--org", "rivers", "--email", "zoe@rivers.example")
    assert code == REFUSED
    assert "the last member who holds members.manage" in err
    code, out, _ = run("members", "list", "--org", "rivers")
    assert out.strip() == "zoe@rivers.example  Zoé (manager): members.manage"
    # Refusals wrote nothing: no club "ok" was registered.
    assert run("members", "list", "--org", "ok")[1].startswith("Not found: check the club")


def test_the_answers_are_in_french_too(run):
    code, out, _ = run("--language", "fr", "org", "create", "rivers", "--name", "Club Rivière")
    assert code == 0
    assert "Club rivers (Club Rivière) enregistré ; ses heures sont affichées en" in out
    code, _, err = run("--language", "fr", "org", "create", "Rivière", "--name", "X")
    assert code == REFUSED
    assert "ne peut pas être le nom court d'un club" in err
    code, out, _ = _add(
        run, "zoe@rivers.example", "--name", "Zoé", "--role", "trésorière", "--language", "fr"
    )
    assert code == 0
    assert (
        "zoe@rivers.example (Zoé, trésorière) a rejoint rivers et détient : aucune permission."
        in out
    )
