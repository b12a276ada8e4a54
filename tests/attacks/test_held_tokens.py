"""Held: a revoked token, a departed member's token and a narrowed token do nothing more.

A billing service's token leaks. The operator revokes it (``countersign tokens revoke``): from
then on every route answers it 401, exactly like a token that never existed. A token keeps
acting as the member who issued it: when she leaves the club it answers 401 the same way, and
when she only loses a permission, what needed it answers 403. A token issued with
``--permissions email_broadcasts.prepare`` cannot approve or decline a refund, nor read one
or its history (403). In every case nothing is written and the proposal stays pending.

A departed member's token stays dead when the same address joins again (a returning member,
or an address given to someone else): a token belongs to one membership, not to an e-mail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from countersign.domain.club.organization import Organization, Permission
from countersign.infrastructure.entrypoints.cli import main
from httpx2 import Response

from tests.attacks.conftest import Api, assert_nothing_changed, problem, snapshot
from tests.conftest import AVA, DRAFT, REFUND, TO_CARD

NEVER_ISSUED = "cst_0123456789abcdef_" + "A" * 43  # well-formed, unknown
NOOR = "noor@granite.example"

Route = Callable[[str], Response]


def cli(api: Api, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """Run a ``countersign`` command on the test's database, as an operator would."""
    capsys.readouterr()
    code = main([*argv, "--json", "--database", api.cs.settings.database_url])
    out = capsys.readouterr().out
    assert code == 0, out
    document: dict[str, Any] = json.loads(out)
    return document


def every_route(api: Api, proposal_id: str) -> dict[str, Route]:
    base = f"/api/v1/proposals/{proposal_id}"
    order = api.seeded["orders"]["refund-stale"]
    refund = {"operation": REFUND, "resource_id": order, "request": TO_CARD}
    chat = f"/api/v1/assistants/orders/resources/{order}/messages"
    return {
        "propose": lambda token: api.post("/api/v1/proposals", refund, as_=token),
        "card": lambda token: api.get(base, as_=token),
        "approve": lambda token: api.post(f"{base}/approve", as_=token),
        "decline": lambda token: api.post(f"{base}/decline", {"note": "no"}, as_=token),
        "history": lambda token: api.get(f"{base}/history", as_=token),
        "status": lambda token: api.get(f"{base}/status", as_=token),
        "inbox": lambda token: api.get("/api/v1/inbox", as_=token),
        "assistant": lambda token: api.post(chat, {"message": "Refund the discount"}, as_=token),
    }


def _change_granite(api: Api, change: Callable[[Organization], None]) -> None:
    granite = api.cs.store.get(Organization.create_id("granite"), Organization)
    change(granite)
    api.cs.store.save(granite)


def test_a_revoked_token_and_a_departed_members_token_are_refused_like_unknown_ones(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal_id = api.propose()
    routes = every_route(api, proposal_id)
    all_permissions = ",".join(str(p) for p in Permission)
    leaked = cli(api, capsys, "tokens", "issue", "--org", "granite", "--as", AVA,
                 "--name", "billing", "--permissions", all_permissions)  # fmt: skip
    _change_granite(
        api, lambda org: org.add_member(NOOR, "Noor Haddad", "manager", list(Permission))
    )
    noor = cli(api, capsys, "tokens", "issue", "--org", "granite", "--as", NOOR,
               "--name", "noor-bot", "--permissions", all_permissions)  # fmt: skip
    for token in (leaked["token"], noor["token"]):
        assert routes["card"](token).status_code == 200  # both worked

    assert cli(api, capsys, "tokens", "revoke", leaked["token_id"])["revoked"] is True
    _change_granite(api, lambda org: org.remove_member(NOOR))
    before = snapshot(api.cs)

    for name, route in routes.items():
        unknown = problem(route(NEVER_ISSUED))
        for token in (leaked["token"], noor["token"]):
            answer = route(token)
            assert answer.status_code == 401, (name, answer.text)
            assert problem(answer) == unknown, name
            assert answer.headers["www-authenticate"] == (
                'Bearer realm="countersign", error="invalid_token"'
            )
            assert proposal_id not in answer.text

    assert_nothing_changed(api.cs, before)
    assert routes["card"](AVA).json()["status"] == "pending"


def test_a_member_who_lost_a_permission_and_a_narrowed_token_get_403_for_it(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal_id = api.propose()
    routes = every_route(api, proposal_id)
    drafts = cli(api, capsys, "tokens", "issue", "--org", "granite", "--as", AVA,
                 "--name", "newsletter", "--permissions", "email_broadcasts.prepare")  # fmt: skip
    assert drafts["permissions"] == ["email_broadcasts.prepare"]
    _change_granite(
        api, lambda org: org.add_member(NOOR, "Noor Haddad", "manager", list(Permission))
    )
    noor = cli(api, capsys, "tokens", "issue", "--org", "granite", "--as", NOOR,
               "--name", "noor-bot", "--permissions", "orders.refund,audit.read")  # fmt: skip
    assert routes["history"](noor["token"]).status_code == 200  # it worked
    # Noor stays a member but may now only prepare broadcasts.
    _change_granite(api, lambda org: org.change_permissions(NOOR, [Permission.PREPARE_BROADCASTS]))
    # The narrowed token does what it was issued for: drafting an email.
    form = api.seeded["broadcast_forms"]["granite"]
    draft = {"operation": DRAFT, "resource_id": form,
             "request": {"filters": {"leagues": ["Monday Night Open"]}, "subject": "Ice",
                         "body": "See you."}}  # fmt: skip
    assert api.post("/api/v1/proposals", draft, as_=drafts["token"]).status_code == 201
    before = snapshot(api.cs)

    # Only the refund routes: the inbox lists the email section to the narrowed token.
    refund_routes = {name: route for name, route in routes.items() if name != "inbox"}
    for token in (drafts["token"], noor["token"]):
        for name, route in refund_routes.items():
            answer = route(token)
            status, body = problem(answer)
            assert status == 403, (name, answer.text)
            assert "orders.refund" in body["detail"] or "audit.read" in body["detail"], name
            assert "$48.00" not in answer.text
            assert "Olivia" not in answer.text
        inbox = api.get("/api/v1/inbox", as_=token, section="orders")
        assert problem(inbox)[0] == 403

    assert_nothing_changed(api.cs, before)
    card = routes["card"](AVA).json()
    assert (card["status"], card["approved_by"]) == ("pending", None)
    assert api.cs.sandbox.refunds() == []


def test_a_departed_members_token_stays_dead_when_the_email_is_added_again(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    _change_granite(
        api, lambda org: org.add_member(NOOR, "Noor Haddad", "manager", list(Permission))
    )
    left_behind = cli(api, capsys, "tokens", "issue", "--org", "granite", "--as", NOOR,
                      "--name", "noor-bot", "--permissions", "audit.read")  # fmt: skip
    _change_granite(api, lambda org: org.remove_member(NOOR))
    assert problem(api.get("/api/v1/inbox", as_=left_behind["token"]))[0] == 401
    # Months later the address belongs to a new volunteer, who is given the auditor's role.
    _change_granite(
        api, lambda org: org.add_member(NOOR, "Noor Ahmed", "staff", [Permission.READ_AUDIT])
    )
    before = snapshot(api.cs)

    answer = api.get("/api/v1/inbox", as_=left_behind["token"])

    assert answer.status_code == 401, "the old token reads the club's inbox again"
    assert_nothing_changed(api.cs, before)
