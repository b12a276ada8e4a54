"""Governance from the command line: revise, policy set / show, and what approve, decline and
show now say (quorum, separation of duties, supersession), in JSON and in words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD, count_events

NOAH = "noah@granite.example"
TO_ACCOUNT = {**TO_CARD, "destination": "account_credit"}


@pytest.fixture
def run(database_url, capsys):
    """The command's exit status and what it printed (stdout, stderr)."""

    def command(*argv: str) -> tuple[int, str, str]:
        try:
            code = main([*argv, "--database", database_url])
        except SystemExit as exit_:  # argparse's own refusals
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return command


@pytest.fixture
def cli(run):
    """The command's JSON document, after checking its exit status."""

    def command(*argv: str, status: int = 0) -> Any:
        code, out, _ = run(*argv, "--json")
        assert code == status, out
        return json.loads(out)

    return command


@pytest.fixture
def orders(cli, seeded_database) -> dict[str, str]:
    """The demo orders, as ``seed`` prints them. It runs on a copy of the seeded template
    (``seeded_database``), where it changes nothing: an empty database made and seeded by
    the command cost half a second a test on PostgreSQL."""
    return cli("seed")["orders"]


def row(text: str, label: str) -> str:
    """The value of a card's row labelled ``label``, its wrapped lines joined."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"│ {label} "):
            parts = [line.strip("│ ").removeprefix(label).strip()]
            for more in lines[i + 1 :]:
                if not more.startswith("│   "):  # the next row has a label of its own
                    break
                parts.append(more.strip("│ "))
            return " ".join(parts)
    raise AssertionError(f"no row {label!r} in:\n{text}")


def _propose(cli, order_id: str, request: dict[str, Any] | None = None) -> dict[str, Any]:
    return cli(
        "propose",
        "--org",
        "granite",
        "--as",
        AVA,
        "--operation",
        REFUND,
        "--resource",
        order_id,
        "--request",
        json.dumps(request or TO_CARD),
    )


# -- revise -------------------------------------------------------------------------------------


def test_revise_prints_the_new_card_with_what_changed_and_supersedes_the_old(cli, run, orders):
    original = _propose(cli, orders["refund-ok"])["proposal_id"]

    revised = cli("revise", original, "--as", AVA, "--request", json.dumps(TO_ACCOUNT))

    new = revised["proposal_id"]
    assert (revised["revision_of"], revised["supersedes"]) == (original, [original])
    assert revised["preview"]["amount_cents"] == 4800  # computed again, never sent
    assert [(c["field"], c["label"]) for c in revised["changes"]] == [
        ("refund_destination", "Refund to")
    ]
    assert cli("show", original, "--as", AVA)["superseded_by"] == new
    # In words: the new card, what changed field by field, and the old one superseded.
    code, text, _ = run(
        "revise", new, "--as", AVA, "--request", json.dumps(TO_CARD), "--language", "fr"
    )
    newest = cli("show", new, "--as", AVA, "--language", "fr")["superseded_by"]
    changed = cli("show", newest, "--as", AVA, "--language", "fr")["changes"]
    assert code == 0
    assert text.startswith(f"Révision {newest} de {new} :")
    assert f"{new} est remplacée" in text
    assert row(text, "Révision de") == new
    assert row(text, "Modifié").startswith(f"{changed[0]['label']} : ")  # French colon
    assert cli("show", original, "--as", AVA)["superseded_by"] == new  # its own successor


def test_an_edit_with_problems_prints_the_problem_lines_propose_prints(cli, run, orders):
    original = _propose(cli, orders["refund-ok"])["proposal_id"]
    bad = json.dumps({**TO_CARD, "amount_cents": 1})

    refused = cli("revise", original, "--as", AVA, "--request", bad, status=4)
    code, out, text = run("revise", original, "--as", AVA, "--request", bad)
    _, _, proposed_text = run(
        "propose",
        "--org",
        "granite",
        "--as",
        AVA,
        "--operation",
        REFUND,
        "--resource",
        orders["refund-ok"],
        "--request",
        bad,
    )

    assert refused["error"] == "invalid_request"
    assert [p["field"] for p in refused["problems"]] == ["amount_cents"]
    assert (code, out) == (4, "")  # refused: the reason on stderr
    assert text == proposed_text
    assert text.splitlines()[:3] == [
        "The request was not accepted:",
        "  - The request holds something this operation does not take, so nothing was prepared.",
        "      amount_cents: unknown field; remove it",  # the field it concerns
    ]
    assert cli("show", original, "--as", AVA)["status"] == "pending"


def test_a_proposal_that_ran_or_was_superseded_cannot_be_edited(cli, run, orders):
    ran = _propose(cli, orders["refund-ok"])["proposal_id"]
    cli("approve", ran, "--as", AVA)
    old = _propose(cli, orders["refund-stale"])["proposal_id"]
    newer = cli("revise", old, "--as", AVA, "--request", json.dumps(TO_ACCOUNT))["proposal_id"]
    edit = json.dumps(TO_ACCOUNT)

    executed = cli("revise", ran, "--as", AVA, "--request", edit, status=3)
    superseded = cli("revise", old, "--as", AVA, "--request", edit, status=3)
    code, out, text = run("revise", old, "--as", AVA, "--request", edit)

    assert executed | {"message": ""} == {
        "error": "not_revisable",
        "status": "succeeded",
        "superseded_by": None,
        "message": "",
    }
    assert (superseded["status"], superseded["superseded_by"]) == ("superseded", newer)
    assert code == 3
    assert text.startswith("Not revisable: this proposal's status is superseded")
    _, _, ran_text = run("revise", ran, "--as", AVA, "--request", edit)
    assert ran_text.startswith("Not revisable: this proposal's status is succeeded, and only")
    assert f"countersign revise {newer}" in text
    assert "Traceback" not in text
    assert out == ""
    code, _, text = run("revise", ran, "--as", AVA, "--request", edit, "--language", "fr")
    assert (code, text.split(":")[0]) == (3, "Modification impossible ")
    assert "cette proposition a le statut réussie," in text  # its status in French too
    assert cli("show", newer, "--as", AVA)["status"] == "pending"  # nothing else happened


def test_only_a_member_with_the_permission_can_edit(cli, orders):
    original = _propose(cli, orders["refund-ok"])["proposal_id"]
    edit = json.dumps(TO_ACCOUNT)

    assert cli("revise", original, "--as", MIA, "--request", edit) == {"error": "not_found"}
    assert cli("revise", original, "--as", BEN, "--request", edit) == {"error": "forbidden"}
    assert cli("revise", "not-an-id", "--as", AVA, "--request", edit) == {"error": "not_found"}
    assert [e["type"] for e in cli("history", original)["events"]] == ["Proposed"]


# -- policy set / show --------------------------------------------------------------------------


def test_policy_show_lists_every_operation_and_set_changes_new_proposals_only(cli, run, orders):
    shown = cli("policy", "show", "--org", "granite")
    before = _propose(cli, orders["refund-ok"])["proposal_id"]  # $48: below the threshold

    two_not_the_requester = (
        *("policy", "set", "--org", "granite", "--operation", REFUND),
        *("--approvals", "2", "--requester-may-approve", "false", "--above-cents", "none"),
    )
    changed = cli(*two_not_the_requester)
    again = cli(*two_not_the_requester)

    refund = next(p for p in shown["policies"] if p["operation"] == REFUND)
    assert refund == {
        "operation": REFUND,
        "approvals": 2,
        "above_cents": 10000,
        "requester_may_approve": True,
        "require_passkey": False,
        "set_by": "seed",
    }
    assert {p["operation"] for p in shown["policies"]} >= {REFUND, "roster.move_member"}
    assert changed == {
        "organization": "granite",
        "operation": REFUND,
        "approvals": 2,
        "above_cents": None,
        "requester_may_approve": False,
        "require_passkey": False,
        "changed": True,
    }
    assert again["changed"] is False
    listed = cli("policy", "show", "--org", "granite")["policies"]
    now = next(p for p in listed if p["operation"] == REFUND)
    assert (now["approvals"], now["above_cents"], now["set_by"]) == (2, None, "operator")
    # The open proposal was frozen under a weaker rule (one approval, Ava's own may do): the
    # policy in force asks more of it now, so approving it fails closed, and says why.
    code, said, _ = run("approve", before, "--as", NOAH)
    assert code == 0
    assert said.startswith(
        "Executed: revision required.\n  Nothing was changed. The club's approval policy for "
        "this operation changed after this was proposed and now asks more of it"
    )
    assert "The requester should propose it again" in said
    assert cli("show", before, "--as", AVA)["outcome"]["reason"]["code"] == "policy_raised"
    _, dit, _ = run("approve", before, "--as", NOAH, "--language", "fr")
    assert "La politique d'approbation du club pour cette opération a changé" in dit
    after = _propose(cli, orders["refund-stale"])
    assert after["approvals_required"] == 2
    code, text, _ = run("policy", "show", "--org", "granite")
    assert code == 0
    assert f"{REFUND}  2 distinct approvals; the requester may not approve" in text
    assert "(set by operator)" in text


def test_show_says_the_policy_changed_in_english_and_french(cli, run, orders):
    """Approving it would send it back (test_policy_raised_card.py): show says so first."""
    proposal_id = _propose(cli, orders["refund-two-approvers"])["proposal_id"]
    _, before, _ = run("show", proposal_id, "--as", NOAH)
    assert "POLICY CHANGED" not in before

    cli("policy", "set", "--org", "granite", "--operation", REFUND, "--approvals", "3")

    code, shown, _ = run("show", proposal_id, "--as", NOAH)
    assert code == 0
    assert row(shown, "POLICY CHANGED").startswith(
        "The club's approval policy for this operation changed after this was proposed and "
        "now asks more of it. Approving it will not carry it out: it goes back to the requester"
    )
    _, dit, _ = run("show", proposal_id, "--as", NOAH, "--language", "fr")
    assert row(dit, "RÈGLE MODIFIÉE").startswith(
        "La politique d'approbation du club pour cette opération a changé depuis cette "
        "proposition et en demande désormais davantage. L'approuver ne l'exécutera pas"
    )
    assert cli("show", proposal_id, "--as", NOAH)["policy_changed"] is True


@pytest.mark.usefixtures("seeded_database")  # seed runs on a copy of the seeded template
def test_policy_amounts_read_in_the_clubs_currency(run):
    """``policy show`` and ``policy set`` said "above 10000 cents": an operator had to count
    the zeros. They read the threshold as the approval policies page does, in the club's
    currency; ``--above-cents`` still takes cents."""
    run("seed")
    base = ("policy", "set", "--org", "granite", "--operation", REFUND, "--approvals", "2")

    code, said, _ = run(*base, "--above-cents", "12850")
    shown_code, shown, _ = run("policy", "show", "--org", "granite")

    assert (code, shown_code) == (0, 0)
    assert "now need 2 distinct approvals above $128.50 CAD." in said
    assert "An open proposal this asks more of stops at its next approval" in said
    assert f"{REFUND}  2 distinct approvals above $128.50 CAD (set by operator)" in shown
    assert "cents" not in said + shown


def test_require_passkey_is_set_kept_when_left_out_and_refuses_approve(cs, seeded, cli, run):
    """``--require-passkey true`` through the command line; a later ``policy set`` that leaves
    the option out keeps it (it used to reset it to false); ``countersign approve`` of such a
    proposal is ``passkey_required``: exit 0, in words, and nothing written or paid."""
    quorum = ("policy", "set", "--org", "granite", "--operation", REFUND, "--approvals")

    on = cli(*quorum, "2", "--require-passkey", "true", "--above-cents", "none")
    kept = cli(*quorum, "1")
    again = cli(*quorum, "1")

    assert (on["approvals"], on["require_passkey"], on["changed"]) == (2, True, True)
    assert (kept["approvals"], kept["require_passkey"], kept["changed"]) == (1, True, True)
    assert (again["require_passkey"], again["changed"]) == (True, False)
    code, text, _ = run("policy", "show", "--org", "granite")
    assert f"{REFUND}  one approval; each approval signed with a passkey" in text
    proposal_id = _propose(cli, seeded["orders"]["refund-ok"])["proposal_id"]
    before = count_events(cs)

    code, said, err = run("approve", proposal_id, "--as", AVA)
    refused = cli("approve", proposal_id, "--as", AVA)

    assert (code, err) == (0, "")
    assert said.strip() == (
        "Not approvable: its approval policy requires each approval to be signed with the "
        "approver's passkey. Approve it on its page in the browser (or relay an assertion "
        "through the API's approval-challenge)."
    )
    assert (refused["result"], refused["reason"], refused["status"]) == (
        "not_approvable",
        "passkey_required",
        "pending",
    )
    assert count_events(cs) == before
    assert cs.sandbox.refunds() == []
    off = cli(*quorum, "1", "--require-passkey", "false")
    assert (off["require_passkey"], off["changed"]) == (False, True)


def test_policy_set_keeps_every_setting_it_leaves_out(cli):
    """``--approvals 2`` alone reset the requester rule to "may approve" and dropped the
    threshold: raising the quorum loosened the four-eyes rule without a word. Left out, each
    option keeps what is in force; ``--above-cents none`` covers every proposal again."""
    cli("seed")
    base = ("policy", "set", "--org", "granite", "--operation", REFUND)
    cli(*base, "--approvals", "1", "--requester-may-approve", "false", "--above-cents", "5000")

    raised = cli(*base, "--approvals", "2")
    every = cli(*base, "--approvals", "2", "--above-cents", "none")

    assert (raised["approvals"], raised["above_cents"], raised["requester_may_approve"]) == (
        2,
        5000,
        False,
    )
    assert (every["above_cents"], every["requester_may_approve"], every["changed"]) == (
        None,
        False,
        True,
    )


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--approvals", "0", "argument --approvals: must be a whole number from 1 to 5"),
        ("--approvals", "six", "argument --approvals: must be a whole number from 1 to 5"),
        ("--above-cents", "-5", "argument --above-cents: must be a whole number of cents"),
        ("--above-cents", "12.50", "argument --above-cents: must be a whole number of cents"),
        (
            "--above-cents",
            "every",
            "argument --above-cents: must be a whole number of cents, zero or more, or none",
        ),
        ("--requester-may-approve", "maybe", "argument --requester-may-approve: must be true"),
        ("--operation", "order.refund_everything", "argument --operation: invalid choice"),
    ],
)
def test_a_bad_policy_value_is_one_clear_line_and_exit_2(run, cli, option, value, says):
    cli("seed")
    values = {"--operation": REFUND, "--approvals": "2", option: value}
    argv = [word for pair in values.items() for word in pair]

    code, out, err = run("policy", "set", "--org", "granite", *argv)

    assert code == 2
    assert out == ""
    assert err.strip().splitlines()[-1].startswith(f"countersign policy set: error: {says}")
    assert "Traceback" not in err
    listed = cli("policy", "show", "--org", "granite")["policies"]
    refund = next(p for p in listed if p["operation"] == REFUND)
    assert (refund["approvals"], refund["set_by"]) == (2, "seed")  # nothing was written


def test_a_threshold_on_an_operation_that_moves_no_money_is_refused_in_one_line(run, cli):
    """A move moves no money: "2 approvals above $100.00" was accepted, listed as in force, and
    applied to no move ever (a proposal without an amount is covered only without one)."""
    cli("seed")
    args = ("--operation", "roster.move_member", "--approvals", "2", "--above-cents", "10000")

    code, out, err = run("policy", "set", "--org", "granite", *args)

    assert (code, out) == (2, "")
    assert err.strip().splitlines()[-1] == (
        "error: roster.move_member moves no money, so no proposal of it is ever above an "
        "amount: set its approvals without a threshold"
    )
    listed = cli("policy", "show", "--org", "granite")["policies"]
    move = next(p for p in listed if p["operation"] == "roster.move_member")
    assert (move["approvals"], move["above_cents"]) == (1, None)
    cli("policy", "set", "--org", "granite", *args[:4])  # without one: every move


def test_an_unknown_club_has_no_policies(cli):
    cli("seed")
    assert cli("policy", "show", "--org", "nowhere") == {"error": "not_found"}
    args = ("--operation", REFUND, "--approvals", "1")
    assert cli("policy", "set", "--org", "nowhere", *args) == {"error": "not_found"}


# -- approve, decline and show ------------------------------------------------------------------


def test_two_approvers_in_words_and_in_json(cli, run, orders):
    proposal_id = _propose(cli, orders["refund-two-approvers"])["proposal_id"]

    code, card, _ = run("show", proposal_id, "--as", AVA)
    assert code == 0
    assert row(card, "Approvals") == "0 of 2"
    assert row(card, "Policy") == "2 distinct approvals above $100.00 CAD"

    first = cli("approve", proposal_id, "--as", AVA)
    assert (first["result"], first["approvals"], first["required"], first["reason"]) == (
        "awaiting_approvals",
        1,
        2,
        None,
    )
    _, again, _ = run("approve", proposal_id, "--as", AVA)
    assert again.strip() == (
        "Already approved by you; nothing changed: 1 of 2 approvals; waiting for another manager."
    )
    _, shown, _ = run("show", proposal_id, "--as", NOAH, "--language", "fr")
    assert row(shown, "Approbations") == f"1 sur 2 ({AVA})"
    assert row(shown, "Règle").startswith("2 approbations distinctes au-delà de 100,00")

    code, last, _ = run("approve", proposal_id, "--as", NOAH)
    assert code == 0
    assert last.startswith("Executed: succeeded.")
    assert cli("show", proposal_id, "--as", AVA)["approvals"] == [AVA, NOAH]


def test_a_first_approval_reads_as_waiting_for_another_manager(run, cli, orders):
    proposal_id = _propose(cli, orders["refund-two-approvers"])["proposal_id"]

    code, text, _ = run("approve", proposal_id, "--as", AVA)

    assert code == 0
    assert text.strip() == "Approved: 1 of 2 approvals; waiting for another manager."


def test_a_requester_barred_from_approving_is_told_so(cli, run, orders):
    cli("policy", "set", "--org", "granite", "--operation", REFUND, "--approvals", "1",
        "--requester-may-approve", "false", "--above-cents", "none")  # fmt: skip
    proposal_id = _propose(cli, orders["refund-ok"])["proposal_id"]

    refused = cli("approve", proposal_id, "--as", AVA)
    code, text, _ = run("approve", proposal_id, "--as", AVA)

    assert (refused["result"], refused["reason"]) == ("not_approvable", "requester_may_not_approve")
    assert code == 0
    assert "does not let the person who requested it approve it" in text
    assert "another manager must" in text
    policy = row(run("show", proposal_id, "--as", AVA)[1], "Policy")
    assert policy == "one approval; the requester may not approve their own"
    assert cli("approve", proposal_id, "--as", NOAH)["status"] == "succeeded"


def test_approving_or_declining_a_superseded_proposal_names_the_newer_one(cli, run, orders):
    old = _propose(cli, orders["refund-ok"])["proposal_id"]
    new = _propose(cli, orders["refund-ok"], TO_ACCOUNT)

    assert new["supersedes"] == [old]
    for command in ("approve", "decline"):
        answer = cli(command, old, "--as", AVA)
        assert (answer["result"], answer["reason"], answer["superseded_by"]) == (
            "not_approvable",
            "superseded",
            new["proposal_id"],
        )
        _, text, _ = run(command, old, "--as", AVA)
        assert f"superseded by a newer proposal, {new['proposal_id']}" in text
        assert f"countersign show {new['proposal_id']} --as {AVA}" in text
    _, card, _ = run("show", old, "--as", AVA)
    assert "│ Superseded by" in card
    assert new["proposal_id"] in card
    assert cli("show", old, "--as", AVA)["status"] == "superseded"


def test_show_says_sent_back_only_to_a_reader_whose_approval_sends_it_back(cli, run, orders):
    """A requester barred since it was proposed (test_policy_barred.py): Noah's approval goes
    ahead under the rest of the frozen rule, and Ava's is refused, so neither is told it is
    sent back; with a third approval asked too, Noah's sends it back, and only he is told."""
    proposal_id = _propose(cli, orders["refund-two-approvers"])["proposal_id"]
    policy = ("policy", "set", "--org", "granite", "--operation", REFUND)
    barred = ("--requester-may-approve", "false")

    def shown(reader: str, language: str = "en") -> str:
        return run("show", proposal_id, "--as", reader, "--language", language)[1]

    cli(*policy, "--approvals", "2", *barred)
    for reader in (AVA, NOAH):
        assert "POLICY CHANGED" not in shown(reader)
        assert "RÈGLE MODIFIÉE" not in shown(reader, "fr")
        assert cli("show", proposal_id, "--as", reader)["policy_changed"] is False

    cli(*policy, "--approvals", "3", *barred)
    assert "POLICY CHANGED" in shown(NOAH)
    assert "RÈGLE MODIFIÉE" in shown(NOAH, "fr")
    assert "POLICY CHANGED" not in shown(AVA)
    assert cli("show", proposal_id, "--as", AVA)["policy_changed"] is False
