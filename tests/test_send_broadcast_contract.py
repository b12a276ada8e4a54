"""email_broadcast.send: the draft applied to the broadcast form is frozen with its audience,
rechecked at approval, and sent once, ever, through the e-mail delivery sandbox."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import pytest
from countersign.application.errors import ForbiddenError
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization
from countersign.domain.club.roster import Roster
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.infrastructure.adapters.email_sandbox import LOST_RESPONSE, OUTAGE, SUPPRESSED
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main

from tests.conftest import AVA, BEN, DRAFT
from tests.support.proposing import SEND, propose

GRANITE = Organization.create_id("granite")
A_DRAFT = {
    "filters": {"leagues": ["Thursday Seniors"]},
    "subject": "Seniors' ice time moves",
    "body": "Thursday draws start at 10:30 from next week.",
}
SENIORS = [
    "helen.park@example.com",
    "margaret.hughes@example.com",
    "noah.fraser@example.com",
    "walter.brooks@example.com",
]


def _form_id(seeded: dict[str, Any]) -> str:
    return str(seeded["broadcast_forms"]["granite"])


def _apply(cs: Countersign, seeded: dict[str, Any], draft: dict[str, Any] = A_DRAFT) -> str:
    """The draft applied to Granite's form (proposed and approved): what a send sends."""
    proposal_id = propose(cs, seeded, operation=DRAFT, request=draft)
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"
    return proposal_id


def _form(cs: Countersign) -> BroadcastForm:
    return cs.store.get(BroadcastForm.create_id(GRANITE), BroadcastForm)


def _deliveries(cs: Countersign) -> list[dict[str, Any]]:
    return cs.email_sandbox.deliveries()


def _revision_code(report: Any) -> str:
    assert (report.result, report.status) == ("executed", "revision_required"), report
    return str(report.outcome["reason"]["code"])


def _joins(cs: Countersign, email: str, name: str = "Grace Kim") -> None:
    cs.club.join("granite", "Thursday Seniors", name, email)


# -- propose ----------------------------------------------------------------------------------


def test_a_form_without_an_applied_draft_has_nothing_to_send(cs, seeded):
    with pytest.raises(InvalidRequestError) as refused:
        propose(cs, seeded, operation=SEND)

    assert [(p.field, p.message) for p in refused.value.problems] == [
        (
            "request",
            "the broadcast form has no applied draft: propose a draft and have it approved "
            "before sending",
        )
    ]
    assert _deliveries(cs) == []


def test_the_request_takes_nothing_the_model_could_choose(cs, seeded):
    _apply(cs, seeded)
    for smuggled in ({"recipients": ["everyone@example.com"]}, {"subject": "Other"}):
        with pytest.raises(InvalidRequestError) as refused:
            cs.proposals.propose(
                organization="granite",
                actor=AVA,
                operation=SEND,
                resource_id=_form_id(seeded),
                request=smuggled,
            )
        assert [p.message for p in refused.value.problems] == ["unknown field; remove it"]


def test_the_preview_freezes_the_applied_draft_with_its_counted_audience(cs, seeded):
    _apply(cs, seeded)

    created = cs.proposals.propose(
        organization="granite", actor=AVA, operation=SEND, resource_id=_form_id(seeded), request={}
    )

    assert created.preview == {
        "subject": "Seniors' ice time moves",
        "audience_count": 4,
        "first_recipients": (
            "Helen Park <helen.park@example.com>, "
            "Margaret Hughes <margaret.hughes@example.com>, "
            "Noah Fraser <noah.fraser@example.com>, "
            "Walter Brooks <walter.brooks@example.com>"
        ),
        "filters_in_words": "members of Thursday Seniors",
        "body": "Thursday draws start at 10:30 from next week.",
        "sends_email": True,
    }
    card = cs.cards.card(created.proposal_id, AVA)
    assert card.status == "pending"
    assert _deliveries(cs) == []  # proposing sends nothing


