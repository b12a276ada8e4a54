"""Golden streams (issue 16, suite 5): a database written by each release from cdaaaa4 on, with
proposals in every status, is opened by today's code. Every aggregate replays, every
projection rebuilds, ``audit verify`` passes, and the pending proposals are approved with
exactly one provider effect each; the stuck and the reconciling ones settle once.

A copy is damaged the ways a disk, an attacker or a newer release could: flipped bytes, a
tampered topic, an event from a newer version of countersign. Each fails closed with a
correlation id, and nothing executes.

Each release's fixture is ``tests/fixtures/golden_<commit>/`` (its ``make.py`` says how it was
made): a SQLite file and the same story as a PostgreSQL dump, with a manifest of the ids, the
status each proposal was left in, and the class version each versioned event was written at
(``class_versions``): the tests of an upcaster run over the releases that wrote the version it
reads. tests/test_golden_coverage.py fails when the domain defines an event type that no
golden stream holds.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from countersign.application.errors import CorruptRecordError
from countersign.application.settlement import revision_required
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.orders import Order, OrderStatus
from countersign.domain.club.organization import Organization
from countersign.domain.club.passkeys import PasskeyRing
from countersign.domain.club.roster import Roster
from countersign.domain.outcomes import (
    RevisionReason,
    RevisionRequired,
    is_already_so,
    outcome_from_stored,
)
from countersign.domain.pending_slot import PendingSlot
from countersign.domain.proposal import Proposal
from countersign.domain.seals import SealKeys
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.audit.verify import verify
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.entrypoints.status_path import (
    history_with_status_paths,
    shown_outcome,
    with_status_path,
)
from countersign.infrastructure.projection_engine.together import rebuild_together
from countersign.infrastructure.settings import Settings

from tests.conftest import AVA, MIA, events_table
from tests.support.golden_postgres import GoldenPostgres
from tests.test_corrupt_records import _rewrite_state

NOAH = "noah@granite.example"
REFUND_KIND = "order.refund_missing_discount"
FIXTURES = Path(__file__).parent / "fixtures"
#: Every release's golden stream from cdaaaa4 on (older fixtures have their own test).
RELEASES = sorted(
    path.name
    for path in FIXTURES.glob("golden_*")
    if "status" in json.loads((path / "manifest.json").read_text())
)


def _written_at(event: str, version: int) -> list[str]:
    """The releases whose golden stream holds ``event`` as ``version`` wrote it."""
    return [
        release
        for release in RELEASES
        if json.loads((FIXTURES / release / "manifest.json").read_text())["class_versions"][event]
        == version
    ]


def _with_proposal(name: str) -> list[str]:
    """The releases whose story left a proposal under this name."""
    return [
        release
        for release in RELEASES
        if name in json.loads((FIXTURES / release / "manifest.json").read_text())["proposals"]
    ]


@pytest.fixture(params=RELEASES)
def golden(
    request: pytest.FixtureRequest,
    database_url: str,
    golden_postgres: GoldenPostgres,
    tmp_path: Path,
) -> Iterator[tuple[Countersign, dict[str, Any]]]:
    """Today's code on a copy of the release's database, an hour after it was written."""
    fixture = FIXTURES / request.param
    if database_url.startswith("sqlite"):
        copy = tmp_path / "golden.db"
        shutil.copyfile(fixture / "countersign.db", copy)
        database_url = f"sqlite:///{copy}"
        manifest = json.loads((fixture / "manifest.json").read_text())
    else:
        # (database_url, empty, only chose the backend: a copy of the loaded dump is used.)
        database_url = golden_postgres.copy(fixture / "postgres.sql")
        manifest = json.loads((fixture / "manifest-postgres.json").read_text())
    clock = FakeClock(datetime.fromisoformat(manifest["written_at"]))
    clock.advance(hours=1)
    cs = bootstrap(Settings(database_url=database_url), clock=clock)
    yield cs, manifest
    cs.close()


def _aggregate_ids(cs: Countersign) -> list[UUID]:
    ids: dict[UUID, None] = {}
    start = 1
    while batch := cs.app.recorder.select_notifications(start, limit=500):
        ids.update((UUID(str(n.originator_id)), None) for n in batch)
        start = batch[-1].id + 1
    return list(ids)


def _effects(cs: Countersign, proposal_id: str) -> list[dict[str, Any]]:
    """What both sandboxes hold for one proposal, by key."""
    held = [*cs.sandbox.held(), *cs.email_sandbox.held()]
    return [entry for entry in held if str(entry["idempotency_key"]).endswith(proposal_id)]


# -- the stream reads as it was left -------------------------------------------------------------


def test_every_aggregate_replays_and_every_proposal_is_as_it_was_left(golden):
    cs, manifest = golden
    replayed = {i: cs.app.repository.get(i) for i in _aggregate_ids(cs)}
    assert sum(aggregate.version for aggregate in replayed.values()) == manifest["events"]
    for name, proposal_id in manifest["proposals"].items():
        proposal = replayed[UUID(proposal_id)]
        assert isinstance(proposal, Proposal)
        assert str(proposal.status) == manifest["status"][name], name
    assert set(manifest["status"].values()) >= {
        "pending",
        "executing",
        "reconciling",
        "succeeded",
        "revision_required",
        "failed",
        "declined",
        "expired",
        "superseded",
    }
    revision = replayed[UUID(manifest["proposals"]["pending_revision"])]
    assert str(revision.revision_of) == manifest["proposals"]["superseded_by_revision"]
    awaiting = replayed[UUID(manifest["proposals"]["awaiting_second_approval"])]
    assert (awaiting.approvals, awaiting.approvals_required) == ((AVA,), 2)


def test_every_projection_rebuilds_and_the_audit_chain_verifies(golden):
    cs, manifest = golden
    runners = cs.projection_runners()
    assert rebuild_together(runners) == manifest["events"]
    for name, proposal_id in manifest["proposals"].items():
        proposal = cs.store.get(UUID(proposal_id), Proposal)
        card = cs.read_models.card(str(proposal.organization_id), proposal_id)
        assert card is not None, name
        assert card["status"] == manifest["status"][name], name
    assert cs.read_models.handback(
        manifest["seed"]["organizations"][0]["id"], manifest["interaction_id"]
    )
    report = verify(cs.app, cs.sql)
    assert report.ok, report.to_json()
    assert report.proposals == len(manifest["proposals"])


@pytest.mark.parametrize("golden", _with_proposal("succeeded_move_with_passkey"), indirect=True)
def test_the_newer_event_types_read_as_the_release_left_them(golden):
    """The events added after a41ffac, as their release wrote them: a passkey ring, an
    approval signed with a passkey and one by an approver token, an approval that stopped
    counting, a broadcast sent and one refused, a cancelled registration, a roster move, a
    manual refund, webhook endpoints and a member removed from the club."""
    cs, manifest = golden
    ids, seed = manifest["proposals"], manifest["seed"]

    def proposal(name: str) -> Proposal:
        return cs.store.get(UUID(ids[name]), Proposal)

    moved = proposal("succeeded_move_with_passkey")
    written = _stored_state(cs, ids["succeeded_move_with_passkey"], 2)
    # Stored without a seal (no keys) at the version before seals (proposal_events.py).
    assert written["class_version"] == Proposal.Approved.unsealed_version
    [passkey] = moved.approval_passkeys
    assert passkey == written["passkey"]
    assert passkey is not None
    assert passkey["name"] == "Ava's laptop"
    assert (moved.approver_credentials, moved.approver_roles) == (("person",), ("manager",))
    assert moved.approver_memberships == (_membership(cs, AVA),)
    ring = cs.store.get(PasskeyRing.create_id(UUID(_organization(manifest)), AVA), PasskeyRing)
    assert [entry["name"] for entry in ring.passkeys.values()] == ["Ava's laptop"]
    assert ring.passkeys[passkey["credential_id"]]["sign_count"] == 1  # PasskeyUsed
    assert len(ring.registered) == 2  # the renamed and removed phone's key is still there
    assert "Ava's old phone" in [entry["name"] for entry in ring.registered.values()]

    credit = proposal("succeeded_account_credit")
    assert credit.approver_credentials == ("approver_token:billing",)
    awaiting = proposal("awaiting_second_approval")
    assert awaiting.lapsed_approvals == ({"approved_by": NOAH, "reason": "lost_permission"},)
    assert proposal("superseded_withdrawn").superseded_reason == "withdrawn"
    assert proposal("revision_required_send").outcome["reason"]["code"] == (
        "broadcast_delivery_refused"
    )

    form = cs.store.get(UUID(seed["broadcast_forms"]["granite"]), BroadcastForm)
    assert (form.draft, form.applied_from) == (2, ids["succeeded_second_draft"])
    assert [(s.status, s.failure) for s in form.sends] == [("failed", "recipient_suppressed")]
    cancelled = cs.store.get(UUID(seed["orders"]["account-credit"]), Order)
    assert (cancelled.status, cancelled.cancelled_by) == (OrderStatus.CANCELLED, AVA)
    by_hand = cs.store.get(UUID(seed["orders"]["refund-declined"]), Order)
    assert [(r.destination, r.amount_cents) for r in by_hand.refunds] == [("manual", 1500)]
    roster = cs.store.get(UUID(seed["rosters"]["granite"]), Roster)
    assert roster.plays_in("Thursday Seniors", "olivia.chen@example.com")  # MemberMoved
    assert not roster.plays_in("Sunday Mixed Doubles", "olivia.chen@example.com")
    assert not roster.plays_in("Monday Night Open", "sophie.martin@example.com")  # MemberLeft
    club = cs.store.get(UUID(_organization(manifest)), Organization)
    assert club.webhook_endpoints() == []  # added, then removed
    assert club.member("leo@granite.example") is None  # added, then removed
    noah = club.member(NOAH)
    assert noah is not None
    assert noah.may("orders.refund")
    assert verify(cs.app, cs.sql).ok  # the passkey's signature checks against the ring


def _organization(manifest: dict[str, Any]) -> str:
    return str(manifest["seed"]["organizations"][0]["id"])


def test_golden_events_at_todays_class_versions_are_written_as_the_release_wrote_them(golden):
    """An event triggered today is built through its class, its fields in the class's order.
    Each golden event still at its class's version, built again from what it decodes to, is
    stored as the very bytes the release stored, under the same topic: the approval cycle's
    events, explicit classes since 2797f1c, write what their ``@event`` methods wrote.
    (Events of an older class version go through upcasters; an ``@event`` method's event
    missing a field added since with a default cannot be built again: neither is compared.)"""
    cs, _ = golden
    mapper = cs.app.mapper
    compared: set[str] = set()
    start = 1
    while batch := cs.app.recorder.select_notifications(start, limit=500):
        start = batch[-1].id + 1
        for stored in batch:
            event = mapper.to_domain_event(stored)
            written = json.loads(bytes(stored.state))
            # An event after ``Proposed`` is written without a seal (no keys) at its version
            # before seals, as the release wrote it: compared too.
            current = getattr(type(event), "class_version", 1)
            if written.get("class_version", 1) not in (
                current,
                getattr(type(event), "unsealed_version", current),
            ):
                continue
            try:
                again = type(event)(**vars(event))
            except TypeError:
                continue
            restored = mapper.to_stored_event(again)
            name = stored.topic.rsplit(":", 1)[1]
            assert (restored.topic, bytes(restored.state)) == (
                stored.topic,
                bytes(stored.state),
            ), name
            compared.add(name)
    # ``PendingSlot.Held`` is at version 2 since 2026-12-07 (each hold records its proposal's
    # expiry): the goldens' version 1 holds go through its upcaster, checked below.
    cycle = {"Proposal.Claimed", "Proposal.Revalidated", "Proposal.Succeeded"}
    assert cycle <= compared
    assert {"BroadcastForm.DraftApplied", "Order.RefundAttemptStarted"} <= compared


# -- and carries on ------------------------------------------------------------------------------


def test_pending_proposals_execute_once_and_the_uncertain_ones_settle_once(golden):
    cs, manifest = golden
    ids = manifest["proposals"]
    approvals = {
        "pending_card_refund": AVA,
        "pending_revision": AVA,
        "pending_mcp_draft": AVA,
        "awaiting_second_approval": NOAH,
    }
    for name, approver in approvals.items():
        report = cs.access.approve(ids[name], approver)
        assert (report.result, report.status) == ("executed", "succeeded"), name

    cs.clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
    settled = {report.proposal_id: report for report in cs.sweepers.reconcile()}
    assert settled[ids["executing"]].action == "replayed"  # the dead process never called
    assert settled[ids["reconciling"]].action == "settled"  # the lost response is looked up
    assert {r.status for r in settled.values()} == {"succeeded"}

    for name in ("pending_card_refund", "awaiting_second_approval", "executing", "reconciling"):
        effects = _effects(cs, ids[name])
        assert len(effects) == 1, name  # one key
        assert (effects[0]["status"], effects[0]["requests"]) == ("succeeded", 1), name
    for name in ("pending_revision", "pending_mcp_draft", "superseded_by_newer", "expired"):
        assert _effects(cs, ids[name]) == [], name  # local operations, or never executed

    for name in (*approvals, "executing", "reconciling", "succeeded_card_refund"):
        before = cs.cards.card(ids[name], MIA if name == "executing" else AVA).outcome
        again = cs.access.approve(ids[name], MIA if name == "executing" else AVA)
        assert (again.result, again.outcome) == ("already_completed", before), name
    assert verify(cs.app, cs.sql).ok


def test_proposals_no_longer_pending_are_refused_as_before(golden):
    cs, manifest = golden
    ids = manifest["proposals"]
    expected = {
        "expired": "expired",
        "declined": "not_pending",
        "superseded_by_newer": "superseded",
        "superseded_by_revision": "superseded",
    }
    held = cs.sandbox.held()
    for name, reason in expected.items():
        report = cs.access.approve(ids[name], AVA)
        assert (report.result, report.reason) == ("not_approvable", reason), name
    assert cs.sandbox.held() == held


# -- damaged copies fail closed ------------------------------------------------------------------


def _damage(cs: Countersign, proposal_id: str, version: int, *, state=None, topic=None) -> None:
    """Rewrite one stored event's bytes or topic in SQL, as a disk or an attacker would."""
    table = events_table(cs)
    key = UUID(proposal_id)
    if cs.database.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(cs.database.sqlite_path)
        where = "originator_id = ? AND originator_version = ?"
        (stored, old_topic) = conn.execute(
            f"SELECT state, topic FROM {table} WHERE {where}", (key.hex, version)
        ).fetchone()
        conn.execute(
            f"UPDATE {table} SET state = ?, topic = ? WHERE {where}",
            (state(bytes(stored)) if state else stored, topic or old_topic, key.hex, version),
        )
        conn.commit()
        conn.close()
        return
    db = cs.database
    with psycopg.connect(host=db.host, port=db.port, user=db.user, dbname=db.dbname) as conn:
        where = "originator_id = %s AND originator_version = %s"
        (stored, old_topic) = conn.execute(
            f"SELECT state, topic FROM {table} WHERE {where}", (key, version)
        ).fetchone()
        conn.execute(
            f"UPDATE {table} SET state = %s, topic = %s WHERE {where}",
            (state(bytes(stored)) if state else stored, topic or old_topic, key, version),
        )


