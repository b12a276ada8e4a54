"""Held: a list shows no proposal whose own page would refuse the caller.

A section's proposals are listed to whoever holds one of its operations' permissions, but a
proposal is read only with its own operation's permission or the auditor's. An agent token
scoped to preparing drafts, or a member who may only prepare them, used to get a pending
send's card refused (403) and its whole preview (subject, audience, first recipients'
addresses) in the inbox of the same section. The inbox, the recent outcomes, the attention
list and the navigation's counts now keep only the operations the caller may read.
"""

from __future__ import annotations

import re
from typing import Any

from countersign.domain.club.organization import Permission
from countersign.infrastructure.identity.tokens import issue_token

from tests.attacks.conftest import Api, Web
from tests.conftest import AVA, DRAFT
from tests.support.proposing import ICE_TIMES_DRAFT, SEND, propose_on

ZOE = "zoe@granite.example"
OSCAR = "oscar@granite.example"


def _draft_and_send(cs: Any, seeded: dict[str, Any]) -> tuple[str, str]:
    """A pending send of granite's form (after its draft was approved), and then a pending
    draft on the same form: ids of (draft, send)."""
    form = str(seeded["broadcast_forms"]["granite"])
    applied = propose_on(cs, form, ICE_TIMES_DRAFT, operation=DRAFT)
    assert cs.proposals.approve(applied, AVA).result == "executed"
    send = propose_on(cs, form, operation=SEND)
    draft = propose_on(cs, form, {**ICE_TIMES_DRAFT, "subject": "Next draft"}, operation=DRAFT)
    return draft, send


def _listed(answer: Any) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    return {item["proposal_id"]: item for item in answer.json()["items"]}


def test_a_token_scoped_to_drafts_is_not_listed_the_send_it_may_not_read(api: Api) -> None:
    draft, send = _draft_and_send(api.cs, api.seeded)
    drafts_only = issue_token(
        api.cs,
        "granite",
        "drafts-bot",
        [Permission.PREPARE_BROADCASTS],
        issued_by=AVA,
        kind="agent",
    ).token
    assert api.get(f"/api/v1/proposals/{send}", as_=drafts_only).status_code == 403

    for params in ({"section": "email_broadcasts"}, {}):
        answer = api.get("/api/v1/inbox", as_=drafts_only, **params)
        listed = _listed(answer)
        assert send not in listed
        assert draft in listed
        assert answer.json()["total"] == len(listed)
        assert "Ice times change next week" not in answer.text
        for proposal_id in listed:  # every card listed is one the token may open
            assert api.get(f"/api/v1/proposals/{proposal_id}", as_=drafts_only).status_code == 200

    # A token with every permission of the section still lists both.
    assert {draft, send} <= set(_listed(api.get("/api/v1/inbox", section="email_broadcasts")))


def _awaiting(page: Any) -> int:
    found = re.search(r"(\d+) awaiting your decision", page.text)
    assert found, "the navigation has no counts"
    return int(found.group(1))


def test_a_member_who_may_only_prepare_drafts_does_not_see_the_send_on_any_list(
    web: Web,
) -> None:
    draft, send = _draft_and_send(web.cs, web.seeded)
    web.add_member(ZOE, "Zoe Drafter", [Permission.PREPARE_BROADCASTS], ("granite",))
    browser = web.sign_in(ZOE)
    assert browser.get(f"/proposals/{send}").status_code == 403

    for path in ("/", "/?section=email_broadcasts"):
        inbox = browser.get(path)
        assert inbox.status_code == 200
        assert f"/proposals/{draft}" in inbox.text
        assert f"/proposals/{send}" not in inbox.text
        assert "Ice times change next week" not in inbox.text
        assert _awaiting(inbox) == 1  # the draft alone

    web.cs.proposals.decline(send, AVA, note="not this week")
    recent = browser.get("/?view=recent")
    assert recent.status_code == 200
    assert f"/proposals/{send}" not in recent.text


def test_an_auditor_is_listed_every_operation(web: Web) -> None:
    draft, send = _draft_and_send(web.cs, web.seeded)
    web.add_member(OSCAR, "Oscar Auditor", [Permission.READ_AUDIT], ("granite",))
    browser = web.sign_in(OSCAR)
    inbox = browser.get("/?section=email_broadcasts")
    assert inbox.status_code == 200
    assert f"/proposals/{draft}" in inbox.text
    assert f"/proposals/{send}" in inbox.text
    assert browser.get(f"/proposals/{send}").status_code == 200


def test_holding_every_registered_permission_lists_no_operation_no_longer_registered(
    cs: Any, seeded: dict[str, Any]
) -> None:
    """A card of an operation the registry no longer has (its plug-in turned off) is read
    with audit.read alone: a member holding every registered operation's permission was
    still listed it (a review's finding)."""
    from countersign.application.authorization import Caller, inbox_scope, may_read
    from countersign.domain.club.organization import Organization
    from countersign.domain.contracts import REGISTRY, declarations
    from countersign.infrastructure.entrypoints.web.site import INBOX_PROJECTIONS

    _, send = _draft_and_send(cs, seeded)
    remaining = {kind: REGISTRY[kind] for kind in REGISTRY if kind != SEND}
    club = cs.store.get(Organization.create_id("granite"), Organization)
    permissions = sorted({d.permission for d in declarations(remaining)})
    club.add_member("pat@granite.example", "Pat", "manager", permissions)
    cs.store.save(club)
    member = cs.store.get(Organization.create_id("granite"), Organization).member(
        "pat@granite.example"
    )
    caller = Caller("pat@granite.example", "granite")
    assert not may_read(caller, member, SEND, remaining)  # its page answers 403

    scope = inbox_scope(caller, member, registry=remaining)
    cs.catch_up(INBOX_PROJECTIONS)
    listed = cs.read_models.inbox(
        scope.organization_id, cs.clock.now(), sections=scope.sections, operations=scope.operations
    )
    assert send not in {item["proposal_id"] for item in listed["items"]}
    assert len(listed["items"]) == listed["total"] == 1  # the draft
