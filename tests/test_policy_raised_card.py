"""A policy raised since a proposal was frozen is said before anyone approves it.

Approving such a proposal fails closed (``RevisionRequired(policy_raised)``,
test_policy_raised.py); the review page, the API card and the passkey challenge say so first
(the command line's ``show``: test_governance_cli.py), so no approver signs with a passkey
for an approval that cannot count. Granite's seed: discount refunds above $100 need two
managers (Ava and Noah).
"""

from __future__ import annotations

import html
from typing import Any

import pytest
from countersign.application.authorization import Caller
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.identity.tokens import issue_token
from fastapi.testclient import TestClient

from tests.conftest import AVA, REFUND, count_events
from tests.support.proposing import propose_on
from tests.test_passkeys import register, require_passkey
from tests.test_web_pages import Web, web_for

NOAH = "noah@granite.example"

NOTICE = {
    "en": (
        "The club's approval policy changed since this was proposed",
        "Approving it will not carry it out: it goes back to the requester",
        "Send back for a new proposal",
    ),
    "fr": (
        "La politique d'approbation du club a changé depuis cette proposition",
        "L'approuver ne l'exécutera pas : elle retournera au demandeur",
        "Renvoyer pour une nouvelle proposition",
    ),
}


@pytest.fixture
def web(cs: Countersign, seeded: dict[str, Any]) -> Web:
    return web_for(cs, seeded)


def _raise_policy(cs: Countersign) -> None:
    """Refunds above $100 now need three managers, each with a passkey."""
    cs.policies.set("granite", REFUND, 3, above_cents=10_000, require_passkey=True)


def _read(page: Any) -> str:
    """A page's text as a person reads it: entities decoded, French non-breaking spaces as
    spaces."""
    return html.unescape(page.text).replace("\N{NO-BREAK SPACE}", " ")


def _approver(cs: Countersign) -> dict[str, str]:
    token = issue_token(cs, "granite", "billing", ["orders.refund"], issued_by=AVA, kind="approver")
    return {"Authorization": f"Bearer {token.token}"}


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_review_page_says_approving_sends_it_back_and_asks_no_passkey(web, language):
    cs = web.cs
    require_passkey(cs, 2, above_cents=10_000)  # as frozen: two managers with passkeys
    register(cs, NOAH, "Noah's phone")
    proposal_id = web.propose("refund-two-approvers")  # $128.00
    unaffected = web.propose("refund-ok")  # $48.00: below the threshold, raised or not
    noah = web.browser(NOAH)
    noah.form("/language", {"lang": language, "next": "/"})
    path = f"/proposals/{proposal_id}"
    title, text, button = NOTICE[language]
    before = noah.get(path)
    assert title not in _read(before)
    assert "passkey.js" in before.text  # the rule it was frozen under: a passkey signs it

    _raise_policy(cs)

    page = noah.get(path)
    assert page.status_code == 200
    shown = _read(page)
    assert title in shown
    assert text in shown
    assert button in shown
    assert "passkey.js" not in page.text  # no passkey prompt is started
    assert 'data-passkey="get"' not in page.text
    other = noah.get(f"/proposals/{unaffected}")
    assert title not in _read(other)
    assert button not in _read(other)
    versions = count_events(cs)
    # Sending it back is no irreversible refund: no confirmation page, no passkey.
    answer = noah.form(f"{path}/approve", {}, path)
    assert (answer.status_code, answer.headers["location"]) == (303, path)
    assert count_events(cs) == versions + 1  # RevisionRequired
    assert web.proposal(proposal_id).status == "revision_required"
    assert cs.sandbox.refunds() == []
    after = _read(noah.get(path))
    sent_back = {
        "en": "Sent back to the requester: nothing was approved or carried out. Here is why.",
        "fr": "Renvoyée au demandeur : rien n'a été approuvé ni exécuté. Voici pourquoi.",
    }[language]
    assert sent_back in after  # not "Approved, but not executed": no approval was recorded
    assert title not in after  # decided: nothing is sent back twice
    assert button not in after