def _flip_first_byte(stored: bytes) -> bytes:
    return bytes([stored[0] ^ 0xFF]) + stored[1:]


def _reopened(cs: Countersign) -> Countersign:
    """Another process on the damaged database: nothing of it is held in memory."""
    return bootstrap(Settings(database_url=cs.settings.database_url), clock=cs.clock)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param({"state": _flip_first_byte}, id="flipped-bytes"),
        pytest.param(
            {"topic": "countersign.domain.proposal:Proposal.Vanished"}, id="unknown-topic"
        ),
        pytest.param({"topic": "subprocess:Popen"}, id="foreign-topic"),
    ],
)
def test_a_damaged_golden_event_fails_closed_and_nothing_executes(golden, damage, caplog):
    cs, manifest = golden
    pending = manifest["proposals"]["pending_card_refund"]
    held = cs.sandbox.held()
    _damage(cs, pending, 1, **damage)
    other = _reopened(cs)
    try:
        with pytest.raises(CorruptRecordError) as refused:
            other.access.approve(pending, AVA)
        report = verify(other.app, other.sql)
    finally:
        other.close()
    correlation_id = refused.value.correlation_id
    assert correlation_id.startswith("cs-")
    assert correlation_id in caplog.text  # the operator finds it in the logs
    assert "Popen" not in str(refused.value)
    assert "Vanished" not in str(refused.value)
    assert cs.sandbox.held() == held  # nothing was sent
    assert not report.ok
    assert report.broken[0]["proposal_id"] == pending


