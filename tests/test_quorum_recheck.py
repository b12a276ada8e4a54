"""Issue 22, part 2: a quorum counts only people who may still approve.

Granite's discount refunds above $100 need two managers (Ava and Noah). When the approval that
would complete the quorum arrives, every earlier one is rechecked: its approver must still be
the same member (not removed, nor removed and added back) holding the operation's permission.
One that is not stays recorded, shown as no longer counting, and the answer is
``awaiting_approvals`` with the count after the recheck: nothing is claimed or paid.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from countersign.application.authorization import Caller
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.cli.cards import render_report
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN, REFUND, TO_CARD
from tests.support.proposing import propose
from tests.test_projections import catch_up_all, projected
from tests.test_web_pages import _main, web_for

NOAH = "noah@granite.example"
REFUND_PERMISSION = str(Permission.REFUND_ORDERS)
MANAGER = [Permission.REFUND_ORDERS, Permission.READ_AUDIT, Permission.PREPARE_BROADCASTS]


def _propose(cs: Countersign, seeded: dict[str, Any]) -> str:
    """A $128.00 refund: above granite's $100, so two managers must approve it."""
    return cs.access.propose(
        Caller(AVA, "granite"),
        operation=REFUND,
        resource_id=seeded["orders"]["refund-two-approvers"],
        request=TO_CARD,
    ).proposal_id


def _change_club(cs: Countersign, change: Any) -> None:
    org = cs.store.get(Organization.create_id("granite"), Organization)
    change(org)
    cs.store.save(org)


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def test_an_approver_who_lost_the_permission_no_longer_counts(cs, seeded):
    proposal_id = _propose(cs, seeded)
    first = cs.proposals.approve(proposal_id, NOAH)
    assert (first.result, first.approvals, first.required) == ("awaiting_approvals", 1, 2)
    _change_club(cs, lambda org: org.change_permissions(NOAH, [Permission.READ_AUDIT]))

    answer = cs.proposals.approve(proposal_id, AVA)

    assert answer.to_json() == {
        "result": "awaiting_approvals",
        "proposal_id": proposal_id,
        "status": "pending",
        "outcome": None,
        "reason": None,
        "message": None,
        "approvals": 1,
        "required": 2,
        "superseded_by": None,
        "no_longer_counting": [{"approved_by": NOAH, "reason": "lost_permission"}],
    }
    assert cs.sandbox.refunds() == []
    # Not erased: Noah's Approved stays in the stream, followed by why it no longer counts.
    assert _events(cs, proposal_id) == ["Proposed", "Approved", "ApprovalLapsed", "Approved"]
    proposal = cs.store.read(UUID(proposal_id), Proposal)
    assert proposal.approvals == (AVA,)
    assert proposal.lapsed_approvals == ({"approved_by": NOAH, "reason": "lost_permission"},)

    card = cs.cards.card(proposal_id, AVA)
    assert card.approvals == [AVA]
    assert card.no_longer_counting[0]["message"] == (
        "no longer counts: Noah Bergeron lost the permission to approve"
        " “Refund a missed discount” (orders.refund)"
    )
    french = cs.cards.card(proposal_id, AVA, language="fr")
    assert french.no_longer_counting[0]["message"] == (
        "ne compte plus : Noah Bergeron a perdu la permission d'approuver"
        " “Rembourser une remise manquée” (orders.refund)"
    )

    # Given back the permission, Noah approves again, and now the quorum is whole.
    _change_club(cs, lambda org: org.change_permissions(NOAH, MANAGER))
    assert cs.proposals.approve(proposal_id, NOAH).status == "succeeded"
    assert len(cs.sandbox.refunds()) == 1
    assert verify(cs.app, cs.sql).ok


def test_an_approver_removed_and_added_back_between_the_approvals_no_longer_counts(cs, seeded):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)

    def removed_and_back(org: Organization) -> None:
        org.remove_member(NOAH)
        org.add_member(NOAH, "Noah Bergeron", "manager", MANAGER)

    _change_club(cs, removed_and_back)

    answer = cs.proposals.approve(proposal_id, AVA)
    assert (answer.result, answer.approvals, answer.required) == ("awaiting_approvals", 1, 2)
    assert answer.no_longer_counting == [{"approved_by": NOAH, "reason": "rejoined"}]
    assert cs.sandbox.refunds() == []
    assert cs.cards.card(proposal_id, AVA).no_longer_counting[0]["message"] == (
        "no longer counts: Noah Bergeron left the club and joined again since approving"
    )