def test_the_api_card_says_policy_changed_and_the_challenge_refuses_it(web):
    cs = web.cs
    require_passkey(cs, 2, above_cents=10_000)
    register(cs, AVA, "Ava's laptop")
    proposal_id = web.propose("refund-two-approvers")
    unaffected = web.propose("refund-ok")  # $48.00: below the threshold, raised or not
    api = TestClient(web.app, raise_server_exceptions=False)
    auth = _approver(cs)
    path = f"/api/v1/proposals/{proposal_id}"
    assert api.get(path, headers=auth).json()["policy_changed"] is False
    assert api.get(f"{path}/approval-challenge", headers=auth).status_code == 200

    _raise_policy(cs)

    card = api.get(path, headers=auth, params={"language": "fr"})
    assert card.status_code == 200, card.text
    assert (card.json()["status"], card.json()["policy_changed"]) == ("pending", True)
    other = api.get(f"/api/v1/proposals/{unaffected}", headers=auth).json()
    assert other["policy_changed"] is False
    assert api.get(f"{path}/status", headers=auth).json()["policy_changed"] is True
    assert api.get(f"/api/v1/proposals/{unaffected}/approval-challenge", headers=auth).is_success

    versions = count_events(cs)
    refused = api.get(f"{path}/approval-challenge", headers=auth)
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["type"] == "urn:countersign:problem:not-approvable"
    assert (problem["reason"], problem["proposal_status"]) == ("policy_raised", "pending")
    assert "policy for this operation changed" in problem["detail"]
    assert "nonce" not in problem
    assert count_events(cs) == versions  # refusing it records nothing

    # Approved with no passkey, as the challenge's answer says: sent back, nothing paid.
    approved = api.post(f"{path}/approve", headers=auth).json()
    assert (approved["result"], approved["status"]) == ("executed", "revision_required")
    assert approved["outcome"]["reason"]["code"] == "policy_raised"
    assert api.get(path, headers=auth).json()["policy_changed"] is False  # no longer pending
    assert cs.sandbox.refunds() == []


def test_a_card_read_through_the_application_says_it_in_both_languages(cs, seeded):
    """The card's field is the approve path's own check: a raise by another member counts."""
    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    assert cs.access.card(proposal_id, AVA).policy_changed is False
    cs.policies.set("granite", REFUND, 3, by=Caller(NOAH, "granite"))
    assert cs.access.card(proposal_id, AVA, "fr").policy_changed is True
    assert cs.access.review(proposal_id, NOAH).policy_changed is True


def test_the_mcp_status_says_policy_changed_to_the_agent(cs, seeded):
    """An agent checking on its proposal is told approving it would send it back, as the
    API card tells an approver: it can propose again under today's policy."""
    from countersign.infrastructure.entrypoints.mcp import http_app

    from tests.mcp_client import over_http, structured
    from tests.servers import serving

    proposal_id = propose_on(cs, seeded["orders"]["refund-two-approvers"])
    unaffected = propose_on(cs, seeded["orders"]["refund-ok"])  # below the threshold
    bearer = issue_token(cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent")

    def statuses(*ids: str) -> list[dict[str, Any]]:
        async def asking(session: Any) -> list[dict[str, Any]]:
            return [
                structured(await session.call_tool("proposal_status", {"proposal_id": pid}))
                for pid in ids
            ]

        return over_http(running.base, bearer.token, asking)

    with serving(http_app(cs), lifespan="on") as running:
        before = statuses(proposal_id)
        _raise_policy(cs)
        after, other = statuses(proposal_id, unaffected)
        # Sent back on its next approval, it is pending no more: nothing left to say.
        cs.access.approve(proposal_id, Caller(NOAH, "granite"))
        (sent_back,) = statuses(proposal_id)

    assert before[0]["policy_changed"] is False
    assert (after["status"], after["policy_changed"]) == ("pending", True)
    assert other["policy_changed"] is False
    assert (sent_back["status"], sent_back["policy_changed"]) == ("revision_required", False)


@pytest.mark.parametrize(
    ("language", "line"),
    [
        ("en", "Policy changed: approving sends it back"),
        ("fr", "Politique modifiée : l'approuver la renvoie"),
    ],
)
def test_the_inbox_card_says_approving_sends_it_back(web, language, line):
    cs = web.cs
    raised = web.propose("refund-two-approvers")  # $128.00
    web.propose("refund-ok")  # $48.00: below the threshold, raised or not
    noah = web.browser(NOAH)
    noah.form("/language", {"lang": language, "next": "/"})
    assert line not in _read(noah.get("/"))

    _raise_policy(cs)

    inbox = _read(noah.get("/"))
    assert inbox.count(line) == 1  # on its card only
    card = inbox[inbox.index(f'href="/proposals/{raised}"') :]
    assert line in card[: card.index("</a>")]
    cs.access.approve(raised, Caller(NOAH, "granite"))  # sent back: no longer pending
    assert line not in _read(noah.get("/"))