def test_a_golden_event_from_a_newer_release_fails_closed(golden):
    cs, manifest = golden
    awaiting = manifest["proposals"]["awaiting_second_approval"]

    def from_the_future(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "class_version": 99}

    _rewrite_state(cs, awaiting, 2, from_the_future)  # its first Approved
    held = cs.sandbox.held()
    other = _reopened(cs)
    try:
        with pytest.raises(CorruptRecordError) as refused:
            other.access.approve(awaiting, NOAH)
    finally:
        other.close()
    assert refused.value.correlation_id.startswith("cs-")
    assert cs.sandbox.held() == held


def test_a_flipped_amount_that_still_decodes_is_a_terminal_failure_never_a_refund(golden):
    cs, manifest = golden
    pending = manifest["proposals"]["pending_card_refund"]

    def more_money(state: dict[str, Any]) -> dict[str, Any]:
        state["arguments"]["amount_cents"] += 1
        return state

    _rewrite_state(cs, pending, 1, more_money)
    other = _reopened(cs)
    try:
        report = other.access.approve(pending, AVA)
    finally:
        other.close()
    assert (report.status, report.outcome["kind"]) == ("failed", "terminal_failure")
    assert report.outcome["correlation_id"].startswith("cs-")
    assert _effects(cs, pending) == []


