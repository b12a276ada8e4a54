"""An approval that withdraws someone else's pending proposal says so before, and the
withdrawn proposal says why after, on every backend.

Approving a $48.00 discount refund changes the order's balance a pending cancellation was
computed from, so its success retires the cancellation in the same commit. Before anyone
approves, the refund's card (the API's, the review page, the confirmation step) lists the
pending proposals it would withdraw; afterwards the cancellation records why it was
superseded (``Superseded`` version 2, ``reason: withdrawn``) and its card says "Withdrawn:
the $48.00 CAD refund approved at 04:00 changed this order's balance", linking that refund.
An edit or a newer proposal for the same thing still reads "Replaced by a newer proposal".
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from countersign.domain.club.organization import Permission
from countersign.domain.proposal import Proposal
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token

from tests.conftest import AVA, BEN, DRAFT, REFUND, TO_CARD
from tests.support.proposing import (
    BACK_TO_CARD,
    CANCEL,
    SEND,
    TO_ACCOUNT_CREDIT,
    propose,
    propose_on,
)
from tests.test_optimistic_reads import _set_permissions
from tests.test_web_pages import Browser, Web, _main, web_for

ORDER = "refund-stale"  # Lucas Roy's order: $345.00 paid by card, a $48.00 discount missed
WITHDRAWN_EN = (
    "Withdrawn: the $48.00 CAD refund approved at 04:00 changed this order&#39;s balance. "
    "Propose it again if it is still wanted."
)
WITHDRAWN_FR = (
    "Retirée\u00a0: le remboursement de 48,00\u00a0$\u00a0CA approuvé à 4 h 00 a modifié le solde "
    "de cette commande. Proposez-la de nouveau si elle est toujours souhaitée."
)
CANCELLATION_EN = "Cancel Lucas Roy&#39;s registration and refund $345.00 CAD"


def _cancellation_then_refund(cs: Countersign, seeded: dict[str, Any]) -> tuple[str, str]:
    order_id = seeded["orders"][ORDER]
    cancellation = propose_on(cs, order_id, BACK_TO_CARD, operation=CANCEL)
    refund = propose(cs, seeded, ORDER)
    return cancellation, refund


def _stored(cs: Countersign, proposal_id: str) -> dict[str, Any]:
    """The proposal's last stored event, as written."""
    events = cs.app.recorder.select_events(UUID(proposal_id), desc=True, limit=1)
    return dict(json.loads(events[0].state), topic=events[0].topic)


# -- the application ------------------------------------------------------------------------------


def test_approving_a_refund_withdraws_the_pending_cancellation_and_records_why(cs, seeded):
    cancellation, refund = _cancellation_then_refund(cs, seeded)

    # Before: the refund's card names what approving it also withdraws.
    card = cs.access.card(refund, AVA)
    assert card.withdraws == [
        {
            "proposal_id": cancellation,
            "operation": CANCEL,
            "headline": "Cancel Lucas Roy's registration and refund $345.00 CAD",
        }
    ]
    french = cs.access.card(refund, AVA, "fr").withdraws[0]["headline"]
    assert french.startswith("Lucas Roy")
    assert "annuler l'inscription" in french
    assert cs.access.card(cancellation, AVA).withdraws[0]["proposal_id"] == refund

    assert cs.access.approve(refund, AVA).status == "succeeded"

    # After: withdrawn, in the same commit, with the reason recorded as data.
    withdrawn = cs.access.card(cancellation, AVA)
    assert (withdrawn.status, withdrawn.superseded_by, withdrawn.superseded_reason) == (
        "superseded",
        refund,
        "withdrawn",
    )
    assert withdrawn.withdraws == []
    stored = _stored(cs, cancellation)
    assert stored["topic"].endswith("Proposal.Superseded")
    assert (stored["class_version"], stored["reason"]) == (2, "withdrawn")
    assert cs.audit.history(cancellation)["events"][-1]["reason"] == "withdrawn"
    answer = cs.access.approve(cancellation, AVA).to_json()
    assert (answer["reason"], answer["superseded_by"], answer["superseded_reason"]) == (
        "superseded",
        refund,
        "withdrawn",
    )
    assert cs.sandbox.refunds()[0]["amount_cents"] == 4800  # the refund's, and no other
    assert len(cs.sandbox.refunds()) == 1
    assert verify(cs.app, cs.sql).ok


def test_an_edit_and_a_newer_proposal_record_their_own_reasons(cs, seeded):
    first = propose(cs, seeded)
    edited = cs.access.revise(first, AVA, dict(TO_ACCOUNT_CREDIT)).proposal_id
    newer = propose(cs, seeded)

    assert cs.store.get(UUID(first), Proposal).superseded_reason == "revised"
    assert cs.store.get(UUID(edited), Proposal).superseded_reason == "replaced"
    assert cs.store.get(UUID(newer), Proposal).superseded_reason is None  # still pending
    # A superseded answer of an unknown reason says none; a known one says which.
    answer = cs.access.approve(edited, AVA).to_json()
    assert answer["superseded_reason"] == "replaced"


