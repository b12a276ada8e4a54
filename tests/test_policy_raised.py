"""A policy raised after a proposal was frozen fails closed at its next approval.

Granite's seed: discount refunds above $100 need two managers (Ava and Noah). When the club
raises a policy (more approvals, a threshold that now covers the amount, a passkey), an
approval of a proposal frozen under the weaker rule records
``RevisionRequired(policy_raised)``: nothing approved, claimed or paid, the approver told in
English and French that the club's policy changed and the requester should propose it again.
A revision is frozen under the policy in force. A lowered policy changes nothing: the frozen,
stricter rule still decides. A requester barred since is judged by who approves
(test_policy_barred.py).
"""

from __future__ import annotations

from uuid import UUID

from countersign.application.authorization import Caller
from countersign.domain.club.organization import Permission
from countersign.domain.proposal import Proposal
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, MIA, REFUND, TO_CARD
from tests.support.proposing import MOVE, TO_SENIORS, propose, propose_on
from tests.test_projections import catch_up_all

NOAH = "noah@granite.example"

SAID_EN = (
    "Nothing was changed. The club's approval policy for this operation changed after this "
    "was proposed and now asks more of it (more approvals, a passkey, or an approver other "
    "than the requester), so it was not approved under the old one. The requester should "
    "propose it again, to be decided under the policy now in force. Ask the assistant for a "
    "new proposal if it is still needed."
)
SAID_FR_START = (
    "Rien n'a été modifié. La politique d'approbation du club pour cette opération a changé "
    "depuis cette proposition et en demande désormais davantage"
)


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def _failed_closed(cs: Countersign, proposal_id: str, approver: str) -> None:
    """Approving ``proposal_id`` as ``approver`` records RevisionRequired(policy_raised) and
    pays nothing."""
    answer = cs.proposals.approve(proposal_id, approver)
    assert (answer.result, answer.status) == ("executed", "revision_required")
    assert answer.outcome == {
        "kind": "revision_required",
        "reason": {"code": "policy_raised", "params": {}},
    }
    assert answer.message == SAID_EN
    assert _events(cs, proposal_id)[-1] == "RevisionRequired"
    assert "Claimed" not in _events(cs, proposal_id)
    assert cs.sandbox.refunds() == []
    # Done with: a later approval answers its stored outcome.
    assert cs.proposals.approve(proposal_id, approver).result == "already_completed"


def test_a_raised_quorum_fails_a_quorum_in_progress_closed(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])  # $128.00
    assert cs.proposals.approve(proposal_id, AVA).result == "awaiting_approvals"  # 1 of 2

    cs.policies.set("granite", REFUND, 3, by=Caller(NOAH, "granite"))  # above $100 still

    _failed_closed(cs, proposal_id, NOAH)
    # Ava's approval stays recorded; Noah's was never recorded: nothing counts any more.
    assert _events(cs, proposal_id) == ["Proposed", "Approved", "RevisionRequired"]
    french = cs.cards.card(proposal_id, AVA, language="fr")
    assert (french.message or "").startswith(SAID_FR_START)

    revised = cs.access.revise(proposal_id, AVA, TO_CARD)  # frozen under today's policy
    assert revised.approvals_required == 3
    first = cs.proposals.approve(revised.proposal_id, AVA)
    assert (first.result, first.approvals, first.required) == ("awaiting_approvals", 1, 3)


def test_a_passkey_now_required_fails_closed_and_the_revision_asks_for_one(cs, seeded):
    proposal_id = propose(cs, seeded, operation=MOVE)  # no policy for moves: one approval

    cs.policies.set("granite", MOVE, 1, require_passkey=True)

    _failed_closed(cs, proposal_id, NOAH)
    assert _events(cs, proposal_id) == ["Proposed", "RevisionRequired"]
    revised = cs.access.revise(proposal_id, AVA, dict(TO_SENIORS))
    assert revised.status == "pending"
    asked = cs.proposals.approve(revised.proposal_id, NOAH)
    assert (asked.result, asked.reason) == ("not_approvable", "passkey_required")


def test_a_threshold_lowered_to_cover_the_amount_fails_closed(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])  # $48.00: below $100
    assert cs.cards.card(proposal_id, AVA).approvals_required == 1

    cs.policies.set("granite", REFUND, 2, above_cents=4_000)  # now above $40

    _failed_closed(cs, proposal_id, AVA)
    revised = cs.access.revise(proposal_id, AVA, TO_CARD)
    assert revised.approvals_required == 2
    assert cs.proposals.approve(revised.proposal_id, AVA).result == "awaiting_approvals"
    assert cs.proposals.approve(revised.proposal_id, NOAH).status == "succeeded"


def test_a_policy_set_where_there_was_none_covers_a_proposal_by_its_amount(cs, seeded):
    """A proposal frozen with no policy recorded no amount: the one it moves decides."""
    proposal_id = propose_on(cs, seeded["orders"]["maple-refund"], actor=MIA, organization="maple")
    amount = cs.store.read(UUID(proposal_id), Proposal).preview["amount_cents"]

    cs.policies.set("maple", REFUND, 2, above_cents=amount - 1)

    _failed_closed(cs, proposal_id, MIA)


def test_a_lowered_policy_changes_nothing(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])

    cs.policies.set("granite", REFUND, 1, above_cents=None)

    first = cs.proposals.approve(proposal_id, AVA)
    assert (first.result, first.approvals, first.required) == ("awaiting_approvals", 1, 2)
    assert cs.proposals.approve(proposal_id, NOAH).status == "succeeded"
    assert len(cs.sandbox.refunds()) == 1


def test_the_api_says_why_and_the_projections_record_it(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    cs.policies.set("granite", REFUND, 2, above_cents=10_000, require_passkey=True)
    refunds = str(Permission.REFUND_ORDERS)
    billing = issue_token(cs, "granite", "billing", [refunds], issued_by=NOAH, kind="approver")

    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        bearer = {"Authorization": f"Bearer {billing.token}"}
        answer = client.post(f"/api/v1/proposals/{proposal_id}/approve", headers=bearer)
        french = client.get(
            f"/api/v1/proposals/{proposal_id}", headers=bearer, params={"language": "fr"}
        ).json()

    assert answer.status_code == 200, answer.text
    said = answer.json()
    assert (said["result"], said["status"]) == ("executed", "revision_required")
    assert said["outcome"]["reason"] == {"code": "policy_raised", "params": {}}
    assert said["message"] == SAID_EN
    assert french["message"].startswith(SAID_FR_START)
    assert cs.sandbox.refunds() == []

    catch_up_all(cs)
    with cs.sql.transaction() as cursor:
        facts = cursor.execute(
            "SELECT status, outcome, revision_reason, approvals_count FROM proposal_facts"
            " WHERE proposal_id = ?",
            (proposal_id,),
        ).fetchone()
        handed_back = cursor.execute(
            "SELECT text_en, text_fr FROM handback_messages WHERE proposal_id = ?"
            " ORDER BY position",
            (proposal_id,),
        ).fetchall()
    assert tuple(facts) == ("revision_required", "revision_required", "policy_raised", 0)
    english, french = tuple(handed_back[-1])
    assert english == SAID_EN
    assert french.startswith(SAID_FR_START)