# -- versioned events: Proposal.Approved v2 records the approver's role, v3 the credential and
#    the membership -----------------------------------------------------------------------------


def _stored_state(cs: Countersign, proposal_id: str, version: int) -> dict[str, Any]:
    (stored,) = cs.app.recorder.select_events(
        UUID(proposal_id), gt=version - 1, lte=version, limit=1
    )
    return json.loads(stored.state)


@pytest.mark.parametrize("golden", _written_at("Proposal.Approved", 1), indirect=True)
def test_golden_v1_approvals_decode_through_the_upcasters_and_new_ones_are_current(golden):
    cs, manifest = golden
    awaiting = manifest["proposals"]["awaiting_second_approval"]
    written = _stored_state(cs, awaiting, 2)  # Ava's approval, as the release wrote it
    assert "class_version" not in written
    assert "role" not in written

    before = cs.store.get(UUID(awaiting), Proposal)
    assert before.approver_roles == (None,)  # unknown: never guessed from today's role
    assert cs.audit.history(awaiting)["events"][1]["role"] is None

    assert cs.access.approve(awaiting, NOAH).status == "succeeded"
    second = _stored_state(cs, awaiting, 3)
    assert (second["class_version"], second["role"], second["passkey"]) == (3, "manager", None)
    assert (second["credential"], second["membership_id"]) == ("person", _membership(cs, NOAH))
    after = cs.store.get(UUID(awaiting), Proposal)
    assert after.approvals == (AVA, NOAH)
    assert after.approver_roles == (None, "manager")
    # What Ava presented was not recorded then (a person, or a token that could approve).
    assert after.approver_credentials == ("unknown", "person")
    assert after.approver_memberships == (None, _membership(cs, NOAH))
    # One chain across both shapes: each link covers its event as it was written.
    assert verify(cs.app, cs.sql).ok
    runners = cs.projection_runners()
    assert rebuild_together(runners) == runners[0].head()


