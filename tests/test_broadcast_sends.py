"""The broadcast form records its sends: each applied draft is numbered on its form, and is
sent at most once, ever."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from countersign.domain.club.broadcasts import BroadcastForm, BroadcastSend
from countersign.domain.club.organization import Organization
from countersign.domain.errors import BroadcastRuleError

import tests.test_upgrade_fixture as upgrade
from tests.conftest import AVA

upgraded = upgrade.upgraded  # a database written by an older main, opened by today's code

LEAGUES = {"leagues": ["Thursday Seniors"]}


def _form(cs, slug="granite") -> BroadcastForm:
    return cs.store.get(BroadcastForm.create_id(Organization.create_id(slug)), BroadcastForm)


def _apply(cs, subject="Ice times change") -> int:
    form = _form(cs)
    form.apply_draft(LEAGUES, subject, "Draws move 30 minutes later.", proposal_id=uuid4())
    cs.store.save(form)
    assert form.draft is not None
    return form.draft


def _start(cs, draft: int) -> UUID:
    form = _form(cs)
    proposal = uuid4()
    form.start_send(proposal, draft, f"countersign:send:{proposal}", recipients=4)
    cs.store.save(form)
    return proposal


def test_each_applied_draft_is_numbered_on_its_form(cs, seeded, other):
    assert _form(cs).draft is None
    assert _apply(cs) == 1
    assert _apply(cs, subject="Ice times change again") == 2
    assert _form(other).draft == 2  # another process counts the same


def test_a_form_without_an_applied_draft_cannot_be_sent(cs, seeded):
    form = _form(cs)
    with pytest.raises(BroadcastRuleError, match="only the draft applied"):
        form.start_send(uuid4(), 1, "key", recipients=4)
    assert form.sends == []


def test_a_send_starts_pending_and_settles_as_sent(cs, seeded, other):
    draft = _apply(cs)
    proposal = _start(cs, draft)
    assert _form(cs).send(proposal) == BroadcastSend(
        proposal_id=str(proposal),
        draft=draft,
        idempotency_key=f"countersign:send:{proposal}",
        recipients=4,
        status="pending",
    )
    assert _form(cs).draft_sending(draft)

    form = _form(cs)
    form.settle_send(proposal, delivery_ref="msg_1", sent_by=AVA)
    cs.store.save(form)

    seen_elsewhere = _form(other).send(proposal)  # another process reads it back
    assert seen_elsewhere is not None
    assert (seen_elsewhere.status, seen_elsewhere.delivery_ref, seen_elsewhere.sent_by) == (
        "sent",
        "msg_1",
        AVA,
    )
    assert _form(other).draft_sent(draft)
    assert not _form(other).draft_sending(draft)


def test_an_applied_draft_is_sent_once_ever(cs, seeded):
    draft = _apply(cs)
    pending = _start(cs, draft)
    with pytest.raises(BroadcastRuleError, match="still settling"):
        _start(cs, draft)

    form = _form(cs)
    form.settle_send(pending, delivery_ref="msg_1", sent_by=AVA)
    cs.store.save(form)
    with pytest.raises(BroadcastRuleError, match="already been sent"):
        _start(cs, draft)

    again = _apply(cs)  # a new draft, even with the same words, is another draft
    assert _start(cs, again)
    # The form holds what can still decide something: the sent draft 1 is in its events only.
    assert [s.draft for s in _form(cs).sends] == [again] == [2]
    assert [e.type for e in cs.store.history(_form(cs).id)].count("SendSettled") == 1


def test_a_send_still_pending_when_a_new_draft_is_applied_settles_all_the_same(cs, seeded, other):
    pending = _start(cs, _apply(cs))
    _apply(cs, subject="Ice times change again")  # the manager edits the form meanwhile

    form = _form(other)  # another process, from the stored events
    form.settle_send(pending, delivery_ref="msg_1", sent_by=AVA)
    other.store.save(form)

    assert [(s.draft, s.status) for s in _form(cs).sends] == [(1, "sent")]


def test_the_form_holds_one_drafts_sends_however_many_it_has_sent(cs, seeded, other):
    for n in range(5):
        sent = _start(cs, _apply(cs, subject=f"Week {n}"))
        form = _form(cs)
        form.settle_send(sent, delivery_ref=f"msg_{n}", sent_by=AVA)
        cs.store.save(form)

    assert [(s.draft, s.status) for s in _form(other).sends] == [(5, "sent")]
    history = [e.type for e in other.store.history(_form(other).id)]
    assert (history.count("SendStarted"), history.count("SendSettled")) == (5, 5)


def test_a_refused_send_sent_nothing_so_the_draft_may_be_sent_again(cs, seeded):
    draft = _apply(cs)
    refused = _start(cs, draft)
    form = _form(cs)
    form.fail_send(refused, reason="recipient_suppressed")
    cs.store.save(form)

    failed = _form(cs).send(refused)
    assert failed is not None
    assert (failed.status, failed.failure) == ("failed", "recipient_suppressed")
    assert not _form(cs).draft_sent(draft)
    assert _start(cs, draft)


def test_only_the_draft_in_the_form_can_be_sent(cs, seeded):
    replaced = _apply(cs)
    _apply(cs, subject="A newer draft")
    with pytest.raises(BroadcastRuleError, match="only the draft applied"):
        _start(cs, replaced)


def test_a_send_settles_once(cs, seeded):
    proposal = _start(cs, _apply(cs))
    form = _form(cs)
    form.settle_send(proposal, delivery_ref="msg_1", sent_by=AVA)
    for settle_again in (
        lambda: form.settle_send(proposal, delivery_ref="msg_1", sent_by=AVA),
        lambda: form.fail_send(proposal, reason="late"),
        lambda: form.settle_send(uuid4(), delivery_ref="msg_2", sent_by=AVA),
    ):
        with pytest.raises(BroadcastRuleError, match="no pending send"):
            settle_again()
    with pytest.raises(BroadcastRuleError, match="already exists"):
        form.start_send(proposal, 1, "key", recipients=4)


def test_a_form_stored_by_older_code_loads_and_its_draft_can_be_sent(upgraded):
    cs, manifest = upgraded
    assert _form(cs).sends == []
    draft = cs.proposals.approve(manifest["proposals"]["pending_broadcast_draft"], AVA)
    assert draft.status == "succeeded"
    form = _form(cs)
    assert form.applied_from == manifest["proposals"]["pending_broadcast_draft"]
    assert form.draft == 1

    proposal = _start(cs, 1)

    assert _form(cs).send(proposal).status == "pending"
