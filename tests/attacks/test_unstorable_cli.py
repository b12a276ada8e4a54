"""Held: a command-line argument holding text no database stores is a usage error (exit 2),
never a traceback, and nothing is stored.

The arguments of a process are C strings: no NUL reaches them. Bytes that are not UTF-8 do
(a file name, a pasted note, a terminal in another encoding), and Python reads each such byte
as a lone surrogate (``os.fsdecode``: ``b"\\xff"`` is ``"\\udcff"``), which no UTF-8 text, no
database and no stored event holds. Each command that writes or looks up text is run with one
in the place it takes text (``tests/attacks/test_unstorable_text.py`` does the same for the
API and the pages, ``test_unstorable_mcp.py`` for MCP's tools).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from countersign.infrastructure.bootstrap import Countersign

from tests.attacks.conftest import LEAKS, assert_nothing_changed, snapshot
from tests.conftest import AVA, REFUND, TO_CARD

LONE = os.fsdecode(b"a\xffb")  # "a\udcffb", as Python reads such an argument


def _commands(seeded: dict[str, Any], pending: str) -> dict[str, list[str]]:
    order = seeded["orders"]["refund-ok"]
    return {
        "decline --note": ["decline", pending, "--as", AVA, "--note", LONE],
        "decline id": ["decline", LONE, "--as", AVA],
        "approve id": ["approve", LONE, "--as", AVA],
        "show id": ["show", LONE, "--as", AVA],
        "history id": ["history", LONE],
        "members add --name": ["members", "add", "--org", "granite", "--email",
                               "zed@granite.example", "--name", LONE, "--role", "manager"],
        "members add --email": ["members", "add", "--org", "granite", "--email", LONE,
                                "--name", "Zed", "--role", "manager"],
        "webhooks add --url": ["webhooks", "add", "--org", "granite",
                               "--url", f"https://hooks.example/{LONE}"],
        "webhooks redeliver": ["webhooks", "redeliver", "--org", "granite", LONE],
        "orders show": ["orders", "show", "--org", "granite", LONE],
        "propose --resource": ["propose", "--org", "granite", "--as", AVA, "--operation",
                               REFUND, "--resource", LONE, "--request", json.dumps(TO_CARD)],
        "chat --message": ["chat", "--org", "granite", "--as", AVA, "--section", "orders",
                           "--resource", order, "--message", LONE],
        "--as": ["decline", pending, "--as", LONE],
    }  # fmt: skip


@pytest.fixture
def pending(cs: Countersign, seeded: dict[str, Any]) -> str:
    return cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=seeded["orders"]["refund-ok"],
        request=TO_CARD,
    ).proposal_id


def test_every_command_refuses_an_argument_no_database_stores(
    cs: Countersign, seeded: dict[str, Any], pending: str, command: Callable[..., Any]
) -> None:
    def refused(status: int, err: str) -> bool:
        return status == 2 and "cannot be stored" in err and not any(e in err for e in LEAKS)

    before = snapshot(cs)
    _each_answers(command, _commands(seeded, pending), refused)
    assert_nothing_changed(cs, before)


def _each_answers(
    command: Callable[..., Any], commands: dict[str, list[str]], fine: Callable[[int, str], bool]
) -> None:
    """Runs every command; fails naming each whose exit status and stderr are not ``fine``
    (or that raised: what the person would see is a traceback)."""
    wrong = []
    for name, argv in commands.items():
        try:
            status, _, err = command(*argv)
        except Exception as error:
            wrong.append(f"{name}: raised {type(error).__name__}: {error}"[:200])
            continue
        if not fine(status, err):
            wrong.append(f"{name}: exit {status} {err.strip()[:160]!r}")
    assert not wrong, "\n".join(wrong)


def test_the_refusal_is_in_french_and_in_json_when_asked(
    cs: Countersign, pending: str, command: Callable[..., Any]
) -> None:
    status, _, err = command("decline", pending, "--as", AVA, "--note", LONE, "--language", "fr")
    assert status == 2
    assert "ne peuvent pas être enregistrés" in err
    status, out, _ = command("decline", pending, "--as", AVA, "--note", LONE, "--json")
    assert status == 2
    assert json.loads(out)["error"] == "usage"


HUGE = "1" + "0" * 25  # past 2**63 (9.2e18): no SQLite INTEGER or PostgreSQL bigint holds it


def _numbers(seeded: dict[str, Any], pending: str) -> dict[str, list[str]]:
    order = seeded["orders"]["refund-ok"]
    return {
        "inbox --page": ["inbox", "--org", "granite", "--as", AVA, "--page", HUGE],
        "inbox --page 2**63-1": ["inbox", "--org", "granite", "--as", AVA, "--page",
                                 str(2**63 - 1)],
        "inbox --page-size": ["inbox", "--org", "granite", "--as", AVA, "--page-size", HUGE],
        "webhooks deliveries --limit": ["webhooks", "deliveries", "--org", "granite",
                                        "--limit", HUGE],
        "projections skip": ["projections", "skip", "--reason", "r", HUGE],
        "orders refund-manually --amount": ["orders", "refund-manually", "--org", "granite",
                                            "--as", AVA, "--payment", "P1", "--amount", HUGE,
                                            order],
        "policy set --above-cents": ["policy", "set", "--org", "granite", "--operation", REFUND,
                                     "--approvals", "1", "--above-cents", HUGE],
        "history --as-of": ["history", pending, "--as-of", HUGE],
    }  # fmt: skip


def test_every_number_past_64_bits_is_refused_or_read_as_nothing_found(
    cs: Countersign, seeded: dict[str, Any], pending: str, command: Callable[..., Any]
) -> None:
    def answered(status: int, err: str) -> bool:
        return status in (0, 2, 3, 4) and "Internal error" not in err and "Traceback" not in err

    before = snapshot(cs)
    _each_answers(command, _numbers(seeded, pending), answered)
    assert_nothing_changed(cs, before)