def test_the_preview_names_the_first_five_recipients_and_counts_them_all(cs, seeded):
    _apply(cs, seeded, {**A_DRAFT, "filters": {"leagues": ["Monday Night Open"]}})
    created = cs.proposals.propose(
        organization="granite", actor=AVA, operation=SEND, resource_id=_form_id(seeded), request={}
    )
    assert created.preview["audience_count"] == 6
    assert created.preview["first_recipients"].split(", ") == [
        "Emma Singh <emma.singh@example.com>",
        "Liam Gagnon <liam.gagnon@example.com>",
        "Lucas Roy <lucas.roy@example.com>",
        "Noah Fraser <noah.fraser@example.com>",
        "Olivia Chen <olivia.chen@example.com>",
    ]


# -- approve ----------------------------------------------------------------------------------


def test_approval_sends_the_frozen_draft_once_and_a_repeat_answers_the_same(cs, seeded, other):
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.result, report.status) == ("executed", "succeeded")
    result = report.outcome["result"]
    assert (result["audience_count"], result["subject"]) == (4, "Seniors' ice time moves")
    assert report.message == (
        "Sent “Seniors' ice time moves” to 4 recipients (members of Thursday Seniors), once."
    )
    [delivery] = _deliveries(cs)
    assert delivery["recipients"] == SENIORS
    assert delivery["subject"] == "Seniors' ice time moves"
    assert (delivery["status"], delivery["requests"]) == ("succeeded", 1)
    assert delivery["metadata"]["proposal_id"] == proposal_id
    assert result["delivery_ref"] == delivery["delivery_id"]
    assert [(s.proposal_id, s.status, s.sent_by) for s in _form(cs).sends] == [
        (proposal_id, "sent", AVA)
    ]

    for again in (
        cs.proposals.approve(proposal_id, AVA),
        other.proposals.approve(proposal_id, AVA),
    ):
        assert (again.result, again.status) == ("already_completed", "succeeded")
        assert again.outcome == report.outcome
    assert [d["requests"] for d in _deliveries(cs)] == [1]  # nobody asked the service again
    assert cs.cards.card(proposal_id, AVA, "fr").message == (
        "« Seniors' ice time moves » a été envoyé à 4 destinataires "
        "(membres de la ligue Thursday Seniors), une seule fois."
    )


def test_a_draft_is_sent_once_ever(cs, seeded):
    _apply(cs, seeded)
    first = propose(cs, seeded, operation=SEND)
    # The same draft, proposed twice: the second replaces it.
    second = propose(cs, seeded, operation=SEND)

    assert cs.proposals.approve(first, AVA).reason == "superseded"
    assert cs.proposals.approve(second, AVA).status == "succeeded"
    assert cs.proposals.approve(first, AVA).reason == "superseded"
    assert len(_deliveries(cs)) == 1
    with pytest.raises(InvalidRequestError) as refused:
        propose(cs, seeded, operation=SEND)  # and a third cannot even be proposed
    assert [p.message for p in refused.value.problems] == [
        "the draft in the broadcast form has already been sent"
    ]
    _apply(cs, seeded)  # the same words, applied again, are a new draft
    assert cs.proposals.approve(propose(cs, seeded, operation=SEND), AVA).status == "succeeded"
    assert len(_deliveries(cs)) == 2


def test_applying_another_draft_supersedes_the_pending_send(cs, seeded):
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)
    replacing = _apply(cs, seeded, {**A_DRAFT, "subject": "A different subject"})

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.reason, report.superseded_by) == ("superseded", replacing)
    assert _deliveries(cs) == []
    assert _form(cs).sends == []


def test_a_draft_replaced_outside_a_proposal_requires_revision(cs, seeded):
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)
    form = _form(cs)
    form.apply_draft({}, "Typed at the desk", "Another body", uuid4())
    cs.store.save(form)

    report = cs.proposals.approve(proposal_id, AVA)

    assert _revision_code(report) == "broadcast_draft_changed"
    assert "another draft" in report.message
    assert _deliveries(cs) == []
    assert _form(cs).sends == []