@pytest.mark.parametrize(
    ("first", "then"),
    [
        pytest.param(CANCEL, "refund", id="a refund withdraws a cancellation"),
        pytest.param("refund", CANCEL, id="a cancellation withdraws a refund"),
        pytest.param(SEND, DRAFT, id="a new draft withdraws the send of the old one"),
    ],
)
def test_the_warning_names_exactly_what_the_approval_then_withdraws(cs, seeded, first, then):
    if DRAFT in (first, then):
        propose_and_apply = propose(cs, seeded, operation=DRAFT)
        assert cs.access.approve(propose_and_apply, AVA).status == "succeeded"
    pending = propose(cs, seeded, ORDER, operation=_kind(first))
    approving = propose(cs, seeded, ORDER, operation=_kind(then), request=_request(then))
    warned = {w["proposal_id"] for w in cs.access.card(approving, AVA).withdraws}

    assert cs.access.approve(approving, AVA).status == "succeeded"

    withdrawn = cs.store.get(UUID(pending), Proposal)
    assert (withdrawn.status, withdrawn.superseded_reason) == ("superseded", "withdrawn")
    assert warned == {pending}


def _kind(name: str) -> str:
    return "order.refund_missing_discount" if name == "refund" else name


def _request(name: str) -> dict[str, Any] | None:
    if name == DRAFT:
        return {"filters": {"leagues": ["Thursday Seniors"]}, "subject": "New", "body": "Hi"}
    return None


def test_nothing_is_warned_of_once_the_other_expired_or_for_a_proposal_no_longer_pending(
    cs, seeded, clock
):
    _, refund = _cancellation_then_refund(cs, seeded)
    clock.advance(days=2)  # both past their expiry; nobody can approve either
    assert cs.access.card(refund, AVA).withdraws == []
    other = propose(cs, seeded, "refund-ok")
    assert cs.access.approve(other, AVA).status == "succeeded"
    assert cs.access.card(other, AVA).withdraws == []


def test_the_upcaster_reads_a_version_1_supersession_as_unknown():
    state: dict[str, Any] = {"by": "x", "chain": "c"}
    Proposal.Superseded.upcast_v1_v2(state)
    assert state == {"by": "x", "chain": "c", "reason": None}
    assert Proposal.Superseded.class_version == 3


# -- the pages and the API ------------------------------------------------------------------------


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _page(browser: Browser, path: str) -> str:
    page = browser.get(path)
    assert page.status_code == 200, page.text[:300]
    return _main(page)


def test_the_review_and_the_confirmation_warn_before_approving_and_link_each_one(web: Web):
    cancellation, refund = _cancellation_then_refund(web.cs, web.seeded)
    ava = web.browser(AVA)

    review = _page(ava, f"/proposals/{refund}")
    warning = (
        '<p id="withdraws-lead"><strong>Approving this also withdraws 1 pending proposal on '
        "this order:</strong></p>"
    )
    assert warning in review
    assert f'<a href="/proposals/{cancellation}">{CANCELLATION_EN}</a>' in review
    assert 'aria-describedby="withdraws-lead approve-hint"' in review
    # The confirmation step of a card refund says it again, next to what cannot be undone.
    asked = ava.form(f"/proposals/{refund}/approve", {}, f"/proposals/{refund}")
    assert asked.status_code == 303  # to the confirmation page, a page of its own
    confirm = ava.get(asked.headers["location"])
    assert confirm.status_code == 200
    assert warning in _main(confirm)
    assert f'<a href="/proposals/{cancellation}">{CANCELLATION_EN}</a>' in _main(confirm)

    ava.post("/language", {"lang": "fr", "next": "/", "csrf_token": ava.csrf("/")})
    french = ava.get(f"/proposals/{refund}").text  # as sent: a no-break space before ":"
    assert (
        "Approuver celle-ci retire aussi 1 proposition en attente sur cette commande\u00a0:"
    ) in french

    # Approving the cancellation itself warns of the refund it would withdraw.
    assert "withdraws-lead" in _page(web.browser(AVA), f"/proposals/{cancellation}")


