"""Proposals whose approval calls a sandbox provider, and the exactly-once check that the
crash suite (test_crash_points.py) and the fault-schedule suite (test_fault_schedules.py)
make on them once the reconciler has run.

A card refund goes to the payment sandbox, a broadcast send to the e-mail sandbox. Each is
made fresh (its own order and charge; its own applied draft) so that a suite can make
thousands in one database.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.organization import Organization

# The seed's makers: an order like the seeded ones (its charge created in the payment
# sandbox), a roster, the manager's permissions.
from countersign.domain.contracts import PERMISSIONS
from countersign.infrastructure.adapters.payment_sandbox import CARD_OK
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.seed import LEAGUES
from countersign.infrastructure.demo.seed import _order as seeded_order
from countersign.infrastructure.demo.seed import _roster as seeded_roster

from tests.conftest import AVA, REFUND, TO_CARD

SEND = "email_broadcast.send"
GRANITE = Organization.create_id("granite")
CHARGED = 34500
REFUNDED = 4800
SENIORS = 4  # Thursday Seniors, the audience of every draft sent here
FINISHED = ("succeeded", "revision_required")
REFUSED = {REFUND: "refund_declined_by_provider", SEND: "broadcast_delivery_refused"}


@dataclass(frozen=True)
class External:
    """One proposal of an external operation, and where its effect shows."""

    proposal_id: str
    kind: str  # REFUND or SEND
    resource_id: str  # the order, or the broadcast form
    charge_id: str | None = None

    @property
    def key(self) -> str:
        return f"countersign:{self.kind}:{self.proposal_id}"

    @property
    def provider(self) -> str:
        return "payments" if self.kind == REFUND else "email"


def card_refund(cs: Countersign, name: str) -> External:
    """A refund of the early-bird discount missed on a new order paid by a working card."""
    granite = cs.store.read(GRANITE, Organization)
    order = seeded_order(cs, granite, name, f"Player {name}", f"{name}@example.com", CARD_OK, "")
    created = cs.proposals.propose(
        organization="granite",
        actor=AVA,
        operation=REFUND,
        resource_id=str(order.id),
        request=TO_CARD,
    )
    return External(created.proposal_id, REFUND, str(order.id), f"ch_granite_{name}")


def broadcast_send(cs: Countersign, name: str) -> External:
    """A send of a draft applied to the broadcast form of a new club of its own, which Ava
    manages and whose Thursday Seniors are the seeded four. A club of its own because a form
    keeps every send it ever made: thousands on one form would make the suites measure the
    replay of one ever-growing aggregate."""
    club = Organization(slug=f"club-{name}", name=f"Club {name}")
    club.add_member(AVA, "Ava Lindqvist", "manager", sorted(PERMISSIONS))
    form = BroadcastForm(organization_id=club.id)
    form.apply_draft({"leagues": ["Thursday Seniors"]}, f"Draw {name}", "Later.", uuid4())
    cs.store.save(club, form)
    seeded_roster(cs, club, {"Thursday Seniors": LEAGUES["Thursday Seniors"]})
    created = cs.proposals.propose(
        organization=club.slug, actor=AVA, operation=SEND, resource_id=str(form.id), request={}
    )
    return External(created.proposal_id, SEND, str(form.id))


def held(cs: Countersign) -> dict[str, dict[str, Any]]:
    """What both sandboxes hold, by idempotency key."""
    return {h["idempotency_key"]: h for h in [*cs.sandbox.held(), *cs.email_sandbox.held()]}


def _held_naming(cs: Countersign, proposal_id: str) -> dict[str, dict[str, Any]]:
    """What both sandboxes hold under any key that names the proposal: the rows of
    ``held()`` for those keys, found without reading every key (a suite makes thousands)."""
    pattern = f"%{proposal_id}%"
    with cs.sql.transaction() as cursor:
        refunds = cursor.execute(
            "SELECT idempotency_key, requests, status FROM sandbox_refunds"
            " WHERE idempotency_key LIKE ?",
            (pattern,),
        ).fetchall()
        deliveries = cursor.execute(
            "SELECT idempotency_key, requests, status, delivery_id, subject"
            " FROM sandbox_deliveries WHERE idempotency_key LIKE ?",
            (pattern,),
        ).fetchall()
    found = {key: {"requests": n, "status": status} for key, n, status in refunds}
    for key, n, status, delivery_id, subject in deliveries:
        found[key] = {
            "requests": n,
            "status": status,
            "delivery_id": delivery_id,
            "subject": subject,
        }
    return found


def _refunded_cents(cs: Countersign, charge_id: str | None) -> int:
    with cs.sql.transaction() as cursor:
        row = cursor.execute(
            "SELECT refunded_cents FROM sandbox_charges WHERE charge_id = ?", (charge_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _effect_recorded(cs: Countersign, proposal: External, answer: dict[str, Any]) -> Any:
    """The effect as the domain recorded it, and as the provider applied it."""
    if proposal.kind == REFUND:
        order = cs.club.investigate("granite", proposal.resource_id)
        return {
            "refunds": [(r["destination"], r["amount_cents"]) for r in order["refunds"]],
            "unresolved": order["unresolved_refund_attempts"],
            "total": order["total_cents"],
            "charge refunded": _refunded_cents(cs, proposal.charge_id),
        }
    form = cs.store.get(UUID(proposal.resource_id), BroadcastForm)
    send = form.send(UUID(proposal.proposal_id))
    assert send is not None
    return {"send": send.status, "ref matches": send.delivery_ref in (None, answer["delivery_id"])}


def _expected_effect(proposal: External, succeeded: bool) -> Any:
    if proposal.kind == REFUND:
        return {
            "refunds": [("card", REFUNDED)] if succeeded else [],
            "unresolved": 0,
            "total": CHARGED - REFUNDED if succeeded else CHARGED,
            "charge refunded": REFUNDED if succeeded else 0,
        }
    return {"send": "sent" if succeeded else "failed", "ref matches": True}


def _expected_outcome(proposal: External, answer: dict[str, Any]) -> dict[str, Any]:
    if answer["status"] != "succeeded":
        return {"kind": "revision_required", "reason": {"code": REFUSED[proposal.kind]}}
    if proposal.kind == REFUND:
        result: dict[str, Any] = {
            "refund_ref": "R1",
            "amount_cents": REFUNDED,
            "currency": "CAD",
            "destination": "Visa •••• 4242",
            "resulting_order_total_cents": CHARGED - REFUNDED,
        }
    else:
        result = {
            "form_id": proposal.resource_id,
            "delivery_ref": answer["delivery_id"],
            "audience_count": SENIORS,
            "subject": answer["subject"],
        }
    return {"kind": "succeeded", "result": result}


def check_exactly_once(
    cs: Countersign, proposals: list[External], *, requests: int | None = 1
) -> dict[str, str]:
    """Each proposal finished (nothing executing or reconciling), its provider holds one
    answer under its one key (``requests`` requests, if given), the domain recorded exactly
    that answer's effect, and approving again answers the stored outcome. Returns the
    status of each proposal, by id.

    The key is the proposal's own, and no other key names the proposal: a second key would
    be a second effect the provider could not deduplicate.
    """
    statuses = {}
    for proposal in proposals:
        card = cs.cards.card(proposal.proposal_id, AVA)
        where = (proposal, card.status, card.outcome)
        assert card.status in FINISHED, where
        holding = _held_naming(cs, proposal.proposal_id)
        assert list(holding) == [proposal.key], (where, holding)
        answer = holding[proposal.key]
        if requests is not None:
            assert answer["requests"] == requests, (where, answer)
        succeeded = answer["status"] == "succeeded"
        assert card.status == ("succeeded" if succeeded else "revision_required"), (where, answer)
        assert _effect_recorded(cs, proposal, answer) == _expected_effect(proposal, succeeded)
        assert _strip(card.outcome) == _expected_outcome(proposal, answer), where
        types = [e["type"] for e in cs.audit.history(proposal.proposal_id)["events"]]
        assert types.count("Claimed") == 1, (where, types)
        assert types[-1] in ("Succeeded", "RevisionRequired"), (where, types)
        again = cs.proposals.approve(proposal.proposal_id, AVA)
        assert (again.result, again.outcome) == ("already_completed", card.outcome), where
        statuses[proposal.proposal_id] = card.status
    return statuses


def _strip(outcome: dict[str, Any] | None) -> dict[str, Any] | None:
    """An outcome without what a revision's reason adds beyond its code."""
    if outcome is None or outcome.get("kind") != "revision_required":
        return outcome
    return {"kind": outcome["kind"], "reason": {"code": outcome["reason"]["code"]}}


def figures(name: str, **values: Any) -> None:
    """One line of measured figures for scripts/soak, printed (shown with ``pytest -s``)."""
    print(f"\nFIGURES {json.dumps({'suite': name, **values}, sort_keys=True)}", flush=True)