def test_an_audience_grown_after_proposing_requires_revision(cs, seeded):
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)
    _joins(cs, "grace.kim@example.com")

    report = cs.proposals.approve(proposal_id, AVA)

    assert _revision_code(report) == "broadcast_audience_count_changed"
    assert report.outcome["reason"]["params"] == {"approved_count": 4, "current_count": 5}
    assert "from 4 to 5 recipients" in report.message
    assert _deliveries(cs) == []


def test_the_same_count_of_other_recipients_requires_revision(cs, seeded):
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)
    roster = cs.store.get(Roster.create_id(GRANITE), Roster)
    roster.leave("Thursday Seniors", "walter.brooks@example.com")
    cs.store.save(roster)
    _joins(cs, "grace.kim@example.com")

    report = cs.proposals.approve(proposal_id, AVA)

    assert _revision_code(report) == "broadcast_recipients_changed"
    assert "4 recipients, but not the same ones" in report.message
    assert _deliveries(cs) == []


def test_a_refusing_service_requires_revision_and_sends_nothing(cs, seeded):
    _joins(cs, SUPPRESSED, "Suppressed address")
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)

    report = cs.proposals.approve(proposal_id, AVA)

    assert _revision_code(report) == "broadcast_delivery_refused"
    assert "refused the broadcast; nothing was sent" in report.message
    [delivery] = _deliveries(cs)
    assert (delivery["status"], delivery["failure_code"]) == ("failed", "recipient_suppressed")
    assert [(s.status, s.failure) for s in _form(cs).sends] == [("failed", "recipient_suppressed")]
    assert propose(cs, seeded, operation=SEND)  # nothing was sent: the draft may be proposed again


def test_an_outage_is_reconciled_by_replaying_the_same_request_once(cs, seeded):
    _joins(cs, OUTAGE, "Outage address")
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.status, report.outcome["kind"]) == ("reconciling", "needs_reconciliation")
    assert report.outcome["cause"] == "provider_unavailable"  # told apart from a lost answer
    assert "unavailable and sent nothing" in report.message
    assert "Do not send the draft again" in report.message
    assert _deliveries(cs) == []  # the 503 came before anything was sent
    swept = cs.sweepers.reconcile()
    assert [(s.proposal_id, s.action, s.status) for s in swept] == [
        (proposal_id, "replayed", "succeeded")
    ]
    [delivery] = _deliveries(cs)
    assert (delivery["requests"], delivery["recipients"]) == (1, sorted([*SENIORS, OUTAGE]))
    assert cs.sweepers.reconcile() == []


def test_a_lost_response_is_settled_by_the_reconciler_with_exactly_one_delivery(cs, seeded):
    _joins(cs, LOST_RESPONSE, "Delivery test")
    _apply(cs, seeded)
    proposal_id = propose(cs, seeded, operation=SEND)

    report = cs.proposals.approve(proposal_id, AVA)

    assert (report.status, report.outcome["kind"]) == ("reconciling", "needs_reconciliation")
    assert [d["requests"] for d in _deliveries(cs)] == [1]  # it was sent, the answer lost
    with pytest.raises(InvalidRequestError) as refused:
        propose(cs, seeded, operation=SEND)  # nobody sends it again meanwhile
    assert [p.message for p in refused.value.problems] == [
        "a send of the draft in the broadcast form is still settling"
    ]

    swept = cs.sweepers.reconcile()

    assert [(s.proposal_id, s.action, s.status) for s in swept] == [
        (proposal_id, "settled", "succeeded")
    ]
    [delivery] = _deliveries(cs)
    assert (delivery["requests"], delivery["status"]) == (1, "succeeded")
    assert delivery["metadata"]["proposal_id"] == proposal_id
    assert [s.status for s in _form(cs).sends] == ["sent"]
    assert cs.proposals.approve(proposal_id, AVA).result == "already_completed"


def test_no_second_send_can_be_proposed_while_one_settles(cs, seeded):
    _joins(cs, LOST_RESPONSE, "Delivery test")
    _apply(cs, seeded)
    first = propose(cs, seeded, operation=SEND)
    assert cs.proposals.approve(first, AVA).status == "reconciling"

    with pytest.raises(InvalidRequestError, match="still settling"):
        propose(cs, seeded, operation=SEND)

    assert len(_deliveries(cs)) == 1