def test_golden_holds_read_with_no_expiry_and_a_new_proposal_supersedes_through_them(golden):
    """The release's slots (``Held`` version 1, no expiry) read with none known, so their
    subjects are never forgotten by time; proposing the same thing again supersedes the
    golden pending one as before, and the new hold is written at version 2 with its expiry
    (in Unix seconds)."""
    cs, manifest = golden
    pending = cs.store.get(UUID(manifest["proposals"]["pending_card_refund"]), Proposal)
    slot_id = PendingSlot.create_id(pending.organization_id, pending.resource_id)
    slot = cs.store.read(slot_id, PendingSlot)
    assert slot.until == {}
    assert pending.id in slot.latest_of(pending.kind)

    again = cs.proposals.propose(
        organization="granite",
        actor=pending.requested_by,
        operation=pending.kind,
        resource_id=str(pending.resource_id),
        request=pending.request,
    )
    assert again.supersedes == [str(pending.id)]
    held = _stored_state(cs, str(slot_id), cs.store.read(slot_id, PendingSlot).version)
    assert held["class_version"] == 2
    assert held["proposal_id"]["_data_"] == UUID(again.proposal_id).hex
    assert held["expires_s"] > datetime(2026, 1, 1).timestamp()
    assert held["at_s"] is None  # a slot of a few subjects: nothing to forget


def _membership(cs: Countersign, email: str) -> str | None:
    member = cs.club.membership("granite", email).member
    return member.membership_id


def test_the_upcaster_adds_the_role_as_unknown():
    state: dict[str, Any] = {"approved_by": AVA, "approved_at": "t", "chain": "c"}
    Proposal.Approved.upcast_v1_v2(state)
    assert state == {"approved_by": AVA, "approved_at": "t", "chain": "c", "role": None}


