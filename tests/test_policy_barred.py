"""A requester barred since a proposal was frozen: the rule is judged by who approves.

A club that now bars the requester from approving asks nothing more of anybody else: another
person's approval goes ahead under the rest of the frozen policy, while any other raise (more
approvals, a passkey) still fails the proposal closed (test_policy_raised.py). The requester's
own approval is refused as the policy in force says (``requester_may_not_approve``, nothing
recorded), and an approval the requester gave before no longer counts toward the quorum
(``ApprovalLapsed``, ``requester_barred``). Every reader says beforehand what approving does
for the person reading. Granite's seed: discount refunds above $100 need two managers (Ava,
who proposes, and Noah); Ben is given the permission where a third approver is needed.
"""

from __future__ import annotations

import html
from typing import Any
from uuid import UUID

import pytest
from countersign.application.authorization import Caller
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, BEN, MIA, REFUND, count_events
from tests.support.proposing import propose_on
from tests.test_passkeys import register, require_passkey
from tests.test_web_pages import Web, web_for

NOAH = "noah@granite.example"

SENT_BACK = {
    "en": (
        "The club's approval policy changed since this was proposed",
        "Send back for a new proposal",
    ),
    "fr": (
        "La politique d'approbation du club a changé depuis cette proposition",
        "Renvoyer pour une nouvelle proposition",
    ),
}
BARRED = {
    "en": "You requested this proposal, and the club's policy asks another manager to approve it.",
    "fr": (
        "Vous avez demandé cette proposition, et la règle du club demande qu'un autre "
        "gestionnaire l'approuve."
    ),
}
INBOX_LINE = {
    "en": "Policy changed: approving sends it back",
    "fr": "Politique modifiée : l'approuver la renvoie",
}


def _bar_the_requester(cs: Countersign, approvals: int = 2, **rule: Any) -> None:
    """Refunds above $100 (unless ``above_cents`` says otherwise): the requester barred."""
    cs.policies.set(
        "granite",
        REFUND,
        approvals,
        requester_may_approve=False,
        by=Caller(NOAH, "granite"),
        **rule,
    )


def _events(cs: Countersign, proposal_id: str) -> list[str]:
    return [type(e).__name__ for e in cs.app.events.get(UUID(proposal_id))]


def _refused_to_the_requester(cs: Countersign, proposal_id: str) -> None:
    """Ava, who requested it, is refused as the policy says, and nothing is recorded."""
    versions = count_events(cs)
    own = cs.proposals.approve(proposal_id, AVA)
    assert (own.result, own.reason, own.status) == (
        "not_approvable",
        "requester_may_not_approve",
        "pending",
    )
    assert count_events(cs) == versions


def _read(page: Any) -> str:
    return html.unescape(page.text).replace("\N{NO-BREAK SPACE}", " ")


# -- the approve path ---------------------------------------------------------------------------


def test_another_approver_carries_it_out_under_the_rest_of_the_frozen_policy(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])  # $128.00, Ava's
    cs.club.set_permissions("granite", BEN, ["orders.refund"])

    _bar_the_requester(cs)  # two approvers still, neither of them the requester

    _refused_to_the_requester(cs, proposal_id)
    first = cs.proposals.approve(proposal_id, NOAH)
    assert (first.result, first.approvals, first.required) == ("awaiting_approvals", 1, 2)
    assert cs.proposals.approve(proposal_id, BEN).status == "succeeded"
    assert len(cs.sandbox.refunds()) == 1
    assert "RevisionRequired" not in _events(cs, proposal_id)


