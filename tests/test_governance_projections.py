"""Supersession, edits, quorums and policy changes as every projection shows them: the cards
and the inbox, the conversation's hand-back (English and French), the audit trail, the
analytics tables, open work and attention. The rebuild-equals-live tests in
test_projections.py replay the same history."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from countersign.infrastructure.audit.verify import verify

from tests.conftest import AVA, MIA, REFUND, TO_CARD
from tests.support.proposing import propose_on
from tests.test_french import english_in
from tests.test_projections import NOAH, catch_up_all, lifecycle_history


def _history(cs, seeded, clock) -> tuple[dict[str, str], str]:
    ids = lifecycle_history(cs, seeded, clock)
    catch_up_all(cs)
    return ids, seeded["organizations"][0]["id"]


def _card(cs, org: str, proposal_id: str) -> dict[str, Any]:
    card = cs.read_models.card(org, proposal_id)
    assert card is not None
    return card


def _rows(cs, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with cs.sql.transaction() as cursor:
        return [tuple(row) for row in cursor.execute(sql, params).fetchall()]


def test_cards_show_supersession_revisions_quorums_and_policies(cs, seeded, clock):
    ids, org = _history(cs, seeded, clock)
    cards = {name: _card(cs, org, pid) for name, pid in ids.items() if name != "maple"}

    assert (cards["replaced"]["status"], cards["replaced"]["superseded_by"]) == (
        "superseded",
        ids["replacing"],
    )
    assert (cards["replacing"]["status"], cards["replacing"]["superseded_by"]) == (
        "superseded",
        ids["revision"],
    )
    assert (cards["revision"]["status"], cards["revision"]["revision_of"]) == (
        "pending",
        ids["replacing"],
    )
    assert (cards["retired"]["status"], cards["retired"]["superseded_by"]) == (
        "superseded",
        ids["cancelled"],
    )
    # Why each was superseded, as recorded: an edit, a newer proposal, an execution.
    assert [cards[name]["superseded_reason"] for name in ("replacing", "replaced", "retired")] == [
        "revised",
        "replaced",
        "withdrawn",
    ]
    two = cards["two_approvers"]
    assert (two["status"], two["approvals"], two["approvals_required"]) == (
        "succeeded",
        [AVA, NOAH],
        2,
    )
    assert two["policy"]["rule"] == {
        "operation": REFUND,
        "approvals": 2,
        "above_cents": 10000,
        "requester_may_approve": True,
    }
    assert (two["approved_by"], two["policy"]["amount_cents"]) == (NOAH, 12800)
    # Frozen under the policy changed just before it: one approval, not the requester's.
    pending = cards["pending"]
    assert (pending["approvals"], pending["approvals_required"]) == ([], 1)
    assert pending["policy"]["requester_may_approve"] is False
    # A draft has no policy: one approval by anyone permitted.
    assert (cards["revision"]["policy"], cards["revision"]["approvals_required"]) == (None, 1)

    # Superseded cards await nobody: the inbox and its count leave them out, and the list of
    # decided proposals shows them.
    now = clock.now()
    inbox = {card["proposal_id"] for card in cs.read_models.inbox(org, now)["items"]}
    assert inbox == {ids["revision"], ids["pending"]}
    assert cs.read_models.counts(org, now)["awaiting"] == 2
    recent = {card["proposal_id"] for card in cs.read_models.recent(org, page_size=100)["items"]}
    assert {ids["replaced"], ids["replacing"], ids["retired"]} <= recent
    assert not {ids["revision"], ids["pending"]} & recent


def test_a_first_approval_of_two_leaves_the_proposal_pending_and_open(cs, seeded, clock):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    assert cs.proposals.approve(proposal_id, AVA).result == "awaiting_approvals"
    catch_up_all(cs)
    org = seeded["organizations"][0]["id"]
    now = clock.now()

    card = _card(cs, org, proposal_id)
    assert (card["status"], card["approvals"], card["approvals_required"]) == (
        "pending",
        [AVA],
        2,
    )
    assert [c["proposal_id"] for c in cs.read_models.inbox(org, now)["items"]] == [proposal_id]

    [said] = cs.read_models.handback(org, card["interaction_id"])
    assert (said["kind"], said["outcome_kind"]) == ("awaiting_approvals", None)
    assert said["text_en"].startswith("Approved by 1 of 2.")
    assert said["text_fr"].startswith("Approuvée par 1 sur 2.")
    assert english_in(said["text_fr"], []) == []

    [(decision, count, required, applied)] = _rows(
        cs,
        "SELECT decision, approvals_count, approvals_required, policy_applied"
        " FROM proposal_facts WHERE proposal_id = ?",
        proposal_id,
    )
    assert (decision, count, required, bool(applied)) == (None, 1, 2, True)

    # Still an expiry candidate: the second approval may never come.
    later = now + timedelta(days=2)
    assert [str(i) for i in cs.sweepers.open_work.expiry_candidates(later)] == [proposal_id]
    assert cs.read_models.needs_attention(org)["total"] == 0


def test_superseded_proposals_leave_open_work_and_never_need_attention(cs, seeded, clock):
    ids, _ = _history(cs, seeded, clock)
    later = clock.now() + timedelta(days=2)
    candidates = {str(i) for i in cs.sweepers.open_work.expiry_candidates(later)}
    assert candidates == {ids["revision"], ids["pending"], ids["maple"]}
    superseded = [ids["replaced"], ids["replacing"], ids["retired"]]
    rows = _rows(
        cs,
        "SELECT status, open FROM attention_items WHERE proposal_id IN (?, ?, ?)",
        *superseded,
    )
    assert (
        sorted((status, bool(is_open)) for status, is_open in rows) == [("superseded", False)] * 3
    )


def test_the_conversation_is_told_how_and_by_which_proposal_it_was_replaced(cs, seeded, clock):
    ids, org = _history(cs, seeded, clock)

    def told(name: str) -> dict[str, Any]:
        card = _card(cs, org, ids[name])
        messages = [
            m
            for m in cs.read_models.handback(org, card["interaction_id"])
            if m["proposal_id"] == ids[name]
        ]
        [message] = messages
        assert (message["kind"], message["outcome_kind"]) == ("superseded", None)
        return message

    newer = told("replaced")
    assert newer["text_en"].startswith("Replaced by a newer proposal for the same thing")
    assert newer["text_fr"].startswith("Remplacée par une proposition plus récente")
    edit = told("replacing")
    assert edit["text_en"].startswith("Replaced by an edit")
    assert edit["text_fr"].startswith("Remplacée par une modification")
    executed = told("retired")
    assert executed["text_en"].startswith("Out of date:")
    assert executed["text_fr"].startswith("Dépassée :")
    for message, by in ((newer, "replacing"), (edit, "revision"), (executed, "cancelled")):
        assert ids[by] in message["text_en"]
        assert ids[by] in message["text_fr"]
        assert "nothing was changed" in message["text_en"]
        assert english_in(message["text_fr"], [ids[by], "Hi all", "Hello all"]) == []
    # The replacing proposal is named by what it does, in each language.
    assert "Hello all" in edit["text_en"]
    assert "Cancel Liam Gagnon's registration" in executed["text_en"]
    assert "annuler l'inscription" in executed["text_fr"]


def test_the_audit_trail_records_each_approval_supersession_edit_and_policy_change(
    cs, seeded, clock
):
    ids, org = _history(cs, seeded, clock)

    def trail(name: str) -> list[tuple[str, str, str]]:
        rows = cs.read_models.audit_trail(proposal_id=ids[name])
        return [(row["event_type"], row["actor"], row["summary"]) for row in rows]

    assert trail("two_approvers")[:3] == [
        ("Proposed", AVA, f"proposed {REFUND}; needs 2 approvals"),
        ("Approved", AVA, "approved (1 of 2)"),
        ("Approved", NOAH, "approved (2 of 2)"),
    ]
    assert trail("replacing")[-1] == (
        "Superseded",
        "countersign",
        f"superseded by {ids['revision']} (revised: an edit of it)",
    )
    assert trail("replaced")[-1] == (
        "Superseded",
        "countersign",
        f"superseded by {ids['replacing']} (replaced: a newer proposal for the same thing)",
    )
    assert trail("retired")[-1] == (
        "Superseded",
        "countersign",
        f"superseded by {ids['cancelled']} (withdrawn: that proposal was carried out and "
        "changed what this one relied on)",
    )
    assert trail("revision")[0][2].endswith(f"as a revision of {ids['replacing']}")
    assert trail("pending")[0][2] == f"proposed {REFUND}; its requester may not approve"
    assert trail("succeeded")[0][2] == f"proposed {REFUND}"  # below the threshold

    changes = cs.read_models.policy_changes(org)
    assert [
        (c["operation"], c["approvals"], c["above_cents"], c["requester_may_approve"], c["set_by"])
        for c in changes
    ] == [(REFUND, 2, 10000, True, "seed"), (REFUND, 1, None, False, "operator")]
    assert [c["require_passkey"] for c in changes] == [False, False]
    assert changes[0]["at"] <= changes[1]["at"]
    maple = seeded["organizations"][1]["id"]
    assert cs.read_models.policy_changes(maple) == []
    assert verify(cs.app, cs.sql).ok


def test_analytics_count_approvals_supersessions_revisions_and_policies(cs, seeded, clock):
    ids, _ = _history(cs, seeded, clock)
    columns = (
        "status, outcome, decision, decided_by, approvals_count, approvals_required,"
        " policy_applied, revision_of, superseded_by, superseded_at"
    )
    facts = {
        row[0]: row[1:] for row in _rows(cs, f"SELECT proposal_id, {columns} FROM proposal_facts")
    }

    def fact(name: str) -> tuple[Any, ...]:
        *head, applied, revision_of, superseded_by, superseded_at = facts[ids[name]]
        return (*head, bool(applied), revision_of, superseded_by, superseded_at is not None)

    assert fact("two_approvers") == (
        "succeeded",
        "succeeded",
        "approved",
        NOAH,
        2,
        2,
        True,
        None,
        None,
        False,
    )
    # granite's policy is set for refunds, but $48.00 is below its threshold.
    assert fact("succeeded")[4:7] == (1, 1, False)
    assert fact("replaced") == (
        "superseded",
        "superseded",
        None,
        None,
        0,
        1,
        False,
        None,
        ids["replacing"],
        True,
    )
    assert fact("revision")[7] == ids["replacing"]
    assert fact("retired")[8] == ids["cancelled"]
    reasons = {
        row[0]: row[1]
        for row in _rows(cs, "SELECT proposal_id, superseded_reason FROM proposal_facts")
    }
    assert [reasons[ids[name]] for name in ("replacing", "replaced", "retired", "pending")] == [
        "revised",
        "replaced",
        "withdrawn",
        None,
    ]
    assert fact("pending")[6] is True  # one approval, not the requester's: it applies

    approvals = _rows(
        cs,
        "SELECT ordinal, approver, seconds_since_proposed, seconds_since_previous"
        " FROM proposal_approvals WHERE proposal_id = ? ORDER BY ordinal",
        ids["two_approvers"],
    )
    assert [(ordinal, approver) for ordinal, approver, _, _ in approvals] == [(1, AVA), (2, NOAH)]
    (_, _, first_since, no_previous), (_, _, second_since, between) = approvals
    assert no_previous is None
    assert 0 <= first_since <= second_since
    assert between == pytest.approx(second_since - first_since, abs=0.002)


def test_an_approval_with_no_quorum_policy_set_is_the_decision(cs, seeded):
    """Refunds in maple have no policy: the one approval decides, as before policies."""
    proposal_id = propose_on(
        cs, seeded["orders"]["maple-refund"], TO_CARD, actor=MIA, organization="maple"
    )
    cs.proposals.approve(proposal_id, MIA)
    catch_up_all(cs)
    [(decision, count, required, applied)] = _rows(
        cs,
        "SELECT decision, approvals_count, approvals_required, policy_applied"
        " FROM proposal_facts WHERE proposal_id = ?",
        proposal_id,
    )
    assert (decision, count, required, bool(applied)) == ("approved", 1, 1, False)


def test_a_policy_change_says_whether_it_requires_passkeys(cs, seeded):
    """Requiring passkeys, then not, left two identical rows in policy_changes (an auditor's
    finding): the trail now says which each was."""
    cs.policies.set("granite", "roster.remove_member", 1, require_passkey=True)
    cs.policies.set("granite", "roster.remove_member", 1, require_passkey=False)
    cs.projection_runners(["audit_trail"])[0].catch_up()
    org = seeded["organizations"][0]["id"]
    changes = cs.read_models.policy_changes(org, "roster.remove_member")
    assert [(c["approvals"], bool(c["require_passkey"])) for c in changes] == [
        (1, True),
        (1, False),
    ]