def test_the_upcaster_adds_the_credential_membership_and_passkey_as_unknown():
    state: dict[str, Any] = {"approved_by": AVA, "approved_at": "t", "chain": "c", "role": None}
    Proposal.Approved.upcast_v2_v3(state)
    assert state["credential"] == "unknown"
    assert state["membership_id"] is None
    assert state["passkey"] is None  # every approval before version 3 was given without one
    assert Proposal.Approved.class_version == 4  # version 4 adds the seal (test_event_seals.py)


def test_golden_proposals_read_without_a_seal_and_are_set_aside_where_keys_are_held(golden):
    """Every release before seals wrote ``Proposed`` at version 1, without one: it reads with
    ``seal`` None (its upcaster), its link still verifies, and a deployment that holds seal
    keys sets a pending one aside as unsealed at approval, executing nothing (a proposal made
    today is version 2: tests/test_proposal_seals.py)."""
    cs, manifest = golden
    for proposal_id in manifest["proposals"].values():
        written = _stored_state(cs, proposal_id, 1)
        assert "class_version" not in written
        assert "seal" not in written
        assert cs.store.get(UUID(proposal_id), Proposal).seal is None
    assert verify(cs.app, cs.sql).ok
    keys = SealKeys([("k1", b"golden-seal-secret-0123456789abcdef")])
    keyed = bootstrap(
        Settings(database_url=cs.settings.database_url, seal_keys=keys), clock=cs.clock
    )
    try:
        pending = manifest["proposals"]["awaiting_second_approval"]
        report = keyed.access.approve(pending, NOAH)
        assert report.status == "revision_required"
        assert report.outcome is not None
        assert report.outcome["reason"]["code"] == "proposal_unsealed"
        assert [e.type for e in keyed.store.history(UUID(pending))][-1] == "RevisionRequired"
        checked = verify(keyed.app, keyed.sql, seals=keys).to_json()
        assert checked["ok"] is True
        seals = checked["seals"]
        assert (seals["sealed_proposals"], seals["unsealed_proposals"]) == (
            0,
            len(manifest["proposals"]),
        )
        # Every event after Proposed was written without a seal too, in streams sealed nowhere
        # before it: read as seal None, none unvouched; only the set-aside's own is sealed.
        later = 0
        for proposal_id in manifest["proposals"].values():
            proposal = keyed.store.get(UUID(proposal_id), Proposal)
            assert proposal.unvouched is None
            events = list(keyed.app.events.get(UUID(proposal_id)))
            later += len(events) - 1
            assert all(event.seal is None for event in events[1:-1])
        assert (seals["sealed_events"], seals["unsealed_events"]) == (1, later - 1)
    finally:
        keyed.close()


def test_the_upcaster_adds_no_seal():
    state: dict[str, Any] = {"kind": REFUND_KIND, "chain": "c"}
    Proposal.Proposed.upcast_v1_v2(state)
    assert state == {"kind": REFUND_KIND, "chain": "c", "seal": None}
    assert Proposal.Proposed.class_version == 2


def test_an_approval_from_a_version_after_this_one_fails_closed(golden):
    cs, manifest = golden
    awaiting = manifest["proposals"]["awaiting_second_approval"]
    _rewrite_state(cs, awaiting, 2, lambda state: {**state, "class_version": 5, "role": "x"})
    other = _reopened(cs)
    try:
        with pytest.raises(CorruptRecordError):
            other.store.get(UUID(awaiting), Proposal)
        assert not verify(other.app, other.sql).ok
    finally:
        other.close()


@pytest.mark.parametrize("golden", _written_at("Proposal.Declined", 1), indirect=True)
def test_golden_declines_read_the_credential_as_unknown(golden):
    """``Proposal.Declined`` v2 records what the decliner presented; a release's v1 decline
    reads ``unknown`` (a person, or a token that could decline then), never guessed."""
    cs, manifest = golden
    declined = manifest["proposals"]["declined"]
    written = _stored_state(cs, declined, 2)
    assert "credential" not in written
    assert cs.store.get(UUID(declined), Proposal).declined_credential == "unknown"
    assert cs.audit.history(declined)["events"][1]["credential"] == "unknown"
    assert Proposal.Declined.class_version == 3