def test_an_approver_who_left_the_club_no_longer_counts(cs, seeded):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)
    _change_club(cs, lambda org: org.remove_member(NOAH))

    answer = cs.proposals.approve(proposal_id, AVA)
    assert (answer.result, answer.approvals) == ("awaiting_approvals", 1)
    assert answer.no_longer_counting == [{"approved_by": NOAH, "reason": "removed"}]
    # Gone from the club, they are named by their address.
    assert cs.cards.card(proposal_id, AVA).no_longer_counting[0]["message"] == (
        f"no longer counts: {NOAH} is no longer a member of the club"
    )
    assert cs.sandbox.refunds() == []


def test_a_member_removed_and_added_back_may_approve_anew_and_the_quorum_then_holds(cs, seeded):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)

    def removed_and_back(org: Organization) -> None:
        org.remove_member(NOAH)
        org.add_member(NOAH, "Noah Bergeron", "manager", MANAGER)

    _change_club(cs, removed_and_back)
    # His own earlier approval was given by the old membership: it no longer counts, and this
    # one is recorded instead of "already approved by you".
    again = cs.proposals.approve(proposal_id, NOAH)
    assert (again.result, again.reason, again.approvals) == ("awaiting_approvals", None, 1)
    assert again.no_longer_counting == [{"approved_by": NOAH, "reason": "rejoined"}]
    assert cs.proposals.approve(proposal_id, AVA).status == "succeeded"
    assert len(cs.sandbox.refunds()) == 1


def test_approvals_that_still_count_claim_as_before(cs, seeded):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)
    executed = cs.proposals.approve(proposal_id, AVA)
    assert (executed.result, executed.status) == ("executed", "succeeded")
    assert "no_longer_counting" not in executed.to_json()
    assert _events(cs, proposal_id)[:4] == ["Proposed", "Approved", "Approved", "Claimed"]


def test_the_api_and_every_projection_show_an_approval_that_no_longer_counts(cs, seeded):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)
    _change_club(cs, lambda org: org.change_permissions(NOAH, [Permission.READ_AUDIT]))
    billing = issue_token(
        cs, "granite", "billing", [REFUND_PERMISSION], issued_by=AVA, kind="approver"
    )

    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        bearer = {"Authorization": f"Bearer {billing.token}"}
        answer = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=bearer)
        card = client.get(f"/api/v1/proposals/{proposal_id}", headers=bearer).json()
        french = client.get(
            f"/api/v1/proposals/{proposal_id}", headers=bearer, params={"language": "fr"}
        ).json()
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"] == "awaiting_approvals"
    assert (answer.json()["approvals"], answer.json()["required"]) == (1, 2)
    assert answer.json()["no_longer_counting"] == [
        {"approved_by": NOAH, "reason": "lost_permission"}
    ]
    assert card["approvals"] == [AVA]
    assert card["approval_credentials"] == ["approver_token:billing"]
    assert card["no_longer_counting"][0]["message"].startswith(
        "no longer counts: Noah Bergeron lost the permission"
    )
    assert french["no_longer_counting"][0]["message"].startswith(
        "ne compte plus : Noah Bergeron a perdu la permission"
    )

    catch_up_all(cs)
    org = seeded["organizations"][0]["id"]
    cached = cs.read_models.card(org, proposal_id)
    assert (cached["status"], cached["approvals"]) == ("pending", [AVA])
    assert cached["no_longer_counting"] == [{"approved_by": NOAH, "reason": "lost_permission"}]
    with cs.sql.transaction() as cursor:
        trail = cursor.execute(
            "SELECT event_type, actor, summary FROM audit_events WHERE proposal_id = ?"
            " ORDER BY version",
            (proposal_id,),
        ).fetchall()
        facts = cursor.execute(
            "SELECT approvals_count, approvals_lapsed, decision FROM proposal_facts"
            " WHERE proposal_id = ?",
            (proposal_id,),
        ).fetchone()
        said = cursor.execute(
            "SELECT text_en FROM handback_messages WHERE proposal_id = ? ORDER BY position",
            (proposal_id,),
        ).fetchall()
    assert [tuple(row) for row in trail][1:] == [
        ("Approved", NOAH, "approved (1 of 2)"),
        (
            "ApprovalLapsed",
            "countersign",
            f"no longer counts: {NOAH} lost the permission to approve"
            " “Refund a missed discount” (orders.refund)",
        ),
        ("Approved", AVA, "approved through the service “billing” (approver token) (1 of 2)"),
    ]
    assert tuple(facts) == (2, 1, None)  # two given, one lapsed: no decision yet
    assert [row[0] for row in said][-1].startswith("Approved by 1 of 2")