def test_the_requesters_earlier_approval_no_longer_counts(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    cs.club.set_permissions("granite", BEN, ["orders.refund"])
    assert cs.proposals.approve(proposal_id, AVA).result == "awaiting_approvals"  # 1 of 2

    _bar_the_requester(cs)

    # Noah's would have been the second of two: Ava's no longer counts under today's rule.
    second = cs.proposals.approve(proposal_id, NOAH)
    assert (second.result, second.approvals, second.required) == ("awaiting_approvals", 1, 2)
    assert cs.sandbox.refunds() == []
    assert _events(cs, proposal_id) == ["Proposed", "Approved", "ApprovalLapsed", "Approved"]
    card = cs.access.card(proposal_id, NOAH)
    assert card.approvals == [NOAH]
    assert [lapsed["reason"] for lapsed in card.no_longer_counting] == ["requester_barred"]
    assert card.no_longer_counting[0]["message"] == (
        "no longer counts: Ava Lindqvist requested it, and the club's policy no longer lets "
        "the requester approve it"
    )
    french = cs.access.card(proposal_id, NOAH, "fr").no_longer_counting[0]["message"]
    assert french == (
        "ne compte plus : Ava Lindqvist l'a demandée, et la règle du club ne permet plus à "
        "la personne qui la demande de l'approuver"
    )
    _refused_to_the_requester(cs, proposal_id)
    assert cs.proposals.approve(proposal_id, BEN).status == "succeeded"
    assert len(cs.sandbox.refunds()) == 1


def test_readers_count_the_requesters_earlier_approval_out_before_anyone_approves(cs, seeded):
    """Noah's approval will be the first of two that count, not the last: the card and the
    review say so before he approves (reading records nothing)."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    assert cs.proposals.approve(proposal_id, AVA).result == "awaiting_approvals"  # 1 of 2

    _bar_the_requester(cs)

    card = cs.access.card(proposal_id, NOAH)
    assert (card.approvals, card.approval_credentials) == ([], [])
    assert [lapsed["reason"] for lapsed in card.no_longer_counting] == ["requester_barred"]
    assert card.no_longer_counting[0]["message"].startswith(
        "no longer counts: Ava Lindqvist requested it"
    )
    french = cs.access.card(proposal_id, NOAH, "fr").no_longer_counting[0]["message"]
    assert french.startswith("ne compte plus : Ava Lindqvist l'a demandée")
    record = cs.access.review(proposal_id, NOAH).record
    assert record["approvals"] == []
    assert record["no_longer_counting"] == [{"approved_by": AVA, "reason": "requester_barred"}]
    assert _events(cs, proposal_id) == ["Proposed", "Approved"]


def test_any_other_raise_still_sends_it_back_and_the_requester_is_still_refused(cs, seeded):
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])

    _bar_the_requester(cs, 3)  # and a third approver

    _refused_to_the_requester(cs, proposal_id)  # refused, not sent back
    answer = cs.proposals.approve(proposal_id, NOAH)
    assert (answer.result, answer.status) == ("executed", "revision_required")
    assert answer.outcome["reason"]["code"] == "policy_raised"
    assert cs.sandbox.refunds() == []


def test_a_threshold_now_covering_it_that_only_bars_the_requester(cs, seeded):
    """$48.00, frozen below the $100 threshold (one approval, anyone's): the rule now covers
    it, asking one approval, not the requester's. That asks nothing more of Noah."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-ok"])

    _bar_the_requester(cs, 1, above_cents=4_000)

    _refused_to_the_requester(cs, proposal_id)
    assert cs.proposals.approve(proposal_id, NOAH).status == "succeeded"


# -- what each reader says beforehand -----------------------------------------------------------


def test_the_card_and_status_say_what_approving_does_for_whoever_reads_them(cs, seeded):
    barred_only = propose_on(cs, seeded["orders"]["refund-two-approvers"])

    _bar_the_requester(cs)

    for reader in (AVA, NOAH):
        assert cs.access.card(barred_only, reader).policy_changed is False
        assert cs.access.card(barred_only, reader, "fr").policy_changed is False
        assert cs.access.status(barred_only, reader).policy_changed is False
        assert cs.access.review(barred_only, reader).policy_changed is False

    _bar_the_requester(cs, 3)

    # Noah's approval would send it back; Ava's is refused (she may not approve it).
    assert cs.access.card(barred_only, NOAH).policy_changed is True
    assert cs.access.status(barred_only, NOAH).policy_changed is True
    assert cs.access.card(barred_only, AVA).policy_changed is False
    assert cs.access.status(barred_only, AVA).policy_changed is False


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_review_page_for_another_approver_and_for_the_requester(web, language):
    cs = web.cs
    proposal_id = web.propose("refund-two-approvers")  # Ava's
    path = f"/proposals/{proposal_id}"
    noah, ava = web.browser(NOAH), web.browser(AVA)
    for browser in (noah, ava):
        browser.form("/language", {"lang": language, "next": "/"})
    title, button = SENT_BACK[language]
    assert f'action="{path}/approve"' in ava.get(path).text  # the frozen rule lets her

    _bar_the_requester(cs)

    theirs = _read(noah.get(path))
    assert title not in theirs
    assert button not in theirs
    assert BARRED[language] not in theirs
    assert f'action="{path}/approve"' in theirs
    own = _read(ava.get(path))
    assert BARRED[language] in own
    assert title not in own
    assert button not in own
    assert f'action="{path}/approve"' not in own  # she may still decline it
    assert f'action="{path}/decline"' in own
    for browser in (noah, ava):  # nor does the inbox say it is sent back
        assert INBOX_LINE[language] not in _read(browser.get("/"))

    _bar_the_requester(cs, 3)

    assert title in _read(noah.get(path))
    assert INBOX_LINE[language] in _read(noah.get("/"))
    own = _read(ava.get(path))
    assert title not in own
    assert BARRED[language] in own
    assert INBOX_LINE[language] not in _read(ava.get("/"))


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_review_page_counts_the_requesters_earlier_approval_out(web, language):
    """Noah's approval will be the first of two that count: no confirmation of a refund that
    would not run, and the page says why Ava's approval stopped counting."""
    cs = web.cs
    proposal_id = web.propose("refund-two-approvers")
    cs.proposals.approve(proposal_id, AVA)
    noah = web.browser(NOAH)
    noah.form("/language", {"lang": language, "next": "/"})

    _bar_the_requester(cs)

    page = _read(noah.get(f"/proposals/{proposal_id}"))
    first_of, lapsed = {
        "en": ("Your approval will be 1 of 2", "no longer counts: Ava Lindqvist requested it"),
        "fr": (
            "Votre approbation comptera pour 1 sur 2",
            "ne compte plus : Ava Lindqvist l'a demandée",
        ),
    }[language]
    assert first_of in page
    assert lapsed in page
    answer = noah.form(f"/proposals/{proposal_id}/approve", {}, f"/proposals/{proposal_id}")
    assert answer.headers["location"] == f"/proposals/{proposal_id}"  # no confirmation step
    assert cs.sandbox.refunds() == []


def test_the_challenge_refuses_the_requester_as_approving_would(web):
    cs = web.cs
    require_passkey(cs, 2, above_cents=10_000)  # as frozen: two managers with passkeys
    register(cs, AVA, "Ava's laptop")
    register(cs, NOAH, "Noah's phone")
    proposal_id = web.propose("refund-two-approvers")
    api = TestClient(web.app, raise_server_exceptions=False)

    def bearer(email: str) -> dict[str, str]:
        token = issue_token(
            cs, "granite", f"{email[:3]}-app", ["orders.refund"], issued_by=email, kind="approver"
        )
        return {"Authorization": f"Bearer {token.token}"}

    noah, ava = bearer(NOAH), bearer(AVA)

    challenge = f"/api/v1/proposals/{proposal_id}/approval-challenge"
    _bar_the_requester(cs, require_passkey=True)

    # Noah signs it under the rest of the frozen policy (two approvals, with passkeys).
    assert api.get(challenge, headers=noah).status_code == 200
    refused = api.get(challenge, headers=ava)
    assert refused.status_code == 409, refused.text
    assert refused.json()["reason"] == "requester_may_not_approve"
    card = api.get(f"/api/v1/proposals/{proposal_id}", headers=ava).json()
    assert card["policy_changed"] is False


# -- the inbox, for a proposal frozen under no policy -------------------------------------------


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_inbox_flags_one_frozen_under_no_policy_that_a_threshold_now_covers(web, language):
    cs = web.cs
    proposal_id = web.propose("maple-refund", actor=MIA, org="maple")  # Maple sets no policy
    amount = web.proposal(proposal_id).preview["amount_cents"]
    mia = web.browser(MIA)
    mia.form("/language", {"lang": language, "next": "/"})
    assert INBOX_LINE[language] not in _read(mia.get("/"))

    cs.policies.set("maple", REFUND, 2, above_cents=amount - 1, by=Caller(MIA, "maple"))

    inbox = _read(mia.get("/"))
    card = inbox[inbox.index(f'href="/proposals/{proposal_id}"') :]
    assert INBOX_LINE[language] in card[: card.index("</a>")]