@pytest.mark.parametrize("golden", _written_at("Proposal.Superseded", 1), indirect=True)
def test_golden_supersessions_read_their_reason_as_unknown_and_keep_their_words(golden):
    """``Proposal.Superseded`` v2 records why; a release's v1 supersession reads ``None``
    (never guessed), its card keeps the words it had, and the conversation still tells an
    edit from a newer proposal by the log's order."""
    cs, manifest = golden
    by_revision = manifest["proposals"]["superseded_by_revision"]
    by_newer = manifest["proposals"]["superseded_by_newer"]
    written = _stored_state(cs, by_newer, 2)
    assert "class_version" not in written
    assert "reason" not in written

    for proposal_id in (by_revision, by_newer):
        assert cs.store.get(UUID(proposal_id), Proposal).superseded_reason is None
        assert cs.audit.history(proposal_id)["events"][1]["reason"] is None
        assert cs.access.card(proposal_id, AVA).superseded_reason is None
        answer = cs.access.approve(proposal_id, AVA).to_json()
        assert answer["reason"] == "superseded"
        assert "superseded_reason" not in answer  # unknown: left out, not guessed
    runners = cs.projection_runners()
    assert rebuild_together(runners) == runners[0].head()
    organization = cs.club.organization_id("granite")
    told = []
    for proposal_id in (by_newer, by_revision):
        card = cs.read_models.card(organization, proposal_id)
        assert card is not None
        assert (card["status"], card["superseded_reason"]) == ("superseded", None)
        told += [
            message["text_en"].split(":")[0]
            for message in cs.read_models.handback(organization, card["interaction_id"])
            if message["proposal_id"] == proposal_id and message["kind"] == "superseded"
        ]
    assert told == ["Replaced by a newer proposal for the same thing", "Replaced by an edit"]
    assert verify(cs.app, cs.sql).ok
    assert Proposal.Superseded.class_version == 3


# -- versioned events: Proposal.Reconciling v2 stores no route ----------------------------------


@pytest.mark.parametrize("golden", _written_at("Proposal.Reconciling", 1), indirect=True)
def test_golden_reconciling_outcomes_drop_the_route_and_every_answer_shows_it_as_before(golden):
    """``Proposal.Reconciling`` v1 stored the API's route in its outcome; v2 stores facts only.
    A release's v1 event decodes without the route, its chain link still verifies, and the
    answers that showed the outcome (the API's and the CLI's documents) show it as before."""
    cs, manifest = golden
    reconciling = manifest["proposals"]["reconciling"]
    (version,) = [e.version for e in cs.store.history(UUID(reconciling)) if e.type == "Reconciling"]
    written = _stored_state(cs, reconciling, version)
    assert "class_version" not in written
    route = f"/api/v1/proposals/{reconciling}/status"
    assert written["outcome"]["status_path"] == route

    decoded = cs.store.get(UUID(reconciling), Proposal).outcome
    assert decoded == {k: v for k, v in written["outcome"].items() if k != "status_path"}
    card = cs.access.card(reconciling, AVA)
    assert card.message  # the people's words, unchanged
    assert with_status_path(card.to_json())["outcome"] == written["outcome"]
    answer = with_status_path(cs.access.approve(reconciling, AVA).to_json())
    assert (answer["result"], answer["outcome"]) == ("already_completed", written["outcome"])
    history = history_with_status_paths(cs.audit.history(reconciling))
    assert history["events"][version - 1]["outcome"] == written["outcome"]
    assert verify(cs.app, cs.sql).ok
    runners = cs.projection_runners()
    assert rebuild_together(runners) == runners[0].head()

    # The reconciler settles it; a new lost answer is stored as version 2, without the route.
    cs.clock.advance(seconds=cs.settings.reconcile_lease_seconds + 1)
    assert {r.proposal_id: r.action for r in cs.sweepers.reconcile()}[reconciling] == "settled"
    assert Proposal.Reconciling.class_version == 3


def test_the_upcaster_leaves_the_route_out_of_a_reconciling_outcome():
    route = "/api/v1/proposals/5fdf1a2d-83a5-4efe-bc13-7fe0b6c432b3/status"
    outcome = {"kind": "needs_reconciliation", "status_path": route}
    state: dict[str, Any] = {"outcome": outcome, "idempotency_key": "k", "chain": "c"}
    Proposal.Reconciling.upcast_v1_v2(state)
    assert state == {
        "outcome": {"kind": "needs_reconciliation"},
        "idempotency_key": "k",
        "chain": "c",
    }
    assert outcome["status_path"] == route  # the stored state it was read from is untouched
    shown = shown_outcome({"kind": "needs_reconciliation", "cause": "response_lost"}, "p-1")
    assert list(shown or {}) == ["kind", "status_path", "cause"]  # as outcomes were shown
    assert (shown or {})["status_path"] == "/api/v1/proposals/p-1/status"


