"""A database writer's events of the wrong class are never applied to a stream they do not
belong to, nor let through a sealed proposal unchecked (``stored_events.applied``,
``event_seals.applied``).

An event of any domain class was applied to whichever stream held it: another aggregate's
event (an order's ``Cancelled``) or the bare ``Proposal.Event`` in a sealed proposal's stream
carries no seal to check, so it was applied unchecked, shown as vouched for (a proposal
"cancelled", no warning), and approving past it carried the proposal out; without seal keys,
``audit verify`` replayed it as the library does and found nothing. Each is now a record that
does not read: the reader gets the damaged record's answer and its reference, nothing is
carried out, and ``audit verify`` names the event. A plug-in's event, which countersign's
history lists in a proposal's stream, is read as before, but after a sealed ``Proposed`` no
seal vouches for it: it is named, and approving sets the proposal aside."""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from countersign.domain.club.orders import Order
from countersign.domain.hash_chain import chain_link
from countersign.domain.proposal import Proposal
from countersign.infrastructure.bootstrap import enable_plugins
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.persistence.stored_events import allow_event_packages
from eventsourcing.domain import Aggregate

from tests.conftest import AVA
from tests.support.proposing import propose
from tests.test_audit_verify import _broken, _verify
from tests.test_corrupt_records import _fresh
from tests.test_event_seals import K1, _forged_approval, _propose, _types
from tests.test_shown_seals import _review, _warning
from tests.test_web_pages import web_for


def _store(cs: Any, event: Any) -> None:
    """What a writer of the database stores: an event, through the store's own recorder."""
    cs.app.recorder.insert_events([cs.app.mapper.to_stored_event(event)])


def _api(cs: Any, seeded: dict[str, Any]) -> Any:
    """Ava's approver token's client: ``call(method, path)``."""
    token = issue_token(
        cs, "granite", "desk", ["orders.refund"], issued_by=AVA, kind="approver"
    ).token
    client = web_for(cs, seeded).browser().client

    def call(method: str, path: str) -> Any:
        return client.request(method, path, headers={"Authorization": f"Bearer {token}"})

    return call


def test_another_aggregates_event_in_a_sealed_proposal_is_a_damaged_record(cs, seeded, deployments):
    proposal_id = _propose(deployments(K1), seeded)
    _store(
        cs,
        Order.Cancelled(
            originator_id=UUID(proposal_id),
            originator_version=2,
            timestamp=cs.clock.now(),
            proposal_id=None,
            cancelled_by="writer@granite.example",
        ),
    )
    api = _api(deployments(K1), seeded)

    card = api("GET", f"/api/v1/proposals/{proposal_id}")
    approved = api("POST", f"/api/v1/proposals/{proposal_id}/approve")

    # Before: the card said "cancelled", with no word of the seals (unverified None), and
    # approving failed on an assertion.
    assert card.status_code == 500, card.text[:300]
    assert card.json()["type"] == "urn:countersign:problem:internal-error"
    assert "cancelled" not in card.text
    assert approved.status_code == 500
    assert _types(cs, proposal_id) == ["Proposed", "Cancelled"]


def test_an_unsealed_bare_event_in_a_sealed_proposal_is_never_approved_past(
    cs, seeded, deployments
):
    proposal_id = _propose(deployments(K1), seeded)
    _store(
        cs,
        Proposal.Event(
            originator_id=UUID(proposal_id), originator_version=2, timestamp=cs.clock.now()
        ),
    )
    api = _api(deployments(K1), seeded)

    approved = api("POST", f"/api/v1/proposals/{proposal_id}/approve")

    # Before: 200, the refund carried out (Approved, Claimed, Revalidated, Succeeded).
    assert approved.status_code == 500, approved.text[:300]
    assert _types(cs, proposal_id) == ["Proposed", "Event"]


def test_audit_verify_names_another_aggregates_event_even_with_its_link_made_and_no_keys(
    cs, seeded
):
    """Without seal keys the chain alone proves a stream: a writer who makes the foreign
    event's link with the real ``chain_link`` leaves every link holding, and the check
    replayed the stream with the library's own ``mutate``, which applied it."""
    proposal_id = _propose(cs, seeded)
    proposed = next(iter(cs.app.events.get(UUID(proposal_id))))
    fields = {"proposal_id": None, "cancelled_by": "writer@granite.example"}
    at = cs.clock.now()
    cancelled = Order.Cancelled(
        originator_id=UUID(proposal_id), originator_version=2, timestamp=at, **fields
    )
    cancelled.__dict__["chain"] = chain_link(proposed.chain, 2, "Cancelled", fields, at)
    _store(cs, cancelled)

    report = _verify(cs)

    proposal_id_found, version, problem = _broken(report)
    assert (proposal_id_found, version) == (proposal_id, 2)
    assert problem == "stored event does not replay (UnreadableEventError)"


class NotedByPlugin(Aggregate.Event):
    """A plug-in's event: one the store reads in any stream, as the history lists it."""

    note: str

    def apply(self, aggregate: Any) -> None:
        pass


