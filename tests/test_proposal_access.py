"""One place decides who may see and act on a proposal: the application (ProposalAccess and
the assistant's conversation checks), for the command line, the JSON API and the pages alike."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest
from countersign.application.authorization import Caller
from countersign.application.errors import ForbiddenError, MissingPermissionError
from countersign.domain.club.organization import Organization, Permission
from countersign.domain.errors import NotFoundError

from tests.conftest import AVA, BEN, MIA, REFUND, TO_CARD, count_events
from tests.support.proposing import propose

ROOT = Path(__file__).resolve().parent.parent
ASKED = "Refund the missing early-bird discount to the card"


def _join_maple(cs, email, permissions):
    maple = cs.store.get(Organization.create_id("maple"), Organization)
    maple.add_member(email, "Guest", "manager", permissions)
    cs.store.save(maple)


def test_a_caller_acting_in_one_club_finds_nothing_of_another_club_they_belong_to(cs, seeded):
    proposal_id = propose(cs, seeded)
    _join_maple(cs, AVA, [Permission.REFUND_ORDERS, Permission.READ_AUDIT])
    in_maple = Caller(AVA, organization="maple")
    before = count_events(cs)

    for read in (cs.access.card, cs.access.status, cs.access.record, cs.access.review):
        with pytest.raises(NotFoundError):
            read(proposal_id, in_maple)
        with pytest.raises(NotFoundError):
            read(str(uuid.uuid4()), in_maple)
    for decide in (cs.access.approve, cs.access.decline):
        with pytest.raises(NotFoundError):
            decide(proposal_id, in_maple)
    with pytest.raises(NotFoundError):
        cs.access.history(proposal_id, in_maple)

    assert count_events(cs) == before
    assert cs.access.card(proposal_id, Caller(AVA, organization="granite")).status == "pending"
    assert cs.access.card(proposal_id, AVA).status == "pending"  # the command line: any club


def test_a_tokens_scopes_narrow_what_its_member_may_do(cs, seeded):
    proposal_id = propose(cs, seeded)
    auditor = Caller(AVA, organization="granite", scopes=frozenset({Permission.READ_AUDIT}))
    drafter = Caller(AVA, organization="granite", scopes=frozenset({Permission.PREPARE_BROADCASTS}))
    before = count_events(cs)

    assert cs.access.card(proposal_id, auditor).status == "pending"
    assert cs.access.history(proposal_id, auditor, "1")["as_of"]["status"] == "pending"
    with pytest.raises(MissingPermissionError) as refused:
        cs.access.approve(proposal_id, auditor)
    assert refused.value.needs == (Permission.REFUND_ORDERS,)
    with pytest.raises(MissingPermissionError):
        cs.access.decline(proposal_id, auditor)
    with pytest.raises(MissingPermissionError) as refused:
        cs.access.card(proposal_id, drafter)
    assert refused.value.any_of
    with pytest.raises(MissingPermissionError):
        cs.access.history(proposal_id, drafter)
    with pytest.raises(MissingPermissionError):
        cs.access.propose(
            drafter, operation=REFUND, resource_id=seeded["orders"]["refund-ok"], request=TO_CARD
        )
    assert cs.access.readable_sections(drafter) == ["email_broadcasts"]
    assert cs.access.inbox_scope(drafter).section == "email_broadcasts"
    with pytest.raises(MissingPermissionError):
        cs.access.inbox_scope(drafter, "orders")

    assert count_events(cs) == before


def test_a_member_without_a_permission_to_read_it_may_not_see_it_anywhere(cs, seeded):
    proposal_id = propose(cs, seeded)
    for read in (cs.access.card, cs.access.status, cs.access.record, cs.access.review):
        with pytest.raises(ForbiddenError):
            read(proposal_id, BEN)  # the command line's caller too
    assert cs.access.readable_sections(Caller(BEN, organization="granite")) == []
    with pytest.raises(ForbiddenError):
        cs.access.inbox_scope(Caller(BEN, organization="granite"))
    report = cs.access.approve(proposal_id, BEN)  # the approve path answers it
    assert (report.result, report.reason) == ("not_approvable", "forbidden")


def test_a_reviewer_sees_only_their_own_conversation_behind_a_proposal(cs, seeded):
    turn = cs.assistant.turn(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=seeded["orders"]["refund-ok"],
        message=ASKED,
    )
    assert turn.proposal is not None
    proposal_id = turn.proposal["proposal_id"]
    granite = cs.store.get(Organization.create_id("granite"), Organization)
    granite.add_member("eve@granite.example", "Eve", "manager", [Permission.REFUND_ORDERS])
    cs.store.save(granite)

    mine = cs.access.review(proposal_id, Caller(AVA, organization="granite"))
    theirs = cs.access.review(proposal_id, Caller("eve@granite.example", organization="granite"))

    assert mine.conversation is not None
    assert mine.conversation.interaction_id == turn.interaction_id
    assert mine.may_decide
    assert theirs.may_decide
    assert theirs.conversation is None
    conversation = cs.assistant.conversation(
        organization="granite",
        actor=AVA,
        section="orders",
        resource_id=seeded["orders"]["refund-ok"],
        interaction_id=turn.interaction_id,
    )
    assert conversation.timeline[0] == {"kind": "manager", "text": ASKED}
    assert any(entry["kind"] == "card" for entry in conversation.timeline)
    with pytest.raises(NotFoundError):
        cs.assistant.conversation(
            organization="granite",
            actor="eve@granite.example",
            section="orders",
            resource_id=seeded["orders"]["refund-ok"],
            interaction_id=turn.interaction_id,
        )
    with pytest.raises(NotFoundError):  # a club's conversation, seen from the other club
        cs.assistant.conversation(
            organization="maple",
            actor=MIA,
            section="orders",
            resource_id=seeded["orders"]["refund-ok"],
        )


def test_no_entry_point_reads_the_store_itself():
    """import-linter forbids importing the store and the aggregates; this catches reaching
    them through the wired countersign (``cs.store``) instead."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "infrastructure" / "entrypoints").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "store"
    ]
    assert offenders == []


def test_an_inbox_scope_names_the_kinds_its_caller_may_decide_not_only_read(cs, seeded):
    """audit.read reads every kind; deciding needs the kind's own permission, and a
    credential that decides: an agent token with the same permissions decides none."""
    from countersign.application.authorization import Credential

    cs.club.set_permissions("granite", BEN, ["audit.read", "roster.manage"])
    ben = Caller(BEN, organization="granite")
    scope = cs.access.inbox_scope(ben)
    assert scope.operations is None  # an auditor reads every kind
    assert sorted(scope.decidable) == [
        "roster.add_member",
        "roster.move_member",
        "roster.remove_member",
    ]
    agent = Caller(
        BEN,
        organization="granite",
        scopes=frozenset({"audit.read", "roster.manage"}),
        credential=Credential.AGENT_TOKEN,
        service="helper",
    )
    assert cs.access.inbox_scope(agent).decidable == ()