def test_staff_without_the_permission_can_neither_propose_nor_approve(cs, seeded):
    _apply(cs, seeded)
    with pytest.raises(ForbiddenError):
        propose(cs, seeded, operation=SEND, actor=BEN)
    proposal_id = propose(cs, seeded, operation=SEND)

    report = cs.proposals.approve(proposal_id, BEN)

    assert (report.result, report.reason) == ("not_approvable", "forbidden")
    assert cs.cards.card(proposal_id, AVA).status == "pending"
    assert _deliveries(cs) == []


# -- the command line -------------------------------------------------------------------------


@pytest.fixture
def cli(database_url, capsys):
    def run(*argv: str, status: int = 0) -> Any:
        code = main([*argv, "--json", "--database", database_url])
        out = capsys.readouterr().out
        assert code == status, out
        return json.loads(out)

    return run


def test_the_command_line_proposes_approves_and_reconciles_a_send(cli):
    form = cli("seed")["broadcast_forms"]["granite"]

    def propose(kind: str, request: dict[str, Any], status: int = 0) -> Any:  # over the CLI
        as_ava = ["--org", "granite", "--as", AVA, "--resource", form]
        request_json = json.dumps(request)
        return cli(
            "propose", *as_ava, "--operation", kind, "--request", request_json, status=status
        )

    test_address = ["--name", "Delivery test", "--email", LOST_RESPONSE]
    cli("roster", "join", "--org", "granite", "--league", "Thursday Seniors", *test_address)
    nothing = propose(SEND, {}, status=4)
    assert nothing["error"] == "invalid_request"
    assert nothing["problems"][0]["field"] == "request"
    cli("approve", propose(DRAFT, A_DRAFT)["proposal_id"], "--as", AVA)

    created = propose(SEND, {})
    assert created["preview"]["audience_count"] == 5
    forbidden = cli("approve", created["proposal_id"], "--as", BEN)
    assert (forbidden["result"], forbidden["reason"]) == ("not_approvable", "forbidden")
    approved = cli("approve", created["proposal_id"], "--as", AVA)
    assert approved["outcome"]["kind"] == "needs_reconciliation"
    swept = cli("reconcile")["resolved"]
    assert [(r["proposal_id"], r["status"]) for r in swept] == [
        (created["proposal_id"], "succeeded")
    ]

    deliveries = cli("provider", "deliveries")
    assert [(d["requests"], d["status"], d["metadata"]["proposal_id"]) for d in deliveries] == [
        (1, "succeeded", created["proposal_id"])
    ]
    assert len(deliveries[0]["recipients"]) == 5
    again = cli("approve", created["proposal_id"], "--as", AVA)
    assert (again["result"], again["status"]) == ("already_completed", "succeeded")


# -- the offline stand-in model ---------------------------------------------------------------


def _say(cs: Countersign, seeded: dict[str, Any], words: str) -> Any:
    return cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="email_broadcasts",
        resource_id=_form_id(seeded),
        message=words,
    )


def test_the_stand_in_proposes_a_send_only_when_asked_to_send_the_draft(cs, seeded):
    refused = _say(cs, seeded, "Please send the draft in the form.")
    assert (refused.ended, refused.proposal) == ("reply", None)  # no draft to send yet
    assert "no approved draft yet" in refused.messages[-1]["text"]  # in the manager's words

    drafted = _say(cs, seeded, "Email the Thursday Seniors about the ice time moving.")
    assert drafted.proposal["operation"] == DRAFT
    cs.proposals.approve(drafted.proposal["proposal_id"], AVA)
    sending = _say(cs, seeded, "Looks good: send the draft to them.")

    assert sending.ended == "proposal"
    assert sending.proposal["operation"] == SEND
    assert sending.proposal["preview"]["audience_count"] == 4
    assert _deliveries(cs) == []  # the model proposes; only an approval sends