@pytest.mark.parametrize("golden", RELEASES[-1:], indirect=True)
def test_every_projection_stores_the_same_rows_however_it_is_rebuilt(golden):
    """The newest golden stream (every event type, tests/test_golden_coverage.py): rebuilt
    event by event, together in one process, and together with the writer process (rows
    packed at each batch's end and pickled to it), every projection table holds the same
    rows."""
    from tests.test_projections import snapshot

    cs, manifest = golden
    for runner in cs.projection_runners(batch_size=1):
        runner.rebuild(parallel=False)
    one_by_one = snapshot(cs)
    assert sum(map(len, one_by_one.values())) > manifest["events"]
    for parallel in (False, True):
        assert rebuild_together(cs.projection_runners(), parallel=parallel) == manifest["events"]
        assert snapshot(cs) == one_by_one, parallel


# -- versioned events: Proposal.RevisionRequired v2 may say "already so" -----------------------


@pytest.mark.parametrize("golden", _with_proposal("revision_required"), indirect=True)
def test_golden_revisions_read_as_written_need_attention_and_are_rewritten_as_written(golden):
    """``Proposal.RevisionRequired`` v2's outcome may say that what the proposal asked for
    already holds (``already_so``); v1 could not. A release's v1 revision decodes through the
    upcaster to its outcome exactly as written, which reads as not already so: its words are
    those of any revision, it still needs attention, and its chain link verifies. Written
    again today it is the release's state with ``class_version`` 2 added, field for field
    and in the same order: nothing else of a revision that is not already so changed."""
    cs, manifest = golden
    revised = manifest["proposals"]["revision_required"]
    (version,) = [
        e.version for e in cs.store.history(UUID(revised)) if e.type == "RevisionRequired"
    ]
    written = _stored_state(cs, revised, version)
    assert "class_version" not in written
    assert Proposal.RevisionRequired.class_version == 3

    assert cs.store.get(UUID(revised), Proposal).outcome == written["outcome"]
    card = cs.access.card(revised, AVA)
    assert card.outcome == written["outcome"]
    assert "already_so" not in (card.outcome or {})
    assert (card.message or "").endswith(
        "Ask the assistant for a new proposal if it is still needed."
    )
    answer = cs.access.approve(revised, AVA)
    assert (answer.result, answer.outcome) == ("already_completed", written["outcome"])
    runners = cs.projection_runners()
    assert rebuild_together(runners) == runners[0].head()
    with cs.sql.transaction() as cursor:
        items = cursor.execute("SELECT proposal_id, status FROM attention_items").fetchall()
    assert (revised, "revision_required") in [tuple(item) for item in items]
    assert verify(cs.app, cs.sql).ok

    (stored,) = cs.app.recorder.select_events(UUID(revised), gt=version - 1, lte=version)
    event = cs.app.mapper.to_domain_event(stored)
    again = json.loads(bytes(cs.app.mapper.to_stored_event(type(event)(**vars(event))).state))
    assert again.pop("class_version") == 2
    assert list(again.items()) == list(json.loads(bytes(stored.state)).items())


def test_the_upcaster_reads_a_revision_as_it_was_written_and_not_already_so():
    reason = {"code": "member_left_league", "params": {"member": "Noah Fraser"}}
    outcome = {"kind": "revision_required", "reason": reason}
    state: dict[str, Any] = {"outcome": outcome, "chain": "c"}
    Proposal.RevisionRequired.upcast_v1_v2(state)
    assert state == {"outcome": {"kind": "revision_required", "reason": reason}, "chain": "c"}
    read = outcome_from_stored(state["outcome"])
    assert isinstance(read, RevisionRequired)
    assert read.already_so is False
    assert not is_already_so(state["outcome"])
    # Today's writer stores the marker only when it is true.
    assert revision_required(RevisionReason.model_validate(reason)) == outcome
    assert revision_required(RevisionReason.model_validate(reason), already_so=True) == {
        **outcome,
        "already_so": True,
    }