def test_a_plugin_event_in_a_sealed_proposal_is_vouched_for_by_nothing(cs, seeded, deployments):
    """A plug-in's event class can carry no seal, so a sealed proposal's read let it through
    unchecked: the card said nothing, and approving carried the proposal out. After a sealed
    ``Proposed`` it is now what no seal vouches for: named first, and approving sets the
    proposal aside."""
    proposal_id = _propose(deployments(K1), seeded)
    allow_event_packages([__name__])  # as a deployment's plug-in declares its package
    try:
        _store(
            cs,
            NotedByPlugin(
                originator_id=UUID(proposal_id),
                originator_version=2,
                timestamp=cs.clock.now(),
                note="approved elsewhere",
            ),
        )
        api = _api(deployments(K1), seeded)
        card = api("GET", f"/api/v1/proposals/{proposal_id}")
        approved = api("POST", f"/api/v1/proposals/{proposal_id}/approve")
    finally:
        enable_plugins()

    assert card.status_code == 200, card.text[:300]
    assert card.json()["unverified"]["event_version"] == 2
    assert card.json()["unverified"]["event_type"] == "NotedByPlugin"
    assert approved.json()["status"] == "revision_required"
    assert _types(cs, proposal_id) == ["Proposed", "NotedByPlugin", "RevisionRequired"]


class PluginInvoice:
    """A plug-in's aggregate whose event has the name of one of countersign's."""

    class Approved(Aggregate.Event):
        invoice: str

        def apply(self, aggregate: Any) -> None:
            pass


def test_a_plugin_event_named_like_countersigns_is_not_called_by_countersigns_words(
    cs, seeded, deployments
):
    """The warning named the first unvouched event by its class's name alone, so a
    plug-in's ``Approved`` was "an approval" / « une approbation »: what no one gave. It is
    looked up by the event's class (its topic), and one countersign does not know is named
    as such, in both languages; the card's ``event_type`` still gives the class's name."""
    proposal_id = _propose(deployments(K1), seeded)
    allow_event_packages([__name__])
    try:
        _store(
            cs,
            PluginInvoice.Approved(
                originator_id=UUID(proposal_id),
                originator_version=2,
                timestamp=cs.clock.now(),
                invoice="INV-1",
            ),
        )
        reader = deployments(K1)
        card = _api(reader, seeded)("GET", f"/api/v1/proposals/{proposal_id}").json()
        english = _warning(_review(reader, seeded, proposal_id))
        french = _warning(_review(reader, seeded, proposal_id, "fr"))
    finally:
        enable_plugins()

    assert card["unverified"]["event_type"] == "Approved"
    assert "(event 2: an event countersign does not know)" in card["unverified"]["message"]
    assert english is not None
    assert french is not None
    assert "(event 2: an event countersign does not know)" in english
    assert "(événement 2 : un événement que countersign ne connaît pas)" in french
    for text in (card["unverified"]["message"], english):
        assert "an approval" not in text
    assert "une approbation" not in french


def test_countersigns_own_approval_is_still_called_an_approval(cs, seeded, deployments):
    proposal_id = _propose(deployments(K1), seeded, approvals=2)
    _forged_approval(cs, proposal_id)
    reader = deployments(K1)

    english = _warning(_review(reader, seeded, proposal_id))
    french = _warning(_review(reader, seeded, proposal_id, "fr"))

    assert english is not None
    assert "(event 2: an approval)" in english
    assert french is not None
    assert "(événement 2 : une approbation)" in french


def test_a_damaged_overdue_proposal_does_not_stop_every_other_from_expiring(
    cs, seeded, clock, caplog
):
    """The expiry sweeper takes its candidates oldest first, and one whose record does not
    read (here a writer's bare event; an event gap or a field taken out does the same) raised
    out of the pass: every pass stopped on it, and no overdue proposal of any club was
    recorded Expired again. It is logged with its reference, as the reconciler does, and the
    pass goes on."""
    damaged = propose(cs, seeded, "refund-ok")
    overdue = propose(cs, seeded, "refund-stale")
    clock.advance(days=1, seconds=1)
    _store(
        cs,
        Proposal.Event(originator_id=UUID(damaged), originator_version=2, timestamp=clock.now()),
    )
    worker = _fresh(cs, clock)  # a worker process: it has not held either proposal
    try:
        with caplog.at_level(logging.ERROR, logger="countersign"):
            swept = worker.sweepers.expire_due()
    finally:
        worker.close()

    assert [s.proposal_id for s in swept] == [overdue]
    assert f"expiring {damaged} failed, correlation id cs-" in caplog.text
    # In one line each, the store's naming the event and what to do: no traceback.
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert "cannot be read: it does not apply to the events before it" in caplog.text


def test_a_damaged_reconciling_proposal_does_not_stop_every_other_from_being_reconciled(
    cs, seeded, clock, caplog
):
    """The reconciler read each candidate before the guard its comment promised ("one
    unreadable or misbehaving candidate must not block all the others"): a damaged one
    (the projection passing its event, as it does a writer's bare one or a skipped one)
    raised out of ``reconcile``, and no other proposal of any club was settled again. It is
    logged in one line with its reference, the store's line naming the event, and the pass
    goes on."""
    damaged = propose(cs, seeded, "refund-lost-response")
    assert cs.proposals.approve(damaged, AVA).status == "reconciling"
    outage = propose(cs, seeded, "provider-outage")  # its first request gets a 503
    assert cs.proposals.approve(outage, AVA).status == "reconciling"
    clock.advance(seconds=1)
    after = len(cs.audit.history(damaged)["events"]) + 1
    _store(
        cs,
        Proposal.Event(
            originator_id=UUID(damaged), originator_version=after, timestamp=clock.now()
        ),
    )
    worker = _fresh(cs, clock)  # a worker process: it has not held either proposal
    try:
        with caplog.at_level(logging.ERROR, logger="countersign"):
            swept = worker.sweepers.reconcile()
    finally:
        worker.close()

    assert [(s.proposal_id, s.action, s.status) for s in swept] == [
        (outage, "replayed", "succeeded")
    ]
    assert f"reconciling {damaged} failed, correlation id cs-" in caplog.text
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert "cannot be read: it does not apply to the events before it" in caplog.text