def test_the_review_page_and_the_cli_card_say_which_approval_no_longer_counts(
    cs, seeded, database_url, capsys
):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)
    _change_club(cs, lambda org: org.change_permissions(NOAH, [Permission.READ_AUDIT]))
    cs.proposals.approve(proposal_id, AVA)
    sentence = (
        "no longer counts: Noah Bergeron lost the permission to approve"
        " “Refund a missed discount” (orders.refund)"
    )

    web = web_for(cs, seeded)
    page = web.browser(AVA).get(f"/proposals/{proposal_id}")
    assert page.status_code == 200
    assert sentence in _main(page)
    assert "1 of 2" in _main(page)

    assert main(["--database", database_url, "show", proposal_id, "--as", AVA]) == 0
    assert sentence in _unboxed(capsys.readouterr().out)
    assert (
        main(["--database", database_url, "show", proposal_id, "--as", AVA, "--language", "fr"])
        == 0
    )
    french = _unboxed(capsys.readouterr().out)
    assert "ne compte plus : Noah Bergeron a perdu la permission" in french

    # Once the quorum is reached and it ran, the page still says whose approval stopped
    # counting, as the card and the API do (an auditor's finding: it showed "2 of 2" only).
    _change_club(cs, lambda org: org.change_permissions(BEN, [Permission.REFUND_ORDERS]))
    assert cs.proposals.approve(proposal_id, BEN).status == "succeeded"
    done = web.browser(AVA).get(f"/proposals/{proposal_id}")
    assert "Approvals that stopped counting" in _main(done)
    assert sentence in _main(done)
    french_page = web.browser(AVA).get(f"/proposals/{proposal_id}", **{"accept-language": "fr"})
    assert "Approbations qui ont cessé de compter" in _main(french_page)


def _unboxed(text: str) -> str:
    """The card's text with its frame and line wrapping taken out."""
    lines = [line.strip("│ ").strip() for line in text.splitlines()]
    return " ".join(" ".join(lines).split())


def test_countersign_approve_says_which_approval_no_longer_counts(cs, seeded):
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)
    _change_club(cs, lambda org: org.remove_member(NOAH))
    report = cs.proposals.approve(proposal_id, AVA).to_json()
    assert render_report(report).splitlines() == [
        "Approved: 1 of 2 approvals; waiting for another manager.",
        f"  No longer counts: {NOAH}'s approval (no longer a member of the club).",
    ]


def test_a_permission_revoked_elsewhere_as_the_last_approval_commits_is_caught(cs, other, seeded):
    """The recheck decided on the club as read; the claim commit checks that the club did not
    move on since. Noah loses the permission in another process just before Ava's claim
    commits: that commit writes nothing, the decision runs again, and Noah no longer counts."""
    proposal_id = _propose(cs, seeded)
    cs.proposals.approve(proposal_id, NOAH)
    store = cs.store
    save = store.save
    revoked: list[bool] = []

    def save_after_noah_loses_the_permission(*aggregates: Any, **options: Any) -> Any:
        if not revoked:
            revoked.append(True)
            _change_club(other, lambda org: org.change_permissions(NOAH, [Permission.READ_AUDIT]))
        return save(*aggregates, **options)

    store.save = save_after_noah_loses_the_permission  # type: ignore[method-assign]
    try:
        answer = cs.proposals.approve(proposal_id, AVA)
    finally:
        del store.save

    assert revoked == [True]
    assert (answer.result, answer.approvals) == ("awaiting_approvals", 1)
    assert answer.no_longer_counting == [{"approved_by": NOAH, "reason": "lost_permission"}]
    assert _events(cs, proposal_id) == ["Proposed", "Approved", "ApprovalLapsed", "Approved"]
    assert cs.sandbox.refunds() == []


def test_the_notifications_outbox_does_not_name_an_approval_that_no_longer_counts(cs, seeded):
    """The outcome that needs a person is sent to the proposal's requester and approvers: an
    approver whose approval lapsed is not one of them (the ``notifications`` projection)."""
    zoe = "zoe@granite.example"
    cs.policies.set("granite", REFUND, 2, above_cents=None)
    proposal_id = propose(cs, seeded, "refund-lost-response")
    cs.proposals.approve(proposal_id, NOAH)
    _change_club(cs, lambda org: org.remove_member(NOAH))
    assert cs.proposals.approve(proposal_id, AVA).result == "awaiting_approvals"
    _change_club(cs, lambda org: org.add_member(zoe, "Zoé Tremblay", "manager", MANAGER))
    assert cs.proposals.approve(proposal_id, zoe).status == "reconciling"

    [(reason, approvers)] = projected(
        cs,
        "SELECT reason, approvers FROM notifications"
        " WHERE proposal_id = ? AND reason <> 'awaiting_approval'",
        (proposal_id,),
    )
    assert reason == "needs_reconciliation"
    named = json.loads(approvers) if isinstance(approvers, str) else approvers
    assert named == [AVA, zoe]  # not Noah, whose approval lapsed when he left