def test_the_withdrawn_card_says_which_approval_withdrew_it_and_links_it(web: Web):
    cancellation, refund = _cancellation_then_refund(web.cs, web.seeded)
    ava = web.browser(AVA)
    ava.form(f"/proposals/{refund}/approve", {"confirm": "yes"}, f"/proposals/{refund}")

    page = _page(ava, f"/proposals/{cancellation}")
    assert '<span class="pill tone-muted" id="status">Withdrawn</span>' in page
    assert '<h2 id="replaced-title">This proposal will not run</h2>' in page
    assert WITHDRAWN_EN in page
    assert f'<a class="button primary" href="/proposals/{refund}">' in page
    assert "Replaced by a newer proposal" not in page
    assert "changed nothing" not in page
    assert f'action="/proposals/{cancellation}/approve"' not in page

    # A tab that still showed its approve button is told why, not "a newer proposal".
    ava.form(f"/proposals/{cancellation}/approve", {}, f"/proposals/{cancellation}")
    told = _page(ava, f"/proposals/{cancellation}")
    assert "Another proposal was carried out and withdrew this one" in told
    assert web.cs.store.get(UUID(cancellation), Proposal).status == "superseded"

    ava.post("/language", {"lang": "fr", "next": "/", "csrf_token": ava.csrf("/")})
    french = ava.get(f"/proposals/{cancellation}").text
    assert WITHDRAWN_FR in french
    assert ">Retirée</span>" in french


def test_an_edit_still_reads_replaced_by_a_newer_proposal(web: Web):
    first = web.propose()
    web.cs.access.revise(first, AVA, dict(TO_ACCOUNT_CREDIT))
    page = _page(web.browser(AVA), f"/proposals/{first}")
    assert "Replaced by a newer proposal</h2>" in page
    assert ">Replaced</span>" in page
    assert "Withdrawn" not in page


def test_staff_who_may_not_read_the_withdrawn_one_are_told_it_exists_without_what_it_does(
    web: Web,
):
    """Ben prepares drafts but may not send: the draft he reviews names the pending send it
    would withdraw only as a proposal his role does not open."""
    _set_permissions(web.cs, BEN, [Permission.PREPARE_BROADCASTS])
    applied = propose(web.cs, web.seeded, operation=DRAFT)
    web.cs.access.approve(applied, AVA)
    send = propose(web.cs, web.seeded, operation=SEND)
    draft = propose(web.cs, web.seeded, operation=DRAFT, request=_request(DRAFT))

    page = _page(web.browser(BEN), f"/proposals/{draft}")
    assert "Approving this also withdraws 1 pending proposal on this broadcast form:" in page
    assert "<li>A proposal your role does not let you open</li>" in page
    assert send not in page
    api = web.cs.access.card(draft, BEN).withdraws
    assert api == [{"proposal_id": send, "operation": SEND, "headline": None}]


def test_the_api_card_lists_what_approving_withdraws_and_why_one_was_superseded(web: Web):
    cancellation, refund = _cancellation_then_refund(web.cs, web.seeded)
    bearer = issue_token(
        web.cs, "granite", "billing", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    api = web.browser().client
    headers = {"Authorization": f"Bearer {bearer}"}

    before = api.get(f"/api/v1/proposals/{refund}", headers=headers).json()
    assert before["withdraws"] == [
        {
            "proposal_id": cancellation,
            "operation": CANCEL,
            "headline": "Cancel Lucas Roy's registration and refund $345.00 CAD",
        }
    ]
    assert before["superseded_reason"] is None
    web.cs.access.approve(refund, AVA)
    after = api.get(f"/api/v1/proposals/{cancellation}", headers=headers).json()
    assert (after["superseded_by"], after["superseded_reason"]) == (refund, "withdrawn")


def test_the_command_line_says_withdrawn_not_replaced_and_no_expiry_once_decided(
    cs, seeded, database_url, capsys
):
    """The command line said "superseded by a newer proposal" of a withdrawn cancellation
    (its JSON said withdrawn, its page "Withdrawn"), and "expires in 23 h" of proposals
    already decided (an auditor's findings)."""
    from countersign.infrastructure.entrypoints.cli import main

    cancellation, refund = _cancellation_then_refund(cs, seeded)
    assert cs.access.approve(refund, AVA).status == "succeeded"

    def run(*argv: str) -> str:
        capsys.readouterr()
        main([*argv, "--database", database_url])
        return capsys.readouterr().out

    refused = run("approve", cancellation, "--as", AVA)
    shown = run("show", cancellation, "--as", AVA)
    done = run("show", refund, "--as", AVA)
    french = run("show", cancellation, "--as", AVA, "--language", "fr")

    assert refused.startswith(f"Not approvable: withdrawn when {refund} was carried out")
    assert "superseded by a newer proposal" not in refused
    assert "Withdrawn by" in shown
    assert "Superseded by" not in shown
    assert "Retirée par" in french
    for card in (shown, done, french):
        assert "Expires" not in card
        assert "Expire le" not in card
    # Proposed through the command line, by the clock it reads cards with (the kit's clock
    # is days behind it: a proposal made by that clock has expired by this one's).
    made = run(
        "propose", "--org", "granite", "--as", AVA, "--operation", REFUND,
        "--resource", seeded["orders"]["refund-ok"], "--request", json.dumps(TO_CARD), "--json",
    )  # fmt: skip
    pending = run("show", json.loads(made)["proposal_id"], "--as", AVA)
    assert "Expires" in pending
